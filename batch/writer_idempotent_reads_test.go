package batch_test

import (
	"errors"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

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
	sum, err := w.Write(t.Context(), slices.Values([]batch.Op{batch.Update(ev("p", 1), aztables.UpdateModeMerge).IfMatch(azcore.ETagAny)}), nil)
	var we *batch.WriteError
	if !errors.As(err, &we) || sum.Failed != 1 {
		t.Fatalf("write: %+v %v; want the update to fail", sum, err)
	}
	if sum.Reads != 0 || svc.Count(fake.OpQueryEntities) != 0 {
		t.Errorf("Summary.Reads %d, %d queries sent; want none for a failure that is not EntityAlreadyExists", sum.Reads, svc.Count(fake.OpQueryEntities))
	}
}

// storedAs writes the events of p numbered from..to-1, then returns the
// Adds of them again: a transaction the service refuses with
// EntityAlreadyExists, stored exactly as sent.
func storedAs(t *testing.T, w *batch.Writer, p string, from, to int) []batch.Op {
	t.Helper()
	var ops []batch.Op
	for i := from; i < to; i++ {
		ops = append(ops, batch.Add(ev(p, i)))
	}
	if _, err := w.Write(t.Context(), slices.Values(ops), nil); err != nil {
		t.Fatal(err)
	}
	ops = nil
	for i := from; i < to; i++ {
		ops = append(ops, batch.Add(ev(p, i)))
	}
	return ops
}

// IdempotentAdds' check reads the conflicting transaction's own RowKey
// range, from its lowest RowKey to its highest: 1,500 other entities of
// the partition sort before it, and one page (one request) settles it.
func TestIdempotentAddsReadOnlyTheTransactionsRange(t *testing.T) {
	deadline(t, writerDeadline)
	svc, c := newFake(t, nil)
	w := batch.NewWriter(c, nil)
	storedAs(t, w, "p", 0, 1500)
	again := storedAs(t, w, "p", 1500, 1510)
	svc.ResetCounts()
	sum, err := batch.NewWriter(c, &batch.WriterOptions{IdempotentAdds: true}).Write(t.Context(), slices.Values(again), nil)
	if err != nil || sum.Resolved != 1 {
		t.Fatalf("write again: %+v %v; want the transaction found stored as sent", sum, err)
	}
	if sum.Reads != 1 || svc.Count(fake.OpQueryEntities) != 1 {
		t.Errorf("the check took %d reads (%d queries sent); want 1: the range of the transaction's own RowKeys, not the partition from its start", sum.Reads, svc.Count(fake.OpQueryEntities))
	}
}

// A check that fails (403: no read permission) settles nothing: the
// transaction stays a failure with the service's EntityAlreadyExists, and
// the check is not sent again (the SDK's retry policy is the retry).
func TestIdempotentAddsLeaveTheConflictWhenTheCheckFails(t *testing.T) {
	deadline(t, writerDeadline)
	svc, c := newFake(t, nil)
	again := storedAs(t, batch.NewWriter(c, nil), "p", 0, 10)
	svc.ResetCounts()
	svc.FailNext(fake.OpQueryEntities, 1, 403, "AuthorizationPermissionMismatch")
	sum, err := batch.NewWriter(c, &batch.WriterOptions{IdempotentAdds: true}).Write(t.Context(), slices.Values(again), nil)
	if !table.Is(err, table.ErrAlreadyExists) || sum.Failed != 1 || sum.Resolved != 0 {
		t.Fatalf("write again with the check refused: %+v %v; want the 409 kept as the transaction's failure", sum, err)
	}
	if sum.Reads != 1 || svc.Count(fake.OpQueryEntities) != 1 {
		t.Errorf("the check took %d reads (%d queries sent); want 1", sum.Reads, svc.Count(fake.OpQueryEntities))
	}
}

// failSecondQuery makes the fake refuse the second query of the client it
// is a per-call policy of (403: no read permission).
type failSecondQuery struct {
	svc     *fake.TableService
	queries atomic.Int32
}

func (f *failSecondQuery) Do(req *policy.Request) (*http.Response, error) {
	if req.Raw().Method == http.MethodGet && f.queries.Add(1) == 2 {
		f.svc.FailNext(fake.OpQueryEntities, 1, 403, "AuthorizationPermissionMismatch")
	}
	return req.Next()
}

// A check whose second page fails settles nothing either, though its
// first page held part of the transaction: the page is not asked for
// again.
func TestIdempotentAddsLeaveTheConflictWhenTheChecksSecondPageFails(t *testing.T) {
	deadline(t, writerDeadline)
	svc, c := newFake(t, nil)
	w := batch.NewWriter(c, nil)
	// 1,200 entities; the transaction's 10 are spread over them, so its
	// range spans two pages of 1,000.
	storedAs(t, w, "p", 0, 1200)
	var again []batch.Op
	for i := 0; i < 1200; i += 120 {
		again = append(again, batch.Add(ev("p", i)))
	}
	f := &failSecondQuery{svc: svc}
	opts := &aztables.ClientOptions{}
	opts.PerCallPolicies = append(opts.PerCallPolicies, f)
	checked := svc.NewClient("events", opts)
	svc.ResetCounts()
	sum, err := batch.NewWriter(checked, &batch.WriterOptions{IdempotentAdds: true}).Write(t.Context(), slices.Values(again), nil)
	if !table.Is(err, table.ErrAlreadyExists) || sum.Failed != 1 || sum.Resolved != 0 {
		t.Fatalf("write again with the check's second page refused: %+v %v; want the 409 kept as the transaction's failure", sum, err)
	}
	if sum.Reads != 2 || svc.Count(fake.OpQueryEntities) != 2 {
		t.Errorf("the check took %d reads (%d queries sent); want 2", sum.Reads, svc.Count(fake.OpQueryEntities))
	}
}
