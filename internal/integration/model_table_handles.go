package integration

import (
	"errors"
	"slices"
	"testing"

	"github.com/tablekit/tablekit/internal/reqcount"
	"github.com/tablekit/tablekit/internal/seqs"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/table"
)

// RunModelTableHandles checks what any handle of an entity model's table
// reads beside the model's own: a table.New handle of the primaries' type,
// as a report or another process opens it, sees the primaries only, never
// an index copy or list. It also holds a case of Model.Load's summary.
func RunModelTableHandles(t *testing.T, env Env) {
	ctx := t.Context()
	email := func(e *DirEmp) string { return e.Email }

	t.Run("another handle of the model's table queries the primaries only", func(t *testing.T) {
		// The model's own handle skips the email copies; a second handle
		// of the same table, as a report or a second process builds it with
		// table.New, must not read a copy as an employee either.
		client := env.NewTable(t, &reqcount.Counter{})
		m, err := patterns.OpenModel(ctx, tableOf(table.New[DirEmp](client, nil)), &patterns.ModelOptions[DirEmp]{Name: "staff", Primary: "empid_",
			Copies: []patterns.IndexDef[DirEmp]{{Name: "email", Prefix: "email_", Unique: true, Value: email}}})
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Add(ctx, &DirEmp{Meta: table.Meta{PartitionKey: "Sales", RowKey: "empid_000123"}, FirstName: "Don", LastName: "Hall", Email: "donh@contoso.com", Salary: 50000}, nil); err != nil {
			t.Fatal(err)
		}
		other := tableOf(table.New[DirEmp](client, nil))
		got := salesRowKeys(t, other)
		if !slices.Equal(got, []string{"empid_000123"}) {
			t.Fatalf("Query of the partition through a second table.New handle yielded %q; want the one employee, empid_000123 (email_donh@contoso.com is its index copy)", got)
		}
	})

	t.Run("another handle of the model's table reads no index list as an employee", func(t *testing.T) {
		// A list (value -> IDs) sits in the primaries' partition too; it
		// carries none of DirEmp's properties but would decode as a
		// zero-valued employee.
		client := env.NewTable(t, &reqcount.Counter{})
		m, err := patterns.OpenModel(ctx, tableOf(table.New[DirEmp](client, nil)), &patterns.ModelOptions[DirEmp]{Name: "staff", Primary: "empid_",
			Lists: []patterns.ListDef[DirEmp]{{Name: "lname", Prefix: "lname_", Value: func(e *DirEmp) string { return e.LastName }}}})
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Add(ctx, &DirEmp{Meta: table.Meta{PartitionKey: "Sales", RowKey: "empid_000123"}, FirstName: "Don", LastName: "Hall", Email: "donh@contoso.com"}, nil); err != nil {
			t.Fatal(err)
		}
		other := tableOf(table.New[DirEmp](client, nil))
		got := salesRowKeys(t, other)
		if !slices.Equal(got, []string{"empid_000123"}) {
			t.Fatalf("Query of the partition through a second handle yielded %q; want empid_000123 alone (lname_… is its list)", got)
		}
		all, err := seqs.Collect(other.Entities().Query(ctx, &table.QueryOptions{Filter: table.Partition("Sales")}))
		if err != nil || len(all) != 2 {
			t.Fatalf("the raw view: %d rows %v; want the employee and its list", len(all), err)
		}
		for _, e := range all {
			if e.RowKey == "empid_000123" {
				continue
			}
			if v, err := other.Get(ctx, "Sales", e.RowKey, nil); !errors.Is(err, table.ErrOtherRowKind) {
				t.Fatalf("Get of the list %s through a second handle: %+v %v; want ErrOtherRowKind", e.RowKey, v, err)
			}
		}
	})

	t.Run("another handle of an encrypted model's table queries the primaries without an integrity error", func(t *testing.T) {
		// With an encrypted field the copies (which hold the clear fields
		// only) fail the second handle's Query whole, with an error that
		// calls the copy tampered with.
		client := env.NewTable(t, &reqcount.Counter{})
		enc := func() *table.Options {
			return &table.Options{Encryption: &table.Encryption{KeyID: "kek-1", Keys: table.LocalKeys{"kek-1": make([]byte, 32)}}}
		}
		m, err := patterns.OpenModel(ctx, tableOf(table.New[SecretEmp](client, enc())), &patterns.ModelOptions[SecretEmp]{Name: "staff", Primary: "empid_",
			Copies: []patterns.IndexDef[SecretEmp]{{Name: "email", Prefix: "email_", Unique: true, Value: func(e *SecretEmp) string { return e.Email }}}})
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Add(ctx, &SecretEmp{Meta: table.Meta{PartitionKey: "Sales", RowKey: "empid_000123"}, FirstName: "Don", Email: "donh@contoso.com", Salary: 50000}, nil); err != nil {
			t.Fatal(err)
		}
		other := tableOf(table.New[SecretEmp](client, enc()))
		var got []string
		for e, err := range other.Query(ctx, &table.QueryOptions{Filter: table.Partition("Sales")}) {
			if err != nil {
				t.Fatalf("Query of the partition through a second encrypted handle, after %q: %v", got, err)
			}
			if e.Salary != 50000 {
				t.Fatalf("%s read with Salary %d, want 50000", e.RowKey, e.Salary)
			}
			got = append(got, e.RowKey)
		}
		if !slices.Equal(got, []string{"empid_000123"}) {
			t.Fatalf("Query of the partition through a second encrypted handle yielded %q; want empid_000123 alone", got)
		}
	})
}

// salesRowKeys queries partition Sales through tbl and lists the RowKeys
// of what it yields.
func salesRowKeys(t *testing.T, tbl *table.Table[DirEmp]) []string {
	t.Helper()
	var got []string
	for e, err := range tbl.Query(t.Context(), &table.QueryOptions{Filter: table.Partition("Sales")}) {
		if err != nil {
			t.Fatalf("Query of the partition through a second handle: %v", err)
		}
		got = append(got, e.RowKey)
	}
	return got
}
