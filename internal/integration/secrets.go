package integration

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/consistency/blobstore"
	"github.com/tablekit/tablekit/sas"
	"github.com/tablekit/tablekit/table"
)

// RunSecrets makes tablekit fail in every way it can through a client that
// carries a SAS token, logging to a buffer, and scans every error text and
// log line for the account key and the token's signature.
func RunSecrets(t *testing.T, env Env) {
	ctx := t.Context()
	var key, token, account, tableName string
	admin, scoped := env.SASTable(t, func(acct, k, name string) string {
		account, tableName = acct, name
		cred, err := sas.NewCredential(account, k)
		if err != nil {
			t.Fatal(err)
		}
		tok, err := sas.Table{Table: name, Permissions: sas.TablePermissions{Read: true}, Expiry: time.Now().Add(time.Hour)}.Sign(cred)
		if err != nil {
			t.Fatal(err)
		}
		key, token = k, tok
		return tok
	})
	q, err := url.ParseQuery(token)
	if err != nil || q.Get("sig") == "" {
		t.Fatalf("token without a signature: %q", token)
	}
	secrets := map[string]string{"account key": key, "SAS signature": q.Get("sig"), "escaped SAS signature": url.QueryEscape(q.Get("sig")), "SAS token": token}
	if _, err := admin.AddEntity(ctx, []byte(`{"PartitionKey":"Sales","RowKey":"000123","Name":"Don"}`), nil); err != nil {
		t.Fatal(err)
	}

	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	type Employee struct {
		table.Meta
		Name string
	}
	tb, err := table.New[Employee](scoped, &table.Options{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	var errs []error
	keep := func(err error) {
		t.Helper()
		if err == nil {
			t.Fatalf("call %d, which the token may not make, succeeded", len(errs)+1)
		}
		errs = append(errs, err)
	}
	_, err = tb.Get(ctx, "Sales", "404", nil)
	keep(err)
	keep(tb.Add(ctx, &Employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: "000124"}}, nil))
	keep(tb.Delete(ctx, "Sales", "000123", nil))
	_, err = batch.Submit(ctx, scoped, []batch.Op{batch.Add(&Employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: "000125"}})}, nil)
	keep(err)
	_, err = batch.NewWriter(scoped, &batch.WriterOptions{Logger: logger, MaxAttempts: 2, BaseDelay: time.Millisecond}).
		Write(ctx, slices.Values([]batch.Op{batch.Add(&Employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: "000126"}})}), nil)
	keep(err)
	_, err = tb.Modify(ctx, "Sales", "000123", func(e *Employee) error { e.Name = "Ben"; return nil }, nil)
	keep(err)

	texts := []string{logs.String()}
	for _, err := range errs {
		texts = append(texts, err.Error(), fmt.Sprintf("%+v", err))
	}
	for what, secret := range secrets {
		for _, text := range texts {
			if strings.Contains(text, secret) {
				t.Errorf("the %s appears in: %.300s", what, text)
			}
		}
	}
	if !strings.Contains(logs.String(), "transaction failed") {
		t.Errorf("the writer logged no failure to scan: %q", logs.String())
	}
	t.Logf("%s: %d errors and %d bytes of logs scanned for %d secrets", env.Name, len(errs), logs.Len(), len(secrets))

	t.Run("transport failures through a SAS URL", func(t *testing.T) {
		secretsInTransportFailures(t, account, key, tableName, token, secrets)
	})
}

// brokenEndpoints are servers a request fails at below HTTP: a closed port
// (connection refused), a server that resets the connection halfway
// through the response's headers, and one that resets it halfway through
// the body.
func brokenEndpoints(t *testing.T) map[string]string {
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{"closed port": "http://" + closed.Addr().String()}
	closed.Close()
	for name, partial := range map[string]string{
		"reset in the headers": "HTTP/1.1 200 OK\r\nContent-Type: applic",
		"reset in the body":    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 400\r\n\r\n{\"PartitionKey\":\"Sal",
	} {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		go func() {
			for {
				conn, err := l.Accept()
				if err != nil {
					return // the listener was closed
				}
				go func() {
					defer conn.Close()
					// Read the whole request, body included, answer part
					// of a response, and reset: SO_LINGER 0 sends RST.
					// Reading the body first matters: a reset while
					// net/http's write loop still sends it races with the
					// SDK's retry rewinding that body (a race inside
					// net/http and azcore the race detector reports).
					_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
					req, err := http.ReadRequest(bufio.NewReader(conn))
					if err == nil {
						_, _ = io.Copy(io.Discard, req.Body)
					}
					_, _ = conn.Write([]byte(partial))
					if tc, ok := conn.(*net.TCPConn); ok {
						_ = tc.SetLinger(0)
					}
				}()
			}
		}()
		out[name] = "http://" + l.Addr().String()
	}
	return out
}

// secretsInTransportFailures sends tablekit's table, batch, queue and blob
// requests to broken endpoints through clients whose URL carries the SAS
// token (and one with the account's SharedKey), with debug logging, and
// scans every error and log line for the secrets. The errors must still
// let errors.As find the transport's own error types.
func secretsInTransportFailures(t *testing.T, account, key, tableName, token string, secrets map[string]string) {
	ctx := t.Context()
	type Employee struct {
		table.Meta
		Name string
	}
	var logs bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	// No retries: the case reads error texts, and a retry rewinds the
	// request body while net/http may still be reading it for the failed
	// attempt (a transport may close the body after RoundTrip returns),
	// which the race detector reports inside net/http and azcore.
	retry := policy.RetryOptions{MaxRetries: -1}
	var texts []string
	for where, endpoint := range brokenEndpoints(t) {
		var errs []error
		keep := func(what string, err error) {
			t.Helper()
			if err == nil {
				t.Fatalf("%s at a %s succeeded", what, where)
			}
			var ue *url.Error
			var ne net.Error
			if !errors.As(err, &ue) && !errors.As(err, &ne) && !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("%s at a %s: the transport's error is not in the chain: %v", what, where, err)
			}
			errs = append(errs, err)
		}
		topts := &aztables.ClientOptions{}
		topts.Retry = retry
		sasClient, err := aztables.NewClientWithNoCredential(endpoint+"/"+account+"/"+tableName+"?"+token, topts)
		if err != nil {
			t.Fatal(err)
		}
		cred, err := aztables.NewSharedKeyCredential(account, key)
		if err != nil {
			t.Fatal(err)
		}
		keyClient, err := aztables.NewClientWithSharedKey(endpoint+"/"+account+"/"+tableName, cred, topts)
		if err != nil {
			t.Fatal(err)
		}
		for cname, client := range map[string]*aztables.Client{"SAS": sasClient, "SharedKey": keyClient} {
			tb, err := table.New[Employee](client, &table.Options{Logger: logger})
			if err != nil {
				t.Fatal(err)
			}
			e := &Employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: "000124", ETag: "W/\"x\""}}
			_, err = tb.Get(ctx, "Sales", "000123", nil)
			keep(cname+" table Get", err)
			keep(cname+" table Add", tb.Add(ctx, e, nil))
			keep(cname+" table Update", tb.Update(ctx, e, nil))
			keep(cname+" table Delete", tb.Delete(ctx, "Sales", "000123", nil))
			_, err = tb.Modify(ctx, "Sales", "000123", func(e *Employee) error { e.Name = "Ben"; return nil }, nil)
			keep(cname+" table Modify", err)
			for _, err := range tb.Query(ctx, nil) {
				keep(cname+" table Query", err)
				break
			}
			_, err = batch.Submit(ctx, client, []batch.Op{batch.Add(e)}, nil)
			keep(cname+" batch Submit", err)
			_, err = batch.NewWriter(client, &batch.WriterOptions{Logger: logger, BaseDelay: time.Millisecond}).
				Write(ctx, slices.Values([]batch.Op{batch.Add(e)}), nil)
			keep(cname+" batch Writer", err)
		}
		qopts := &azqueue.ClientOptions{}
		qopts.Retry = retry
		q, err := azqueue.NewQueueClientWithNoCredential(endpoint+"/"+account+"/orders?"+token, qopts)
		if err != nil {
			t.Fatal(err)
		}
		keep("queue Send", consistency.NewSender(q, nil).Send(ctx, "order.v1", "k", map[string]string{"a": "b"}, nil))
		bopts := &azblob.ClientOptions{}
		bopts.Retry = retry
		blobs, err := azblob.NewClientWithNoCredential(endpoint+"/"+account+"?"+token, bopts)
		if err != nil {
			t.Fatal(err)
		}
		keep("blob PutBlob", blobstore.New(blobs).Put(ctx, "photos", "a.jpg", []byte("x")))
		for _, err := range errs {
			texts = append(texts, err.Error(), fmt.Sprintf("%+v", err))
		}
		t.Logf("%s: %d errors", where, len(errs))
	}
	texts = append(texts, logs.String())
	for what, secret := range secrets {
		for _, text := range texts {
			if strings.Contains(text, secret) {
				t.Errorf("the %s appears in: %.400s", what, text)
			}
		}
	}
	if !strings.Contains(logs.String(), "transaction failed") {
		t.Errorf("the writer logged no failure to scan: %q", logs.String())
	}
}
