package integration

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit/internal/tableio"

	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/internal/seqs"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/table"
)

// TestTypedKeysCatalogue: bad key declarations, bad composed keys, key
// ranges, typed filters and projections are each refused with
// their sentinel before any request, and nothing is written.
func TestTypedKeysCatalogue(t *testing.T) {
	ctx := t.Context()
	tables := fake.NewTableService(nil)
	tc := tables.NewClient("typedkeys", nil)
	if _, err := tc.CreateTable(ctx, nil); err != nil {
		t.Fatal(err)
	}
	orders, err := table.New[KeyedOrder](tc, nil)
	if err != nil {
		t.Fatal(err)
	}
	type rawTail struct {
		table.Meta
		Region string `table:"Region,pk"`
		Name   string `table:"Name,rk,raw"`
	}
	type fixed struct {
		table.Meta
		Region string `table:"Region,pk"`
		N      int    `table:"N,rk,pad:3"`
	}
	raws, _ := table.New[rawTail](tc, nil)
	fixeds, _ := table.New[fixed](tc, nil)
	newType := func(f func() error) func(context.Context) error { return func(context.Context) error { return f() } }
	type unknownEnc struct {
		table.Meta
		A string `table:"A,pk,zigzag"`
	}
	type floatKey struct {
		table.Meta
		A float64 `table:"A,pk"`
	}
	type gap struct {
		table.Meta
		A string `table:"A,rk:1"`
		B string `table:"B,rk:3"`
	}
	type dup struct {
		table.Meta
		A string `table:"A,rk:2"`
		B string `table:"B,rk:2"`
	}
	type rawFirst struct {
		table.Meta
		A string `table:"A,rk:1,raw"`
		B string `table:"B,rk:2"`
	}
	type encryptedKey struct {
		table.Meta
		A string `table:"A,pk,encrypt"`
	}
	type skipped struct {
		table.Meta
		Scratch string `table:"-"`
	}
	type unknownProj struct {
		table.Meta
		Discount float64
	}
	type wrongProj struct {
		table.Meta
		Amount string
	}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	read := &KeyedOrder{Customer: "C", Year: 2026, Placed: base, ID: "1"}
	if _, err := tableio.For(orders).Encode(read); err != nil { // as if read: Meta holds the keys
		t.Fatal(err)
	}
	read.Year = 2027
	hand := &KeyedOrder{Customer: "C", Year: 2026, Placed: base, ID: "1"}
	hand.PartitionKey = "D!"
	query := func(f table.Filter) func(context.Context) error {
		return func(ctx context.Context) error {
			_, err := seqs.Collect(orders.Query(ctx, &table.QueryOptions{Filter: f}))
			return err
		}
	}
	cases := []struct {
		name string
		want error
		call func(context.Context) error
	}{
		{"key component with an unknown encoding", table.ErrKeyLayout, newType(func() error { _, err := table.New[unknownEnc](tc, nil); return err })},
		{"key component of a type no key holds (float64)", table.ErrKeyLayout, newType(func() error { _, err := table.New[floatKey](tc, nil); return err })},
		{"gap in the key components' order", table.ErrKeyLayout, newType(func() error { _, err := table.New[gap](tc, nil); return err })},
		{"two key components at one position", table.ErrKeyLayout, newType(func() error { _, err := table.New[dup](tc, nil); return err })},
		{"raw key component before another", table.ErrKeyLayout, newType(func() error { _, err := table.New[rawFirst](tc, nil); return err })},
		{"encrypt on a key component", table.ErrKeyLayout, newType(func() error { _, err := table.New[encryptedKey](tc, nil); return err })},
		{"declared key also set by hand in Meta", table.ErrKeyMismatch, func(ctx context.Context) error { return orders.Add(ctx, hand, nil) }},
		{"key component changed after a read", table.ErrKeyMismatch, func(ctx context.Context) error { return orders.Upsert(ctx, read, nil) }},
		{"composed PartitionKey over 1 KiB", keys.ErrTooLong, func(ctx context.Context) error {
			return orders.Add(ctx, &KeyedOrder{Customer: strings.Repeat("x", 600), Placed: base}, nil)
		}},
		{"raw key component with a slash", keys.ErrForbiddenChar, func(ctx context.Context) error { return raws.Add(ctx, &rawTail{Region: "eu", Name: "a/b"}, nil) }},
		{"pad:N component that does not fit N digits", keys.ErrOutOfRange, func(ctx context.Context) error { return fixeds.Add(ctx, &fixed{Region: "eu", N: 1000}, nil) }},
		{"negative pad:N component", table.ErrValueOutOfRange, func(ctx context.Context) error { return fixeds.Add(ctx, &fixed{Region: "eu", N: -1}, nil) }},
		{"time component outside .NET's DateTime", keys.ErrOutOfRange, func(ctx context.Context) error {
			return orders.Add(ctx, &KeyedOrder{Customer: "C", Placed: time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC)}, nil)
		}},
		{"transaction of a bad composed key", keys.ErrTooLong, func(ctx context.Context) error {
			_, err := batch.Submit(ctx, tc, []batch.Op{batch.Add(&KeyedOrder{Customer: strings.Repeat("x", 600), Placed: base})}, nil)
			return err
		}},
		{"KeyRange past the RowKey's components", table.ErrBadOption, query(table.KeyRange(&KeyedOrder{Customer: "C"}, 4))},
		{"KeyRange of a type without a RowKey layout", table.ErrKeyLayout, query(table.KeyRange(&Employee{}, 0))},
		{"FieldOf a field the codec skips", table.ErrBadFilter, query(table.FieldOf(func(o *skipped) *string { return &o.Scratch }).Eq(""))},
		{"FieldOf an address outside the struct", table.ErrBadFilter, query(table.FieldOf(func(o *KeyedOrder) *string { s := ""; return &s }).Eq(""))},
		{"projection of a property the type does not store", table.ErrBadOption, func(ctx context.Context) error {
			_, err := seqs.Collect(table.QueryAs[unknownProj](ctx, orders, nil))
			return err
		}},
		{"projection reading a property as another EDM type", table.ErrBadOption, func(ctx context.Context) error {
			_, err := seqs.Collect(table.QueryAs[wrongProj](ctx, orders, nil))
			return err
		}},
	}
	tables.ResetCounts()
	for _, c := range cases {
		err := c.call(ctx)
		var ie *table.InputError
		if !errors.Is(err, c.want) || !errors.As(err, &ie) {
			t.Errorf("%s: %v, want %v in a *table.InputError", c.name, err, c.want)
		}
		if n := tables.Total(); n != 0 {
			t.Errorf("%s: %d requests", c.name, n)
			tables.ResetCounts()
		}
	}
	if n := tables.Len("typedkeys"); n != 0 {
		t.Errorf("%d entities written", n)
	}
	t.Logf("%d bad inputs, each a typed error, no request, nothing written", len(cases))
}
