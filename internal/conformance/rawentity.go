package conformance

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/internal/reqcount"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/table"
)

// RunRawEntity is the contract of the raw entity API (table.Entity): every
// EDM type round-trips with its type, every verb and batch operation works
// on it, and bad input is a typed error before any request.
func RunRawEntity(t *testing.T, env Env) {
	t.Run("EveryEDMTypeRoundTrips", func(t *testing.T) { rawRoundTrip(t, env) })
	t.Run("Verbs", func(t *testing.T) { rawVerbs(t, env) })
	t.Run("Batch", func(t *testing.T) { rawBatch(t, env) })
	t.Run("BadInputSendsNothing", func(t *testing.T) { rawBadInput(t, env) })
	t.Run("TypedAndRawViewsAgree", func(t *testing.T) { rawTypedViews(t, env) })
}

func newRaw(t *testing.T, env Env) (*table.Table[table.Entity], *reqcount.Counter) {
	c := &reqcount.Counter{}
	tb, err := table.New[table.Entity](env.NewTable(t, c), nil)
	if err != nil {
		t.Fatal(err)
	}
	return tb, c
}

// everyType holds one property of each EDM type, with the edges that break
// naive codecs: Int64 beyond 2^53, an integral Double, 100 ns times.
func everyType() *table.Entity {
	g, _ := table.ParseGUID("0f8fad5b-d9cb-469f-a165-70867728950e")
	e := &table.Entity{Meta: table.Meta{PartitionKey: "raw", RowKey: "every"}}
	e.Set("S", table.StringValue("héllo \"wörld\" \u2028 ok"))
	e.Set("Empty", table.StringValue(""))
	e.Set("B", table.BoolValue(true))
	e.Set("I32", table.Int32Value(-2147483648))
	e.Set("I64", table.Int64Value(1<<53+1))
	e.Set("I64Small", table.Int64Value(7))
	e.Set("D", table.DoubleValue(0.1))
	e.Set("DIntegral", table.DoubleValue(2))
	e.Set("DBig", table.DoubleValue(1e300))
	e.Set("T", table.DateTimeValue(time.Date(2026, 11, 23, 11, 12, 13, 1234500, time.UTC)))
	e.Set("Bin", table.BinaryValue([]byte{0, 1, 2, 0xff}))
	e.Set("G", table.GUIDValue(g))
	return e
}

// sameEntity compares properties by type and value; an integral Double
// that came back unannotated (Inferred Int32) must still give the value.
func sameEntity(t *testing.T, env Env, what string, want, got *table.Entity) {
	t.Helper()
	if got.PartitionKey != want.PartitionKey || got.RowKey != want.RowKey {
		t.Fatalf("%s: keys %q/%q, want %q/%q", what, got.PartitionKey, got.RowKey, want.PartitionKey, want.RowKey)
	}
	if len(got.Properties) != len(want.Properties) {
		t.Fatalf("%s: %d properties, want %d: %v", what, len(got.Properties), len(want.Properties), got.Properties)
	}
	for name, w := range want.Properties {
		g, ok := got.Get(name)
		if !ok {
			t.Fatalf("%s: %s missing", what, name)
		}
		if g.Equal(w) {
			continue
		}
		if w.Type() == table.EdmDouble && g.Inferred() && env.Fake == nil {
			// The service omits the annotation of an integral Double.
			if x, _ := g.AsDouble(); x == math.Floor(x) {
				wx, _ := w.AsDouble()
				if x == wx {
					// Azurite 3.37 answers an integral Double as "2", which
					// no reader can tell from an Int32; the service (and
					// the fake) write "2.0" or annotate it.
					t.Logf("not run on %s: %s Double type check, the backend answers an integral Double as %v without annotation; AsDouble gives the value", env.Name, name, g)
					continue
				}
			}
		}
		t.Fatalf("%s: %s = %v, want %v", what, name, g, w)
	}
}

func rawRoundTrip(t *testing.T, env Env) {
	ctx := t.Context()
	tb, c := newRaw(t, env)
	want := everyType()
	if err := tb.Add(ctx, want, nil); err != nil {
		t.Fatal(err)
	}
	if want.ETag == "" || want.Timestamp.IsZero() {
		t.Fatalf("Add left Meta %+v", want.Meta)
	}
	c.Reset()
	got, err := tb.Get(ctx, "raw", "every", nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.N() != 1 {
		t.Fatalf("Get took %d requests", c.N())
	}
	sameEntity(t, env, "Get", want, got)
	if got.ETag != want.ETag {
		t.Fatalf("Get ETag %q, Add gave %q", got.ETag, want.ETag)
	}
	if i64, ok := got.Properties["I64"].AsInt64(); !ok || i64 != 1<<53+1 || got.Properties["I64"].Type() != table.EdmInt64 {
		t.Fatalf("Int64 came back as %v", got.Properties["I64"])
	}
	if got.Properties["D"].Type() != table.EdmDouble {
		t.Fatalf("Double 0.1 came back as %v", got.Properties["D"])
	}
	// Written back as read, every value keeps its type and value.
	if err := tb.Update(ctx, got, &table.UpdateOptions{Mode: table.Replace}); err != nil {
		t.Fatal(err)
	}
	again, err := tb.Get(ctx, "raw", "every", nil)
	if err != nil {
		t.Fatal(err)
	}
	sameEntity(t, env, "read, written back, read", want, again)

	// Query and QueryPage decode the same way.
	all, err := table.Collect(tb.Query(ctx, &table.QueryOptions{Filter: table.Partition("raw")}))
	if err != nil || len(all) != 1 {
		t.Fatalf("Query: %d, %v", len(all), err)
	}
	sameEntity(t, env, "Query", want, all[0])
	page, err := tb.QueryPage(ctx, &table.QueryOptions{Filter: table.Partition("raw"), Select: []string{"I64", "G"}}, "")
	if err != nil || len(page.Items) != 1 {
		t.Fatalf("QueryPage: %v", err)
	}
	if p := page.Items[0]; len(p.Properties) != 2 || !p.Properties["I64"].Equal(want.Properties["I64"]) || !p.Properties["G"].Equal(want.Properties["G"]) {
		t.Fatalf("QueryPage with Select: %v", p.Properties)
	}
}

func rawVerbs(t *testing.T, env Env) {
	ctx := t.Context()
	tb, c := newRaw(t, env)
	e := &table.Entity{Meta: table.Meta{PartitionKey: "p", RowKey: "O'Brien"}}
	e.Set("A", table.Int32Value(1))
	e.Set("B", table.StringValue("b"))
	if err := tb.Upsert(ctx, e, nil); err != nil {
		t.Fatal(err)
	}
	// Merge keeps B; Replace drops it.
	m := &table.Entity{Meta: table.Meta{PartitionKey: "p", RowKey: "O'Brien"}}
	m.Set("C", table.BoolValue(false))
	if err := tb.Upsert(ctx, m, &table.UpsertOptions{Mode: table.Merge}); err != nil {
		t.Fatal(err)
	}
	got, err := tb.Get(ctx, "p", "O'Brien", nil)
	if err != nil || len(got.Properties) != 3 {
		t.Fatalf("after merge: %v %v", got, err)
	}
	if err := tb.Upsert(ctx, m, &table.UpsertOptions{Mode: table.Replace}); err != nil {
		t.Fatal(err)
	}
	got, err = tb.Get(ctx, "p", "O'Brien", nil)
	if err != nil || len(got.Properties) != 1 {
		t.Fatalf("after replace: %v %v", got.Properties, err)
	}
	// Update is guarded by the ETag read.
	stale := *got
	got.Set("D", table.Int64Value(-5))
	if err := tb.Update(ctx, got, nil); err != nil {
		t.Fatal(err)
	}
	stale.Properties = map[string]table.Value{"E": table.StringValue("late")}
	if err := tb.Update(ctx, &stale, nil); !table.IsPreconditionFailed(err) {
		t.Fatalf("stale update: %v", err)
	}
	var ae *azcore.ResponseError
	if !errors.As(tb.DeleteValue(ctx, &stale), &ae) || ae.StatusCode != 412 {
		t.Fatalf("stale delete kept no 412 in the chain")
	}
	// Modify works on raw entities too: read, change, write with the ETag.
	n := 0
	if _, err := tb.Modify(ctx, "p", "O'Brien", func(e *table.Entity) error {
		n++
		e.Set("Count", table.Int32Value(int32(n)))
		return nil
	}, nil); err != nil {
		t.Fatal(err)
	}
	if err := tb.DeleteValue(ctx, got); !table.IsPreconditionFailed(err) {
		t.Fatalf("delete of a version Modify replaced: %v", err)
	}
	cur, err := tb.Get(ctx, "p", "O'Brien", nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Reset()
	if err := tb.DeleteValue(ctx, cur); err != nil {
		t.Fatal(err)
	}
	if c.N() != 1 {
		t.Fatalf("DeleteValue took %d requests", c.N())
	}
	if _, err := tb.Get(ctx, "p", "O'Brien", nil); !table.IsNotFound(err) {
		t.Fatalf("after delete: %v", err)
	}
}

func rawBatch(t *testing.T, env Env) {
	ctx := t.Context()
	tb, c := newRaw(t, env)
	a := everyType()
	a.RowKey = "a"
	b := &table.Entity{Meta: table.Meta{PartitionKey: "raw", RowKey: "b"}}
	b.Set("N", table.Int64Value(math.MaxInt64))
	c.Reset()
	if _, err := batch.Submit(ctx, tb.Client(), batch.Add(a), batch.Upsert(b, table.Replace)); err != nil {
		t.Fatal(err)
	}
	if c.N() != 1 || a.ETag == "" || b.ETag == "" {
		t.Fatalf("batch: %d requests, ETags %q %q", c.N(), a.ETag, b.ETag)
	}
	got, err := tb.Get(ctx, "raw", "a", nil)
	if err != nil {
		t.Fatal(err)
	}
	sameEntity(t, env, "batch Add", a, got)
	if got.ETag != a.ETag {
		t.Fatalf("batch gave ETag %q, stored %q", a.ETag, got.ETag)
	}
	// Guarded update and delete in one transaction, with the ETags the
	// batch recorded.
	b.Set("M", table.StringValue("m"))
	if _, err := batch.Submit(ctx, tb.Client(), batch.Update(b, table.Merge), batch.DeleteValue(a)); err != nil {
		t.Fatal(err)
	}
	gb, err := tb.Get(ctx, "raw", "b", nil)
	if err != nil || len(gb.Properties) != 2 || gb.ETag != b.ETag {
		t.Fatalf("after batch update: %v %v (ETag %q, batch said %q)", gb, err, gb.ETag, b.ETag)
	}
	if _, err := tb.Get(ctx, "raw", "a", nil); !table.IsNotFound(err) {
		t.Fatalf("batch delete: %v", err)
	}
}

func rawBadInput(t *testing.T, env Env) {
	ctx := t.Context()
	tb, c := newRaw(t, env)
	base := func() *table.Entity {
		return &table.Entity{Meta: table.Meta{PartitionKey: "p", RowKey: "r", ETag: "W/\"x\""},
			Properties: map[string]table.Value{"Ok": table.StringValue("ok")}}
	}
	with := func(name string, v table.Value) *table.Entity {
		e := base()
		e.Properties[name] = v
		return e
	}
	many := base()
	for i := 0; i < table.MaxUserProperties; i++ {
		many.Set("P"+keys.Uint64(uint64(i))[14:], table.Int32Value(1))
	}
	big := base()
	for i := 0; i < 20; i++ {
		big.Set("S"+keys.Uint64(uint64(i))[16:], table.StringValue(strings.Repeat("x", table.MaxStringUTF16)))
	}
	badKey := base()
	badKey.RowKey = "a/b"
	cases := []struct {
		name string
		e    *table.Entity
		rule error
	}{
		{"bad property name", with("no-dash", table.Int32Value(1)), keys.ErrForbiddenChar},
		{"reserved name", with("Timestamp", table.DateTimeValue(time.Now())), keys.ErrReserved},
		{"OData name", with("odata.etag", table.StringValue("x")), keys.ErrForbiddenChar},
		{"zero Value", with("Z", table.Value{}), table.ErrInvalidValue},
		{"253 properties", many, table.ErrTooManyProperties},
		{"string too long", with("S", table.StringValue(strings.Repeat("é", table.MaxStringUTF16+1))), table.ErrStringTooLong},
		{"invalid UTF-8", with("S", table.StringValue("a\xffb")), table.ErrInvalidValue},
		{"binary too long", with("B", table.BinaryValue(make([]byte, table.MaxBinaryBytes+1))), table.ErrBinaryTooLong},
		{"DateTime before 1601", with("T", table.DateTimeValue(time.Date(1600, 12, 31, 0, 0, 0, 0, time.UTC))), table.ErrValueOutOfRange},
		{"entity over 1 MiB", big, table.ErrEntityTooLarge},
		{"bad key", badKey, keys.ErrForbiddenChar},
	}
	for _, tc := range cases {
		writes := map[string]func() error{
			"Add":    func() error { return tb.Add(ctx, tc.e, nil) },
			"Upsert": func() error { return tb.Upsert(ctx, tc.e, &table.UpsertOptions{Mode: table.Replace}) },
			"Update": func() error { return tb.Update(ctx, tc.e, nil) },
			"batch": func() error {
				_, err := batch.Submit(ctx, tb.Client(), batch.UpdateAny(tc.e, table.Merge))
				return err
			},
		}
		for verb, write := range writes {
			c.Reset()
			err := write()
			var ie *table.InputError
			if !errors.As(err, &ie) || !errors.Is(err, tc.rule) {
				t.Errorf("%s via %s: %v, want an *InputError matching %v", tc.name, verb, err, tc.rule)
			}
			if c.N() != 0 {
				t.Errorf("%s via %s sent %d requests", tc.name, verb, c.N())
			}
		}
	}
	c.Reset()
	if err := tb.Add(ctx, nil, nil); !errors.Is(err, table.ErrNilValue) || c.N() != 0 {
		t.Errorf("nil entity: %v, %d requests", err, c.N())
	}
	if _, err := table.ValueOf(struct{}{}); !errors.Is(err, table.ErrUnsupportedType) {
		t.Errorf("ValueOf(struct{}{}): %v", err)
	}
	// Nothing was written.
	all, err := table.Collect(tb.Query(ctx, nil))
	if err != nil || len(all) != 0 {
		t.Fatalf("bad input left %d entities (%v)", len(all), err)
	}
}

// rawTypedViews: a typed table and its raw view read and write the same
// entities, and ToEntity / FromEntity convert without a request.
func rawTypedViews(t *testing.T, env Env) {
	ctx := t.Context()
	c := &reqcount.Counter{}
	typed, err := table.New[Types](env.NewTable(t, c), nil)
	if err != nil {
		t.Fatal(err)
	}
	raw := typed.Entities()
	s := "p"
	v := &Types{Meta: table.Meta{PartitionKey: "k", RowKey: "1"}, S: "s", B: true, I32: -3, I64: 1 << 60, U32: 4000000000,
		F64: 3, F32: 1.5, T: time.Date(2020, 1, 2, 3, 4, 5, 600, time.UTC), Bin: []byte("bin"), PS: &s, Level: 1, Tags: []string{"a"}}
	if err := typed.Add(ctx, v, nil); err != nil {
		t.Fatal(err)
	}
	e, err := raw.Get(ctx, "k", "1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if x, _ := e.Properties["I64"].AsInt64(); x != 1<<60 || e.Properties["I64"].Type() != table.EdmInt64 {
		t.Fatalf("raw view of Int64: %v", e.Properties["I64"])
	}
	if x, ok := e.Properties["F64"].AsDouble(); !ok || x != 3 {
		t.Fatalf("raw view of an integral Double: %v", e.Properties["F64"])
	}
	c.Reset()
	back, err := typed.FromEntity(e)
	if err != nil {
		t.Fatal(err)
	}
	conv, err := typed.ToEntity(v)
	if err != nil || c.N() != 0 {
		t.Fatalf("ToEntity: %v, %d requests", err, c.N())
	}
	if back.ETag != v.ETag || back.I64 != v.I64 || back.F64 != 3 || back.U32 != v.U32 || !back.T.Equal(v.T) || *back.PS != "p" || back.Level != 1 {
		t.Fatalf("FromEntity: %+v", back)
	}
	if len(conv.Properties) != len(e.Properties) {
		t.Fatalf("ToEntity has %d properties, the stored entity %d", len(conv.Properties), len(e.Properties))
	}
	// The raw view writes what the typed view reads.
	e.Set("S", table.StringValue("from raw"))
	if err := raw.Update(ctx, e, &table.UpdateOptions{Mode: table.Replace}); err != nil {
		t.Fatal(err)
	}
	got, err := typed.Get(ctx, "k", "1", nil)
	if err != nil || got.S != "from raw" || got.F64 != 3 || got.I64 != 1<<60 {
		t.Fatalf("typed read after raw write: %+v %v", got, err)
	}
}
