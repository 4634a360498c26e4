package table_test

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/internal/keyrules"
	"github.com/tablekit/tablekit/internal/reqcount"
	"github.com/tablekit/tablekit/internal/tableio"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/table"
)

type keyedOrder struct {
	table.Meta `table:",rkprefix:order_"`
	Customer   string    `table:"Customer,pk,tuple"`
	Year       int       `table:"Year,rk:1,pad:4"`
	Placed     time.Time `table:"Placed,rk:2,invticks"`
	ID         string    `table:"OrderID,rk:3"`
	Amount     float64
	Note       string `table:",omitempty"`
}

func TestKeyedRoundTrip(t *testing.T) {
	placed := time.Date(2026, 3, 4, 5, 6, 7, 800, time.UTC)
	v := &keyedOrder{Customer: "C/042 é", Year: 2026, Placed: placed, ID: "o-17", Amount: 12.5}
	body, err := tableio.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	wantPK, _ := keys.EncodeTuple("C/042 é")
	wantRK := "order_2026!" + keys.InvertedTicks(placed) + "!o-17!"
	if m["PartitionKey"] != wantPK || m["RowKey"] != wantRK {
		t.Fatalf("keys %q %q, want %q %q", m["PartitionKey"], m["RowKey"], wantPK, wantRK)
	}
	// The components are properties too, so filters and index copies see them.
	if m["Customer"] != "C/042 é" || m["Year"] != "2026" || m["OrderID"] != "o-17" || m["Placed"] == nil {
		t.Errorf("key components not stored as properties: %s", body)
	}
	if v.PartitionKey != wantPK || v.RowKey != wantRK {
		t.Errorf("Meta not filled by the write: %q %q", v.PartitionKey, v.RowKey)
	}
	var back keyedOrder
	if err := tableio.Unmarshal(body, &back); err != nil {
		t.Fatal(err)
	}
	if back.Customer != v.Customer || back.Year != 2026 || !back.Placed.Equal(placed.Truncate(100)) || back.ID != "o-17" || back.Amount != 12.5 {
		t.Fatalf("read back %+v", back)
	}
	pk, rk, err := table.KeysOf(&keyedOrder{Customer: "C/042 é", Year: 2026, Placed: placed, ID: "o-17"})
	if err != nil || pk != wantPK || rk != wantRK {
		t.Fatalf("KeysOf = %q %q %v", pk, rk, err)
	}
	// An entity written by other code, without the component properties:
	// the fields come from the keys.
	keysOnly := &table.Entity{Meta: table.Meta{PartitionKey: wantPK, RowKey: wantRK}}
	keysOnly.Set("Amount", table.ValueOf(float64(3)))
	raw, err := tableio.Marshal(keysOnly)
	if err != nil {
		t.Fatal(err)
	}
	var fromKeys keyedOrder
	if err := tableio.Unmarshal(raw, &fromKeys); err != nil {
		t.Fatal(err)
	}
	if fromKeys.Customer != "C/042 é" || fromKeys.Year != 2026 || !fromKeys.Placed.Equal(placed.Truncate(100)) || fromKeys.ID != "o-17" || fromKeys.Amount != 3 {
		t.Fatalf("fields from the keys: %+v", fromKeys)
	}
	// Keys that are not this type's composite, and no properties: an error.
	keysOnly.RowKey = "by hand"
	raw, _ = tableio.Marshal(keysOnly)
	if err := tableio.Unmarshal(raw, &fromKeys); !errors.Is(err, table.ErrInvalidValue) {
		t.Fatalf("foreign keys: %v", err)
	}
}

type keyedMix struct {
	table.Meta
	S    string    `table:"S,pk,tuple"`
	I    int64     `table:"I,rk:1"`
	U    uint16    `table:"U,rk:2,pad:5"`
	D    int32     `table:"D,rk:3,desc"`
	DF   uint8     `table:"DF,rk:4,desc,pad:3"`
	T    time.Time `table:"T,rk:5"`
	Tail string    `table:"Tail,rk:6"`
}

// Key order is the order of the components, compared one after the other
// (descending ones reversed), for every encoding.
func TestKeyedOrderPreserved(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	strs := []string{"", "a", "a!", "a\x00", "ab", "b", "é", "a/b", "~", "zz"}
	gen := func() *keyedMix {
		return &keyedMix{
			S:    strs[r.IntN(len(strs))],
			I:    int64(r.IntN(7) - 3),
			U:    uint16(r.IntN(4) * 1000),
			D:    int32(r.IntN(5) - 2),
			DF:   uint8(r.IntN(3) * 100),
			T:    time.Unix(int64(r.IntN(3))*1e9-1e9, 0),
			Tail: strs[r.IntN(len(strs))],
		}
	}
	order := func(a, b *keyedMix) int {
		return cmp.Or(cmp.Compare(a.I, b.I), cmp.Compare(a.U, b.U), -cmp.Compare(a.D, b.D), -cmp.Compare(a.DF, b.DF),
			a.T.Compare(b.T), strings.Compare(a.Tail, b.Tail))
	}
	for range 3000 {
		a, b := gen(), gen()
		_, ka, err1 := table.KeysOf(a)
		_, kb, err2 := table.KeysOf(b)
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if got, want := keyrules.Compare(ka, kb), order(a, b); sign(got) != sign(want) {
			t.Fatalf("%+v vs %+v: keys %q %q compare %d, fields %d", a, b, ka, kb, got, want)
		}
		body, err := tableio.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		var back keyedMix
		if err := tableio.Unmarshal(body, &back); err != nil {
			t.Fatal(err)
		}
		back.Meta = table.Meta{}
		a.Meta = table.Meta{}
		if order(&back, a) != 0 || back.S != a.S {
			t.Fatalf("round trip %+v -> %+v", a, back)
		}
	}
}

func sign(n int) int { return cmp.Compare(n, 0) }

func TestKeyedLayoutErrors(t *testing.T) {
	client := fake.NewTableService(nil).NewClient("t", nil)
	check := func(name string, newErr error, want string) {
		t.Helper()
		var ie *table.InputError
		if !errors.Is(newErr, table.ErrKeyLayout) || !errors.As(newErr, &ie) || !strings.Contains(newErr.Error(), want) {
			t.Errorf("%s: %v, want ErrKeyLayout mentioning %q", name, newErr, want)
		}
	}
	type unknownEnc struct {
		table.Meta
		A string `table:"A,pk,zigzag"`
	}
	_, err := table.New[unknownEnc](client, nil)
	check("unknown encoding", err, `unknown key encoding "zigzag"`)
	type badType struct {
		table.Meta
		A float64 `table:"A,pk"`
	}
	_, err = table.New[badType](client, nil)
	check("float component", err, "a key holds strings, integers and time.Time")
	type ticksOnInt struct {
		table.Meta
		A int `table:"A,pk,ticks"`
	}
	_, err = table.New[ticksOnInt](client, nil)
	check("ticks on int", err, "integer component")
	type padOnString struct {
		table.Meta
		A string `table:"A,pk,pad:3"`
	}
	_, err = table.New[padOnString](client, nil)
	check("pad on string", err, "string component")
	type gap struct {
		table.Meta
		A string `table:"A,rk:1"`
		B string `table:"B,rk:3"`
	}
	_, err = table.New[gap](client, nil)
	check("gap", err, "without gaps")
	type dup struct {
		table.Meta
		A string `table:"A,rk"`
		B string `table:"B,rk:1"`
	}
	_, err = table.New[dup](client, nil)
	check("duplicate", err, "is also A's position")
	type rawFirst struct {
		table.Meta
		A string `table:"A,rk:1,raw"`
		B string `table:"B,rk:2"`
	}
	_, err = table.New[rawFirst](client, nil)
	check("raw not last", err, "must be the last")
	type encryptedKey struct {
		table.Meta
		A string `table:"A,pk,encrypt"`
	}
	_, err = table.New[encryptedKey](client, nil)
	check("encrypt on key", err, "never encrypted")
	type encOnly struct {
		table.Meta
		A int `table:"A,desc"`
	}
	_, err = table.New[encOnly](client, nil)
	check("encoding without pk/rk", err, "add pk or rk")
	type badMeta struct {
		table.Meta `table:",rkprefix:"`
		A          string `table:"A,pk"`
	}
	_, err = table.New[badMeta](client, nil)
	check("empty prefix", err, "non-empty prefix")
}

// Every bad composed key is refused before any request, on Table's verbs
// and on batch operations (whose routing reads Meta through Codec.MetaOf).
func TestKeyedWriteErrorsSendNothing(t *testing.T) {
	ctx := t.Context()
	var c reqcount.Counter
	client := fake.NewTableService(nil).NewClient("Keyed", c.TableOptions())
	if _, err := client.CreateTable(ctx, nil); err != nil {
		t.Fatal(err)
	}
	type rawKeyed struct {
		table.Meta
		A string `table:"A,pk,raw"`
		N int    `table:"N,rk,pad:3"`
	}
	tb, err := table.New[keyedOrder](client, nil)
	if err != nil {
		t.Fatal(err)
	}
	rtb, err := table.New[rawKeyed](client, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Reset()
	long := strings.Repeat("x", 600)
	cases := []struct {
		name string
		v    func() error
		rule error
	}{
		{"key set by hand", func() error {
			v := &keyedOrder{Customer: "C", Year: 2026, ID: "1"}
			v.PartitionKey = "other"
			return tb.Add(ctx, v, nil)
		}, table.ErrKeyMismatch},
		{"component changed after a read", func() error {
			v := &keyedOrder{Customer: "C", Year: 2026, ID: "1", Placed: time.Now()}
			if _, err := tableio.For(tb).Encode(v); err != nil {
				return err
			}
			v.Year = 2027
			return tb.Upsert(ctx, v, nil)
		}, table.ErrKeyMismatch},
		{"pad:4 overflow", func() error { return tb.Add(ctx, &keyedOrder{Customer: "C", Year: 12026}, nil) }, keys.ErrOutOfRange},
		{"pad:3 negative", func() error { return rtb.Add(ctx, &rawKeyed{A: "a", N: -1}, nil) }, table.ErrValueOutOfRange},
		{"tuple over 1 KiB", func() error { return tb.Add(ctx, &keyedOrder{Customer: long}, nil) }, keys.ErrTooLong},
		{"raw key over 1 KiB", func() error { return rtb.Upsert(ctx, &rawKeyed{A: long}, nil) }, keys.ErrTooLong},
		{"raw key with /", func() error { return rtb.Add(ctx, &rawKeyed{A: "a/b"}, nil) }, keys.ErrForbiddenChar},
		{"time before .NET's DateTime", func() error {
			return tb.Add(ctx, &keyedOrder{Customer: "C", Placed: time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC)}, nil)
		}, keys.ErrOutOfRange},
		{"batch: raw key with /", func() error {
			_, err := batch.Plan([]batch.Op{batch.Add(&rawKeyed{A: "a/b"})}, nil)
			return err
		}, keys.ErrForbiddenChar},
		{"batch: key set by hand", func() error {
			v := &rawKeyed{A: "a", N: 1}
			v.RowKey = "002"
			_, err := batch.Plan([]batch.Op{batch.Upsert(v, aztables.UpdateModeMerge)}, nil)
			return err
		}, table.ErrKeyMismatch},
	}
	for _, tc := range cases {
		err := tc.v()
		var ie *table.InputError
		if !errors.Is(err, tc.rule) || !errors.As(err, &ie) {
			t.Errorf("%s: %v, want %v in an *InputError", tc.name, err, tc.rule)
		}
	}
	if c.N() != 0 {
		t.Fatalf("%d requests sent for bad keys", c.N())
	}
}

func TestKeyRange(t *testing.T) {
	f := table.KeyRange(&keyedOrder{Customer: "C042", Year: 2026}, 1)
	got, err := f.Build()
	want := `(PartitionKey eq 'C042!') and (RowKey ge 'order_2026!') and (RowKey lt 'order_2026"')`
	if err != nil || got != want {
		t.Fatalf("KeyRange = %s, %v\nwant %s", got, err, want)
	}
	if k := f.Kind(); k != table.RangeQuery {
		t.Errorf("Classify = %v", k)
	}
	all, _ := table.KeyRange(&keyedOrder{Customer: "C042"}, 0).Build()
	if all != "(PartitionKey eq 'C042!') and (RowKey ge 'order_') and (RowKey lt 'order`')" {
		t.Errorf("n=0: %s", all)
	}
	v := &keyedOrder{Customer: "C042", Year: 2026, ID: "o1"}
	_, rk, _ := table.KeysOf(v)
	point, _ := table.KeyRange(v, 3).Build()
	if point != `(PartitionKey eq 'C042!') and (RowKey eq '`+rk+`')` {
		t.Errorf("n=3: %s", point)
	}
	// It composes with the builder, and the 15-comparison limit counts it.
	amount := table.FieldOf(func(o *keyedOrder) *float64 { return &o.Amount })
	and, err := f.And(amount.Gt(100)).Build()
	if err != nil || !strings.HasSuffix(and, "(Amount gt 100.0)") {
		t.Errorf("And: %s %v", and, err)
	}
	many := f
	for i := range 13 {
		many = many.And(amount.Ne(float64(i)))
	}
	if _, err := many.Build(); !errors.Is(err, table.ErrBadFilter) {
		t.Errorf("16 comparisons: %v", err)
	}
	for name, bad := range map[string]table.Filter{
		"n too large":  table.KeyRange(v, 4),
		"negative n":   table.KeyRange(v, -1),
		"no rk layout": table.KeyRange(&employee{}, 0),
		"nil":          table.KeyRange[keyedOrder](nil, 0),
		"bad pk":       table.KeyRange(&keyedOrder{Customer: strings.Repeat("x", 600)}, 0),
	} {
		if _, err := bad.Build(); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// Modify with Create on a type that declares its keys: change sees the key
// fields of the new entity, and the write composes the same keys.
func TestKeyedModifyCreates(t *testing.T) {
	ctx := t.Context()
	client := fake.NewTableService(nil).NewClient("KeyedModify", nil)
	if _, err := client.CreateTable(ctx, nil); err != nil {
		t.Fatal(err)
	}
	tb, err := table.New[keyedOrder](client, nil)
	if err != nil {
		t.Fatal(err)
	}
	placed := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	pk, rk, err := table.KeysOf(&keyedOrder{Customer: "C9", Year: 2026, Placed: placed, ID: "o-9"})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		got, err := tb.Modify(ctx, pk, rk, func(o *keyedOrder) error {
			if o.Customer != "C9" || o.Year != 2026 || !o.Placed.Equal(placed) || o.ID != "o-9" {
				return fmt.Errorf("change sees %+v", o)
			}
			o.Amount++
			return nil
		}, &table.ModifyOptions{Create: true})
		if err != nil {
			t.Fatal(err)
		}
		if got.PartitionKey != pk || got.RowKey != rk {
			t.Fatalf("keys %q %q", got.PartitionKey, got.RowKey)
		}
	}
	got, err := tb.Get(ctx, pk, rk, nil)
	if err != nil || got.Amount != 2 {
		t.Fatalf("Get: %+v %v", got, err)
	}
}
