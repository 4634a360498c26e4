package patterns_test

import (
	"context"
	"fmt"
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
	"github.com/tablekit/tablekit/internal/seqs"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/table"
)

// The guarded writes of the batched index handlers, under a concurrent
// writer: another process changes an index row between the handler's read
// and its transaction, so the transaction's If-Match fails. The handler
// must neither lose that writer's change nor leave the message unapplied.

// beforeBatch runs f once, before the first $batch request after it is
// armed, on another client: the concurrent writer.
type beforeBatch struct {
	armed atomic.Bool
	fired atomic.Bool
	f     func(ctx context.Context) error
	err   error
}

func (p *beforeBatch) Do(req *policy.Request) (*http.Response, error) {
	if req.Raw().Method == http.MethodPost && strings.HasSuffix(req.Raw().URL.Path, "$batch") && p.armed.CompareAndSwap(true, false) {
		// A context of its own: the request's carries tablekit's marks
		// for this request, which are no business of the other writer's.
		p.err = p.f(context.Background())
		p.fired.Store(true)
	}
	return req.Next()
}

// raceTables is a fake table service with two clients' service clients: one
// whose $batch requests pass through p, and one (the other writer's)
// without it.
func raceTables(p *beforeBatch) (handler, other *aztables.ServiceClient) {
	svc := fake.NewTableService(nil)
	return svc.NewServiceClient(&aztables.ClientOptions{ClientOptions: azcore.ClientOptions{PerCallPolicies: []policy.Policy{p}}}), svc.NewServiceClient(nil)
}

func TestModelProcessBatchSettlesARefusedTransaction(t *testing.T) {
	ctx := t.Context()
	p := &beforeBatch{}
	mine, theirs := raceTables(p)
	for _, name := range []string{"people", "copies"} {
		if _, err := mine.CreateTable(ctx, name, nil); err != nil {
			t.Fatal(err)
		}
	}
	people, _ := table.New[batchEmp](mine.NewClient("people"), nil)
	copies, _ := table.New[table.Entity](mine.NewClient("copies"), nil)
	theirCopies, _ := table.New[table.Entity](theirs.NewClient("copies"), nil)
	queues := fake.NewQueueService(nil)
	q, poison := queues.NewQueueClient("idx", nil), queues.NewQueueClient("poison", nil)
	mustCreateQueues(t, q, poison)
	x, err := patterns.OpenModel(ctx, people, &patterns.ModelOptions[batchEmp]{Name: "idx", Queue: q, CrossCopies: []patterns.IndexDef[batchEmp]{{
		Name: "email", Table: copies,
		PartitionKey: func(v *batchEmp) string { return "email_" + v.Department },
		Value:        func(v *batchEmp) string { return v.Email },
	}}})
	if err != nil {
		t.Fatal(err)
	}
	opts := consistency.WorkerOptions{Visibility: 30 * time.Second, MaxDequeues: 100}
	ann := &batchEmp{Meta: table.Meta{PartitionKey: "Sales", RowKey: "001"}, Email: "ann@contoso.com", Department: "Sales"}
	if err := x.Add(ctx, ann, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := drainModel(ctx, x, q, poison, opts); err != nil {
		t.Fatal(err)
	}
	cur, err := people.Get(ctx, "Sales", "001", nil)
	if err != nil {
		t.Fatal(err)
	}
	next := *cur
	next.Email = "ann.lee@contoso.com"
	if err := x.Update(ctx, &next, &table.UpdateOptions{Mode: aztables.UpdateModeReplace}); err != nil {
		t.Fatal(err)
	}
	// The other writer touches the stale copy (its owner unchanged) after
	// the handler read it and before its transaction: the guarded delete's
	// If-Match fails, and with it the transaction.
	p.f = func(ctx context.Context) error {
		rk, err := patterns.CrossCopyRowKey("ann@contoso.com", "Sales", "001")
		if err != nil {
			return err
		}
		c, err := theirCopies.Get(ctx, "email_Sales", rk, nil)
		if err != nil {
			return err
		}
		c.Set("Touched", table.ValueOf("yes"))
		return theirCopies.Update(ctx, c, &table.UpdateOptions{Mode: aztables.UpdateModeReplace})
	}
	p.armed.Store(true)
	st, err := drainModel(ctx, x, q, poison, opts)
	if err != nil || p.err != nil {
		t.Fatal(err, p.err)
	}
	if !p.fired.Load() {
		t.Fatal("the concurrent write did not happen: the test tests nothing")
	}
	if st.Processed != 1 || st.Retried != 0 || st.Poisoned != 0 {
		t.Fatalf("stats %+v: the refused transaction's message was not settled", st)
	}
	checkCopies(t, x, copies, []*batchEmp{&next})
}

func TestModelProcessBatchRetriesALostListRace(t *testing.T) {
	ctx := t.Context()
	p := &beforeBatch{}
	mine, theirs := raceTables(p)
	for _, name := range []string{"people", "lists"} {
		if _, err := mine.CreateTable(ctx, name, nil); err != nil {
			t.Fatal(err)
		}
	}
	people, _ := table.New[batchEmp](mine.NewClient("people"), nil)
	listTable, _ := table.New[table.Entity](mine.NewClient("lists"), nil)
	theirTable, _ := table.New[table.Entity](theirs.NewClient("lists"), nil)
	queues := fake.NewQueueService(nil)
	q, poison := queues.NewQueueClient("lidx", nil), queues.NewQueueClient("poison", nil)
	mustCreateQueues(t, q, poison)
	ev, err := patterns.OpenModel(ctx, people, &patterns.ModelOptions[batchEmp]{Name: "lidx", Queue: q, RemoteLists: []patterns.ListDef[batchEmp]{
		{Name: "lname", Value: func(v *batchEmp) string { return v.LastName }, Table: listTable, Partition: "lname", Prefix: "lname_"}}})
	if err != nil {
		t.Fatal(err)
	}
	opts := consistency.WorkerOptions{Visibility: 30 * time.Second, MaxDequeues: 100}
	add := func(rk string) {
		v := &batchEmp{Meta: table.Meta{PartitionKey: "Sales", RowKey: rk}, LastName: "Jones"}
		if err := ev.Add(ctx, v, nil); err != nil {
			t.Fatal(err)
		}
	}
	add("001")
	if _, err := drainModel(ctx, ev, q, poison, opts); err != nil {
		t.Fatal(err)
	}
	add("002")
	// Another writer changes the list's index entity after the handler
	// read it: the handler's update of it loses the race on its ETag.
	p.f = func(ctx context.Context) error {
		parts, err := seqs.Collect(theirTable.Query(ctx, &table.QueryOptions{Filter: table.RowPrefix("lname", "lname_")}))
		if err != nil || len(parts) != 1 {
			return fmt.Errorf("the list's index entities: %d, %v", len(parts), err)
		}
		parts[0].Set("Touched", table.ValueOf("yes"))
		return theirTable.Update(ctx, parts[0], &table.UpdateOptions{Mode: aztables.UpdateModeReplace})
	}
	p.armed.Store(true)
	st, err := drainModel(ctx, ev, q, poison, opts)
	if err != nil || p.err != nil {
		t.Fatal(err, p.err)
	}
	if !p.fired.Load() {
		t.Fatal("the concurrent write did not happen: the test tests nothing")
	}
	if st.Processed != 1 || st.Retried != 0 || st.Poisoned != 0 {
		t.Fatalf("stats %+v", st)
	}
	owners, err := ev.IDs(ctx, "lname", "", "Jones", nil)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, o := range owners {
		ids = append(ids, patterns.ID(o.PartitionKey, o.RowKey))
	}
	want := []string{patterns.ID("Sales", "001"), patterns.ID("Sales", "002")}
	if strings.Join(ids, "|") != strings.Join(want, "|") {
		t.Fatalf("Jones lists %q, want %q (the new one added after the lost race)", ids, want)
	}
}

func mustCreateQueues(t *testing.T, qs ...*azqueue.QueueClient) {
	t.Helper()
	for _, q := range qs {
		if _, err := q.Create(t.Context(), nil); err != nil {
			t.Fatal(err)
		}
	}
}
