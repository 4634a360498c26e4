package patterns_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/table"
)

// The guarded writes of the model's batched handler, under a concurrent
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

// raceModel is a model over the fake tables of raceTables: the handler's
// side (mine) and the other writer's (theirs).
func raceModel(t *testing.T, mine *aztables.ServiceClient, opts patterns.ModelOptions[batchEmp], tables ...string) (m *patterns.Model[batchEmp], q, poison *azqueue.QueueClient) {
	t.Helper()
	for _, name := range append([]string{"people"}, tables...) {
		if _, err := mine.CreateTable(t.Context(), name, nil); err != nil {
			t.Fatal(err)
		}
	}
	people, _ := table.New[batchEmp](mine.NewClient("people"), nil)
	queues := fake.NewQueueService(nil)
	q, poison = queues.NewQueueClient("work", nil), queues.NewQueueClient("poison", nil)
	mustCreateQueues(t, q, poison)
	opts.Name, opts.Primary, opts.Queue, opts.PublishDelay = "staff", "emp_", q, 30*time.Second
	m, err := patterns.NewModel(people, &opts)
	if err != nil {
		t.Fatal(err)
	}
	return m, q, poison
}

func TestModelProcessBatchSettlesARefusedTransaction(t *testing.T) {
	ctx := t.Context()
	p := &beforeBatch{}
	mine, theirs := raceTables(p)
	copies, _ := table.New[table.Entity](mine.NewClient("copies"), nil)
	theirCopies, _ := table.New[table.Entity](theirs.NewClient("copies"), nil)
	m, q, poison := raceModel(t, mine, patterns.ModelOptions[batchEmp]{CrossCopies: []patterns.CrossIndexDef[batchEmp]{{
		Name: "email", Table: copies,
		PartitionKey: func(v *batchEmp) string { return "email_" + v.Department },
		Value:        func(v *batchEmp) string { return v.Email },
	}}}, "copies")
	ann := &batchEmp{Meta: table.Meta{PartitionKey: "Sales", RowKey: "emp_001"}, Email: "ann@contoso.com", Department: "Sales"}
	if err := m.Add(ctx, ann, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := drainModel(ctx, m, q, poison, batchOpts); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Modify(ctx, "Sales", "emp_001", func(v *batchEmp) error { v.Email = "ann.lee@contoso.com"; return nil }, nil); err != nil {
		t.Fatal(err)
	}
	// The other writer touches the stale copy (its owner unchanged) after
	// the handler read it and before its transaction: the guarded delete's
	// If-Match fails, and with it the transaction.
	p.f = func(ctx context.Context) error {
		all, err := table.Collect(theirCopies.Query(ctx, nil))
		if err != nil {
			return err
		}
		for _, c := range all {
			if copyValue(c.RowKey) == "ann@contoso.com" {
				c.Set("Touched", table.ValueOf("yes"))
				return theirCopies.Update(ctx, c, &table.UpdateOptions{Mode: table.Replace})
			}
		}
		return errors.New("no stale copy to touch")
	}
	p.armed.Store(true)
	st, err := drainModel(ctx, m, q, poison, batchOpts)
	if err != nil || p.err != nil {
		t.Fatal(err, p.err)
	}
	if !p.fired.Load() {
		t.Fatal("the concurrent write did not happen: the test tests nothing")
	}
	if st.Processed != 1 || st.Retried != 0 || st.Poisoned != 0 {
		t.Fatalf("stats %+v: the refused transaction's message was not settled", st)
	}
	all, err := table.Collect(copies.Query(ctx, nil))
	if err != nil || len(all) != 1 || copyValue(all[0].RowKey) != "ann.lee@contoso.com" {
		t.Fatalf("copies %+v (%v): want the new email's alone", all, err)
	}
	if r, err := m.Verify(ctx, nil); err != nil || !r.OK() {
		t.Fatalf("Verify: %+v %v", r, err)
	}
}

func TestModelProcessBatchRetriesALostListRace(t *testing.T) {
	ctx := t.Context()
	p := &beforeBatch{}
	mine, theirs := raceTables(p)
	if _, err := mine.CreateTable(ctx, "lists", nil); err != nil {
		t.Fatal(err)
	}
	listTable, _ := table.New[table.Entity](mine.NewClient("lists"), nil)
	lists, err := patterns.NewRemoteIndexEntities(listTable, "lname", "lname_", nil)
	if err != nil {
		t.Fatal(err)
	}
	theirTable, _ := table.New[table.Entity](theirs.NewClient("lists"), nil)
	theirLists, err := patterns.NewRemoteIndexEntities(theirTable, "lname", "lname_", nil)
	if err != nil {
		t.Fatal(err)
	}
	m, q, poison := raceModel(t, mine, patterns.ModelOptions[batchEmp]{RemoteLists: []patterns.RemoteListDef[batchEmp]{{
		Name: "lastname", Value: func(v *batchEmp) string { return v.LastName }, List: lists,
	}}})
	add := func(rk string) {
		if err := m.Add(ctx, &batchEmp{Meta: table.Meta{PartitionKey: "Sales", RowKey: rk}, LastName: "Jones"}, nil); err != nil {
			t.Fatal(err)
		}
	}
	add("emp_001")
	if _, err := drainModel(ctx, m, q, poison, batchOpts); err != nil {
		t.Fatal(err)
	}
	add("emp_002")
	// Another writer adds an ID to the list after the handler read it:
	// the handler's update of the index entity loses the race on its ETag.
	other := patterns.ID("Ops", "emp_009")
	p.f = func(ctx context.Context) error { return theirLists.Add(ctx, "Jones", other, nil) }
	p.armed.Store(true)
	st, err := drainModel(ctx, m, q, poison, batchOpts)
	if err != nil || p.err != nil {
		t.Fatal(err, p.err)
	}
	if !p.fired.Load() {
		t.Fatal("the concurrent write did not happen: the test tests nothing")
	}
	if st.Processed != 1 || st.Retried != 0 || st.Poisoned != 0 {
		t.Fatalf("stats %+v", st)
	}
	ids, err := lists.IDs(ctx, "Jones", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{patterns.ID("Sales", "emp_001"), other, patterns.ID("Sales", "emp_002")}
	if strings.Join(ids, "|") != strings.Join(want, "|") {
		t.Fatalf("Jones lists %q, want %q (the other writer's ID kept, the new one added)", ids, want)
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
