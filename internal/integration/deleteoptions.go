package integration

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/internal/reqcount"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/ledger"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/table"
)

// RunDeleteOptions runs the shared options of the patterns' Delete
// (patterns.DeleteOptions: IfExists, Current) and Put (patterns.PutOptions:
// Current) on every pattern that takes them, each request counted by the
// ledger: Current saves the read its method would send, a missing entity
// is what IfExists and each pattern's default say, a Current that is not
// the stored version of the entity named is refused before any request.
func RunDeleteOptions(t *testing.T, env Env) {
	ctx := t.Context()

	t.Run("model: a copy missing does not stop Delete, nor pass for a missing entity", func(t *testing.T) {
		c := &reqcount.Counter{}
		client := env.NewTable(t, c)
		idx, err := patterns.OpenModel(ctx, tableOf(table.New[Staff](client, nil)), &patterns.ModelOptions[Staff]{Name: "idx", Primary: "empid_", Copies: staffIndexes()})
		if err != nil {
			t.Fatal(err)
		}
		plain := tableOf(table.New[table.Entity](client, nil))
		for _, o := range []*table.DeleteOptions{nil, {IfExists: true}} {
			don := staff("000123", "Don", "Hall", "donh@contoso.com", 34)
			if err := idx.Add(ctx, don, nil); err != nil {
				t.Fatal(err)
			}
			// Damage made around tablekit: the email copy is gone.
			if err := plain.Delete(ctx, "Sales", "email_donh@contoso.com", nil); err != nil {
				t.Fatal(err)
			}
			c.Reset()
			if err := idx.Delete(ctx, "Sales", don.RowKey, o); err != nil {
				t.Fatalf("Delete (%+v) with a copy missing: %v", o, err)
			}
			// The read, the transaction that meets the missing copy, and
			// the transaction without it.
			wantOps(t, c, map[string]int{"table/GetEntity": 1, "table/Batch": 2}, "Delete with a copy missing")
			if _, err := idx.Get(ctx, "Sales", don.RowKey, nil); !table.Is(err, table.ErrNotFound) {
				t.Fatalf("Delete (%+v) returned but the entity is still there: %v", o, err)
			}
			if rep, err := verifyOf(ctx, idx, nil); err != nil || !rep.OK() || rep.Primaries != 0 || rep.IndexRows != 0 {
				t.Fatalf("Verify after Delete: %+v %v", rep, err)
			}
		}
	})

	t.Run("large entity: Delete with Current removes only that version, with its blobs", func(t *testing.T) {
		c := &reqcount.Counter{}
		client := env.NewTable(t, c)
		bc, container := env.NewContainer(t, c)
		le, err := patterns.NewLargeEntity[Profile](tableOf(table.New[Profile](client, nil)), bc, container, []string{"Photo"}, 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		photo := bytes.Repeat([]byte{0xff, 0xd8, 0x00, 0x42}, 20000) // 80 KB: one blob
		don := &Profile{Meta: table.Meta{PartitionKey: "Sales", RowKey: "000123"}, Name: "Don Hall", Photo: photo}
		ben := &Profile{Meta: table.Meta{PartitionKey: "Sales", RowKey: "000223"}, Name: "Ben Jones", Photo: photo}
		for _, p := range []*Profile{don, ben} {
			if err := le.Put(ctx, p, nil); err != nil {
				t.Fatal(err)
			}
		}
		cur, err := le.Get(ctx, "Sales", "000123", nil)
		if err != nil {
			t.Fatal(err)
		}

		// Bad input.
		noETag := *cur
		noETag.ETag = ""
		c.Reset()
		wantInputError(t, le.Delete(ctx, "Sales", "000223", &patterns.DeleteOptions[Profile]{Current: cur}), "LargeEntity.Delete", "Current", table.ErrInvalidValue, "another entity's Current")
		wantInputError(t, le.Delete(ctx, "Sales", "000123", &patterns.DeleteOptions[Profile]{Current: &noETag}), "LargeEntity.Delete", "Current.ETag", table.ErrNoETag, "a Current without an ETag")
		wantOps(t, c, nil, "the refused Deletes")

		// A stale Current deletes nothing.
		next := *cur
		next.Name = "Don M. Hall"
		if err := le.Update(ctx, &next, nil); err != nil {
			t.Fatal(err)
		}
		c.Reset()
		if err := le.Delete(ctx, "Sales", "000123", &patterns.DeleteOptions[Profile]{Current: cur}); !table.Is(err, table.ErrPreconditionFailed) {
			t.Fatalf("Delete with a stale Current: %v", err)
		}
		// The read names the blobs; the delete, guarded by Current's ETag,
		// gets the service's 412, and no blob is touched.
		wantOps(t, c, map[string]int{"table/GetEntity": 1, "table/DeleteEntity": 1}, "Delete with a stale Current")
		if got, err := le.Get(ctx, "Sales", "000123", nil); err != nil || got.Name != "Don M. Hall" || !bytes.Equal(got.Photo, photo) {
			t.Fatalf("after the refused Delete: %v", err)
		}
		if n, err := le.Sweep(ctx, 0, nil); err != nil || n != 1 {
			t.Fatalf("Sweep removed %d (%v), want the blob of the version Update replaced", n, err)
		}

		// With or without Current: a read (a T does not carry its blobs'
		// names), the delete, the blob. Nothing is left to Sweep.
		if cur, err = le.Get(ctx, "Sales", "000123", nil); err != nil {
			t.Fatal(err)
		}
		c.Reset()
		if err := le.Delete(ctx, "Sales", "000223", nil); err != nil {
			t.Fatal(err)
		}
		wantOps(t, c, map[string]int{"table/GetEntity": 1, "table/DeleteEntity": 1, "blob/DeleteBlob": 1}, "Delete")
		if err := le.Delete(ctx, "Sales", "000123", &patterns.DeleteOptions[Profile]{Current: cur}); err != nil {
			t.Fatal(err)
		}
		wantOps(t, c, map[string]int{"table/GetEntity": 1, "table/DeleteEntity": 1, "blob/DeleteBlob": 1}, "Delete with Current")
		if _, err := le.Get(ctx, "Sales", "000123", nil); !table.Is(err, table.ErrNotFound) {
			t.Fatalf("Get after Delete with Current: %v", err)
		}
		if n := blobCount(t, bc, container); n != 0 {
			t.Fatalf("%d blobs after the Deletes, want none", n)
		}

		// A missing entity is not found by default, as the table's Delete
		// says, and a success with IfExists; one read either way.
		c.Reset()
		for _, o := range []*patterns.DeleteOptions[Profile]{nil, {Current: cur}} {
			if err := le.Delete(ctx, "Sales", "000123", o); !table.Is(err, table.ErrNotFound) {
				t.Fatalf("Delete of a missing entity (%+v): %v, want not found", o, err)
			}
			wantOps(t, c, map[string]int{"table/GetEntity": 1}, "Delete of a missing entity")
		}
		for _, o := range []*patterns.DeleteOptions[Profile]{{IfExists: true}, {IfExists: true, Current: cur}} {
			if err := le.Delete(ctx, "Sales", "000123", o); err != nil {
				t.Fatalf("Delete IfExists of a missing entity (%+v): %v", o, err)
			}
			wantOps(t, c, map[string]int{"table/GetEntity": 1}, "Delete IfExists of a missing entity")
		}
	})

	t.Run("large entity: Put with Current writes only over that version; same requests as without", func(t *testing.T) {
		c := &reqcount.Counter{}
		client := env.NewTable(t, c)
		bc, container := env.NewContainer(t, c)
		le, err := patterns.NewLargeEntity[Profile](tableOf(table.New[Profile](client, nil)), bc, container, []string{"Photo"}, 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		photo := func(b byte) []byte { return bytes.Repeat([]byte{b}, 80000) }
		don := &Profile{Meta: table.Meta{PartitionKey: "Sales", RowKey: "000123"}, Name: "Don Hall", Photo: photo(1)}
		c.Reset()
		if err := le.Put(ctx, don, nil); err != nil {
			t.Fatal(err)
		}
		written := map[string]int{"blob/PutBlob": 1, "table/UpdateEntity": 1}
		wantOps(t, c, written, "Put")
		cur, err := le.Get(ctx, "Sales", "000123", nil)
		if err != nil {
			t.Fatal(err)
		}

		// Bad input.
		other := *cur
		other.RowKey = "000223"
		noETag := *cur
		noETag.ETag = ""
		c.Reset()
		wantInputError(t, le.Put(ctx, &other, &patterns.PutOptions[Profile]{Current: cur}), "LargeEntity.Put", "Current", table.ErrInvalidValue, "another entity's Current")
		wantInputError(t, le.Put(ctx, cur, &patterns.PutOptions[Profile]{Current: &noETag}), "LargeEntity.Put", "Current.ETag", table.ErrNoETag, "a Current without an ETag")
		wantOps(t, c, nil, "the refused Puts")

		next := *cur
		next.ETag = "" // Current's ETag guards the write, not v's
		next.Photo = photo(2)
		if err := le.Put(ctx, &next, &patterns.PutOptions[Profile]{Current: cur}); err != nil {
			t.Fatal(err)
		}
		wantOps(t, c, written, "Put with Current")
		if next.ETag == "" || next.ETag == cur.ETag {
			t.Fatalf("Put with Current left v's ETag at %q", next.ETag)
		}
		// cur is stale now: the write is refused, its new blob removed.
		late := *cur
		late.Photo = photo(3)
		if err := le.Put(ctx, &late, &patterns.PutOptions[Profile]{Current: cur}); !table.Is(err, table.ErrPreconditionFailed) {
			t.Fatalf("Put with a stale Current: %v", err)
		}
		if late.ETag != cur.ETag {
			t.Fatalf("a refused Put changed v's ETag to %q", late.ETag)
		}
		wantOps(t, c, map[string]int{"blob/PutBlob": 1, "table/UpdateEntity": 1, "table/GetEntity": 1, "blob/DeleteBlob": 1}, "Put with a stale Current (the refusal checked with a read, the new blob deleted)")
		if got, err := le.Get(ctx, "Sales", "000123", nil); err != nil || !bytes.Equal(got.Photo, photo(2)) {
			t.Fatalf("after the refused Put: %v", err)
		}
		if n := blobCount(t, bc, container); n != 2 {
			t.Fatalf("%d blobs, want the one Put with Current wrote and the one it replaced", n)
		}
		if n, err := le.Sweep(ctx, 0, nil); err != nil || n != 1 {
			t.Fatalf("Sweep removed %d (%v), want the replaced version's blob", n, err)
		}
	})

	t.Run("wide entity: Delete with Current saves the read; IfExists and a stale Current", func(t *testing.T) {
		c := &reqcount.Counter{}
		w := patterns.NewWideEntity(tableOf(table.New[table.Entity](env.NewTable(t, c), nil)))
		props := map[string]any{}
		for i := range 600 { // three parts
			props[fmt.Sprintf("Day%03d", i)] = int32(i)
		}
		for _, rk := range []string{"2026", "2027"} {
			if err := w.Put(ctx, &patterns.Wide{PartitionKey: "stats", RowKey: rk, Properties: props}, nil); err != nil {
				t.Fatal(err)
			}
		}
		cur, err := w.Get(ctx, "stats", "2026", true, nil)
		if err != nil || cur.Parts != 3 {
			t.Fatalf("Get keysOnly: %+v %v", cur, err)
		}

		// Bad input.
		other := *cur
		other.RowKey = "2027"
		noETag := *cur
		noETag.ETag = ""
		noParts := *cur
		noParts.Parts = 0
		badKey := *cur
		badKey.PartitionKey = "st/ats"
		c.Reset()
		wantInputError(t, w.Delete(ctx, "stats", "2026", &patterns.DeleteOptions[patterns.Wide]{Current: &other}), "WideEntity.Delete", "Current", table.ErrInvalidValue, "another entity's Current")
		wantInputError(t, w.Delete(ctx, "stats", "2026", &patterns.DeleteOptions[patterns.Wide]{Current: &noETag}), "WideEntity.Delete", "Current.ETag", table.ErrNoETag, "a Current without an ETag")
		wantInputError(t, w.Delete(ctx, "stats", "2026", &patterns.DeleteOptions[patterns.Wide]{Current: &noParts}), "WideEntity.Delete", "Current.Parts", table.ErrInvalidValue, "a Current of no parts")
		wantInputError(t, w.Delete(ctx, "st/ats", "2026", &patterns.DeleteOptions[patterns.Wide]{Current: &badKey}), "WideEntity.Delete", "PartitionKey", keys.ErrForbiddenChar, "a PartitionKey with a '/'")
		// Put's Current too: another entity's, or one of these keys without
		// an ETag. (A new entity is written with Add.)
		next := &patterns.Wide{PartitionKey: "stats", RowKey: "2026", Properties: props}
		wantInputError(t, w.Put(ctx, next, &patterns.PutOptions[patterns.Wide]{Current: &other}), "WideEntity.Put", "Current", table.ErrInvalidValue, "another entity's Current")
		wantInputError(t, w.Put(ctx, next, &patterns.PutOptions[patterns.Wide]{Current: &noETag}), "WideEntity.Put", "Current.ETag", table.ErrNoETag, "a Current without an ETag")
		wantOps(t, c, nil, "the refused Deletes")

		// A stale Current deletes nothing.
		again := &patterns.Wide{PartitionKey: "stats", RowKey: "2026", Properties: props}
		if err := w.Put(ctx, again, &patterns.PutOptions[patterns.Wide]{Current: cur}); err != nil {
			t.Fatal(err)
		}
		c.Reset()
		if err := w.Delete(ctx, "stats", "2026", &patterns.DeleteOptions[patterns.Wide]{Current: cur}); !table.Is(err, table.ErrPreconditionFailed) {
			t.Fatalf("Delete with a stale Current: %v", err)
		}
		wantOps(t, c, map[string]int{"table/Batch": 1}, "Delete with a stale Current")
		if got, err := w.Get(ctx, "stats", "2026", false, nil); err != nil || got.Parts != 3 || len(got.Properties) != 600 {
			t.Fatalf("after the refused Delete: %v", err)
		}

		// Without Current: a read and the transaction; with it, the
		// transaction alone.
		if cur, err = w.Get(ctx, "stats", "2026", true, nil); err != nil {
			t.Fatal(err)
		}
		c.Reset()
		if err := w.Delete(ctx, "stats", "2027", nil); err != nil {
			t.Fatal(err)
		}
		wantOps(t, c, map[string]int{"table/QueryEntities": 1, "table/Batch": 1}, "Delete")
		if err := w.Delete(ctx, "stats", "2026", &patterns.DeleteOptions[patterns.Wide]{Current: cur}); err != nil {
			t.Fatal(err)
		}
		wantOps(t, c, map[string]int{"table/Batch": 1}, "Delete with Current")
		for _, rk := range []string{"2026", "2027"} {
			if _, err := w.Get(ctx, "stats", rk, true, nil); !table.Is(err, table.ErrNotFound) {
				t.Fatalf("Get %s after Delete: %v", rk, err)
			}
		}

		// A missing entity: not found by default, a success with IfExists,
		// with a read or with Current.
		c.Reset()
		if err := w.Delete(ctx, "stats", "2026", nil); !table.Is(err, table.ErrNotFound) {
			t.Fatalf("Delete of a missing entity: %v", err)
		}
		wantOps(t, c, map[string]int{"table/QueryEntities": 1}, "Delete of a missing entity")
		if err := w.Delete(ctx, "stats", "2026", &patterns.DeleteOptions[patterns.Wide]{IfExists: true}); err != nil {
			t.Fatalf("Delete IfExists of a missing entity: %v", err)
		}
		wantOps(t, c, map[string]int{"table/QueryEntities": 1}, "Delete IfExists of a missing entity")
		if err := w.Delete(ctx, "stats", "2026", &patterns.DeleteOptions[patterns.Wide]{Current: cur}); !table.Is(err, table.ErrNotFound) {
			t.Fatalf("Delete of a missing entity with Current: %v", err)
		}
		wantOps(t, c, map[string]int{"table/Batch": 1}, "Delete of a missing entity with Current")
		if err := w.Delete(ctx, "stats", "2026", &patterns.DeleteOptions[patterns.Wide]{Current: cur, IfExists: true}); err != nil {
			t.Fatalf("Delete IfExists of a missing entity with Current: %v", err)
		}
		wantOps(t, c, map[string]int{"table/Batch": 1}, "Delete IfExists of a missing entity with Current")
	})
}

// wantInputError checks that err is a *table.InputError of operation op
// about field, matching rule.
func wantInputError(t *testing.T, err error, op, field string, rule error, what string) {
	t.Helper()
	var ie *table.InputError
	if !errors.As(err, &ie) || ie.Op != op || ie.Field != field || !errors.Is(err, rule) {
		t.Errorf("%s: %v, want a *table.InputError of %s on %s (%v)", what, err, op, field, rule)
	}
}

// wantOps checks the ledger's counts: want maps "service/Operation" (as
// "table/GetEntity") to requests, and nothing else may have been sent (nil:
// no request at all). Then it resets the counter.
func wantOps(t *testing.T, c *reqcount.Counter, want map[string]int, what string) {
	t.Helper()
	l := c.Ledger()
	total := 0
	for k, n := range want {
		s, op, _ := strings.Cut(k, "/")
		total += n
		if got := l.Operation(ledger.Service(s), op); got != n {
			t.Errorf("%s: %d %s requests, want %d; the ledger:\n%s", what, got, k, n, l)
		}
	}
	if got := c.N(); got != total {
		t.Errorf("%s: %d requests in all, want %d; the ledger:\n%s", what, got, total, l)
	}
	c.Reset()
}
