package integration

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/internal/reqcount"
	"github.com/tablekit/tablekit/internal/seqs"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/table"
)

// KeyedOrder declares its keys from its fields: PartitionKey is
// the customer, RowKey the prefix "order_", the year, the time placed
// (newest first) and the order's ID.
type KeyedOrder struct {
	table.Meta `table:",rkprefix:order_"`
	Customer   string    `table:"Customer,pk,tuple"`
	Year       int       `table:"Year,rk:1,pad:4"`
	Placed     time.Time `table:"Placed,rk:2,invticks"`
	ID         string    `table:"ID,rk:3"`
	Amount     float64
	Items      int64
	Status     string
}

// KeyedStaff declares its keys: the department, and the employee id in
// six digits after the prefix "emp_" (the guide's "Sales" / "emp_000123").
type KeyedStaff struct {
	table.Meta `table:",rkprefix:emp_"`
	Dept       string `table:"Dept,pk"`
	ID         int    `table:"ID,rk,pad:6"`
	Email      string
}

// KeyedOrderAmount is a projection of KeyedOrder: its key fields and
// Amount. Rest holds any other property the backend sends, which must be
// none when $select is honoured.
type KeyedOrderAmount struct {
	table.Meta `table:",rkprefix:order_"`
	Customer   string    `table:"Customer,pk,tuple"`
	Year       int       `table:"Year,rk:1,pad:4"`
	Placed     time.Time `table:"Placed,rk:2,invticks"`
	ID         string    `table:"ID,rk:3"`
	Amount     float64
	Rest       table.Extra
}

// RunTypedKeys checks declarative keys, key ranges, typed filters and
// typed projections against a backend: on the backend's own clients and,
// when the backend offers service clients, on tablekit's own path and on
// the SDK's path it falls back to.
func RunTypedKeys(t *testing.T, env Env) {
	t.Run("SDK path", func(t *testing.T) { runTypedKeys(t, env) })
	if env.NewServiceClient == nil {
		t.Logf("not run on %s: the own query path needs NewServiceClient", env.Name)
		return
	}
	t.Run("own query path", func(t *testing.T) { runTypedKeys(t, withWirePath(env, true)) })
	t.Run("SDK's query path", func(t *testing.T) { runTypedKeys(t, withWirePath(env, false)) })
}

func runTypedKeys(t *testing.T, env Env) {
	ctx := t.Context()
	var c reqcount.Counter
	client := env.NewTable(t, &c)
	orders, err := table.New[KeyedOrder](client, nil)
	if err != nil {
		t.Fatal(err)
	}
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	at := func(days int) time.Time { return base.Add(time.Duration(days) * 24 * time.Hour) }
	c.Reset()

	// Written through Add, Upsert, a transaction and the Writer: each
	// composes the keys from the fields.
	if err := orders.Add(ctx, &KeyedOrder{Customer: "C/042", Year: 2026, Placed: at(1), ID: "o-1", Amount: 120, Items: 3, Status: "paid"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := orders.Upsert(ctx, &KeyedOrder{Customer: "C/042", Year: 2026, Placed: at(5), ID: "o-2", Amount: 40, Items: 1, Status: "open"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := batch.Submit(ctx, client, []batch.Op{
		batch.Add(&KeyedOrder{Customer: "C/042", Year: 2026, Placed: at(3), ID: "o-3", Amount: 75.5, Items: 2, Status: "paid"}),
		batch.Add(&KeyedOrder{Customer: "C/042", Year: 2025, Placed: at(-200), ID: "o-0", Amount: 300, Items: 9, Status: "paid"}),
		batch.Add(&KeyedOrder{Customer: "C/042", Year: 2027, Placed: at(400), ID: "o-9", Amount: 10, Items: 1, Status: "paid"}),
	}, nil); err != nil {
		t.Fatal(err)
	}
	w := batch.NewWriter(client, nil)
	if _, err := w.Write(ctx, slices.Values([]batch.Op{
		batch.Add(&KeyedOrder{Customer: "C/0420", Year: 2026, Placed: at(2), ID: "o-5", Amount: 99, Items: 4, Status: "paid"}),
		batch.Add(&KeyedOrder{Customer: "C/04", Year: 2026, Placed: at(2), ID: "o-6", Amount: 99, Items: 4, Status: "paid"}),
	}),

		nil); err != nil {
		t.Fatal(err)
	}
	wantRequests(t, &c, 5, "Add, Upsert, one transaction and the Writer's two transactions (two partitions)")

	t.Run("point read by the fields", func(t *testing.T) {
		pk, rk, err := table.KeysOf(&KeyedOrder{Customer: "C/042", Year: 2026, Placed: at(3), ID: "o-3"})
		if err != nil {
			t.Fatal(err)
		}
		if want := "C.1042!"; pk != want {
			t.Errorf("PartitionKey %q, want %q (the tuple encoding of C/042)", pk, want)
		}
		c.Reset()
		got, err := orders.Get(ctx, pk, rk, nil)
		if err != nil {
			t.Fatal(err)
		}
		wantRequests(t, &c, 1, "Get")
		if got.Customer != "C/042" || got.Year != 2026 || !got.Placed.Equal(at(3)) || got.ID != "o-3" || got.Amount != 75.5 {
			t.Fatalf("Get filled %+v", got)
		}
		// A read, then a change of a key component: the write would be
		// another entity than the one read, so it is refused, unsent.
		got.Year = 2027
		err = orders.Update(ctx, got, nil)
		if !errors.Is(err, table.ErrKeyMismatch) {
			t.Fatalf("Update after changing a key field: %v", err)
		}
		wantRequests(t, &c, 0, "a refused Update")
		got.Year = 2026
		got.Amount = 76
		if err := orders.Update(ctx, got, nil); err != nil {
			t.Fatal(err)
		}
		wantRequests(t, &c, 1, "Update")
	})

	t.Run("key range of a prefix: customer C/042 in 2026, newest first", func(t *testing.T) {
		c.Reset()
		f := table.KeyRange(&KeyedOrder{Customer: "C/042", Year: 2026}, 1)
		if f.Kind() != table.RangeQuery {
			t.Fatalf("%v is a %v", f, f.Kind())
		}
		got, err := seqs.Collect(orders.Query(ctx, &table.QueryOptions{Filter: f}))
		if err != nil {
			t.Fatal(err)
		}
		wantRequests(t, &c, 1, "a one-page range query")
		var ids []string
		for _, o := range got {
			ids = append(ids, o.ID)
		}
		if want := []string{"o-2", "o-3", "o-1"}; !slices.Equal(ids, want) {
			t.Fatalf("orders %v, want %v (2026 only, newest first; neighbours C/04 and C/0420 excluded)", ids, want)
		}
		all, err := seqs.Collect(orders.Query(ctx, &table.QueryOptions{Filter: table.KeyRange(&KeyedOrder{Customer: "C/042"}, 0)}))
		if err != nil || len(all) != 5 || all[0].Year != 2025 || all[4].Year != 2027 {
			t.Fatalf("whole partition: %d orders, %v", len(all), err)
		}
	})

	t.Run("typed filter composed with a key range", func(t *testing.T) {
		amount := table.FieldOf(func(o *KeyedOrder) *float64 { return &o.Amount })
		items := table.FieldOf(func(o *KeyedOrder) *int64 { return &o.Items })
		status := table.FieldOf(func(o *KeyedOrder) *string { return &o.Status })
		f := table.KeyRange(&KeyedOrder{Customer: "C/042"}, 0).And(amount.Gt(50), items.Ge(2), status.Eq("paid"))
		got, err := seqs.Collect(orders.Query(ctx, &table.QueryOptions{Filter: f}))
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, o := range got {
			ids = append(ids, o.ID)
		}
		if want := []string{"o-0", "o-3", "o-1"}; !slices.Equal(ids, want) {
			t.Fatalf("%v matched %v, want %v", f, ids, want)
		}
		// A key component is stored as a property too: a filter compares
		// it across partitions (a table scan, in key order).
		year := table.FieldOf(func(o *KeyedOrder) *int { return &o.Year })
		f = table.And(year.Eq(2026), status.Eq("paid"))
		got, err = seqs.Collect(orders.Query(ctx, &table.QueryOptions{Filter: f}))
		if err != nil {
			t.Fatal(err)
		}
		ids = ids[:0]
		for _, o := range got {
			ids = append(ids, o.ID)
		}
		if want := []string{"o-6", "o-3", "o-1", "o-5"}; !slices.Equal(ids, want) {
			t.Fatalf("%v matched %v, want %v", f, ids, want)
		}
	})

	t.Run("projection reads only its fields", func(t *testing.T) {
		c.Reset()
		got, err := seqs.Collect(table.QueryAs[KeyedOrderAmount](ctx, orders, &table.QueryOptions{Filter: table.KeyRange(&KeyedOrder{Customer: "C/042", Year: 2026}, 1)}))
		if err != nil {
			t.Fatal(err)
		}
		// One partition, three rows: one page, plus the empty page the
		// service may send before it (the adversarial fake: every third response).
		wantPagedRequests(t, env, &c, 1, 1, 2, "QueryAs")
		if len(got) != 3 {
			t.Fatalf("%d rows", len(got))
		}
		for _, p := range got {
			if len(p.Rest) != 0 {
				t.Errorf("%s: properties outside the projection came back: %v", p.ID, slices.Sorted(mapKeys(p.Rest)))
			}
			if p.Customer != "C/042" || p.Year != 2026 || p.Amount == 0 || p.ETag == "" {
				t.Errorf("projection %+v", p)
			}
		}
		type unknown struct {
			table.Meta
			Discount float64
		}
		if _, err := seqs.Collect(table.QueryAs[unknown](ctx, orders, nil)); !errors.Is(err, table.ErrBadOption) {
			t.Errorf("a projection of a property the type does not store: %v", err)
		}
		wantRequests(t, &c, 0, "a refused projection")
	})

	t.Run("intra-partition index over a type that declares its keys", func(t *testing.T) {
		// The pattern routes by Meta before it writes, and reads copies
		// whose keys are the index's: the fields come from the copy's
		// properties.
		x, err := patterns.OpenModel(ctx, tableOf(table.New[KeyedStaff](client, nil)), &patterns.ModelOptions[KeyedStaff]{Name: "idx", Primary: "emp_", Copies: []patterns.IndexDef[KeyedStaff]{
			{Name: "email", Prefix: "email_", Unique: true, Value: func(s *KeyedStaff) string { return s.Email }},
		}})
		if err != nil {
			t.Fatal(err)
		}
		if err := x.Add(ctx, &KeyedStaff{Dept: "Sales", ID: 123, Email: "don@contoso.com"}, nil); err != nil {
			t.Fatal(err)
		}
		pk, _, err := table.KeysOf(&KeyedStaff{Dept: "Sales"})
		if err != nil {
			t.Fatal(err)
		}
		got, err := x.Lookup(ctx, "email", pk, "don@contoso.com", nil)
		if err != nil {
			t.Fatal(err)
		}
		if got.Dept != "Sales" || got.ID != 123 || got.RowKey != "emp_000123" {
			t.Fatalf("Lookup = %+v", got)
		}
	})

	t.Run("bad composed keys are refused before any request", func(t *testing.T) {
		c.Reset()
		long := strings.Repeat("x", 600)
		hand := &KeyedOrder{Customer: "C", Year: 2026, Placed: base, ID: "1"}
		hand.RowKey = "by hand"
		for name, err := range map[string]error{
			"key set by hand":    orders.Add(ctx, hand, nil),
			"year over pad:4":    orders.Add(ctx, &KeyedOrder{Customer: "C", Year: 10000, Placed: base}, nil),
			"PartitionKey 1 KiB": orders.Upsert(ctx, &KeyedOrder{Customer: long, Year: 2026, Placed: base}, nil),
			"transaction": func() error {
				_, err := batch.Submit(ctx, client, []batch.Op{batch.Add(&KeyedOrder{Customer: long, Placed: base})}, nil)
				return err
			}(),
		} {
			var ie *table.InputError
			if !errors.As(err, &ie) {
				t.Errorf("%s: %v, want an *InputError", name, err)
			}
			if name == "PartitionKey 1 KiB" && !errors.Is(err, keys.ErrTooLong) {
				t.Errorf("%s: %v, want keys.ErrTooLong", name, err)
			}
		}
		wantRequests(t, &c, 0, "bad keys")
	})
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
