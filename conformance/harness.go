package conformance

import (
	"context"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/internal/reqcount"
	"github.com/tablekit/tablekit/internal/testenv"
	"github.com/tablekit/tablekit/sas"
	"github.com/tablekit/tablekit/table"
)

// Harness is one backend under test: the Table, Queue and Blob services of
// one account, what the SAS cases need to sign tokens for it, its clock,
// and what it lacks. The cases create every table, queue and container
// they use, under unique names, and delete them when they end.
type Harness struct {
	// Name labels the backend in the output ("not run on <Name>: …").
	Name string
	// TableService, QueueService and BlobService return clients of the
	// account's services built with opts, which carry the policies a case
	// counts or fails requests with: a backend must keep them (a fake
	// sets opts.Transport, an account its credential). A nil field: the
	// suites that need it are reported as not run.
	TableService func(opts *aztables.ClientOptions) (*aztables.ServiceClient, error)
	QueueService func(opts *azqueue.ClientOptions) (*azqueue.ServiceClient, error)
	BlobService  func(opts *azblob.ClientOptions) (*azblob.Client, error)
	// AccountName and AccountKey (base64) sign the SAS tokens; TableURL,
	// QueueURL and BlobURL are the endpoints, ending in '/', that the
	// token clients address. Empty: the SAS suites are not run.
	AccountName, AccountKey     string
	TableURL, QueueURL, BlobURL string
	// TableTransport, QueueTransport and BlobTransport carry the token
	// clients' requests (an in-memory backend's services); nil: the
	// network.
	TableTransport, QueueTransport, BlobTransport policy.Transporter
	// PlainURL turns an endpoint into an http:// one for the protocol
	// case; nil when the backend serves no plain HTTP.
	PlainURL func(endpoint string) string
	// ClientIP is the address the backend sees the tests come from;
	// invalid when unknown (a real account behind NAT): the grant half of
	// the IP-range case is then not run.
	ClientIP netip.Addr
	// PolicyDelay is how long the backend takes to apply a change of
	// stored access policies ("Set Table ACL": up to 30 seconds).
	PolicyDelay time.Duration
	// Advance lets d pass for the backend's clocks: an in-memory backend
	// moves them at once; a real one sleeps (time.Sleep). nil: the
	// time-driven suites are not run.
	Advance func(d time.Duration)
	// Lacks names the documented behaviours the backend does not have,
	// each with the reason (AzuriteLacks for Azurite; nil for the
	// service itself). A case that needs one logs "not run on <Name>:
	// <capability>: <reason>" and asserts what it still can.
	Lacks map[Capability]string
	// Paging is set by a backend whose query pages follow a model it can
	// change per table (the fake); nil for every other backend, whose
	// request counts that depend on paging are checked within a range.
	Paging PagingControl
	// Second is another account of the same backend, for the cases that
	// route between two accounts; nil: they are reported as not run.
	Second *Harness
}

// PagingControl is a backend with a model of how the service cuts query
// pages (after 1,000 entities, where a partition ends in a query that
// spans partitions, when a response's 5-second budget is spent), as the
// fake has: the cases then pin request counts that depend on paging, and
// reach a spent budget without thousands of entities.
type PagingControl interface {
	// Adversarial reports whether pages end more often than the
	// service's (empty pages with a continuation token): request counts
	// are then checked against an upper bound; otherwise they must be the
	// service's exactly.
	Adversarial() bool
	// SetScanCost makes each entity a query of table examines spend d of
	// the service's 5-second budget for one response.
	SetScanCost(table string, d time.Duration)
}

// Supports reports whether the backend has capability c.
func (h Harness) Supports(c Capability) bool {
	_, lacks := h.Lacks[c]
	return !lacks
}

// AzuriteLacks is what Azurite 3.37 (tools/azurite/package-lock.json)
// does otherwise than the documented service, each with the reason: the
// lacks to give AccountHarness for an Azurite connection string. It
// returns a new map on every call.
func AzuriteLacks() map[Capability]string { return azuriteLacks() }

// AccountHarness is the storage account (or Azurite) that
// connectionString names, with the capabilities in lacks missing. Its
// Name is the account's name. tb fails at once if the connection string
// names no account or key.
//
// The connection string is an account's "key1" string from the portal
// (DefaultEndpointsProtocol, AccountName, AccountKey, EndpointSuffix) or
// one with explicit endpoints (TableEndpoint, QueueEndpoint,
// BlobEndpoint) as Azurite's; the key signs the SAS tokens the SAS cases
// make. Advance sleeps. A loopback endpoint is taken for a local
// emulator: plain HTTP, clients on 127.0.0.1, policies applied at once.
func AccountHarness(tb testing.TB, connectionString string, lacks map[Capability]string) Harness {
	tb.Helper()
	cs := connectionString
	var account, key string
	ep := map[string]string{}
	protocol, suffix := "https", "core.windows.net"
	for _, kv := range strings.Split(cs, ";") {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "TableEndpoint", "QueueEndpoint", "BlobEndpoint":
			ep[k] = strings.TrimSuffix(v, "/") + "/"
		case "AccountKey":
			key = kv[len("AccountKey="):]
		case "AccountName":
			account = v
		case "DefaultEndpointsProtocol":
			protocol = v
		case "EndpointSuffix":
			suffix = v
		}
	}
	if account == "" || key == "" {
		tb.Fatalf("conformance: the connection string has no AccountName or AccountKey; the suite needs the account key to sign SAS tokens")
	}
	for k, svc := range map[string]string{"TableEndpoint": "table", "QueueEndpoint": "queue", "BlobEndpoint": "blob"} {
		if ep[k] == "" {
			// A portal connection string names no endpoints: the SDK
			// derives them the same way.
			ep[k] = protocol + "://" + account + "." + svc + "." + suffix + "/"
		}
	}
	h := Harness{
		Name: account, Lacks: lacks, Advance: time.Sleep,
		AccountName: account, AccountKey: key,
		TableURL: ep["TableEndpoint"], QueueURL: ep["QueueEndpoint"], BlobURL: ep["BlobEndpoint"],
		TableService: func(opts *aztables.ClientOptions) (*aztables.ServiceClient, error) {
			// tablekit's wire policy, as clients built as the README shows
			// carry it.
			return aztables.NewServiceClientFromConnectionString(cs, table.ClientOptions(opts))
		},
		QueueService: func(opts *azqueue.ClientOptions) (*azqueue.ServiceClient, error) {
			return azqueue.NewServiceClientFromConnectionString(cs, opts)
		},
		BlobService: func(opts *azblob.ClientOptions) (*azblob.Client, error) {
			return azblob.NewClientFromConnectionString(cs, opts)
		},
		PolicyDelay: 30 * time.Second,
	}
	if strings.HasPrefix(h.TableURL, "http://127.0.0.1") || strings.HasPrefix(h.TableURL, "http://localhost") {
		h.PlainURL = func(u string) string { return u }
		h.ClientIP = netip.MustParseAddr("127.0.0.1")
		h.PolicyDelay = 0
	}
	return h
}

// backend turns a Harness into the constructors the cases call: fresh,
// uniquely named tables, queues and containers, deleted when the test
// ends, on clients whose requests a Counter counts. A constructor whose
// Harness field is nil stays nil, and the suites that need it are
// reported as not run.
func (h Harness) backend() backend {
	b := backend{Name: h.Name, Lacks: h.Lacks, Advance: h.Advance, paging: h.Paging, tables: &sync.Map{}}
	if h.TableService != nil {
		b.NewServiceClient = func(t *testing.T, opts *aztables.ClientOptions) *aztables.ServiceClient {
			sc, err := h.TableService(opts)
			if err != nil {
				t.Fatal(err)
			}
			return sc
		}
		b.NewTable = func(t *testing.T, c *reqcount.Counter) *aztables.Client {
			sc := b.NewServiceClient(t, c.TableOptions())
			name := testenv.UniqueName("conf")
			if _, err := sc.CreateTable(t.Context(), name, nil); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _, _ = sc.DeleteTable(context.Background(), name, nil) })
			c.Reset()
			client := sc.NewClient(name)
			b.nameTable(client, name)
			return client
		}
	}
	if h.TableService != nil && h.AccountName != "" && h.AccountKey != "" && h.TableURL != "" {
		b.SASTable = func(t *testing.T, sign func(account, key, table string) string) (*aztables.Client, *aztables.Client) {
			admin := b.NewTable(t, &reqcount.Counter{})
			name, _ := b.tables.Load(admin)
			opts := &aztables.ClientOptions{}
			opts.Transport = h.TableTransport
			scoped, err := aztables.NewClientWithNoCredential(h.TableURL+name.(string)+"?"+sign(h.AccountName, h.AccountKey, name.(string)), opts)
			if err != nil {
				t.Fatal(err)
			}
			return admin, scoped
		}
	}
	if h.QueueService != nil {
		b.QueueService = func(t *testing.T) *azqueue.ServiceClient {
			svc, err := h.QueueService(nil)
			if err != nil {
				t.Fatal(err)
			}
			return svc
		}
		b.NewQueue = func(t *testing.T, c *reqcount.Counter) *azqueue.QueueClient {
			svc, err := h.QueueService(c.QueueOptions())
			if err != nil {
				t.Fatal(err)
			}
			q := svc.NewQueueClient(strings.ToLower(testenv.UniqueName("conf")))
			if _, err := q.Create(t.Context(), nil); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _, _ = q.Delete(context.Background(), nil) })
			return q
		}
	}
	if h.BlobService != nil {
		b.NewContainer = func(t *testing.T, rc *reqcount.Counter) (*azblob.Client, string) {
			c, err := h.BlobService(rc.BlobOptions())
			if err != nil {
				t.Fatal(err)
			}
			name := strings.ToLower(testenv.UniqueName("conf"))
			if _, err := c.CreateContainer(t.Context(), name, nil); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _, _ = c.DeleteContainer(context.Background(), name, nil) })
			return c, name
		}
	}
	return b
}

// sasBackend is the account as the SAS builder cases see it; ok is false
// when the Harness lacks a field they need (named in missing).
func (h Harness) sasBackend(t *testing.T) (b sasBackend, missing []string) {
	for _, f := range []struct {
		name string
		set  bool
	}{
		{"Harness.TableService", h.TableService != nil},
		{"Harness.QueueService", h.QueueService != nil},
		{"Harness.BlobService", h.BlobService != nil},
		{"Harness.AccountName", h.AccountName != ""},
		{"Harness.AccountKey", h.AccountKey != ""},
		{"Harness.TableURL", h.TableURL != ""},
		{"Harness.QueueURL", h.QueueURL != ""},
		{"Harness.BlobURL", h.BlobURL != ""},
	} {
		if !f.set {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return sasBackend{}, missing
	}
	cred, err := sas.NewCredential(h.AccountName, h.AccountKey)
	if err != nil {
		t.Fatalf("conformance: Harness.AccountName and AccountKey: %v", err)
	}
	return sasBackend{
		Name: h.Name, Lacks: h.Lacks, Credential: cred,
		TableURL: h.TableURL, QueueURL: h.QueueURL, BlobURL: h.BlobURL,
		PlainURL: h.PlainURL, ClientIP: h.ClientIP, PolicyDelay: h.PolicyDelay,
		Tables: func(o *aztables.ClientOptions) *aztables.ServiceClient {
			c, err := h.TableService(o)
			if err != nil {
				t.Fatal(err)
			}
			return c
		},
		Queues: func(o *azqueue.ClientOptions) *azqueue.ServiceClient {
			c, err := h.QueueService(o)
			if err != nil {
				t.Fatal(err)
			}
			return c
		},
		Blobs: func(o *azblob.ClientOptions) *azblob.Client {
			c, err := h.BlobService(o)
			if err != nil {
				t.Fatal(err)
			}
			return c
		},
		TableTransport: h.TableTransport, QueueTransport: h.QueueTransport, BlobTransport: h.BlobTransport,
	}, nil
}
