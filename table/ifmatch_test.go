package table_test

import (
	"errors"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/table"
)

// UpdateOptions.IfMatch: nil takes v's ETag, to.Ptr(azcore.ETagAny) any version,
// another ETag that version; an empty one is refused before any request.
func TestUpdateIfMatch(t *testing.T) {
	ctx := t.Context()
	svc, tb, v := storedEmployee(t)
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
	err := tb.Update(ctx, blind, &table.UpdateOptions{IfMatch: &empty})
	var ie *table.InputError
	if !errors.Is(err, table.ErrNoETag) || !errors.As(err, &ie) || ie.Field != "IfMatch" || svc.Total() != 0 {
		t.Fatalf("empty IfMatch: %v, %d requests; want ErrNoETag on IfMatch, none sent", err, svc.Total())
	}
	got, err := tb.Get(ctx, "Sales", "1", nil)
	if err != nil || got.FirstName != "C" {
		t.Fatal(got, err)
	}
}

// A write mode is aztables.UpdateModeMerge, aztables.UpdateModeReplace or
// "" (the verb's default: merge for Update and Upsert, replace for
// Modify); any other value is ErrBadOption on Mode before any request.
func TestUnknownUpdateModeIsRefused(t *testing.T) {
	ctx := t.Context()
	svc, tb, v := storedEmployee(t)
	svc.ResetCounts()
	change := func(e *Employee) error { e.FirstName = "B"; return nil }
	for name, err := range map[string]error{
		"Upsert": tb.Upsert(ctx, v, &table.UpsertOptions{Mode: "Merge"}),
		"Update": tb.Update(ctx, v, &table.UpdateOptions{Mode: "patch"}),
		"Modify": func() error {
			_, err := tb.Modify(ctx, "Sales", "1", change, &table.ModifyOptions{Mode: "replace "})
			return err
		}(),
	} {
		var ie *table.InputError
		if !errors.Is(err, table.ErrBadOption) || !errors.As(err, &ie) || ie.Field != "Mode" {
			t.Errorf("%s with an unknown mode: %v; want ErrBadOption on Mode", name, err)
		}
	}
	if n := svc.Total(); n != 0 {
		t.Fatalf("%d requests for refused writes", n)
	}
	if err := tb.Upsert(ctx, v, &table.UpsertOptions{Mode: aztables.UpdateModeReplace}); err != nil {
		t.Fatal(err)
	}
	if err := tb.Update(ctx, v, &table.UpdateOptions{Mode: ""}); err != nil {
		t.Fatal(err)
	}
}

// storedEmployee is a fake's Employees table holding one employee, v.
func storedEmployee(t *testing.T) (*fake.TableService, *table.Table[Employee], *Employee) {
	t.Helper()
	svc := fake.NewTableService(nil)
	c := svc.NewClient("Employees", nil)
	if _, err := c.CreateTable(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	tb, err := table.New[Employee](c, nil)
	if err != nil {
		t.Fatal(err)
	}
	v := &Employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: "1"}, FirstName: "A"}
	if err := tb.Add(t.Context(), v, nil); err != nil {
		t.Fatal(err)
	}
	return svc, tb, v
}
