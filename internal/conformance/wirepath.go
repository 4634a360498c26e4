package conformance

import (
	"context"
	"errors"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/internal/reqcount"
	"github.com/tablekit/tablekit/internal/testenv"
	"github.com/tablekit/tablekit/table"
)

// RunWirePath checks tablekit's own wire paths (table.WirePolicy attached
// to the client): transactions whose $batch body tablekit builds, and
// query pages it decodes from the raw response.
func RunWirePath(t *testing.T, env Env) {
	t.Run("quoted keys in batch updates and upserts", func(t *testing.T) { wireQuotedKeys(t, env) })
}

// newWireTable is env.NewTable with table.WirePolicy among the client's
// per-call policies, before the counter's per-retry policies.
func newWireTable(t *testing.T, env Env, c *reqcount.Counter) *aztables.Client {
	t.Helper()
	opts := c.TableOptions()
	opts.PerCallPolicies = append(opts.PerCallPolicies, table.WirePolicy())
	var sc *aztables.ServiceClient
	if env.Fake != nil {
		sc = env.Fake.NewServiceClient(opts)
	} else {
		var err error
		if sc, err = aztables.NewServiceClientFromConnectionString(testenv.ConnectionString(t), opts); err != nil {
			t.Fatal(err)
		}
	}
	name := testenv.UniqueName("wire")
	if _, err := sc.CreateTable(t.Context(), name, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = sc.DeleteTable(context.Background(), name, nil) })
	c.Reset()
	return sc.NewClient(name)
}

// wireQuotedKeys: defect #7 of issue 15. With the wire policy, batch
// updates and upserts work on keys with an apostrophe, in one request,
// and store exactly what the single-entity verbs would.
func wireQuotedKeys(t *testing.T, env Env) {
	ctx := t.Context()
	c := &reqcount.Counter{}
	tb, err := table.New[table.Entity](newWireTable(t, env, c), nil)
	if err != nil {
		t.Fatal(err)
	}
	const pk = "O'Brien's"
	mk := func(rk string, n int32) *table.Entity {
		e := &table.Entity{Meta: table.Meta{PartitionKey: pk, RowKey: rk}}
		e.Set("N", table.Int32Value(n))
		e.Set("Name", table.StringValue("Don O'Brien"))
		return e
	}
	wire := &batch.TransactionOptions{WirePolicy: true}
	submit := func(ops ...batch.Op) (*batch.Result, error) {
		tx := batch.NewTransaction(wire)
		for _, op := range ops {
			if err := tx.Append(op); err != nil {
				return nil, err
			}
		}
		return tx.Submit(ctx, tb.Client())
	}
	a, b, q, qq := mk("emp_O'Brien", 1), mk("a'b'c", 1), mk("'", 1), mk("''", 1)
	if _, err := submit(batch.Add(a), batch.Add(b), batch.Add(q), batch.Add(qq)); err != nil {
		t.Fatal(err)
	}
	// Every kind that carries keys in the URL and the body, in one
	// transaction: guarded and unguarded updates, both upserts, a new row.
	a.Set("N", table.Int32Value(2))
	b.Set("N", table.Int32Value(3))
	delete(b.Properties, "Name")
	q.Set("N", table.Int32Value(4))
	qq.Set("N", table.Int32Value(5))
	fresh := mk("new'one", 6)
	oldTag := a.ETag
	c.Reset()
	res, err := submit(batch.Update(a, table.Merge), batch.UpdateAny(b, table.Replace),
		batch.Upsert(q, table.Merge), batch.Upsert(qq, table.Replace), batch.Upsert(fresh, table.Replace))
	if err != nil {
		t.Fatalf("updates and upserts on %q: %v after %d requests", pk, err, c.N())
	}
	if c.N() != 1 {
		t.Fatalf("transaction took %d requests, want 1", c.N())
	}
	for i, e := range res.ETags {
		if e == "" {
			t.Errorf("operation %d: no ETag recovered", i)
		}
	}
	want := map[string]int32{"emp_O'Brien": 2, "a'b'c": 3, "'": 4, "''": 5, "new'one": 6}
	all, err := table.Collect(tb.Query(ctx, nil))
	if err != nil || len(all) != len(want) {
		t.Fatalf("stored %d entities (%v), want %d", len(all), err, len(want))
	}
	for _, e := range all {
		n, _ := e.Get("N")
		if e.PartitionKey != pk || !n.Equal(table.Int32Value(want[e.RowKey])) {
			t.Errorf("stored %q/%q N=%v, want N=%d", e.PartitionKey, e.RowKey, n, want[e.RowKey])
		}
		_, hasName := e.Get("Name")
		if hasName == (e.RowKey == "a'b'c") {
			t.Errorf("%q: Name present %v after a Replace without it", e.RowKey, hasName)
		}
		if e.ETag != res.ETags[0] && e.RowKey == "emp_O'Brien" {
			t.Errorf("%q: stored ETag %s, transaction said %s", e.RowKey, e.ETag, res.ETags[0])
		}
	}
	// A stale ETag still fails the whole transaction, naming the operation.
	stale := mk("emp_O'Brien", 9)
	stale.ETag = oldTag
	q.Set("N", table.Int32Value(10))
	c.Reset()
	_, err = submit(batch.Upsert(q, table.Merge), batch.Update(stale, table.Merge))
	var te *batch.TransactionError
	if !errors.As(err, &te) || te.Index != 1 || te.StatusCode != 412 || !table.IsPreconditionFailed(err) || c.N() != 1 {
		t.Fatalf("stale update on a quoted key: %v after %d requests, want 412 at operation 1", err, c.N())
	}
	if got, err := tb.Get(ctx, pk, "'", nil); err != nil || func() bool { n, _ := got.Get("N"); return !n.Equal(table.Int32Value(4)) }() {
		t.Fatalf("failed transaction wrote: %v %v", got, err)
	}
}
