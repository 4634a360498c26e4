package integration

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/internal/reqcount"
	"github.com/tablekit/tablekit/internal/testenv"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/sas"
	"github.com/tablekit/tablekit/table"
)

// Claim is the guide's expense claim for the log tail.
type Claim struct {
	table.Meta
	Amount float64
	Note   string
}

// Event is an appended event for the sharded log.
type Event struct {
	table.Meta
	Source string
	N      int
}

// RunShape runs the patterns of shape and time.
func RunShape(t *testing.T, env Env, newService func(t *testing.T, c *reqcount.Counter) *aztables.ServiceClient) {
	ctx := t.Context()

	t.Run("log tail: latest n in one request, ranges by time", func(t *testing.T) {
		c := &reqcount.Counter{}
		base := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
		log, err := patterns.NewLogTail[Claim](tableOf(table.New[Claim](env.NewTable(t, c), nil)), &patterns.LogTailOptions{Writer: "w1"})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 30; i++ {
			at := base.Add(time.Duration(i) * time.Minute)
			if i == 29 {
				at = base.Add(28 * time.Minute) // two claims in one tick
			}
			if err := log.AppendAt(ctx, "empid_000123", at, &Claim{Amount: float64(i) + 0.5, Note: fmt.Sprint(i)}, nil); err != nil {
				t.Fatal(err)
			}
		}
		c.Reset()
		latest, err := log.Latest(ctx, "empid_000123", 10, nil)
		if err != nil || len(latest) != 10 {
			t.Fatalf("Latest: %d %v", len(latest), err)
		}
		wantRequests(t, c, 1, "the ten most recent claims")
		if latest[0].Note != "29" || latest[1].Note != "28" || latest[9].Note != "20" {
			t.Fatalf("newest first: %s %s … %s", latest[0].Note, latest[1].Note, latest[9].Note)
		}
		if at, _ := keys.ParseInvertedTicks(latest[2].RowKey); !at.Equal(base.Add(27 * time.Minute)) {
			t.Fatalf("ParseInvertedTicks = %v", at)
		}
		var between []string
		for v, err := range log.Between(ctx, "empid_000123", base.Add(5*time.Minute), base.Add(8*time.Minute), nil) {
			if err != nil {
				t.Fatal(err)
			}
			between = append(between, v.Note)
		}
		if !slices.Equal(between, []string{"7", "6", "5"}) {
			t.Fatalf("Between [5m, 8m) = %q", between)
		}
		n := 0
		for _, err := range log.Since(ctx, "empid_000123", base.Add(25*time.Minute), nil) {
			if err != nil {
				t.Fatal(err)
			}
			n++
		}
		if n != 5 { // 25, 26, 27, 28 and the second 28
			t.Fatalf("Since 25m: %d", n)
		}
		if _, err := log.Latest(ctx, "p", 0, nil); !errors.Is(err, table.ErrBadOption) {
			t.Fatalf("Latest 0: %v", err)
		}
	})

	t.Run("data series: one merge per slot, one read per series", func(t *testing.T) {
		c := &reqcount.Counter{}
		client := env.NewTable(t, c)
		ds, err := patterns.NewDataSeries[int64](tableOf(table.New[table.Entity](client, nil)), "H", 24)
		if err != nil {
			t.Fatal(err)
		}
		for h := 0; h < 24; h += 3 {
			if _, err := ds.Set(ctx, "messages", "2026-11-21", h, int64(h*10), nil); err != nil {
				t.Fatal(err)
			}
		}
		c.Reset()
		etag, err := ds.Set(ctx, "messages", "2026-11-21", 7, 1<<40, nil)
		if err != nil {
			t.Fatal(err)
		}
		wantRequests(t, c, 1, "one slot")
		s, got, err := ds.Get(ctx, "messages", "2026-11-21", nil)
		_, set8 := s[8]
		_, set0 := s[0]
		if err != nil || s[7] != 1<<40 || s[21] != 210 || set8 || !set0 || got != etag {
			t.Fatalf("series = %+v (%s), %v", s, got, err)
		}
		wantRequests(t, c, 1, "the series")
		stale := etag
		if _, err := ds.Set(ctx, "messages", "2026-11-21", 8, 1, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := ds.Set(ctx, "messages", "2026-11-21", 9, 1, &patterns.SetOptions{IfMatch: &stale}); !table.Is(err, table.ErrPreconditionFailed) {
			t.Fatalf("guarded write from a stale version: %v", err)
		}
		doubles, _ := patterns.NewDataSeries[float64](tableOf(table.New[table.Entity](client, nil)), "D", 4)
		if _, err := doubles.SetMany(ctx, "d", "r", map[int]float64{0: 2.5, 3: -1.25}, nil); err != nil {
			t.Fatal(err)
		}
		if s, _, err := doubles.Get(ctx, "d", "r", nil); err != nil || len(s) != 2 || s[0] != 2.5 || s[3] != -1.25 {
			t.Fatalf("double series: %+v %v", s, err)
		}
		c.Reset()
		if _, err := patterns.NewDataSeries[int64](tableOf(table.New[table.Entity](client, nil)), "H", 253); !errors.Is(err, patterns.ErrBadDefinition) {
			t.Fatalf("253 slots: %v", err)
		}
		if _, err := ds.Set(ctx, "p", "r", 24, 1, nil); !errors.Is(err, table.ErrValueOutOfRange) {
			t.Fatalf("slot 24 of 24: %v", err)
		}
		wantRequests(t, c, 0, "bad series input")
	})

	t.Run("wide entity: 1,000 properties and 3 MiB in one transaction", func(t *testing.T) {
		c := &reqcount.Counter{}
		w := patterns.NewWideEntity(tableOf(table.New[table.Entity](env.NewTable(t, c), nil)))
		stats := map[string]any{}
		for d := 0; d < 1000; d++ {
			stats[fmt.Sprintf("D%03d", d)] = int64(d * 7)
		}
		v := &patterns.Wide{PartitionKey: "stats", RowKey: "2026", Properties: stats}
		if err := w.Add(ctx, v, nil); err != nil {
			t.Fatal(err)
		}
		wantRequests(t, c, 1, "writing 1,000 properties")
		got, err := w.Get(ctx, "stats", "2026", false, nil)
		if err != nil || len(got.Properties) != 1000 || got.Properties["D999"] != int64(6993) || got.Parts != 4 {
			t.Fatalf("Get: %d properties in %d parts, %v", len(got.Properties), got.Parts, err)
		}
		wantRequests(t, c, 1, "reading 1,000 properties")
		// 3 MiB of text (multi-byte text kept under 64 KiB per property).
		big := map[string]any{}
		for i := 0; i < 100; i++ {
			big[fmt.Sprintf("S%03d", i)] = strings.Repeat(string(rune('a'+i%26)), 31*1024)
		}
		bv := &patterns.Wide{PartitionKey: "stats", RowKey: "big", Properties: big}
		if err := w.Put(ctx, bv, nil); err != nil {
			t.Fatal(err)
		}
		gb, err := w.Get(ctx, "stats", "big", false, nil)
		if err != nil || len(gb.Properties) != 100 || gb.Properties["S042"] != big["S042"] || gb.Parts < 6 {
			t.Fatalf("3 MiB: %d properties in %d parts, %v", len(gb.Properties), gb.Parts, err)
		}
		// Shrink: the parts no longer needed go in the same transaction.
		small := &patterns.Wide{PartitionKey: "stats", RowKey: "2026", Properties: map[string]any{"D000": int64(1), "Note": "shrunk"}}
		c.Reset()
		if err := w.Put(ctx, small, &patterns.PutOptions[patterns.Wide]{Current: got}); err != nil {
			t.Fatal(err)
		}
		wantRequests(t, c, 1, "shrinking with the current value")
		if g, err := w.Get(ctx, "stats", "2026", false, nil); err != nil || len(g.Properties) != 2 || g.Parts != 1 {
			t.Fatalf("after shrinking: %+v %v", g, err)
		}
		if err := w.Put(ctx, small, &patterns.PutOptions[patterns.Wide]{Current: got}); !table.Is(err, table.ErrPreconditionFailed) {
			t.Fatalf("write from a stale version: %v", err)
		}
		c.Reset()
		huge := map[string]any{}
		for i := 0; i < 140; i++ {
			huge[fmt.Sprintf("S%03d", i)] = strings.Repeat("x", 31*1024)
		}
		if err := w.Add(ctx, &patterns.Wide{PartitionKey: "stats", RowKey: "huge", Properties: huge}, nil); !errors.Is(err, table.ErrEntityTooLarge) {
			t.Fatalf("over 4 MiB: %v", err)
		}
		wantRequests(t, c, 0, "a value too wide for one transaction")
		if err := w.Delete(ctx, "stats", "big", nil); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Get(ctx, "stats", "big", false, nil); !table.Is(err, table.ErrNotFound) {
			t.Fatalf("after Delete: %v", err)
		}
	})

	t.Run("wide entity: Add writes a new one in one request; an existing one is ErrAlreadyExists, or with Idempotent a success when stored as sent", func(t *testing.T) {
		c := &reqcount.Counter{}
		w := patterns.NewWideEntity(tableOf(table.New[table.Entity](env.NewTable(t, c), nil)))
		props := map[string]any{"Whole": 2.0, "Note": "O'Brien & Sons"}
		for d := 0; d < 300; d++ { // two parts
			props[fmt.Sprintf("D%03d", d)] = int64(d)
		}
		v := &patterns.Wide{PartitionKey: "stats", RowKey: "2026", Properties: props}
		if err := w.Add(ctx, v, nil); err != nil {
			t.Fatal(err)
		}
		wantRequests(t, c, 1, "adding a new wide entity")
		if v.Parts != 2 || v.ETag == "" {
			t.Fatalf("after Add: %d parts, ETag %q; want 2 and the first part's ETag", v.Parts, v.ETag)
		}
		stored := v.ETag
		// Neighbours in the same partition: another wide entity whose
		// RowKey the first's starts with, and a row of another kind. The
		// Idempotent read below must see only v's own parts.
		if err := w.Add(ctx, &patterns.Wide{PartitionKey: "stats", RowKey: "202", Properties: map[string]any{"Whole": 2.0}}, nil); err != nil {
			t.Fatal(err)
		}
		if err := w.Add(ctx, &patterns.Wide{PartitionKey: "stats", RowKey: "2026x", Properties: props}, nil); err != nil {
			t.Fatal(err)
		}
		// The same Add again: what the SDK's retry meets when the first
		// answer was lost.
		again := &patterns.Wide{PartitionKey: "stats", RowKey: "2026", Properties: props}
		c.Reset()
		if err := w.Add(ctx, again, nil); !table.Is(err, table.ErrAlreadyExists) {
			t.Fatalf("Add of an existing entity: %v, want ErrAlreadyExists", err)
		}
		wantRequests(t, c, 1, "an Add that finds the entity")
		c.Reset()
		if err := w.Add(ctx, again, &table.AddOptions{Idempotent: true}); err != nil {
			t.Fatalf("Idempotent Add of the entity as stored: %v", err)
		}
		wantRequests(t, c, 2, "an Idempotent Add settled by one read")
		if again.ETag != stored || again.Parts != 2 {
			t.Fatalf("Idempotent Add: ETag %q, %d parts; want the stored %q and 2", again.ETag, again.Parts, stored)
		}
		other := map[string]any{"Whole": 3.0}
		for k, x := range props {
			if k != "Whole" {
				other[k] = x
			}
		}
		c.Reset()
		if err := w.Add(ctx, &patterns.Wide{PartitionKey: "stats", RowKey: "2026", Properties: other}, &table.AddOptions{Idempotent: true}); !table.Is(err, table.ErrAlreadyExists) {
			t.Fatalf("Idempotent Add of other values: %v, want ErrAlreadyExists", err)
		}
		wantRequests(t, c, 2, "an Idempotent Add that finds other values")
		if g, err := w.Get(ctx, "stats", "2026", false, nil); err != nil || g.ETag != stored || g.Properties["Note"] != "O'Brien & Sons" || len(g.Properties) != 302 {
			t.Fatalf("after the refused Adds: %v; want the first Add's entity unchanged", err)
		}
		// A Current with no keys and no ETag no longer means "new": Add
		// says that.
		c.Reset()
		if err := w.Put(ctx, &patterns.Wide{PartitionKey: "stats", RowKey: "new", Properties: other}, &patterns.PutOptions[patterns.Wide]{Current: &patterns.Wide{}}); !errors.Is(err, table.ErrInvalidValue) {
			t.Fatalf("Put with an empty Current: %v, want an InputError (use Add)", err)
		}
		if err := w.Add(ctx, &patterns.Wide{PartitionKey: "p/q", RowKey: "x", Properties: other}, nil); !errors.Is(err, keys.ErrForbiddenChar) {
			t.Fatalf("Add with a bad RowKey: %v", err)
		}
		if err := w.Add(ctx, nil, nil); !errors.Is(err, table.ErrNilValue) {
			t.Fatalf("Add of nil: %v", err)
		}
		wantRequests(t, c, 0, "bad input to Put and Add")
	})

	t.Run("sharded appends, merged in key order", func(t *testing.T) {
		c := &reqcount.Counter{}
		s, err := patterns.NewSharded[Event](tableOf(table.New[Event](env.NewTable(t, c), nil)), "events", 8)
		if err != nil {
			t.Fatal(err)
		}
		base := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
		var want []string
		for i := 0; i < 200; i++ {
			rk := keys.Ticks(base.Add(time.Duration(i) * time.Second))
			want = append(want, rk)
			if err := s.Append(ctx, fmt.Sprint("source", i%13), &Event{Meta: table.Meta{RowKey: rk}, Source: fmt.Sprint(i % 13), N: i}, nil); err != nil {
				t.Fatal(err)
			}
		}
		var got []string
		c.Reset()
		for v, err := range s.Read(ctx, &patterns.ShardedReadOptions{Parallelism: 4}) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, v.RowKey)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("merged order differs (%d of %d)", len(got), len(want))
		}
		// Each shard is one partition of 25: one page each, plus the empty
		// pages the service may send (the adversarial fake: every third response).
		wantPagedRequests(t, env, c, 8, 8, 12, "one query per shard")
		var top []int
		for v, err := range s.Read(ctx, &patterns.ShardedReadOptions{Top: 5, From: want[50], To: want[100]}) {
			if err != nil {
				t.Fatal(err)
			}
			top = append(top, v.N)
		}
		if !slices.Equal(top, []int{50, 51, 52, 53, 54}) {
			t.Fatalf("Top 5 from 50: %v", top)
		}
		if _, err := patterns.NewSharded[Event](tableOf(table.New[Event](env.NewTable(t, c), nil)), "events", 0); !errors.Is(err, patterns.ErrBadDefinition) {
			t.Fatalf("0 shards: %v", err)
		}
	})

	t.Run("table per period: route, query across periods, expire whole tables", func(t *testing.T) {
		c := &reqcount.Counter{}
		svc := newService(t, c)
		now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
		prefix := loginTables(t, svc, now)
		r, err := patterns.NewRollingTables[Claim](svc, prefix, keys.Daily, &patterns.RollingTablesOptions{Retention: 2 * 24 * time.Hour, Now: func() time.Time { return now }})
		if err != nil {
			t.Fatal(err)
		}
		for d := -4; d <= 0; d++ {
			for i := 0; i < 3; i++ {
				at := now.AddDate(0, 0, d).Add(time.Duration(i) * time.Hour)
				if err := r.Add(ctx, at, &Claim{Meta: table.Meta{PartitionKey: "login", RowKey: at.Format(time.RFC3339)}, Note: fmt.Sprint(d)}, nil); err != nil {
					t.Fatal(err)
				}
			}
		}
		c.Reset()
		if err := r.Add(ctx, now.Add(4*time.Hour), &Claim{Meta: table.Meta{PartitionKey: "login", RowKey: "later"}}, nil); err != nil {
			t.Fatal(err)
		}
		wantRequests(t, c, 1, "a write to a known period")
		var notes []string
		for v, err := range r.Query(ctx, now.AddDate(0, 0, -2), now.AddDate(0, 0, -1).Add(time.Hour), nil) {
			if err != nil {
				t.Fatal(err)
			}
			notes = append(notes, v.Note)
		}
		if !slices.Equal(notes, []string{"-2", "-2", "-2", "-1", "-1", "-1"}) {
			t.Fatalf("two days: %q", notes)
		}
		c.Reset()
		dropped, err := r.Expire(ctx, nil)
		if err != nil || len(dropped) != 2 {
			t.Fatalf("Expire: %q %v", dropped, err)
		}
		wantRequests(t, c, 1+2, "listing and dropping two tables")
		// The day just dropped is written again: it takes a new name.
		again := now.AddDate(0, 0, -4)
		if err := r.Add(ctx, again, &Claim{Meta: table.Meta{PartitionKey: "login", RowKey: "late"}}, nil); err != nil {
			t.Fatal(err)
		}
		// The service refuses the dropped name for a while, so the day
		// moves to its next generation; a backend that reuses the name at
		// once (Azurite) re-creates generation 0.
		gen := 1
		if !env.Has(t, CapTableBeingDeleted) {
			gen = 0
		}
		name, _ := keys.PeriodTable(prefix, keys.Daily, again, gen)
		if _, err := svc.NewClient(name).GetEntity(ctx, "login", "late", nil); err != nil {
			t.Fatalf("the recreated day should be %s: %v", name, err)
		}
		if _, err := patterns.NewRollingTables[Claim](svc, "bad-prefix", keys.Daily, nil); !errors.Is(err, patterns.ErrBadDefinition) {
			t.Fatalf("bad prefix: %v", err)
		}
	})
}

// loginTables returns a fresh prefix for daily tables and drops, at the
// end of the test, those of the five days up to now (generations 0–2).
func loginTables(t *testing.T, svc *aztables.ServiceClient, now time.Time) string {
	prefix := "Logins" + strings.ToUpper(testenv.UniqueName("x")[1:7])
	t.Cleanup(func() {
		for d := -5; d <= 0; d++ {
			for g := 0; g < 3; g++ {
				n, _ := keys.PeriodTable(prefix, keys.Daily, now.AddDate(0, 0, d), g)
				_, _ = svc.DeleteTable(context.Background(), n, nil)
			}
		}
	})
	return prefix
}

// tableSAS signs a table SAS with package sas, validating the request
// before the credential as the catalogue expects: a bad request is named
// even when the key is bad too.
func tableSAS(account, key, tableName string, perms sas.TablePermissions, start, expiry time.Time, r sas.KeyRange) (string, error) {
	v := sas.Table{Table: tableName, Permissions: perms, Start: start, Expiry: expiry, KeyRange: r}
	if err := v.Validate(); err != nil {
		return "", err
	}
	c, err := sas.NewCredential(account, key)
	if err != nil {
		return "", err
	}
	return v.Sign(c)
}
