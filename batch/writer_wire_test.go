package batch_test

import (
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/table"
)

// A Writer (and Plan) on a client with table.WirePolicy sends updates and
// upserts on keys with a single quote, which the SDK's own $batch cannot.
func TestWriterWithWirePolicySendsQuotedKeys(t *testing.T) {
	opts := &aztables.ClientOptions{}
	opts.PerCallPolicies = []policy.Policy{table.WirePolicy()}
	svc, c := newFake(t, opts)
	e := ev("O'Brien", 1)
	e.RowKey = "emp_O'Brien"
	ops := []batch.Op{batch.Upsert(e, table.Merge)}
	if _, err := batch.NewWriter(c, nil).Write(t.Context(), batch.Slice(ops), nil); err == nil {
		t.Fatal("an upsert on a quoted key went through the SDK's path")
	}
	sum, err := batch.NewWriter(c, &batch.WriterOptions{WirePolicy: true}).Write(t.Context(), batch.Slice(ops), nil)
	if err != nil || sum.Operations != 1 || svc.Count(fake.OpBatch) != 1 {
		t.Fatalf("Writer with WirePolicy: %+v %v, %d batches", sum, err, svc.Count(fake.OpBatch))
	}
	plan, err := batch.Plan(ops, &batch.PlanOptions{WirePolicy: true})
	if err != nil || len(plan) != 1 {
		t.Fatalf("Plan with WirePolicy: %v %v", plan, err)
	}
	if _, err := plan[0].Submit(t.Context(), c, nil); err != nil {
		t.Fatalf("a planned transaction with WirePolicy: %v", err)
	}
}
