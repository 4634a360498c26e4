package table_test

import (
	"errors"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/table"
)

// UpdateOptions.IfMatch: nil takes v's ETag, to.Ptr(azcore.ETagAny) any version,
// another ETag that version; an empty one is refused before any request.
func TestUpdateIfMatch(t *testing.T) {
	ctx := t.Context()
	svc := fake.NewTableService(nil)
	c := svc.NewClient("Employees", nil)
	if _, err := c.CreateTable(ctx, nil); err != nil {
		t.Fatal(err)
	}
	tb, err := table.New[Employee](c, nil)
	if err != nil {
		t.Fatal(err)
	}
	v := &Employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: "1"}, FirstName: "A"}
	if err := tb.Add(ctx, v, nil); err != nil {
		t.Fatal(err)
	}
	old := v.ETag
	v.FirstName = "B"
	if err := tb.Update(ctx, v, nil); err != nil {
		t.Fatal(err)
	}
	// The old version: 412.
	stale := *v
	if err := tb.Update(ctx, &stale, &table.UpdateOptions{IfMatch: &old}); !table.Is(err, table.ErrPreconditionFailed) {
		t.Fatalf("update at an old version: %v, want precondition failed", err)
	}
	// Any version, from a value without an ETag.
	blind := &Employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: "1"}, FirstName: "C"}
	if err := tb.Update(ctx, blind, &table.UpdateOptions{IfMatch: to.Ptr(azcore.ETagAny)}); err != nil {
		t.Fatal(err)
	}
	svc.ResetCounts()
	empty := azcore.ETag("")
	err = tb.Update(ctx, blind, &table.UpdateOptions{IfMatch: &empty})
	var ie *table.InputError
	if !errors.Is(err, table.ErrNoETag) || !errors.As(err, &ie) || ie.Field != "IfMatch" || svc.Total() != 0 {
		t.Fatalf("empty IfMatch: %v, %d requests; want ErrNoETag on IfMatch, none sent", err, svc.Total())
	}
	got, err := tb.Get(ctx, "Sales", "1", nil)
	if err != nil || got.FirstName != "C" {
		t.Fatal(got, err)
	}
}
