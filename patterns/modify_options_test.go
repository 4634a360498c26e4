package patterns_test

import (
	"errors"
	"testing"

	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/table"
)

type modified struct {
	table.Meta
	Email string
}

// TestModelModifyTakesModifyOptions: Modify takes the same
// *table.ModifyOptions as every other Modify (table, LargeEntity); its
// retry bounds apply, and Create, which the model cannot honour, is
// refused before any request instead of being ignored.
func TestModelModifyTakesModifyOptions(t *testing.T) {
	ctx := t.Context()
	svc := fake.NewTableService(nil)
	client := svc.NewClient("Modified", nil)
	if _, err := client.CreateTable(ctx, nil); err != nil {
		t.Fatal(err)
	}
	idx, err := patterns.OpenModel(ctx, tableOf(table.New[modified](client, nil)), &patterns.ModelOptions[modified]{Name: "idx", Primary: "id_", Copies: []patterns.IndexDef[modified]{{Name: "email", Prefix: "email_", Value: func(v *modified) string { return v.Email }}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := idx.Add(ctx, &modified{Meta: table.Meta{PartitionKey: "Sales", RowKey: "id_1"}, Email: "a@x"}, nil); err != nil {
		t.Fatal(err)
	}
	got, err := idx.Modify(ctx, "Sales", "id_1", func(v *modified) error { v.Email = "b@x"; return nil },
		&table.ModifyOptions{MaxAttempts: 2})
	if err != nil || got.Email != "b@x" {
		t.Fatalf("Modify: %+v, %v", got, err)
	}
	svc.ResetCounts()
	_, err = idx.Modify(ctx, "Sales", "id_2", func(*modified) error { return nil }, &table.ModifyOptions{Create: true})
	var ie *table.InputError
	if !errors.Is(err, table.ErrInvalidValue) || !errors.As(err, &ie) || ie.Field != "Create" {
		t.Fatalf("Modify with Create: %v, want an InputError on Create", err)
	}
	if n := svc.Total(); n != 0 {
		t.Fatalf("Modify with Create sent %d requests, want none", n)
	}
}
