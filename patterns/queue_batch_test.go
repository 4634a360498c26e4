package patterns_test

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/internal/testenv"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/table"
)

// The helpers of the tests of the model's batched handler (ProcessBatch
// on a consistency.Worker): on the fake and, with
// TABLEKIT_CONNECTION_STRING, on Azurite, with clients built as the README
// builds them and keys that hold apostrophes.

// batchReq counts every request of the clients built with it.
type batchReq struct{ n atomic.Int64 }

func (c *batchReq) Do(req *policy.Request) (*http.Response, error) {
	c.n.Add(1)
	return req.Next()
}

func (c *batchReq) opts() azcore.ClientOptions {
	return azcore.ClientOptions{PerCallPolicies: []policy.Policy{c}}
}

// batchEnv is one backend's clients: tables (as the README builds them),
// queues, and the counter of their requests.
type batchEnv struct {
	tables *aztables.ServiceClient
	queues *azqueue.ServiceClient
	c      *batchReq
}

func batchBackends(t *testing.T, f func(t *testing.T, e batchEnv)) {
	t.Run("fake", func(t *testing.T) {
		c := &batchReq{}
		paging := fake.FriendlyPaging() // one page per read: requests measure batching
		tables := fake.NewTableService(&fake.TableServiceOptions{Paging: &paging})
		queues := fake.NewQueueService(nil)
		f(t, batchEnv{tables.NewServiceClient(&aztables.ClientOptions{ClientOptions: c.opts()}), queues.NewServiceClient(&azqueue.ClientOptions{ClientOptions: c.opts()}), c})
	})
	t.Run("Azurite", func(t *testing.T) {
		cs := testenv.ConnectionString(t)
		c := &batchReq{}
		tables, err := aztables.NewServiceClientFromConnectionString(cs, table.ClientOptions(&aztables.ClientOptions{ClientOptions: c.opts()}))
		if err != nil {
			t.Fatal(err)
		}
		queues, err := azqueue.NewServiceClientFromConnectionString(cs, &azqueue.ClientOptions{ClientOptions: c.opts()})
		if err != nil {
			t.Fatal(err)
		}
		f(t, batchEnv{tables, queues, c})
	})
}

func (e batchEnv) table(t *testing.T, base string) *aztables.Client {
	name := testenv.UniqueName(base)
	if _, err := e.tables.CreateTable(t.Context(), name, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = e.tables.DeleteTable(context.Background(), name, nil) })
	return e.tables.NewClient(name)
}

func (e batchEnv) queue(t *testing.T, base string) *azqueue.QueueClient {
	q := e.queues.NewQueueClient(strings.ToLower(testenv.UniqueName(base)))
	if _, err := q.Create(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = q.Delete(context.Background(), nil) })
	return q
}

// keepMessages is a queue whose deletes succeed without deleting: every
// message handled through it is delivered again once its visibility
// timeout ends, as after a crash between the work and the delete.
type keepMessages struct{ consistency.Queue }

func (keepMessages) DeleteMessage(context.Context, string, string, *azqueue.DeleteMessageOptions) (azqueue.DeleteMessageResponse, error) {
	return azqueue.DeleteMessageResponse{}, nil
}

// drainBatches runs handle until the queue is empty, failing on any
// poisoned or retried message, and returns the requests it took. With
// again, a message may be handled more than once (it reappeared while the
// queue was drained: keepMessages).
func drainBatches(t *testing.T, e batchEnv, handle func() (consistency.Stats, error), want int64, again bool) int64 {
	t.Helper()
	e.c.n.Store(0)
	st, err := handle()
	if err != nil {
		t.Fatal(err)
	}
	if (st.Processed != want && !(again && st.Processed > want)) || st.Poisoned != 0 || st.Retried != 0 {
		t.Fatalf("stats %+v, want %d handled", st, want)
	}
	return e.c.n.Load()
}

// Options of the tests' drains: batchOpts keeps a message hidden far
// longer than a batch takes on a loaded machine, so that each is handled
// once; keepOpts lets the messages of a keepMessages pass reappear soon
// (and maybe more than once during it) for the redelivery pass.
var (
	batchOpts = consistency.WorkerOptions{Visibility: 30 * time.Second, MaxDequeues: 100}
	keepOpts  = consistency.WorkerOptions{Visibility: 2 * time.Second, MaxDequeues: 100}
)

// drainModel drains q with m's ProcessBatch on a Worker of options o.
func drainModel(ctx context.Context, m *patterns.Model[batchEmp], q, poison consistency.Queue, o consistency.WorkerOptions) (consistency.Stats, error) {
	w := consistency.NewWorker(q, poison, &o)
	if err := w.HandleBatch(m.MessageType(), m.ProcessBatch); err != nil {
		return consistency.Stats{}, err
	}
	return w.Drain(ctx, nil)
}

type batchEmp struct {
	table.Meta
	Name       string
	Email      string
	Department string
	LastName   string
}
