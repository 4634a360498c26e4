package batch_test

import (
	"errors"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/table"
)

// Op.IfMatch is the one way to condition a batch operation: it overrides
// the value's ETag, azcore.ETagAny means any version, and an Add, an upsert
// or an empty ETag is refused before any request.
func TestOpIfMatch(t *testing.T) {
	ctx := t.Context()
	svc, c := newFake(t, nil)
	a, b := ev("p", 1), ev("p", 2)
	if _, err := batch.Submit(ctx, c, []batch.Op{batch.Add(a), batch.Add(b)}, nil); err != nil {
		t.Fatal(err)
	}
	old := a.ETag
	if _, err := batch.Submit(ctx, c, []batch.Op{batch.Update(a, aztables.UpdateModeMerge)}, nil); err != nil {
		t.Fatal(err)
	}
	// The old version, over the value's current ETag: 412.
	_, err := batch.Submit(ctx, c, []batch.Op{batch.Update(a, aztables.UpdateModeMerge).IfMatch(old)}, nil)
	if !table.Is(err, table.ErrPreconditionFailed) {
		t.Fatalf("update at an old version: %v", err)
	}
	// Any version, from values without an ETag; a delete at a version.
	blind := ev("p", 1)
	bETag := b.ETag
	if _, err := batch.Submit(ctx, c,
		[]batch.Op{batch.Update(blind, aztables.UpdateModeReplace).IfMatch(azcore.ETagAny),
			batch.Delete("p", b.RowKey).IfMatch(bETag)},
		nil,
	); err != nil {
		t.Fatal(err)
	}

	svc.ResetCounts()
	for name, op := range map[string]batch.Op{
		"add":    batch.Add(ev("p", 3)).IfMatch(azcore.ETagAny),
		"upsert": batch.Upsert(ev("p", 3), aztables.UpdateModeMerge).IfMatch(old),
		"empty":  batch.Delete("p", "x").IfMatch(""),
	} {
		_, err := batch.Submit(ctx, c, []batch.Op{op}, nil)
		var ie *table.InputError
		if !errors.As(err, &ie) || ie.Field != "IfMatch" {
			t.Errorf("%s: %v, want an InputError on IfMatch", name, err)
		}
	}
	if n := svc.Total(); n != 0 {
		t.Errorf("%d requests for refused operations", n)
	}
}
