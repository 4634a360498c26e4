package batch_test

import (
	"errors"
	"net/http"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/table"
)

// TestQuotedKeyUpdateKeepsItsCondition: an update whose keys hold a quote
// (sent by tablekit's own body) is conditioned exactly as any update: on
// the value's ETag, or on the ETag given to IfMatch, which takes the place
// of the value's. A stale condition fails the transaction with 412 and
// writes nothing; the current one commits.
func TestQuotedKeyUpdateKeepsItsCondition(t *testing.T) {
	_, c := newFake(t, nil)
	tb, err := table.New[Event](c, nil)
	if err != nil {
		t.Fatal(err)
	}
	e := ev("O'Brien", 1)
	e.RowKey = "emp_O'Brien"
	if err := tb.Add(t.Context(), e, nil); err != nil {
		t.Fatal(err)
	}
	current := e.ETag
	stale := azcore.ETag(`W/"datetime'2001-01-01T00%3A00%3A00.0000000Z'"`)
	at := func(etag azcore.ETag, n int) *Event {
		v := ev("O'Brien", n)
		v.RowKey, v.ETag = "emp_O'Brien", etag
		return v
	}
	refused := func(name string, op batch.Op) {
		t.Helper()
		_, err := batch.Submit(t.Context(), c, []batch.Op{op}, nil)
		var te *batch.TransactionError
		if !errors.As(err, &te) || te.StatusCode != http.StatusPreconditionFailed {
			t.Errorf("%s: %v, want 412", name, err)
		}
	}
	refused("the value's stale ETag", batch.Update(at(stale, 2), aztables.UpdateModeMerge))
	refused("IfMatch's stale ETag over the value's current one", batch.Update(at(current, 3), aztables.UpdateModeReplace).IfMatch(stale))
	if got, err := tb.Get(t.Context(), "O'Brien", "emp_O'Brien", nil); err != nil || got.N != 1 {
		t.Fatalf("after the refusals: %+v %v, want N 1", got, err)
	}
	if _, err := batch.Submit(t.Context(), c, []batch.Op{batch.Update(at(stale, 4), aztables.UpdateModeReplace).IfMatch(current)}, nil); err != nil {
		t.Fatalf("IfMatch's current ETag over the value's stale one: %v", err)
	}
	if got, err := tb.Get(t.Context(), "O'Brien", "emp_O'Brien", nil); err != nil || got.N != 4 {
		t.Fatalf("after the update: %+v %v, want N 4", got, err)
	}
}
