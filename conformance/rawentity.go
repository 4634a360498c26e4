package conformance

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/internal/batchraw"
	"github.com/tablekit/tablekit/internal/keyrules"
	"github.com/tablekit/tablekit/internal/reqcount"
	"github.com/tablekit/tablekit/internal/seqs"
	"github.com/tablekit/tablekit/internal/wirepolicy"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/table"
)

// runRawEntity is the contract of the raw entity API (table.Entity): every
// EDM type round-trips with its type, every verb and batch operation works
// on it, and bad input is a typed error before any request.
func runRawEntity(t *testing.T, env backend) {
	t.Run("EveryEDMTypeRoundTrips", func(t *testing.T) { rawRoundTrip(t, env) })
	t.Run("Verbs", func(t *testing.T) { rawVerbs(t, env) })
	t.Run("Batch", func(t *testing.T) { rawBatch(t, env) })
	t.Run("BadInputSendsNothing", func(t *testing.T) { rawBadInput(t, env) })
	t.Run("TypedAndRawViewsAgree", func(t *testing.T) { rawTypedViews(t, env) })
	t.Run("QuotedKeysInBatch", func(t *testing.T) { quotedKeysInBatch(t, env) })
	t.Run("ETagStaysWithItsTable", func(t *testing.T) { etagStaysWithItsTable(t, env) })
	t.Run("ForeignContinuationTokens", func(t *testing.T) { foreignTokens(t, env) })
	t.Run("EmptyPartitionKey", func(t *testing.T) { emptyPartitionKey(t, env) })
	t.Run("ExtraAndRawValuesChecked", func(t *testing.T) { extraAndRawChecked(t, env) })
}

func newRaw(t *testing.T, env backend) (*table.Table[table.Entity], *reqcount.Counter) {
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
	e.Set("S", table.ValueOf("héllo \"wörld\" \u2028 ok"))
	e.Set("Empty", table.ValueOf(""))
	e.Set("B", table.ValueOf(true))
	e.Set("I32", table.ValueOf(int32(-2147483648)))
	e.Set("I64", table.ValueOf(int64(1<<53+1)))
	e.Set("I64Small", table.ValueOf(int64(7)))
	e.Set("D", table.ValueOf(float64(0.1)))
	e.Set("DIntegral", table.ValueOf(float64(2)))
	e.Set("DBig", table.ValueOf(float64(1e300)))
	e.Set("T", table.ValueOf(time.Date(2026, 11, 23, 11, 12, 13, 1234500, time.UTC)))
	e.Set("Bin", table.ValueOf([]byte{0, 1, 2, 0xff}))
	e.Set("G", table.ValueOf(g))
	return e
}

// sameEntity compares properties by type and value; an integral Double
// that came back unannotated (Inferred Int32) must still give the value.
func sameEntity(t *testing.T, env backend, what string, want, got *table.Entity) {
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
		if w.Type() == table.EdmDouble && g.Inferred() {
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

func rawRoundTrip(t *testing.T, env backend) {
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
	if err := tb.Update(ctx, got, &table.UpdateOptions{Mode: aztables.UpdateModeReplace}); err != nil {
		t.Fatal(err)
	}
	again, err := tb.Get(ctx, "raw", "every", nil)
	if err != nil {
		t.Fatal(err)
	}
	sameEntity(t, env, "read, written back, read", want, again)

	// Query and QueryPage decode the same way.
	all, err := seqs.Collect(tb.Query(ctx, &table.QueryOptions{Filter: table.Partition("raw")}))
	if err != nil || len(all) != 1 {
		t.Fatalf("Query: %d, %v", len(all), err)
	}
	sameEntity(t, env, "Query", want, all[0])
	page, err := tb.QueryPage(ctx, "", &table.QueryOptions{Filter: table.Partition("raw"), Select: []string{"I64", "G"}})
	if err != nil || len(page.Items) != 1 {
		t.Fatalf("QueryPage: %v", err)
	}
	if p := page.Items[0]; len(p.Properties) != 2 || !p.Properties["I64"].Equal(want.Properties["I64"]) || !p.Properties["G"].Equal(want.Properties["G"]) {
		t.Fatalf("QueryPage with Select: %v", p.Properties)
	}
}

func rawVerbs(t *testing.T, env backend) {
	ctx := t.Context()
	tb, c := newRaw(t, env)
	e := &table.Entity{Meta: table.Meta{PartitionKey: "p", RowKey: "O'Brien"}}
	e.Set("A", table.ValueOf(int32(1)))
	e.Set("B", table.ValueOf("b"))
	if err := tb.Upsert(ctx, e, nil); err != nil {
		t.Fatal(err)
	}
	// Merge keeps B; Replace drops it.
	m := &table.Entity{Meta: table.Meta{PartitionKey: "p", RowKey: "O'Brien"}}
	m.Set("C", table.ValueOf(false))
	if err := tb.Upsert(ctx, m, &table.UpsertOptions{Mode: aztables.UpdateModeMerge}); err != nil {
		t.Fatal(err)
	}
	got, err := tb.Get(ctx, "p", "O'Brien", nil)
	if err != nil || len(got.Properties) != 3 {
		t.Fatalf("after merge: %v %v", got, err)
	}
	if err := tb.Upsert(ctx, m, &table.UpsertOptions{Mode: aztables.UpdateModeReplace}); err != nil {
		t.Fatal(err)
	}
	got, err = tb.Get(ctx, "p", "O'Brien", nil)
	if err != nil || len(got.Properties) != 1 {
		t.Fatalf("after replace: %v %v", got.Properties, err)
	}
	// Update is guarded by the ETag read.
	stale := *got
	got.Set("D", table.ValueOf(int64(-5)))
	if err := tb.Update(ctx, got, nil); err != nil {
		t.Fatal(err)
	}
	stale.Properties = map[string]table.Value{"E": table.ValueOf("late")}
	if err := tb.Update(ctx, &stale, nil); !table.Is(err, table.ErrPreconditionFailed) {
		t.Fatalf("stale update: %v", err)
	}
	var ae *azcore.ResponseError
	if !errors.As(tb.DeleteValue(ctx, &stale, nil), &ae) || ae.StatusCode != 412 {
		t.Fatalf("stale delete kept no 412 in the chain")
	}
	// Modify works on raw entities too: read, change, write with the ETag.
	n := 0
	if _, err := tb.Modify(ctx, "p", "O'Brien", func(e *table.Entity) error {
		n++
		e.Set("Count", table.ValueOf(int32(int32(n))))
		return nil
	}, nil); err != nil {
		t.Fatal(err)
	}
	if err := tb.DeleteValue(ctx, got, nil); !table.Is(err, table.ErrPreconditionFailed) {
		t.Fatalf("delete of a version Modify replaced: %v", err)
	}
	cur, err := tb.Get(ctx, "p", "O'Brien", nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Reset()
	if err := tb.DeleteValue(ctx, cur, nil); err != nil {
		t.Fatal(err)
	}
	if c.N() != 1 {
		t.Fatalf("DeleteValue took %d requests", c.N())
	}
	if _, err := tb.Get(ctx, "p", "O'Brien", nil); !table.Is(err, table.ErrNotFound) {
		t.Fatalf("after delete: %v", err)
	}
}

func rawBatch(t *testing.T, env backend) {
	ctx := t.Context()
	tb, c := newRaw(t, env)
	a := everyType()
	a.RowKey = "a"
	b := &table.Entity{Meta: table.Meta{PartitionKey: "raw", RowKey: "b"}}
	b.Set("N", table.ValueOf(int64(math.MaxInt64)))
	c.Reset()
	if _, err := batch.Submit(ctx, tb.Client(), []batch.Op{batch.Add(a), batch.Upsert(b, aztables.UpdateModeReplace)}, nil); err != nil {
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
	b.Set("M", table.ValueOf("m"))
	if _, err := batch.Submit(ctx, tb.Client(), []batch.Op{batch.Update(b, aztables.UpdateModeMerge), batch.DeleteValue(a)}, nil); err != nil {
		t.Fatal(err)
	}
	gb, err := tb.Get(ctx, "raw", "b", nil)
	if err != nil || len(gb.Properties) != 2 || gb.ETag != b.ETag {
		t.Fatalf("after batch update: %v %v (ETag %q, batch said %q)", gb, err, gb.ETag, b.ETag)
	}
	if _, err := tb.Get(ctx, "raw", "a", nil); !table.Is(err, table.ErrNotFound) {
		t.Fatalf("batch delete: %v", err)
	}
}

func rawBadInput(t *testing.T, env backend) {
	ctx := t.Context()
	tb, c := newRaw(t, env)
	base := func() *table.Entity {
		return &table.Entity{Meta: table.Meta{PartitionKey: "p", RowKey: "r", ETag: "W/\"x\""},
			Properties: map[string]table.Value{"Ok": table.ValueOf("ok")}}
	}
	with := func(name string, v table.Value) *table.Entity {
		e := base()
		e.Properties[name] = v
		return e
	}
	many := base()
	for i := 0; i < table.MaxUserProperties; i++ {
		many.Set("P"+keyrules.Uint64(uint64(i))[14:], table.ValueOf(int32(1)))
	}
	big := base()
	for i := 0; i < 20; i++ {
		big.Set("S"+keyrules.Uint64(uint64(i))[16:], table.ValueOf(strings.Repeat("x", table.MaxStringUTF16)))
	}
	badKey := base()
	badKey.RowKey = "a/b"
	cases := []struct {
		name string
		e    *table.Entity
		rule error
	}{
		{"bad property name", with("no-dash", table.ValueOf(int32(1))), keys.ErrForbiddenChar},
		{"reserved name", with("Timestamp", table.ValueOf(time.Now())), keys.ErrReserved},
		{"OData name", with("odata.etag", table.ValueOf("x")), keys.ErrForbiddenChar},
		{"zero Value", with("Z", table.Value{}), table.ErrInvalidValue},
		{"253 properties", many, table.ErrTooManyProperties},
		{"string too long", with("S", table.ValueOf(strings.Repeat("é", table.MaxStringUTF16+1))), table.ErrStringTooLong},
		{"invalid UTF-8", with("S", table.ValueOf("a\xffb")), table.ErrInvalidValue},
		{"binary too long", with("B", table.ValueOf(make([]byte, table.MaxBinaryBytes+1))), table.ErrBinaryTooLong},
		{"DateTime before 1601", with("T", table.ValueOf(time.Date(1600, 12, 31, 0, 0, 0, 0, time.UTC))), table.ErrValueOutOfRange},
		{"entity over 1 MiB", big, table.ErrEntityTooLarge},
		{"bad key", badKey, keys.ErrForbiddenChar},
	}
	for _, tc := range cases {
		writes := map[string]func() error{
			"Add":    func() error { return tb.Add(ctx, tc.e, nil) },
			"Upsert": func() error { return tb.Upsert(ctx, tc.e, &table.UpsertOptions{Mode: aztables.UpdateModeReplace}) },
			"Update": func() error { return tb.Update(ctx, tc.e, nil) },
			"batch": func() error {
				_, err := batch.Submit(ctx, tb.Client(), []batch.Op{batch.Update(tc.e, aztables.UpdateModeMerge).IfMatch(azcore.ETagAny)}, nil)
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
	// Nothing was written.
	all, err := seqs.Collect(tb.Query(ctx, nil))
	if err != nil || len(all) != 0 {
		t.Fatalf("bad input left %d entities (%v)", len(all), err)
	}
}

// rawTypedViews: a typed table and its raw view read and write the same
// entities, and ToEntity / FromEntity convert without a request.
func rawTypedViews(t *testing.T, env backend) {
	ctx := t.Context()
	c := &reqcount.Counter{}
	typed, err := table.New[allTypes](env.NewTable(t, c), nil)
	if err != nil {
		t.Fatal(err)
	}
	raw := typed.Entities()
	s := "p"
	v := &allTypes{Meta: table.Meta{PartitionKey: "k", RowKey: "1"}, S: "s", B: true, I32: -3, I64: 1 << 60, U32: 4000000000,
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
	e.Set("S", table.ValueOf("from raw"))
	if err := raw.Update(ctx, e, &table.UpdateOptions{Mode: aztables.UpdateModeReplace}); err != nil {
		t.Fatal(err)
	}
	got, err := typed.Get(ctx, "k", "1", nil)
	if err != nil || got.S != "from raw" || got.F64 != 3 || got.I64 != 1<<60 {
		t.Fatalf("typed read after raw write: %+v %v", got, err)
	}
}

// quotedKeysInBatch: keys with an apostrophe, which
// the service accepts, work in batch Add and in every batch delete, as
// they do in single-entity calls: the intra-partition index's delete
// transaction (the entity and its copies) on keys like O'Brien. Batch
// updates and upserts on such keys cannot be sent through aztables v1.4.1
// on a client without tablekit's policy (see batch.ErrQuoteInKey): there
// they are refused before any request, and the single-entity verbs do them;
// on the default wire path they work.
func quotedKeysInBatch(t *testing.T, env backend) {
	ctx := t.Context()
	tb, c := newRaw(t, env)
	const pk = "O'Brien's"
	mk := func(rk string) *table.Entity {
		e := &table.Entity{Meta: table.Meta{PartitionKey: pk, RowKey: rk}}
		e.Set("N", table.ValueOf(int32(1)))
		return e
	}
	primary, byEmail, byName := mk("emp_O'Brien"), mk("email_o'brien@contoso.com"), mk("name_O'Brien_Don")
	q1, q2, q3 := mk("'"), mk("''"), mk("a'b'c")
	if _, err := batch.Submit(ctx, tb.Client(), []batch.Op{batch.Add(primary), batch.Add(byEmail), batch.Add(byName),
		batch.Add(q1), batch.Add(q2), batch.Add(q3)}, nil); err != nil {
		t.Fatal(err)
	}
	// The index's delete: the entity at its version, and its copies.
	c.Reset()
	if _, err := batch.Submit(ctx, tb.Client(),
		[]batch.Op{batch.DeleteValue(primary), batch.Delete(pk, byEmail.RowKey), batch.Delete(pk, byName.RowKey).IfMatch(byName.ETag)}, nil); err != nil {
		t.Fatalf("index delete transaction on %q: %v", pk, err)
	}
	if c.N() != 1 {
		t.Fatalf("delete transaction took %d requests", c.N())
	}
	// Keys made of quotes; a stale ETag still fails the transaction.
	if _, err := batch.Submit(ctx, tb.Client(), []batch.Op{batch.Delete(pk, "'"), batch.Delete(pk, "''").IfMatch(`W/"datetime'2000-01-01T00%3A00%3A00Z'"`)}, nil); !table.Is(err, table.ErrPreconditionFailed) {
		t.Fatalf("stale DeleteIf on a quoted key: %v", err)
	}
	if _, err := batch.Submit(ctx, tb.Client(), []batch.Op{batch.Delete(pk, "'"), batch.DeleteValue(q2)}, nil); err != nil {
		t.Fatalf("deletes of ' and '': %v", err)
	}
	all, err := seqs.Collect(tb.Query(ctx, nil))
	if err != nil || len(all) != 1 || all[0].RowKey != "a'b'c" || all[0].PartitionKey != pk {
		t.Fatalf("left %v (%v), want only a'b'c", all, err)
	}
	// Updates and upserts: on the wire path (the default) one request
	// each; on a client without tablekit's policy refused before anything
	// reaches the service (the only try is the probe, which the transport
	// refuses), nothing written, and the single-entity verbs do them.
	wired := wirepolicy.HasPath(tb.Client())
	for i, name := range []string{"Update", "UpdateAny", "UpsertMerge", "UpsertReplace"} {
		q3.Set("N", table.ValueOf(int32(int32(10+i))))
		op := map[string]batch.Op{
			"Update": batch.Update(q3, aztables.UpdateModeMerge), "UpdateAny": batch.Update(q3, aztables.UpdateModeReplace).IfMatch(azcore.ETagAny),
			"UpsertMerge": batch.Upsert(q3, aztables.UpdateModeMerge), "UpsertReplace": batch.Upsert(q3, aztables.UpdateModeReplace),
		}[name]
		c.Reset()
		_, err := batch.Submit(ctx, tb.Client(), []batch.Op{op}, nil)
		if wired {
			if err != nil || c.N() != 1 {
				t.Fatalf("%s on a quoted key, wire path: %v after %d requests, want success in 1", name, err, c.N())
			}
			continue
		}
		var oe *batch.OpError
		if !errors.Is(err, batch.ErrQuoteInKey) || !errors.As(err, &oe) || c.N() > 1 {
			t.Fatalf("%s on a quoted key, SDK's path: %v after %d tries, want ErrQuoteInKey before any request", name, err, c.N())
		}
	}
	if got, err := tb.Get(ctx, pk, "a'b'c", nil); err != nil || wired && got.Properties["N"].Interface() != int32(13) || !wired && got.Properties["N"].Interface() != int32(1) {
		t.Fatalf("after the batch updates (wire path %v): %v %v", wired, got, err)
	}
	q3.Set("N", table.ValueOf(int32(2)))
	if err := tb.Update(ctx, q3, nil); err != nil {
		t.Fatal(err)
	}
	if got, err := tb.Get(ctx, pk, "a'b'c", nil); err != nil || got.Properties["N"].Interface() != int32(2) {
		t.Fatalf("single-entity update: %v %v", got, err)
	}
}

// etagStaysWithItsTable: a value read from table A
// and written to table B (a copy, by Upsert, Add, Update or a batch) keeps
// the ETag it has in A, so a guarded delete or update in A still works. A
// write back to A records A's new ETag as before.
func etagStaysWithItsTable(t *testing.T, env backend) {
	ctx := t.Context()
	ca, cb := &reqcount.Counter{}, &reqcount.Counter{}
	a, err := table.New[employee](env.NewTable(t, ca), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := table.New[employee](env.NewTable(t, cb), nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, write := range []struct {
		name string
		do   func(v *employee) error
	}{
		{"Upsert", func(v *employee) error { return b.Upsert(ctx, v, nil) }},
		{"Add", func(v *employee) error { return b.Add(ctx, v, nil) }},
		{"Update AnyETag", func(v *employee) error {
			return b.Update(ctx, v, &table.UpdateOptions{IfMatch: to.Ptr(azcore.ETagAny), Mode: aztables.UpdateModeReplace})
		}},
		{"batch Upsert", func(v *employee) error {
			_, err := batch.Submit(ctx, b.Client(), []batch.Op{batch.Upsert(v, aztables.UpdateModeReplace)}, nil)
			return err
		}},
		{"raw view Upsert", func(v *employee) error {
			e, err := a.ToEntity(v)
			if err != nil {
				return err
			}
			return b.Entities().Upsert(ctx, e, nil)
		}},
	} {
		rk := keyrules.Uint64(uint64(i))
		if err := a.Add(ctx, &employee{Meta: table.Meta{PartitionKey: "p", RowKey: rk}, FirstName: "Don"}, nil); err != nil {
			t.Fatal(err)
		}
		if write.name == "Update AnyETag" {
			if err := b.Add(ctx, &employee{Meta: table.Meta{PartitionKey: "p", RowKey: rk}}, nil); err != nil {
				t.Fatal(err)
			}
		}
		v, err := a.Get(ctx, "p", rk, nil)
		if err != nil {
			t.Fatal(err)
		}
		etagA := v.ETag
		if err := write.do(v); err != nil {
			t.Fatalf("%s into B: %v", write.name, err)
		}
		if v.ETag != etagA {
			t.Errorf("%s into B changed the ETag read from A: %q, was %q", write.name, v.ETag, etagA)
		}
		// The guarded delete in A, as an index handler or a mover does.
		if err := a.DeleteValue(ctx, v, nil); err != nil {
			t.Fatalf("%s into B, then DeleteValue in A: %v", write.name, err)
		}
	}
	// Writing back to A still records A's new ETag.
	v := &employee{Meta: table.Meta{PartitionKey: "p", RowKey: "back"}}
	if err := a.Add(ctx, v, nil); err != nil {
		t.Fatal(err)
	}
	first := v.ETag
	v.FirstName = "Don"
	if err := a.Upsert(ctx, v, nil); err != nil || v.ETag == first {
		t.Fatalf("Upsert in A kept the old ETag %q (%v)", v.ETag, err)
	}
	if err := a.Update(ctx, v, nil); err != nil {
		t.Fatalf("guarded Update with the ETag A's Upsert recorded: %v", err)
	}
	if err := a.DeleteValue(ctx, v, nil); err != nil {
		t.Fatalf("DeleteValue with the ETag A's Update recorded: %v", err)
	}
}

// foreignTokens: a continuation token resumes only the query
// and table it came from; a token of another filter or table, or a
// garbled or edited one, is an ErrBadToken input error, before any request
// where the table is known, and never silently restarts the query.
func foreignTokens(t *testing.T, env backend) {
	ctx := t.Context()
	ca, cb := &reqcount.Counter{}, &reqcount.Counter{}
	clientA, clientB := env.NewTable(t, ca), env.NewTable(t, cb)
	a, _ := table.New[employee](clientA, nil)
	b, _ := table.New[employee](clientB, nil)
	for i := 0; i < 5; i++ {
		for _, tb := range []*table.Table[employee]{a, b} {
			if err := tb.Add(ctx, &employee{Meta: table.Meta{PartitionKey: "p", RowKey: keyrules.Uint64(uint64(i))}, Age: i}, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	all := &table.QueryOptions{Filter: table.Partition("p"), Top: 2}
	first, err := a.QueryPage(ctx, "", all)
	if err != nil || first.Next == "" {
		t.Fatalf("first page: %v, Next %q", err, first.Next)
	}
	// The token resumes its query, also through a new Table (a restart).
	restarted, _ := table.New[employee](clientA, nil)
	n, next := len(first.Items), first.Next
	for next != "" {
		p, err := restarted.QueryPage(ctx, next, all)
		if err != nil {
			t.Fatalf("resume: %v", err)
		}
		n, next = n+len(p.Items), p.Next
	}
	if n != 5 {
		t.Fatalf("resumed query returned %d of 5", n)
	}
	wantBad := func(what string, c *reqcount.Counter, requests int, err error, p *table.Page[employee]) {
		t.Helper()
		var ie *table.InputError
		if !errors.As(err, &ie) || !errors.Is(err, table.ErrBadToken) || p != nil {
			t.Errorf("%s: %v (page %v), want an *InputError with ErrBadToken", what, err, p)
		}
		if c.N() != requests {
			t.Errorf("%s sent %d requests, want %d", what, c.N(), requests)
		}
	}
	ca.Reset()
	other := &table.QueryOptions{Filter: table.And(table.Partition("p"), table.Prop("Age").Ge(1)), Top: 2}
	p, err := a.QueryPage(ctx, first.Next, other)
	wantBad("token of another filter", ca, 0, err, p)
	for _, garbled := range []string{first.Next[:len(first.Next)-3], first.Next + "A", "tk2.bm90IGEgdG9rZW4", "nonsense",
		strings.Replace(first.Next, first.Next[8:9], string(first.Next[8]^1), 1)} {
		ca.Reset()
		p, err := a.QueryPage(ctx, garbled, all)
		wantBad("garbled token "+garbled, ca, 0, err, p)
	}
	// Another table: b learned its name from a query, so no request; a
	// fresh Table over b's client learns it from the first response and
	// returns none of its entities.
	if _, err := b.QueryPage(ctx, "", all); err != nil {
		t.Fatal(err)
	}
	cb.Reset()
	p, err = b.QueryPage(ctx, first.Next, all)
	wantBad("token of another table", cb, 0, err, p)
	fresh, _ := table.New[employee](clientB, nil)
	cb.Reset()
	p, err = fresh.QueryPage(ctx, first.Next, all)
	wantBad("token of another table, table not yet known", cb, 1, err, p)
	// Query (the iterator) never takes a token; Top still applies.
	got, err := seqs.Collect(a.Query(ctx, all))
	if err != nil || len(got) != 2 {
		t.Fatalf("Query with Top 2: %d, %v", len(got), err)
	}
}

// emptyPartitionKey: the service stores an entity under an
// empty PartitionKey, but aztables v1.4.1 cannot get, update or delete it,
// so tablekit refuses "" in every write and point operation before any
// request; Query still reads such entities.
func emptyPartitionKey(t *testing.T, env backend) {
	ctx := t.Context()
	c := &reqcount.Counter{}
	client := env.NewTable(t, c)
	// What the SDK allows: Add, and a query; Get, Update, Delete fail in
	// the SDK without sending anything.
	if _, err := client.AddEntity(ctx, []byte(`{"PartitionKey":"","RowKey":"r","N":1}`), nil); err != nil {
		t.Fatalf("the service takes an empty PartitionKey: %v", err)
	}
	c.Reset()
	if _, err := client.GetEntity(ctx, "", "r", nil); err == nil || c.N() != 0 {
		t.Fatalf("SDK Get of an empty PartitionKey: %v after %d requests", err, c.N())
	}
	if _, err := client.DeleteEntity(ctx, "", "r", nil); err == nil || c.N() != 0 {
		t.Fatalf("SDK Delete of an empty PartitionKey: %v after %d requests", err, c.N())
	}
	if _, err := client.UpsertEntity(ctx, []byte(`{"PartitionKey":"","RowKey":"r","N":2}`), nil); err == nil || c.N() != 0 {
		t.Fatalf("SDK Upsert of an empty PartitionKey: %v after %d requests", err, c.N())
	}
	tb, _ := table.New[table.Entity](client, nil)
	e := &table.Entity{Meta: table.Meta{PartitionKey: "", RowKey: "s", ETag: azcore.ETagAny}}
	e.Set("N", table.ValueOf(int32(1)))
	for name, op := range map[string]func() error{
		"Add":          func() error { return tb.Add(ctx, e, nil) },
		"Upsert":       func() error { return tb.Upsert(ctx, e, nil) },
		"Update":       func() error { return tb.Update(ctx, e, nil) },
		"Get":          func() error { _, err := tb.Get(ctx, "", "r", nil); return err },
		"Delete":       func() error { return tb.Delete(ctx, "", "r", nil) },
		"batch Add":    func() error { _, err := batch.Submit(ctx, client, []batch.Op{batch.Add(e)}, nil); return err },
		"batch Delete": func() error { _, err := batch.Submit(ctx, client, []batch.Op{batch.Delete("", "r")}, nil); return err },
	} {
		c.Reset()
		err := op()
		var ie *table.InputError
		if !errors.As(err, &ie) || !errors.Is(err, table.ErrEmptyPartitionKey) || c.N() != 0 {
			t.Errorf("%s with an empty PartitionKey: %v after %d requests, want ErrEmptyPartitionKey before any", name, err, c.N())
		}
	}
	got, err := seqs.Collect(tb.Query(ctx, &table.QueryOptions{Filter: table.Partition("")}))
	if err != nil || len(got) != 1 || got[0].RowKey != "r" {
		t.Fatalf("Query of the empty partition: %v %v", got, err)
	}
	// An empty RowKey is fine everywhere.
	r := &table.Entity{Meta: table.Meta{PartitionKey: "p", RowKey: ""}}
	r.Set("N", table.ValueOf(int32(1)))
	if err := tb.Add(ctx, r, nil); err != nil {
		t.Fatal(err)
	}
	if err := tb.Update(ctx, r, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := batch.Submit(ctx, client, []batch.Op{batch.DeleteValue(r)}, nil); err != nil {
		t.Fatal(err)
	}
}

// extraAndRawChecked: properties kept in table.Extra and raw
// batch entities are checked like typed fields (names, EDM types and
// values, sizes) before any request, and round-trip with their types.
func extraAndRawChecked(t *testing.T, env backend) {
	ctx := t.Context()
	c := &reqcount.Counter{}
	client := env.NewTable(t, c)
	tb, _ := table.New[keptEntity](client, nil)
	kept := func(name string, p table.Property) *keptEntity {
		return &keptEntity{Meta: table.Meta{PartitionKey: "p", RowKey: "r"}, Name: "n", Other: table.Extra{name: p}}
	}
	long := `"` + strings.Repeat("x", table.MaxStringUTF16+1) + `"`
	for _, tc := range []struct {
		name string
		v    *keptEntity
		rule error
	}{
		{"bad name", kept("a-b", table.Property{Value: []byte("1")}), keys.ErrForbiddenChar},
		{"not JSON", kept("A", table.Property{Value: []byte("{")}), table.ErrInvalidValue},
		{"nested object", kept("A", table.Property{Value: []byte(`{"x":1}`)}), table.ErrInvalidValue},
		{"unknown EDM type", kept("A", table.Property{Type: "Edm.Decimal", Value: []byte(`"1"`)}), table.ErrInvalidValue},
		{"Int64 not a number", kept("A", table.Property{Type: table.EdmInt64, Value: []byte(`"x"`)}), table.ErrInvalidValue},
		{"Guid malformed", kept("A", table.Property{Type: table.EdmGUID, Value: []byte(`"nope"`)}), table.ErrInvalidValue},
		{"string too long", kept("A", table.Property{Value: []byte(long)}), table.ErrStringTooLong},
		{"binary too long", kept("A", table.Property{Type: table.EdmBinary, Value: []byte(`"` + strings.Repeat("A", 4*(table.MaxBinaryBytes/3+1)) + `"`)}), table.ErrBinaryTooLong},
		{"DateTime before 1601", kept("A", table.Property{Type: table.EdmDateTime, Value: []byte(`"1600-01-01T00:00:00Z"`)}), table.ErrValueOutOfRange},
	} {
		c.Reset()
		err := tb.Upsert(ctx, tc.v, nil)
		var ie *table.InputError
		if !errors.As(err, &ie) || !errors.Is(err, tc.rule) || c.N() != 0 {
			t.Errorf("Extra %s: %v after %d requests, want %v before any", tc.name, err, c.N(), tc.rule)
		}
		c.Reset()
		body := []byte(`{"PartitionKey":"p","RowKey":"r",` + strings.TrimPrefix(string(mustEncodeExtra(tc.v)), "{"))
		_, err = batch.Submit(ctx, client, []batch.Op{batchraw.Op(batch.KindUpsertReplace, body, nil)}, nil)
		if !errors.As(err, &ie) || !errors.Is(err, tc.rule) || c.N() != 0 {
			t.Errorf("raw batch %s: %v after %d requests, want %v before any", tc.name, err, c.N(), tc.rule)
		}
	}
	// keptEntity properties keep their types, an integral Double included.
	v := &keptEntity{Meta: table.Meta{PartitionKey: "p", RowKey: "ok"}, Name: "n", Other: table.Extra{
		"D": {Type: table.EdmDouble, Value: []byte("2")}, "I64": {Type: table.EdmInt64, Value: []byte(`"9007199254740993"`)},
		"I": {Value: []byte("7")}, "S": {Value: []byte(`"s"`)}, "F": {Value: []byte("2.5")}}}
	if err := tb.Add(ctx, v, nil); err != nil {
		t.Fatal(err)
	}
	raw, err := tb.Entities().Get(ctx, "p", "ok", nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"I64": table.EdmInt64, "I": table.EdmInt32, "S": table.EdmString, "F": table.EdmDouble} {
		if got := raw.Properties[name].Type(); got != want {
			t.Errorf("Extra %s stored as %s, want %s", name, got, want)
		}
	}
	// The service sends an integral Double as 2.0 with no annotation; the
	// SDK's GetEntity re-encodes the body through map[string]any and hands
	// back a bare 2, so Get must read the body the service sent.
	if d := raw.Properties["D"]; d.Type() != table.EdmDouble {
		t.Errorf("Extra integral Double read back as %v, want Edm.Double", d)
	}
	// And the round trip keeps it a Double: read typed, write back, read.
	stored, err := tb.Get(ctx, "p", "ok", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := tb.Update(ctx, stored, nil); err != nil {
		t.Fatal(err)
	}
	if again, err := tb.Entities().Get(ctx, "p", "ok", nil); err != nil || again.Properties["D"].Type() != table.EdmDouble {
		t.Errorf("after Get and Update the integral Double is %v (%v), want Edm.Double", again.Properties["D"], err)
	}
}

// mustEncodeExtra renders a keptEntity's Extra as JSON members, unchecked, for
// the raw batch form of the same bad input.
func mustEncodeExtra(v *keptEntity) []byte {
	b := []byte("{")
	for name, p := range v.Other {
		if p.Type != "" {
			b = append(b, `"`+name+`@odata.type":"`+p.Type+`",`...)
		}
		b = append(b, `"`+name+`":`...)
		b = append(b, p.Value...)
	}
	return append(b, '}')
}
