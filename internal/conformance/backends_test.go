package conformance

import (
	"context"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/internal/reqcount"
	"github.com/tablekit/tablekit/internal/testenv"
)

// azuriteKey is the emulator's public development key; the fake uses it
// too, so SAS tokens are built the same way for both.
const azuriteKey = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="

func fakeEnv() Env {
	svc := fake.NewTableService(&fake.TableServiceOptions{AccountName: "devstoreaccount1", AccountKey: azuriteKey})
	queues := fake.NewQueueService(nil)
	blobs := fake.NewBlobService(nil)
	return Env{
		Name: "fake",
		Fake: svc,
		SASTable: func(t *testing.T, sas func(account, key, table string) string) (*aztables.Client, *aztables.Client) {
			name := testenv.UniqueName("sas")
			admin := svc.NewClient(name, nil)
			if _, err := admin.CreateTable(t.Context(), nil); err != nil {
				t.Fatal(err)
			}
			opts := &aztables.ClientOptions{}
			opts.Transport = svc
			scoped, err := aztables.NewClientWithNoCredential(fake.URL+name+"?"+sas("devstoreaccount1", azuriteKey, name), opts)
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
			return sc.NewClient(name)
		},
	}
}

func azuriteEnv(t *testing.T) Env {
	cs := testenv.ConnectionString(t)
	var endpoint, key, account string
	for _, kv := range strings.Split(cs, ";") {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "TableEndpoint":
			endpoint = strings.TrimSuffix(v, "/")
		case "AccountKey":
			key = kv[len("AccountKey="):]
		case "AccountName":
			account = v
		}
	}
	return Env{
		Name: "azurite",
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
			sc, err := aztables.NewServiceClientFromConnectionString(cs, c.TableOptions())
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

func TestTableOnFake(t *testing.T)             { RunTable(t, fakeEnv()) }
func TestTableOnAzurite(t *testing.T)          { RunTable(t, azuriteEnv(t)) }
func TestBatchOnFake(t *testing.T)             { RunBatch(t, fakeEnv()) }
func TestBatchOnAzurite(t *testing.T)          { RunBatch(t, azuriteEnv(t)) }
func TestPatternsOnFake(t *testing.T)          { RunPatterns(t, fakeEnv()) }
func TestPatternsOnAzurite(t *testing.T)       { RunPatterns(t, azuriteEnv(t)) }
func TestQueueAndBlobOnFake(t *testing.T)      { RunQueueAndBlob(t, fakeEnv()) }
func TestQueueAndBlobOnAzurite(t *testing.T)   { RunQueueAndBlob(t, azuriteEnv(t)) }
func TestConsistencyOnFake(t *testing.T)       { RunConsistency(t, fakeEnv()) }
func TestConsistencyOnAzurite(t *testing.T)    { RunConsistency(t, azuriteEnv(t)) }
func TestCrossPartitionOnFake(t *testing.T)    { RunCrossPartition(t, fakeEnv()) }
func TestCrossPartitionOnAzurite(t *testing.T) { RunCrossPartition(t, azuriteEnv(t)) }

// services returns how the suites that list and create tables get a
// service client of env's backend.
func services(t *testing.T, env Env) func(t *testing.T, c *reqcount.Counter) *aztables.ServiceClient {
	if env.Fake != nil {
		return func(t *testing.T, c *reqcount.Counter) *aztables.ServiceClient {
			return env.Fake.NewServiceClient(c.TableOptions())
		}
	}
	cs := testenv.ConnectionString(t)
	return func(t *testing.T, c *reqcount.Counter) *aztables.ServiceClient {
		svc, err := aztables.NewServiceClientFromConnectionString(cs, c.TableOptions())
		if err != nil {
			t.Fatal(err)
		}
		return svc
	}
}

func TestShapeOnFake(t *testing.T) {
	env := fakeEnv()
	RunShape(t, env, services(t, env))
}

func TestShapeOnAzurite(t *testing.T) {
	env := azuriteEnv(t)
	RunShape(t, env, services(t, env))
}

func TestSASOnFake(t *testing.T)    { RunSAS(t, fakeEnv()) }
func TestSASOnAzurite(t *testing.T) { RunSAS(t, azuriteEnv(t)) }

func TestBlobPatternsOnFake(t *testing.T)    { RunBlobPatterns(t, fakeEnv()) }
func TestBlobPatternsOnAzurite(t *testing.T) { RunBlobPatterns(t, azuriteEnv(t)) }

func TestLargeBySizeOnFake(t *testing.T)    { RunLargeBySize(t, fakeEnv()) }
func TestLargeBySizeOnAzurite(t *testing.T) { RunLargeBySize(t, azuriteEnv(t)) }

func TestSecretsOnFake(t *testing.T)    { RunSecrets(t, fakeEnv()) }
func TestSecretsOnAzurite(t *testing.T) { RunSecrets(t, azuriteEnv(t)) }

func TestUnderFaultsOnFake(t *testing.T) {
	env := fakeEnv()
	RunUnderFaults(t, env, services(t, env))
}

func TestUnderFaultsOnAzurite(t *testing.T) {
	env := azuriteEnv(t)
	RunUnderFaults(t, env, services(t, env))
}

func TestRawEntityOnFake(t *testing.T)    { RunRawEntity(t, fakeEnv()) }
func TestRawEntityOnAzurite(t *testing.T) { RunRawEntity(t, azuriteEnv(t)) }

func TestPoisonQueueOnFake(t *testing.T)    { RunPoisonQueue(t, fakeEnv()) }
func TestPoisonQueueOnAzurite(t *testing.T) { RunPoisonQueue(t, azuriteEnv(t)) }

func TestRetriesOnFake(t *testing.T)    { RunRetries(t, fakeEnv()) }
func TestRetriesOnAzurite(t *testing.T) { RunRetries(t, azuriteEnv(t)) }

func TestErrorChainOnFake(t *testing.T) {
	env := fakeEnv()
	RunErrorChain(t, env, services(t, env))
}

func TestErrorChainOnAzurite(t *testing.T) {
	env := azuriteEnv(t)
	RunErrorChain(t, env, services(t, env))
}

func TestEncryptionOnFake(t *testing.T)    { RunEncryption(t, fakeEnv()) }
func TestEncryptionOnAzurite(t *testing.T) { RunEncryption(t, azuriteEnv(t)) }

func TestWirePathOnFake(t *testing.T)    { RunWirePath(t, fakeEnv()) }
func TestWirePathOnAzurite(t *testing.T) { RunWirePath(t, azuriteEnv(t)) }
