package integration

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/internal/reqcount"
	"github.com/tablekit/tablekit/internal/testenv"
	"github.com/tablekit/tablekit/table"
)

// Counter counts the requests of the clients built from its options
// (TableOptions, QueueOptions, BlobOptions), retries included; the zero
// value is ready to use. Env's constructors take one so that the cases
// can assert how many requests an operation costs: a backend of your own
// must build every client it returns from the Counter's options.
type Counter = reqcount.Counter

// azuriteKey is the emulator's public development key; the fake uses it
// too, so SAS tokens are built the same way for both.
const azuriteKey = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="

// FakeEnv is the in-memory backend of package fake: a table, a queue and a
// blob service on one clock, which Advance moves forward at once, so
// time-driven cases do not sleep. It lacks no capability. Its tables page
// as the service does (the zero fake.Paging: a page ends after 1,000
// entities, where a partition ends in a query that spans partitions, or
// when a long scan runs out of its 5-second budget), so a request count a
// case asserts on it is the service's; AdversarialFakeEnv adds the empty
// pages the service may send, to prove the loops right.
func FakeEnv() Env { return fakeEnvPaging("fake", fake.Paging{}, false) }

// AdversarialFakeEnv is FakeEnv with every table paged as
// fake.Paging{EmptyPageEvery: 3} says: every third response is an empty page with
// a continuation token, a point lookup's included. The paging-sensitive
// suites run on it too, so that every loop over pages is proved to follow
// tokens whatever a page holds; a request count asserted there may be
// higher than the service's, never lower.
func AdversarialFakeEnv() Env {
	return fakeEnvPaging("fake (adversarial paging)", fake.Paging{EmptyPageEvery: 3}, true)
}

func fakeEnvPaging(name string, paging fake.Paging, adversarial bool) Env {
	// One clock for the three services: real time plus what Advance added,
	// so cases that wait for real time still work and time-driven cases
	// need not sleep.
	var skew atomic.Int64
	now := func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	svc := fake.NewTableService(&fake.TableServiceOptions{AccountName: "devstoreaccount1", AccountKey: azuriteKey, Now: now, Paging: &paging})
	queues := fake.NewQueueService(&fake.QueueServiceOptions{Now: now})
	blobs := fake.NewBlobService(&fake.BlobServiceOptions{Now: now})
	tables := &sync.Map{}
	return Env{
		Name:        name,
		Fake:        svc,
		tables:      tables,
		adversarial: adversarial,
		Advance:     func(d time.Duration) { skew.Add(int64(d)) },
		NewServiceClient: func(t *testing.T, opts *aztables.ClientOptions) *aztables.ServiceClient {
			return svc.NewServiceClient(opts)
		},
		QueueService: func(t *testing.T) *azqueue.ServiceClient {
			return queues.NewServiceClient(nil)
		},
		SASTable: func(t *testing.T, sas func(account, key, table string) string) (*aztables.Client, *aztables.Client) {
			name := testenv.UniqueName("sas")
			admin := svc.NewClient(name, nil)
			if _, err := admin.CreateTable(t.Context(), nil); err != nil {
				t.Fatal(err)
			}
			opts := &aztables.ClientOptions{}
			opts.Transport = svc
			scoped, err := aztables.NewClientWithNoCredential(svc.URL()+name+"?"+sas("devstoreaccount1", azuriteKey, name), opts)
			if err != nil {
				t.Fatal(err)
			}
			return admin, scoped
		},
		NewQueue: func(t *testing.T, c *reqcount.Counter) *azqueue.QueueClient {
			q := queues.NewQueueClient(strings.ToLower(testenv.UniqueName("conf")), c.QueueOptions())
			if _, err := q.Create(t.Context(), nil); err != nil {
				t.Fatal(err)
			}
			return q
		},
		NewContainer: func(t *testing.T, rc *reqcount.Counter) (*azblob.Client, string) {
			c := blobs.NewClient(rc.BlobOptions())
			name := strings.ToLower(testenv.UniqueName("conf"))
			if _, err := c.CreateContainer(t.Context(), name, nil); err != nil {
				t.Fatal(err)
			}
			return c, name
		},
		NewTable: func(t *testing.T, c *reqcount.Counter) *aztables.Client {
			sc := svc.NewServiceClient(c.TableOptions())
			name := testenv.UniqueName("conf")
			if _, err := sc.CreateTable(t.Context(), name, nil); err != nil {
				t.Fatal(err)
			}
			c.Reset()
			client := sc.NewClient(name)
			tables.Store(client, name)
			return client
		},
	}
}

// AccountEnv is the storage account (or Azurite) that connectionString
// names, with the capabilities in lacks missing (nil: the documented
// service, lacking none; AzuriteLacks for Azurite). Its Name is the
// account's name; set Env.Name to label the output otherwise. Every table,
// queue and container a case creates has a unique name and is deleted when
// the case ends; Advance sleeps. tb fails at once if the connection string
// names no account or key.
//
// The connection string is an account's "key1" string from the portal
// (DefaultEndpointsProtocol, AccountName, AccountKey, EndpointSuffix) or
// one with explicit endpoints (TableEndpoint, QueueEndpoint, BlobEndpoint)
// as Azurite's; the key signs the SAS tokens the SAS cases make.
func AccountEnv(tb testing.TB, connectionString string, lacks map[Capability]string) Env {
	tb.Helper()
	cs := connectionString
	var endpoint, key, account string
	protocol, suffix := "https", "core.windows.net"
	for _, kv := range strings.Split(cs, ";") {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "TableEndpoint":
			endpoint = strings.TrimSuffix(v, "/")
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
	if endpoint == "" {
		// A portal connection string names no endpoints: the SDK derives
		// them the same way.
		endpoint = protocol + "://" + account + ".table." + suffix
	}
	return Env{
		Name:    account,
		Lacks:   lacks,
		Advance: time.Sleep,
		NewServiceClient: func(t *testing.T, opts *aztables.ClientOptions) *aztables.ServiceClient {
			svc, err := aztables.NewServiceClientFromConnectionString(cs, table.ClientOptions(opts))
			if err != nil {
				t.Fatal(err)
			}
			return svc
		},
		QueueService: func(t *testing.T) *azqueue.ServiceClient {
			svc, err := azqueue.NewServiceClientFromConnectionString(cs, nil)
			if err != nil {
				t.Fatal(err)
			}
			return svc
		},
		SASTable: func(t *testing.T, sas func(account, key, table string) string) (*aztables.Client, *aztables.Client) {
			svc, err := aztables.NewServiceClientFromConnectionString(cs, nil)
			if err != nil {
				t.Fatal(err)
			}
			name := testenv.UniqueName("sas")
			if _, err := svc.CreateTable(t.Context(), name, nil); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _, _ = svc.DeleteTable(context.Background(), name, nil) })
			scoped, err := aztables.NewClientWithNoCredential(endpoint+"/"+name+"?"+sas(account, key, name), nil)
			if err != nil {
				t.Fatal(err)
			}
			return svc.NewClient(name), scoped
		},
		NewQueue: func(t *testing.T, c *reqcount.Counter) *azqueue.QueueClient {
			q, err := azqueue.NewQueueClientFromConnectionString(cs, strings.ToLower(testenv.UniqueName("conf")), c.QueueOptions())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := q.Create(t.Context(), nil); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _, _ = q.Delete(context.Background(), nil) })
			return q
		},
		NewContainer: func(t *testing.T, rc *reqcount.Counter) (*azblob.Client, string) {
			c, err := azblob.NewClientFromConnectionString(cs, rc.BlobOptions())
			if err != nil {
				t.Fatal(err)
			}
			name := strings.ToLower(testenv.UniqueName("conf"))
			if _, err := c.CreateContainer(t.Context(), name, nil); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _, _ = c.DeleteContainer(context.Background(), name, nil) })
			return c, name
		},
		NewTable: func(t *testing.T, c *reqcount.Counter) *aztables.Client {
			sc, err := aztables.NewServiceClientFromConnectionString(cs, table.ClientOptions(c.TableOptions()))
			if err != nil {
				t.Fatal(err)
			}
			name := testenv.UniqueName("conf")
			if _, err := sc.CreateTable(t.Context(), name, nil); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _, _ = sc.DeleteTable(context.Background(), strings.ToLower(name), nil) })
			c.Reset()
			return sc.NewClient(name)
		},
	}
}
