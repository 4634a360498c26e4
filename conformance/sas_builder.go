package conformance

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/internal/reqcount"
	"github.com/tablekit/tablekit/internal/testenv"
	"github.com/tablekit/tablekit/sas"
	"github.com/tablekit/tablekit/table"
)

// sasBackend is an account the SAS builder cases (sasBackend.run) sign
// tokens for: its key, its three endpoints, and clients with the key.
type sasBackend struct {
	// Name labels the output; Lacks lists the capabilities it lacks.
	Name  string
	Lacks map[Capability]string
	// Credential signs the tokens.
	Credential sas.Credential
	// TableURL, QueueURL and BlobURL are the endpoints, ending in '/'.
	TableURL, QueueURL, BlobURL string
	// PlainURL turns an endpoint into an http:// one for the protocol
	// case; nil when the backend has none.
	PlainURL func(endpoint string) string
	// ClientIP is the address the backend sees the tests come from
	// (loopback for the fake and a local Azurite); invalid when unknown,
	// as for a real account behind NAT: the grant half of the IP case is
	// then not run.
	ClientIP netip.Addr
	// PolicyDelay is how long the backend takes to apply a change of
	// stored access policies ("Set Table ACL": up to 30 seconds).
	PolicyDelay time.Duration
	// Tables, Queues and Blobs are clients with the account key; opts may
	// count their requests.
	Tables func(opts *aztables.ClientOptions) *aztables.ServiceClient
	Queues func(opts *azqueue.ClientOptions) *azqueue.ServiceClient
	Blobs  func(opts *azblob.ClientOptions) *azblob.Client
	// Transport carries the token clients' requests (the fake's
	// services); nil: the network.
	TableTransport, QueueTransport, BlobTransport policy.Transporter
}

func (b sasBackend) env() backend { return backend{Name: b.Name, Lacks: b.Lacks} }

func (b sasBackend) tableClient(t *testing.T, base, name, token string) *aztables.Client {
	o := &aztables.ClientOptions{}
	o.Transport = b.TableTransport
	o.Retry.MaxRetries = -1 // a 403 is final; no retry noise
	c, err := aztables.NewClientWithNoCredential(base+name+"?"+token, o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (b sasBackend) queueClient(t *testing.T, name, token string) *azqueue.QueueClient {
	o := &azqueue.ClientOptions{}
	o.Transport = b.QueueTransport
	o.Retry.MaxRetries = -1
	c, err := azqueue.NewQueueClientWithNoCredential(b.QueueURL+name+"?"+token, o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (b sasBackend) blobOptions() *azblob.ClientOptions {
	o := &azblob.ClientOptions{}
	o.Transport = b.BlobTransport
	o.Retry.MaxRetries = -1
	return o
}

func (b sasBackend) containerClient(t *testing.T, name, token string) *container.Client {
	c, err := container.NewClientWithNoCredential(b.BlobURL+name+"?"+token, (*container.ClientOptions)(b.blobOptions()))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (b sasBackend) blobClient(t *testing.T, cont, name, token string) *blockblob.Client {
	c, err := blockblob.NewClientWithNoCredential(b.BlobURL+cont+"/"+name+"?"+token, (*blockblob.ClientOptions)(b.blobOptions()))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (b sasBackend) newTable(t *testing.T) (*aztables.Client, string) {
	svc := b.Tables(nil)
	name := testenv.UniqueName("sasb")
	if _, err := svc.CreateTable(t.Context(), name, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = svc.DeleteTable(context.Background(), name, nil) })
	return svc.NewClient(name), name
}

func (b sasBackend) newQueue(t *testing.T) (*azqueue.QueueClient, string) {
	name := strings.ToLower(testenv.UniqueName("sasb"))
	q := b.Queues(nil).NewQueueClient(name)
	if _, err := q.Create(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = q.Delete(context.Background(), nil) })
	return q, name
}

func (b sasBackend) newContainer(t *testing.T) (*container.Client, string) {
	name := strings.ToLower(testenv.UniqueName("sasb"))
	c := b.Blobs(nil).ServiceClient().NewContainerClient(name)
	if _, err := c.Create(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = c.Delete(context.Background(), nil) })
	return c, name
}

func (b sasBackend) sign(t *testing.T, v interface {
	Sign(sas.Credential) (string, error)
}) string {
	t.Helper()
	tok, err := v.Sign(b.Credential)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// code is a response error's status and code (0, "" for nil).
func code(err error) (int, string) {
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return re.StatusCode, re.ErrorCode
	}
	if err != nil {
		return -1, err.Error()
	}
	return 0, ""
}

// refused asserts the documented 403 code when the backend has the
// capability, and otherwise logs the backend's own answer (and fails if
// the backend now answers as documented, so that its Lacks entry goes).
func (b sasBackend) refused(t *testing.T, c Capability, err error, wantCode string) {
	t.Helper()
	status, got := code(err)
	if c == "" || b.env().Has(t, c) {
		if status != 403 || got != wantCode {
			t.Fatalf("got %d %s (%v), want 403 %s", status, got, err, wantCode)
		}
		return
	}
	if status == 403 && got == wantCode {
		t.Errorf("%s now answers 403 %s as documented: drop its Lacks entry for %q", b.Name, wantCode, c)
	}
	t.Logf("%s answers %d %s where the service answers 403 %s", b.Name, status, got, wantCode)
}

// refusedCode is refused for a backend that refuses as the service does
// but with another code: lacking c, it still must answer 403.
func (b sasBackend) refusedCode(t *testing.T, c Capability, err error, wantCode string) {
	t.Helper()
	if status, got := code(err); status != 403 {
		t.Fatalf("got %d %s (%v), want 403 %s", status, got, err, wantCode)
	}
	b.refused(t, c, err, wantCode)
}

// run runs the sas package's tokens against the backend: the grant and
// the refusal outside it for a table, a queue, a container, a blob and the
// account; stored access policies created, listed and revoked (revocation
// refuses the tokens that reference them); the IP range and the protocol.
// RunConformanceTests runs it as the suite SASBuilder, on the Harness's
// key and endpoints.
func (b sasBackend) run(t *testing.T) {
	ctx := t.Context()
	hour := time.Now().Add(time.Hour)

	t.Run("table: grant and refusal", func(t *testing.T) {
		admin, name := b.newTable(t)
		if _, err := admin.AddEntity(ctx, []byte(`{"PartitionKey":"alice","RowKey":"1"}`), nil); err != nil {
			t.Fatal(err)
		}
		tok := b.sign(t, sas.Table{Table: name, Permissions: sas.TablePermissions{Read: true, Add: true}, Expiry: hour})
		c := b.tableClient(t, b.TableURL, name, tok)
		if _, err := c.GetEntity(ctx, "alice", "1", nil); err != nil {
			t.Fatalf("read with r: %v", err)
		}
		if _, err := c.AddEntity(ctx, []byte(`{"PartitionKey":"alice","RowKey":"2"}`), nil); err != nil {
			t.Fatalf("add with a: %v", err)
		}
		_, err := c.DeleteEntity(ctx, "alice", "1", nil)
		b.refused(t, "", err, "AuthorizationPermissionMismatch")
		// The token names its table: another table's URL is refused.
		_, other := b.newTable(t)
		_, err = b.tableClient(t, b.TableURL, other, tok).GetEntity(ctx, "alice", "1", nil)
		if status, _ := code(err); status != 403 {
			t.Fatalf("a token used on another table: %v, want 403", err)
		}
	})

	t.Run("queue: grant and refusal", func(t *testing.T) {
		_, name := b.newQueue(t)
		tok := b.sign(t, sas.Queue{Queue: name, Permissions: sas.QueuePermissions{Add: true, Read: true}, Expiry: hour})
		q := b.queueClient(t, name, tok)
		if _, err := q.EnqueueMessage(ctx, "hello", nil); err != nil {
			t.Fatalf("enqueue with a: %v", err)
		}
		if resp, err := q.PeekMessages(ctx, nil); err != nil || len(resp.Messages) != 1 {
			t.Fatalf("peek with r: %v", err)
		}
		_, err := q.DequeueMessage(ctx, nil)
		b.refused(t, "", err, "AuthorizationPermissionMismatch")
		// The signature covers the queue's name: another queue's URL
		// does not authenticate.
		_, other := b.newQueue(t)
		_, err = b.queueClient(t, other, tok).EnqueueMessage(ctx, "x", nil)
		b.refused(t, "", err, "AuthenticationFailed")
	})

	t.Run("container and blob: grant and refusal", func(t *testing.T) {
		admin, name := b.newContainer(t)
		if _, err := admin.NewBlockBlobClient("a.txt").UploadBuffer(ctx, []byte("a"), nil); err != nil {
			t.Fatal(err)
		}
		if _, err := admin.NewBlockBlobClient("b.txt").UploadBuffer(ctx, []byte("b"), nil); err != nil {
			t.Fatal(err)
		}
		ctok := b.sign(t, sas.Blob{Container: name, Permissions: sas.BlobPermissions{Read: true, List: true}, Expiry: hour})
		if page, err := b.containerClient(t, name, ctok).NewListBlobsFlatPager(nil).NextPage(ctx); err != nil || len(page.Segment.BlobItems) != 2 {
			t.Fatalf("list with l: %v", err)
		}
		if _, err := b.blobClient(t, name, "a.txt", ctok).DownloadStream(ctx, nil); err != nil {
			t.Fatalf("read with a container token: %v", err)
		}
		_, err := b.blobClient(t, name, "c.txt", ctok).UploadBuffer(ctx, []byte("c"), nil)
		b.refused(t, "", err, "AuthorizationPermissionMismatch")

		btok := b.sign(t, sas.Blob{Container: name, Blob: "a.txt", Permissions: sas.BlobPermissions{Read: true}, Expiry: hour})
		if _, err := b.blobClient(t, name, "a.txt", btok).DownloadStream(ctx, nil); err != nil {
			t.Fatalf("read with the blob's token: %v", err)
		}
		// A blob token signs the blob's name: another blob does not authenticate.
		_, err = b.blobClient(t, name, "b.txt", btok).DownloadStream(ctx, nil)
		b.refusedCode(t, CapSASAuthenticationFailed, err, "AuthenticationFailed")
	})

	t.Run("account: grant and refusal", func(t *testing.T) {
		admin, name := b.newTable(t)
		if _, err := admin.AddEntity(ctx, []byte(`{"PartitionKey":"p","RowKey":"1"}`), nil); err != nil {
			t.Fatal(err)
		}
		_, qname := b.newQueue(t)
		tok := b.sign(t, sas.Account{Services: sas.Services{Table: true, Blob: true}, ResourceTypes: sas.ResourceTypes{Object: true},
			Permissions: sas.AccountPermissions{Read: true}, Expiry: hour})
		c := b.tableClient(t, b.TableURL, name, tok)
		if _, err := c.GetEntity(ctx, "p", "1", nil); err != nil {
			t.Fatalf("read an entity with ss=bt srt=o sp=r: %v", err)
		}
		_, err := c.AddEntity(ctx, []byte(`{"PartitionKey":"p","RowKey":"2"}`), nil)
		b.refused(t, "", err, "AuthorizationPermissionMismatch")
		_, err = b.queueClient(t, qname, tok).PeekMessages(ctx, nil)
		b.refused(t, "", err, "AuthorizationServiceMismatch")
		o := &aztables.ClientOptions{}
		o.Transport = b.TableTransport
		o.Retry.MaxRetries = -1
		svc, err := aztables.NewServiceClientWithNoCredential(b.TableURL+"?"+tok, o)
		if err != nil {
			t.Fatal(err)
		}
		_, err = svc.CreateTable(ctx, testenv.UniqueName("sasno"), nil)
		b.refused(t, "", err, "AuthorizationResourceTypeMismatch")
		// Creating a table is a container-level call that takes w.
		ctok := b.sign(t, sas.Account{Services: sas.Services{Table: true}, ResourceTypes: sas.ResourceTypes{Container: true},
			Permissions: sas.AccountPermissions{Write: true}, Expiry: hour})
		csvc, err := aztables.NewServiceClientWithNoCredential(b.TableURL+"?"+ctok, o)
		if err != nil {
			t.Fatal(err)
		}
		made := testenv.UniqueName("sasyes")
		if _, err := csvc.CreateTable(ctx, made, nil); err != nil {
			t.Fatalf("create a table with srt=c sp=w: %v", err)
		}
		t.Cleanup(func() { _, _ = b.Tables(nil).DeleteTable(context.Background(), made, nil) })
		_, err = csvc.NewClient(made).AddEntity(ctx, []byte(`{"PartitionKey":"p","RowKey":"1"}`), nil)
		b.refused(t, "", err, "AuthorizationResourceTypeMismatch")
	})

	t.Run("stored access policies: create, list, use, revoke", func(t *testing.T) {
		admin, name := b.newTable(t)
		if _, err := admin.AddEntity(ctx, []byte(`{"PartitionKey":"p","RowKey":"1"}`), nil); err != nil {
			t.Fatal(err)
		}
		var rc reqcount.Counter
		pol := sas.NewTablePolicies(b.Tables(rc.TableOptions()).NewClient(name))
		// A signed identifier has at most 64 characters.
		if err := pol.Create(ctx, sas.Policy[sas.TablePermissions]{ID: strings.Repeat("x", 65)}, nil); !errors.Is(err, table.ErrInvalidValue) || rc.N() != 0 {
			t.Fatalf("a 65-character ID: %v after %d requests, want ErrInvalidValue before any", err, rc.N())
		}
		if err := pol.Create(ctx, sas.Policy[sas.TablePermissions]{ID: "nostart", Expiry: hour, Permissions: sas.TablePermissions{Read: true}}, nil); !errors.Is(err, table.ErrInvalidValue) || rc.N() != 0 {
			t.Fatalf("a table policy without Start: %v after %d requests, want ErrInvalidValue before any", err, rc.N())
		}
		if err := pol.Create(ctx, sas.Policy[sas.TablePermissions]{ID: "readers", Start: time.Now().Add(-time.Minute), Expiry: hour, Permissions: sas.TablePermissions{Read: true}}, nil); err != nil {
			t.Fatal(err)
		}
		list, err := pol.List(ctx, nil)
		if err != nil || len(list) != 1 || list[0].ID != "readers" || !list[0].Permissions.Read || list[0].Permissions.Add || !list[0].Expiry.Equal(hour.UTC().Truncate(time.Second)) {
			t.Fatalf("list: %+v, %v", list, err)
		}
		time.Sleep(b.PolicyDelay)
		// The token names only the policy: permissions and expiry are the policy's.
		c := b.tableClient(t, b.TableURL, name, b.sign(t, sas.Table{Table: name, Identifier: "readers"}))
		if _, err := c.GetEntity(ctx, "p", "1", nil); err != nil {
			t.Fatalf("read through the policy: %v", err)
		}
		_, err = c.AddEntity(ctx, []byte(`{"PartitionKey":"p","RowKey":"2"}`), nil)
		b.refused(t, "", err, "AuthorizationPermissionMismatch")
		for i := 2; i <= 5; i++ { // a resource holds at most five policies
			if err := pol.Create(ctx, sas.Policy[sas.TablePermissions]{ID: "p" + string(rune('0'+i)), Start: time.Now(), Expiry: hour, Permissions: sas.TablePermissions{Read: true}}, nil); err != nil {
				t.Fatal(err)
			}
		}
		rc.Reset()
		if err := pol.Create(ctx, sas.Policy[sas.TablePermissions]{ID: "sixth", Start: time.Now(), Expiry: hour, Permissions: sas.TablePermissions{Read: true}}, nil); !errors.Is(err, sas.ErrTooManyPolicies) || rc.N() != 1 {
			t.Fatalf("a sixth policy: %v after %d requests, want ErrTooManyPolicies after the one read", err, rc.N())
		}
		if err := pol.Create(ctx, sas.Policy[sas.TablePermissions]{ID: "readers", Start: time.Now(), Expiry: hour, Permissions: sas.TablePermissions{Read: true}}, nil); !errors.Is(err, sas.ErrPolicyExists) {
			t.Fatalf("the same ID again: %v", err)
		}
		if ok, err := pol.Revoke(ctx, "readers", nil); !ok || err != nil {
			t.Fatalf("revoke: %v, %v", ok, err)
		}
		time.Sleep(b.PolicyDelay)
		_, err = c.GetEntity(ctx, "p", "1", nil)
		b.refusedCode(t, CapSASAuthenticationFailed, err, "AuthenticationFailed")
		if ok, err := pol.Revoke(ctx, "readers", nil); ok || err != nil {
			t.Fatalf("revoke again: %v, %v", ok, err)
		}
	})

	t.Run("stored access policies: queue and container", func(t *testing.T) {
		qadmin, qname := b.newQueue(t)
		qpol := sas.NewQueuePolicies(qadmin)
		if err := qpol.Create(ctx, sas.Policy[sas.QueuePermissions]{ID: "senders", Start: time.Now().Add(-time.Minute), Expiry: hour, Permissions: sas.QueuePermissions{Add: true}}, nil); err != nil {
			t.Fatal(err)
		}
		cadmin, cname := b.newContainer(t)
		cpol := sas.NewContainerPolicies(cadmin)
		if err := cpol.Create(ctx, sas.Policy[sas.BlobPermissions]{ID: "readers", Expiry: hour, Permissions: sas.BlobPermissions{Read: true, List: true}}, nil); err != nil {
			t.Fatal(err)
		}
		if ql, err := qpol.List(ctx, nil); err != nil || len(ql) != 1 || !ql[0].Permissions.Add || ql[0].Start.IsZero() {
			t.Fatalf("queue policies: %+v, %v", ql, err)
		}
		if cl, err := cpol.List(ctx, nil); err != nil || len(cl) != 1 || !cl[0].Permissions.List {
			t.Fatalf("container policies: %+v, %v", cl, err)
		}
		time.Sleep(b.PolicyDelay)
		q := b.queueClient(t, qname, b.sign(t, sas.Queue{Queue: qname, Identifier: "senders"}))
		if _, err := q.EnqueueMessage(ctx, "m", nil); err != nil {
			t.Fatalf("enqueue through the policy: %v", err)
		}
		ct := b.containerClient(t, cname, b.sign(t, sas.Blob{Container: cname, Identifier: "readers"}))
		if _, err := ct.NewListBlobsFlatPager(nil).NextPage(ctx); err != nil {
			t.Fatalf("list through the policy: %v", err)
		}
		if _, err := qpol.Revoke(ctx, "senders", nil); err != nil {
			t.Fatal(err)
		}
		if _, err := cpol.Revoke(ctx, "readers", nil); err != nil {
			t.Fatal(err)
		}
		time.Sleep(b.PolicyDelay)
		_, err := q.EnqueueMessage(ctx, "m", nil)
		b.refused(t, "", err, "AuthenticationFailed")
		_, err = ct.NewListBlobsFlatPager(nil).NextPage(ctx)
		b.refusedCode(t, CapSASAuthenticationFailed, err, "AuthenticationFailed")
	})

	t.Run("IP range", func(t *testing.T) {
		_, name := b.newQueue(t)
		if b.ClientIP.IsValid() {
			in := sas.IPRange{Start: b.ClientIP}
			if _, err := b.queueClient(t, name, b.sign(t, sas.Queue{Queue: name, Permissions: sas.QueuePermissions{Add: true}, Expiry: hour, IPRange: in})).EnqueueMessage(ctx, "m", nil); err != nil {
				t.Fatalf("a token for %s from %s: %v", in, b.ClientIP, err)
			}
		} else {
			t.Logf("not run on %s: the address the service sees is not known", b.Name)
		}
		// 192.0.2.0/24 is TEST-NET-1 (RFC 5737): no client comes from it.
		out := sas.IPRange{Start: netip.MustParseAddr("192.0.2.1"), End: netip.MustParseAddr("192.0.2.9")}
		_, err := b.queueClient(t, name, b.sign(t, sas.Queue{Queue: name, Permissions: sas.QueuePermissions{Add: true}, Expiry: hour, IPRange: out})).EnqueueMessage(ctx, "m", nil)
		b.refused(t, CapSASSourceIP, err, "AuthorizationSourceIPMismatch")
	})

	t.Run("protocol", func(t *testing.T) {
		admin, name := b.newTable(t)
		if _, err := admin.AddEntity(ctx, []byte(`{"PartitionKey":"p","RowKey":"1"}`), nil); err != nil {
			t.Fatal(err)
		}
		if b.PlainURL == nil {
			t.Logf("not run on %s: it has no http:// endpoint", b.Name)
			return
		}
		plain := b.PlainURL(b.TableURL)
		both := b.sign(t, sas.Table{Table: name, Permissions: sas.TablePermissions{Read: true}, Expiry: hour})
		if _, err := b.tableClient(t, plain, name, both).GetEntity(ctx, "p", "1", nil); err != nil {
			t.Fatalf("no spr (HTTPS and HTTP) over http: %v", err)
		}
		if strings.HasPrefix(b.TableURL, "https://") {
			only := b.sign(t, sas.Table{Table: name, Permissions: sas.TablePermissions{Read: true}, Expiry: hour, HTTPSOnly: true})
			if _, err := b.tableClient(t, b.TableURL, name, only).GetEntity(ctx, "p", "1", nil); err != nil {
				t.Fatalf("spr=https over https: %v", err)
			}
		}
		only := b.sign(t, sas.Table{Table: name, Permissions: sas.TablePermissions{Read: true}, Expiry: hour, HTTPSOnly: true})
		_, err := b.tableClient(t, plain, name, only).GetEntity(ctx, "p", "1", nil)
		b.refused(t, CapSASProtocol, err, "AuthorizationProtocolMismatch")
	})
}
