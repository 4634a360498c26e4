package table_test

import (
	"errors"
	"testing"

	"github.com/tablekit/tablekit/internal/seqs"
	"github.com/tablekit/tablekit/internal/tableio"
	"github.com/tablekit/tablekit/table"
)

// A Table of one row kind reads and writes that kind's RowKeys only, and
// keeps the one prefix it was given.
func TestOnlyRowPrefix(t *testing.T) {
	type Employee struct {
		table.Meta
		Name string
	}
	svc, client := newPatients(t)
	ctx := t.Context()
	all, _ := table.New[Employee](client, nil)
	for _, rk := range []string{"empid_000123", "email_don@contoso.com", "empid_000124"} {
		if err := all.Add(ctx, &Employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: rk}, Name: rk}, nil); err != nil {
			t.Fatal(err)
		}
	}
	emps, _ := table.New[Employee](client, nil)
	if err := tableio.For(emps).OnlyRowPrefix(""); !errors.Is(err, table.ErrBadOption) {
		t.Fatalf("an empty prefix: %v, want ErrBadOption", err)
	}
	if err := tableio.For(emps).OnlyRowPrefix("empid_"); err != nil {
		t.Fatal(err)
	}
	if err := tableio.For(emps).OnlyRowPrefix("empid_"); err != nil {
		t.Fatalf("the same prefix again: %v", err)
	}
	if err := tableio.For(emps).OnlyRowPrefix("email_"); !errors.Is(err, table.ErrBadOption) {
		t.Fatalf("another prefix: %v, want ErrBadOption", err)
	}
	got, err := seqs.Collect(emps.Query(ctx, &table.QueryOptions{Filter: table.Partition("Sales")}))
	if err != nil || len(got) != 2 || got[0].RowKey != "empid_000123" || got[1].RowKey != "empid_000124" {
		t.Fatalf("Query: %v %v; want the two empid_ rows", got, err)
	}
	if n, err := seqs.Collect(all.Query(ctx, nil)); err != nil || len(n) != 3 {
		t.Fatalf("a Table of every row: %d rows %v", len(n), err)
	}
	svc.ResetCounts()
	if _, err := emps.Get(ctx, "Sales", "email_don@contoso.com", nil); !errors.Is(err, table.ErrOtherRowKind) {
		t.Fatalf("Get of another kind: %v, want ErrOtherRowKind", err)
	}
	if _, err := emps.Modify(ctx, "Sales", "email_don@contoso.com", func(*Employee) error { return nil }, nil); !errors.Is(err, table.ErrOtherRowKind) {
		t.Fatalf("Modify of another kind: %v, want ErrOtherRowKind", err)
	}
	if err := emps.Update(ctx, &Employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: "email_don@contoso.com", ETag: "*"}}, nil); !errors.Is(err, table.ErrOtherRowKind) {
		t.Fatalf("Update of another kind: %v, want ErrOtherRowKind", err)
	}
	if _, err := tableio.For(emps).Stored(ctx, &Employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: "email_don@contoso.com"}}); !errors.Is(err, table.ErrOtherRowKind) {
		t.Fatalf("Stored of another kind: %v, want ErrOtherRowKind", err)
	}
	if n := svc.Total(); n != 0 {
		t.Fatalf("refused operations sent %d requests", n)
	}
	if e, err := emps.Entities().Get(ctx, "Sales", "email_don@contoso.com", nil); err != nil || e.RowKey != "email_don@contoso.com" {
		t.Fatalf("the raw view reads every row: %v %v", e, err)
	}
}
