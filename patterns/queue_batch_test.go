package patterns_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
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
	"github.com/tablekit/tablekit/internal/seqs"
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
		paging := fake.Paging{AcrossPartitions: true} // one page per read: requests measure batching
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

func TestModelCrossCopiesProcessBatch(t *testing.T) {
	batchBackends(t, func(t *testing.T, e batchEnv) {
		ctx := t.Context()
		people, err := table.New[batchEmp](e.table(t, "bpeople"), nil)
		if err != nil {
			t.Fatal(err)
		}
		copies, err := table.New[table.Entity](e.table(t, "bcopies"), nil)
		if err != nil {
			t.Fatal(err)
		}
		q, poison := e.queue(t, "bidx"), e.queue(t, "bpoison")
		x, err := patterns.OpenModel(ctx, people, &patterns.ModelOptions[batchEmp]{Name: "bidx", Queue: q, CrossCopies: []patterns.IndexDef[batchEmp]{{
			Name: "email", Table: copies,
			PartitionKey: func(v *batchEmp) string { return "email_" + v.Department },
			Value:        func(v *batchEmp) string { return v.Email },
		}}, Logger: slog.New(slog.NewTextHandler(t.Output(), nil))})
		if err != nil {
			t.Fatal(err)
		}
		const n = 96
		dept := "O'Brien & Sons"
		emps := make([]*batchEmp, n)
		for i := range n {
			emps[i] = &batchEmp{Meta: table.Meta{PartitionKey: dept, RowKey: fmt.Sprintf("emp'%03d", i)}, Name: "Don O'Brien", Email: fmt.Sprintf("don'%03d@contoso.com", i), Department: dept}
			if err := x.Add(ctx, emps[i], nil); err != nil {
				t.Fatal(err)
			}
		}
		reqs := drainBatches(t, e, func() (consistency.Stats, error) { return drainModel(ctx, x, q, poison, batchOpts) }, n, false)
		perMsg := float64(reqs) / n
		t.Logf("new entities: %d requests for %d messages, %.3f a message", reqs, n, perMsg)
		if perMsg > 1.25 {
			t.Fatalf("%.3f requests a message, want at most 1.25", perMsg)
		}
		checkCopies(t, x, copies, emps)

		// Changes: a third move to new emails, a sixth are deleted, and two
		// swap emails (a stale copy that another primary now calls for).
		var live []*batchEmp
		for i, v := range emps {
			cur, err := people.Get(ctx, v.PartitionKey, v.RowKey, nil)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case i%6 == 5:
				if err := x.Delete(ctx, cur.PartitionKey, cur.RowKey, nil); err != nil {
					t.Fatal(err)
				}
				continue
			case i%3 == 0:
				next := *cur
				next.Email = fmt.Sprintf("don.obrien'%03d@contoso.com", i)
				if err := x.Update(ctx, &next, &table.UpdateOptions{Mode: aztables.UpdateModeReplace}); err != nil {
					t.Fatal(err)
				}
				cur = &next
			}
			live = append(live, cur)
		}
		a, b := live[1], live[2] // emails don'001 and don'002 swap
		a2, b2 := *a, *b
		a2.Email, b2.Email = b.Email, a.Email
		for _, p := range [][2]*batchEmp{{&a2, a}, {&b2, b}} {
			if err := x.Update(ctx, p[0], &table.UpdateOptions{Mode: aztables.UpdateModeReplace}); err != nil {
				t.Fatal(err)
			}
		}
		live[1], live[2] = &a2, &b2
		changes := int64(n/3 + n/6 + 2)
		reqs = drainBatches(t, e, func() (consistency.Stats, error) {
			return drainModel(ctx, x, keepMessages{q}, poison, keepOpts) // handled, then delivered again below
		}, changes, true)
		t.Logf("changes: %d requests for %d messages, %.3f a message (the message deletes, which keepMessages drops, not counted)", reqs, changes, float64(reqs)/float64(changes))
		checkCopies(t, x, copies, live)
		time.Sleep(2100 * time.Millisecond) // the visibility timeout ends: every message is delivered again
		drainBatches(t, e, func() (consistency.Stats, error) { return drainModel(ctx, x, q, poison, batchOpts) }, changes, false)
		checkCopies(t, x, copies, live)
	})
}

// checkCopies: exactly one copy per live entity, holding its email, and a
// clean Verify.
func checkCopies(t *testing.T, x *patterns.Model[batchEmp], copies *table.Table[table.Entity], live []*batchEmp) {
	t.Helper()
	ctx := t.Context()
	all, err := seqs.Collect(copies.Query(ctx, nil))
	if err != nil {
		t.Fatal(err)
	}
	var got, want []string
	for _, c := range all {
		got = append(got, c.PartitionKey+"/"+copyValue(c.RowKey))
	}
	for _, v := range live {
		want = append(want, "email_"+v.Department+"/"+v.Email)
		found, err := x.Lookup(ctx, "email", "email_"+v.Department, v.Email, nil)
		if err != nil || found.RowKey != v.RowKey || found.Email != v.Email {
			t.Fatalf("Lookup %s: %+v %v, want %s", v.Email, found, err, v.RowKey)
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("copies %q, want %q", got, want)
	}
	r, err := x.Verify(ctx, nil)
	if err != nil || !r.OK() || r.Primaries != len(live) {
		t.Fatalf("Verify: %+v %v", r, err)
	}
}

func TestModelRemoteListsProcessBatch(t *testing.T) {
	batchBackends(t, func(t *testing.T, e batchEnv) {
		ctx := t.Context()
		people, err := table.New[batchEmp](e.table(t, "bepeople"), nil)
		if err != nil {
			t.Fatal(err)
		}
		listTable, err := table.New[table.Entity](e.table(t, "belists"), nil)
		if err != nil {
			t.Fatal(err)
		}
		q, poison := e.queue(t, "beidx"), e.queue(t, "bepoison")
		ev, err := patterns.OpenModel(ctx, people, &patterns.ModelOptions[batchEmp]{Name: "beidx", Queue: q, RemoteLists: []patterns.ListDef[batchEmp]{
			{Name: "lname", Value: func(v *batchEmp) string { return v.LastName }, Table: listTable, Partition: "lname", Prefix: "lname_"}}})
		if err != nil {
			t.Fatal(err)
		}
		const n = 96
		names := []string{"O'Brien", "D'Arcy", "Jones"}
		emps := make([]*batchEmp, n)
		for i := range n {
			v := &batchEmp{Meta: table.Meta{PartitionKey: "Smith's", RowKey: fmt.Sprintf("emp'%03d", i)}, LastName: names[i%3]}
			emps[i] = v
			if err := ev.Add(ctx, v, nil); err != nil {
				t.Fatal(err)
			}
		}
		reqs := drainBatches(t, e, func() (consistency.Stats, error) { return drainModel(ctx, ev, q, poison, batchOpts) }, n, false)
		perMsg := float64(reqs) / n
		t.Logf("new entities, 3 values: %d requests for %d messages, %.3f a message", reqs, n, perMsg)
		if perMsg > 1.25 {
			t.Fatalf("%.3f requests a message, want at most 1.25", perMsg)
		}
		checkLists(t, ev, emps, append(names, "Hall"))

		// A third change name (some to a new one), a sixth are deleted;
		// the messages are handled, then delivered again.
		var live []*batchEmp
		changes := int64(0)
		for i, v := range emps {
			switch {
			case i%6 == 5:
				changes++
				if err := ev.Delete(ctx, v.PartitionKey, v.RowKey, nil); err != nil {
					t.Fatal(err)
				}
				continue
			case i%3 == 0:
				changes++
				next := *v
				next.LastName = names[(i/3)%2+1] // D'Arcy or Jones
				if i%4 == 0 {
					next.LastName = "Hall"
				}
				if err := ev.Upsert(ctx, &next, &table.UpsertOptions{Mode: aztables.UpdateModeReplace}); err != nil {
					t.Fatal(err)
				}
				v = &next
			}
			live = append(live, v)
		}
		reqs = drainBatches(t, e, func() (consistency.Stats, error) {
			return drainModel(ctx, ev, keepMessages{q}, poison, keepOpts)
		}, changes, true)
		t.Logf("changes: %d requests for %d messages, %.3f a message (the message deletes, which keepMessages drops, not counted)", reqs, changes, float64(reqs)/float64(changes))
		checkLists(t, ev, live, append(names, "Hall"))
		time.Sleep(2100 * time.Millisecond)
		drainBatches(t, e, func() (consistency.Stats, error) { return drainModel(ctx, ev, q, poison, batchOpts) }, changes, false)
		checkLists(t, ev, live, append(names, "Hall"))
	})
}

// checkLists: each value's list holds exactly the live entities with that
// value, and Verify is clean.
func checkLists(t *testing.T, ev *patterns.Model[batchEmp], live []*batchEmp, values []string) {
	t.Helper()
	ctx := t.Context()
	want := map[string][]string{}
	for _, v := range live {
		want[v.LastName] = append(want[v.LastName], patterns.ID(v.PartitionKey, v.RowKey))
	}
	for _, value := range values {
		owners, err := ev.IDs(ctx, "lname", "", value, nil)
		if err != nil && !table.Is(err, table.ErrNotFound) {
			t.Fatal(err)
		}
		var ids []string
		for _, o := range owners {
			ids = append(ids, patterns.ID(o.PartitionKey, o.RowKey))
		}
		slices.Sort(ids)
		w := want[value]
		slices.Sort(w)
		if !slices.Equal(ids, w) {
			t.Fatalf("list %s holds %d IDs %q, want %d %q", value, len(ids), ids, len(w), w)
		}
	}
	r, err := ev.Verify(ctx, nil)
	if err != nil || !r.OK() || r.Primaries != len(live) {
		t.Fatalf("Verify: %+v %v", r, err)
	}
}
