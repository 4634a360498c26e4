package conformance

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/table"
)

// RunSecrets makes tablekit fail in every way it can through a client that
// carries a SAS token, logging to a buffer, and scans every error text and
// log line for the account key and the token's signature.
func RunSecrets(t *testing.T, env Env) {
	ctx := t.Context()
	var key, token string
	admin, scoped := env.SASTable(t, func(account, k, name string) string {
		tok, err := patterns.TableSAS(account, k, name, patterns.SASPermissions{Read: true}, time.Time{}, time.Now().Add(time.Hour), patterns.KeyRange{})
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
	_, err = batch.Submit(ctx, scoped, batch.Add(&Employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: "000125"}}))
	keep(err)
	_, err = batch.NewWriter(scoped, &batch.WriterOptions{Logger: logger, MaxAttempts: 2, BaseDelay: time.Millisecond}).
		Write(ctx, batch.Slice([]batch.Op{batch.Add(&Employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: "000126"}})}))
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
}
