package conformance

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

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
	// One clock for the three services: real time plus what Advance added,
	// so cases that wait for real time still work and time-driven cases
	// need not sleep.
	var skew atomic.Int64
	now := func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	svc := fake.NewTableService(&fake.TableServiceOptions{AccountName: "devstoreaccount1", AccountKey: azuriteKey, Now: now})
	queues := fake.NewQueueService(&fake.QueueServiceOptions{Now: now})
	blobs := fake.NewBlobService(&fake.BlobServiceOptions{Now: now})
	return Env{
		Name:    "fake",
		Fake:    svc,
		Advance: func(d time.Duration) { skew.Add(int64(d)) },
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
		Name:    "azurite",
		Lacks:   azuriteLacks(),
		Advance: time.Sleep,
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

func TestWorkerOnFake(t *testing.T)       { RunWorker(t, fakeEnv()) }
func TestWorkerOnAzurite(t *testing.T)    { RunWorker(t, azuriteEnv(t)) }
func TestOwnershipOnFake(t *testing.T)    { RunOwnership(t, fakeEnv()) }
func TestOwnershipOnAzurite(t *testing.T) { RunOwnership(t, azuriteEnv(t)) }

func TestQueueFidelityOnFake(t *testing.T)    { RunQueueFidelity(t, fakeEnv()) }
func TestQueueFidelityOnAzurite(t *testing.T) { RunQueueFidelity(t, azuriteEnv(t)) }

func TestBlobFidelityOnFake(t *testing.T)    { RunBlobFidelity(t, fakeEnv()) }
func TestBlobFidelityOnAzurite(t *testing.T) { RunBlobFidelity(t, azuriteEnv(t)) }

func TestBeingDeletedOnFake(t *testing.T)    { RunBeingDeleted(t, fakeEnv()) }
func TestBeingDeletedOnAzurite(t *testing.T) { RunBeingDeleted(t, azuriteEnv(t)) }

func TestPayloadsOnFake(t *testing.T)    { RunPayloads(t, fakeEnv()) }
func TestPayloadsOnAzurite(t *testing.T) { RunPayloads(t, azuriteEnv(t)) }

func TestFilterFidelityOnFake(t *testing.T)    { RunFilterFidelity(t, fakeEnv()) }
func TestFilterFidelityOnAzurite(t *testing.T) { RunFilterFidelity(t, azuriteEnv(t)) }

// TestFilterDifferentialFakeVsAzurite runs 1,000 random filters against
// the fake and Azurite side by side.
func TestFilterDifferentialFakeVsAzurite(t *testing.T) {
	RunFilterDifferential(t, fakeEnv(), azuriteEnv(t), 1000, 2026)
}

func TestLargeEntityRacesOnFake(t *testing.T)    { RunLargeEntityRaces(t, fakeEnv()) }
func TestLargeEntityRacesOnAzurite(t *testing.T) { RunLargeEntityRaces(t, azuriteEnv(t)) }

func TestLargeEntityUnderFaultsOnFake(t *testing.T) {
	env := fakeEnv()
	RunLargeEntityUnderFaults(t, env, services(t, env))
}

func TestLargeEntityUnderFaultsOnAzurite(t *testing.T) {
	env := azuriteEnv(t)
	RunLargeEntityUnderFaults(t, env, services(t, env))
}

func TestMoverVersionsOnFake(t *testing.T)    { RunMoverVersions(t, fakeEnv()) }
func TestMoverVersionsOnAzurite(t *testing.T) { RunMoverVersions(t, azuriteEnv(t)) }

func TestEventStreamsOnFake(t *testing.T)    { RunEventStreams(t, fakeEnv()) }
func TestEventStreamsOnAzurite(t *testing.T) { RunEventStreams(t, azuriteEnv(t)) }

func TestAccountsOnFake(t *testing.T)    { RunAccounts(t, fakeTwoAccounts()) }
func TestAccountsOnAzurite(t *testing.T) { RunAccounts(t, azuriteTwoAccounts(t)) }

func TestPatternDefectsOnFake(t *testing.T)    { RunPatternDefects(t, fakeEnv()) }
func TestPatternDefectsOnAzurite(t *testing.T) { RunPatternDefects(t, azuriteEnv(t)) }

func TestWirePathOnFake(t *testing.T)    { RunWirePath(t, fakeEnv()) }
func TestWirePathOnAzurite(t *testing.T) { RunWirePath(t, azuriteEnv(t)) }

func TestPeriodsOnFake(t *testing.T) {
	env := fakeEnv()
	RunPeriods(t, env, services(t, env))
}

func TestPeriodsOnAzurite(t *testing.T) {
	env := azuriteEnv(t)
	RunPeriods(t, env, services(t, env))
}
