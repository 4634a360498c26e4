package table_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/internal/reqcount"
	"github.com/tablekit/tablekit/internal/seqs"
	"github.com/tablekit/tablekit/table"
)

type status string

type typedRow struct {
	table.Meta
	Name    string
	Amount  float64 `table:"Total"`
	Small   uint16
	Count   int64
	When    time.Time
	State   status
	Maybe   *int32
	Skipped string  `table:"-"`
	Blob    address `table:",json"`
	Nested
}

// Nested is embedded: its fields are typedRow's.
type Nested struct {
	Inner bool
}

func TestFieldOf(t *testing.T) {
	when := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	three := int32(3)
	for _, tc := range []struct {
		f    table.Filter
		want string
	}{
		{table.FieldOf(func(r *typedRow) *string { return &r.Name }).Eq("O'Hara"), `Name eq 'O''Hara'`},
		{table.FieldOf(func(r *typedRow) *float64 { return &r.Amount }).Gt(100), `Total gt 100.0`},
		{table.FieldOf(func(r *typedRow) *uint16 { return &r.Small }).Le(7), `Small le 7`},
		{table.FieldOf(func(r *typedRow) *int64 { return &r.Count }).Ge(5), `Count ge 5L`},
		{table.FieldOf(func(r *typedRow) *time.Time { return &r.When }).Lt(when), `When lt datetime'2026-01-02T03:04:05.0000000Z'`},
		{table.FieldOf(func(r *typedRow) *status { return &r.State }).Ne("open"), `State ne 'open'`},
		{table.FieldOf(func(r *typedRow) **int32 { return &r.Maybe }).Eq(&three), `Maybe eq 3`},
		{table.FieldOf(func(r *typedRow) *bool { return &r.Inner }).Eq(true), `Inner eq true`},
		{table.FieldOf(func(r *typedRow) *string { return &r.PartitionKey }).Eq("p"), `PartitionKey eq 'p'`},
		{table.FieldOf(func(r *typedRow) *string { return &r.RowKey }).Ge("r"), `RowKey ge 'r'`},
		{table.FieldOf(func(r *typedRow) *time.Time { return &r.Timestamp }).Gt(when), `Timestamp gt datetime'2026-01-02T03:04:05.0000000Z'`},
	} {
		got, err := tc.f.Build()
		if err != nil || got != tc.want {
			t.Errorf("got %s (%v), want %s", got, err, tc.want)
		}
	}
	for name, f := range map[string]table.Filter{
		"skipped":           table.FieldOf(func(r *typedRow) *string { return &r.Skipped }).Eq("x"),
		"json":              table.FieldOf(func(r *typedRow) *address { return &r.Blob }).Eq(address{}),
		"outside":           table.FieldOf(func(r *typedRow) *string { s := ""; return &s }).Eq("x"),
		"nil":               table.FieldOf(func(r *typedRow) *string { return nil }).Eq("x"),
		"nil pointer value": table.FieldOf(func(r *typedRow) **int32 { return &r.Maybe }).Eq(nil),
		"not a struct":      table.FieldOf(func(s *string) *string { return s }).Eq("x"),
		"panics":            table.FieldOf(func(r *typedRow) *string { var p *typedRow; return &p.Name }).Eq("x"),
	} {
		if _, err := f.Build(); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	// A key component is a property too: a filter compares it.
	year, err := table.FieldOf(func(o *keyedOrder) *int { return &o.Year }).Eq(2026).Build()
	if err != nil || year != "Year eq 2026L" {
		t.Errorf("key component: %s %v", year, err)
	}
	// The 15-comparison limit holds for typed comparisons too.
	name := table.FieldOf(func(r *typedRow) *string { return &r.Name })
	var f table.Filter
	for range 16 {
		f = f.Or(name.Eq("x"))
	}
	if _, err := f.Build(); !errors.Is(err, table.ErrBadFilter) {
		t.Errorf("16 typed comparisons: %v", err)
	}
}

type typedProjection struct {
	table.Meta
	Amount float64 `table:"Total"`
	State  status
	Rest   table.Extra
}

func TestQueryAsSelectsOnlyTheProjection(t *testing.T) {
	ctx := t.Context()
	var c reqcount.Counter
	client := fake.NewTableService(nil).NewClient("Projected", c.TableOptions())
	if _, err := client.CreateTable(ctx, nil); err != nil {
		t.Fatal(err)
	}
	tb, err := table.New[typedRow](client, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range []status{"open", "closed", "open"} {
		r := &typedRow{Name: "n", Amount: float64(i), State: s, Count: 9, When: time.Now()}
		r.PartitionKey, r.RowKey = "p", string(rune('a'+i))
		if err := tb.Add(ctx, r, nil); err != nil {
			t.Fatal(err)
		}
	}
	sel, err := table.SelectOf[typedProjection]()
	if err != nil || strings.Join(sel, ",") != "Total,State" {
		t.Fatalf("SelectOf = %v %v", sel, err)
	}
	c.Reset()
	state := table.FieldOf(func(r *typedRow) *status { return &r.State })
	got, err := seqs.Collect(table.QueryAs[typedProjection](ctx, tb, &table.QueryOptions{Filter: table.Partition("p").And(state.Eq("open"))}))
	if err != nil || len(got) != 2 || c.N() != 1 {
		t.Fatalf("QueryAs: %d rows, %v, %d requests", len(got), err, c.N())
	}
	for _, p := range got {
		if p.State != "open" || p.PartitionKey != "p" || p.ETag == "" || len(p.Rest) != 0 {
			t.Errorf("projection %+v: want State, keys and ETag, and no other property", p)
		}
	}
	if got[1].Amount != 2 {
		t.Errorf("Amount %v", got[1].Amount)
	}
	// Bad projections: refused before any request.
	type notStored struct {
		table.Meta
		Missing string
	}
	type wrongType struct {
		table.Meta
		Total string
	}
	c.Reset()
	for name, err := range map[string]error{
		"not stored": func() error { _, err := seqs.Collect(table.QueryAs[notStored](ctx, tb, nil)); return err }(),
		"wrong type": func() error { _, err := seqs.Collect(table.QueryAs[wrongType](ctx, tb, nil)); return err }(),
		"select set": func() error {
			_, err := seqs.Collect(table.QueryAs[typedProjection](ctx, tb, &table.QueryOptions{Select: []string{"Name"}}))
			return err
		}(),
		"no meta": func() error { _, err := seqs.Collect(table.QueryAs[address](ctx, tb, nil)); return err }(),
	} {
		var ie *table.InputError
		if !errors.As(err, &ie) {
			t.Errorf("%s: %v, want an *InputError", name, err)
		}
	}
	if c.N() != 0 {
		t.Errorf("%d requests for bad projections", c.N())
	}
}

// A projection of an encrypted type reads its encrypted fields decrypted.
func TestQueryAsDecrypts(t *testing.T) {
	ctx := t.Context()
	_, client := newPatients(t)
	tb := encrypted(t, client, "k1", table.LocalKeys{"k1": keyOf(1)})
	if err := tb.Add(ctx, don(), nil); err != nil {
		t.Fatal(err)
	}
	type ssnOnly struct {
		table.Meta
		SSN string
	}
	got, err := seqs.Collect(table.QueryAs[ssnOnly](ctx, tb, nil))
	if err != nil || len(got) != 1 || got[0].SSN != "078-05-1120" || got[0].RowKey != "000123" {
		t.Fatalf("QueryAs of an encrypted field: %+v %v", got, err)
	}
}
