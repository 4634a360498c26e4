package batch_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/table"
)

// TestIdempotentAddsReadOnlyAfterAConflict: IdempotentAdds settles only an
// EntityAlreadyExists: a transaction failing with any other code (here an
// update of a missing entity, ResourceNotFound) fails without a read, and
// the Summary counts none.
func TestIdempotentAddsReadOnlyAfterAConflict(t *testing.T) {
	deadline(t, writerDeadline)
	svc, c := newFake(t, nil)
	w := batch.NewWriter(c, &batch.WriterOptions{IdempotentAdds: true})
	sum, err := w.Write(t.Context(), slices.Values([]batch.Op{batch.Update(ev("p", 1), table.Merge).IfMatch(azcore.ETagAny)}), nil)
	var we *batch.WriteError
	if !errors.As(err, &we) || sum.Failed != 1 {
		t.Fatalf("write: %+v %v; want the update to fail", sum, err)
	}
	if sum.Reads != 0 || svc.Count(fake.OpQueryEntities) != 0 {
		t.Errorf("Summary.Reads %d, %d queries sent; want none for a failure that is not EntityAlreadyExists", sum.Reads, svc.Count(fake.OpQueryEntities))
	}
}
