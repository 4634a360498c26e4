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

func fakeEnv() Env {
	svc := fake.NewTableService(nil)
	queues := fake.NewQueueService(nil)
	blobs := fake.NewBlobService(nil)
	return Env{
		Name: "fake",
		Fake: svc,
		NewQueue: func(t *testing.T) *azqueue.QueueClient {
			q := queues.NewQueueClient(strings.ToLower(testenv.UniqueName("conf")), nil)
			if _, err := q.Create(t.Context(), nil); err != nil {
				t.Fatal(err)
			}
			return q
		},
		NewContainer: func(t *testing.T) (*azblob.Client, string) {
			c := blobs.NewClient(nil)
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
	return Env{
		Name: "azurite",
		NewQueue: func(t *testing.T) *azqueue.QueueClient {
			q, err := azqueue.NewQueueClientFromConnectionString(cs, strings.ToLower(testenv.UniqueName("conf")), nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := q.Create(t.Context(), nil); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _, _ = q.Delete(context.Background(), nil) })
			return q
		},
		NewContainer: func(t *testing.T) (*azblob.Client, string) {
			c, err := azblob.NewClientFromConnectionString(cs, nil)
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

func TestShapeOnFake(t *testing.T) {
	env := fakeEnv()
	RunShape(t, env, func(t *testing.T, c *reqcount.Counter) *aztables.ServiceClient {
		return env.Fake.NewServiceClient(c.TableOptions())
	})
}

func TestShapeOnAzurite(t *testing.T) {
	env := azuriteEnv(t)
	cs := testenv.ConnectionString(t)
	RunShape(t, env, func(t *testing.T, c *reqcount.Counter) *aztables.ServiceClient {
		svc, err := aztables.NewServiceClientFromConnectionString(cs, c.TableOptions())
		if err != nil {
			t.Fatal(err)
		}
		return svc
	})
}
