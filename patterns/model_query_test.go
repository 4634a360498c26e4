package patterns_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/ledger"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/table"
)

// The entity model's reads: queries see primaries only, lookups read one
// index and name what they read.

// queried is the "pk/rk" of every entity a model query returns.
func queried(t *testing.T, d *directory, opts *table.QueryOptions) []string {
	t.Helper()
	var out []string
	for v, err := range d.m.Query(t.Context(), opts) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, v.PartitionKey+"/"+v.RowKey)
	}
	return out
}

// A query returns primaries only, with or without a filter of its own:
// never a copy, an index entity, or a row of another kind beside them
// (logins under "login_", a row whose RowKey sorts after every primary);
// the caller's filter still applies; one request a page.
func TestModelQueryReturnsOnlyPrimaries(t *testing.T) {
	d := newDirectory(t, false)
	ctx := t.Context()
	for i, last := range []string{"Hall", "Jones", "Hall"} {
		if err := d.m.Add(ctx, staffOf("Sales", i+1, "F", last, last+string(rune('a'+i))+"@contoso.com"), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.m.Add(ctx, staffOf("Marketing", 9, "G", "Hall", "g@contoso.com"), nil); err != nil {
		t.Fatal(err)
	}
	for _, rk := range []string{"login_1", "empid`", "zzz", "empi"} { // around the "empid_" range
		e := &table.Entity{Meta: table.Meta{PartitionKey: "Sales", RowKey: rk}}
		e.Set("LastName", table.ValueOf("Hall"))
		if err := d.raw.Add(ctx, e, nil); err != nil {
			t.Fatal(err)
		}
	}
	all := []string{"Marketing/empid_000009", "Sales/empid_000001", "Sales/empid_000002", "Sales/empid_000003"}
	if got := queried(t, d, nil); !slices.Equal(got, all) {
		t.Fatalf("Query(nil): %v, want the primaries %v", got, all)
	}
	if got := queried(t, d, &table.QueryOptions{}); !slices.Equal(got, all) {
		t.Fatalf("Query with no filter: %v", got)
	}
	hall := table.Prop("LastName").Eq("Hall")
	d.l.Reset()
	if got, want := queried(t, d, &table.QueryOptions{Filter: table.Partition("Sales").And(hall)}), []string{"Sales/empid_000001", "Sales/empid_000003"}; !slices.Equal(got, want) {
		t.Fatalf("Sales Halls: %v, want %v", got, want)
	}
	if n := d.l.Total(); n != 1 {
		t.Fatalf("a query of one page sent %d requests", n)
	}
	if got := queried(t, d, &table.QueryOptions{Filter: table.Partition("Nowhere")}); len(got) != 0 {
		t.Fatalf("an empty partition: %v", got)
	}
	// A query stopped early stops.
	n := 0
	for range d.m.Query(ctx, nil) {
		n++
		break
	}
	if n != 1 {
		t.Fatalf("a query stopped after one entity yielded %d", n)
	}
}

// A model whose primaries have no prefix (no index rows beside them)
// queries the whole table; its query errors reach the caller.
func TestModelWithoutPrimaryPrefixQueriesEveryRow(t *testing.T) {
	d := newDirectory(t, false)
	ctx := t.Context()
	// A handle of its own: d's model made d.tbl the handle of its
	// "empid_" rows only.
	tbl, err := table.New[staffer](d.tbl.Client(), nil)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := patterns.OpenModel(ctx, tbl, &patterns.ModelOptions[staffer]{Name: "plain"})
	if err != nil {
		t.Fatal(err)
	}
	if err := plain.Add(ctx, &staffer{Meta: table.Meta{PartitionKey: "p", RowKey: "a"}}, nil); err != nil {
		t.Fatal(err)
	}
	if err := plain.Add(ctx, &staffer{Meta: table.Meta{PartitionKey: "p", RowKey: "zzz"}}, nil); err != nil {
		t.Fatal(err)
	}
	var got []string
	for v, err := range plain.Query(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, v.RowKey)
	}
	if !slices.Equal(got, []string{"a", "zzz"}) {
		t.Fatalf("Query of a model without a Primary prefix: %v", got)
	}
	if _, err := plain.Get(ctx, "p", "zzz", nil); err != nil {
		t.Fatalf("Get of any RowKey in a model without a prefix: %v", err)
	}
	bad := table.Prop("no such").Eq("x") // no property name holds a space
	for _, err := range plain.Query(ctx, &table.QueryOptions{Filter: bad}) {
		if err == nil {
			t.Fatal("a query with a bad filter yielded an entity")
		}
		break
	}
}

// Lookup reads a unique copy in one request and returns the entity as the
// copy stores it; LookupEntities reads the value's list and then each
// primary, skipping IDs whose primary is gone.
func TestModelLookupsReadTheirIndex(t *testing.T) {
	d := newDirectory(t, false)
	ctx := t.Context()
	ann, bob := staffOf("Sales", 1, "Ann", "Hall", "ann@contoso.com"), staffOf("Sales", 2, "Bob", "Hall", "bob@contoso.com")
	for _, v := range []*staffer{ann, bob} {
		if err := d.m.Add(ctx, v, nil); err != nil {
			t.Fatal(err)
		}
	}
	d.l.Reset()
	got, err := d.m.Lookup(ctx, "email", "Sales", "bob@contoso.com", nil)
	if err != nil || got.RowKey != bob.RowKey || got.FirstName != "Bob" || got.Salary != bob.Salary {
		t.Fatalf("Lookup: %+v %v", got, err)
	}
	if n := d.l.Total(); n != 1 {
		t.Fatalf("Lookup sent %d requests, want 1", n)
	}
	if _, err := d.m.Lookup(ctx, "email", "Marketing", "bob@contoso.com", nil); !table.Is(err, table.ErrNotFound) {
		t.Fatalf("Lookup in another partition: %v", err)
	}
	d.l.Reset()
	if l := lastNames(t, d, "Sales", "Hall"); !slices.Equal(l, []string{ann.RowKey, bob.RowKey}) {
		t.Fatalf("Hall list: %v", l)
	}
	if n := d.l.Total(); n != 3 {
		t.Fatalf("LookupEntities of two: %d requests, want 3 (the list, a read a primary)", n)
	}
	// A primary removed around the model is skipped.
	if err := d.tbl.Delete(ctx, "Sales", ann.RowKey, nil); err != nil {
		t.Fatal(err)
	}
	if l := lastNames(t, d, "Sales", "Hall"); !slices.Equal(l, []string{bob.RowKey}) {
		t.Fatalf("Hall list with Ann gone around the model: %v", l)
	}
	if l := lastNames(t, d, "Sales", "Nobody"); len(l) != 0 {
		t.Fatalf("a value no one has: %v", l)
	}
}

// An index outside the partition travels by the model's queue: an Add is
// the message hidden, the transaction, the message shown (three requests
// beside the list's read); the worker's Handle then writes the cross copy
// and the remote list entry. A change moves them; a Delete removes them;
// MoveSource's DeleteValue removes everything at the version given.
func TestModelCrossPartitionIndexesFollowEveryWrite(t *testing.T) {
	d := newDirectory(t, true)
	ctx := t.Context()
	ann := staffOf("Sales", 1, "Ann", "Hall", "ann@contoso.com")
	if err := d.m.Add(ctx, ann, nil); err != nil {
		t.Fatal(err)
	}
	if q, b, n := d.l.Operation(ledger.Queue, "EnqueueMessage"), d.l.Operation(ledger.Table, "Batch"), d.l.Total(); q != 1 || b != 1 || n != 4 {
		t.Fatalf("Add with indexes outside the partition: %d requests (%d enqueued, %d transactions), want 4 (the list read, the message hidden, the transaction, the message shown):\n%v", n, q, b, d.l)
	}
	d.drain(t)
	crossIs := func(want ...string) {
		t.Helper()
		if got := crossRows(t, d.copies); !slices.Equal(got, want) {
			t.Fatalf("cross copies %v, want %v", got, want)
		}
	}
	allHall := func(want ...string) {
		t.Helper()
		got, err := d.m.LookupEntities(ctx, "lastname-all", "", "Hall", nil)
		if err != nil {
			t.Fatal(err)
		}
		var have []string
		for _, v := range got {
			have = append(have, v.PartitionKey+"/"+v.RowKey)
		}
		slices.Sort(have)
		if !slices.Equal(have, want) {
			t.Fatalf("the Hall list across departments: %v, want %v", have, want)
		}
	}
	crossIs("email_Sales/ann@contoso.com")
	allHall("Sales/empid_000001")
	got, err := d.m.Lookup(ctx, "email-all", "email_Sales", "ann@contoso.com", nil)
	if err != nil || got.RowKey != ann.RowKey || got.PartitionKey != "Sales" {
		t.Fatalf("Lookup of the cross copy: %+v %v", got, err)
	}
	bob := staffOf("Marketing", 2, "Bob", "Hall", "bob@contoso.com")
	if err := d.m.Add(ctx, bob, nil); err != nil {
		t.Fatal(err)
	}
	ann.Email, ann.LastName = "anna@contoso.com", "Jones"
	if err := d.m.Update(ctx, ann, nil); err != nil {
		t.Fatal(err)
	}
	d.drain(t)
	crossIs("email_Marketing/bob@contoso.com", "email_Sales/anna@contoso.com")
	allHall("Marketing/empid_000002")
	if ids, err := d.m.LookupEntities(ctx, "lastname-all", "", "Jones", nil); err != nil || len(ids) != 1 || ids[0].RowKey != ann.RowKey {
		t.Fatalf("the Jones list across departments: %v %v", ids, err)
	}
	if err := d.m.Delete(ctx, "Sales", ann.RowKey, nil); err != nil {
		t.Fatal(err)
	}
	d.drain(t)
	crossIs("email_Marketing/bob@contoso.com")
	if ids, err := d.m.LookupEntities(ctx, "lastname-all", "", "Jones", nil); err != nil || len(ids) != 0 {
		t.Fatalf("the Jones list after the Delete: %v %v", ids, err)
	}
	// The mover's delete: at the version it read, with every index row.
	src := d.m.MoveSource()
	stored, err := src.Get(ctx, "Marketing", bob.RowKey, nil)
	if err != nil || src.Meta(stored).ETag == "" {
		t.Fatalf("MoveSource Get: %+v %v", stored, err)
	}
	old := *stored
	stored.Salary = 1
	if err := d.m.Update(ctx, stored, nil); err != nil {
		t.Fatal(err)
	}
	if err := src.DeleteValue(ctx, &old, nil); !table.Is(err, table.ErrPreconditionFailed) {
		t.Fatalf("DeleteValue at an old version: %v", err)
	}
	if err := src.DeleteValue(ctx, stored, nil); err != nil {
		t.Fatal(err)
	}
	d.drain(t)
	crossIs()
	allHall()
	if got := rows(t, d.raw); len(got) != 0 {
		t.Fatalf("rows left in the primaries' table: %v", got)
	}
}

// A message of another type reaching the model's handler is refused as
// permanent; the model sends no message when it has no index outside the
// partition.
func TestModelHandleRefusesAnotherType(t *testing.T) {
	d := newDirectory(t, false)
	if err := d.m.Add(t.Context(), staffOf("Sales", 1, "A", "B", "c@contoso.com"), nil); err != nil {
		t.Fatal(err)
	}
	if n := d.l.Operation(ledger.Queue, "EnqueueMessage"); n != 0 {
		t.Fatalf("a model without cross-partition indexes enqueued %d messages", n)
	}
	x := newDirectory(t, true)
	if err := x.m.Add(t.Context(), staffOf("Sales", 1, "A", "B", "c@contoso.com"), nil); err != nil {
		t.Fatal(err)
	}
	err := x.m.Process(t.Context(), &consistency.Message{Type: "tablekit.model.other.v1", Payload: []byte(`{"rows":[]}`)})
	if !errors.Is(err, patterns.ErrBadDefinition) {
		t.Fatalf("Handle of another type: %v, want ErrBadDefinition", err)
	}
	// A payload that is no model message is refused too.
	if err := x.m.Process(t.Context(), &consistency.Message{Type: x.m.MessageType(), Payload: []byte(`[`)}); err == nil {
		t.Fatal("Handle of a malformed payload succeeded")
	}
}

// An entity given its first value outside the partition had no copy there
// to remove: the worker's Handle writes the new copy and reads nothing
// else of the copies' table.
func TestModelFirstCrossValueRemovesNothing(t *testing.T) {
	d := newDirectory(t, true)
	ctx := t.Context()
	cara := staffOf("Marketing", 3, "Cara", "Jones", "")
	if err := d.m.Add(ctx, cara, nil); err != nil {
		t.Fatal(err)
	}
	d.drain(t)
	if got := crossRows(t, d.copies); len(got) != 0 {
		t.Fatalf("cross copies of an entity without an email: %v", got)
	}
	cara.Email = "cara@contoso.com"
	if err := d.m.Update(ctx, cara, nil); err != nil {
		t.Fatal(err)
	}
	d.l.Reset()
	d.drain(t)
	for _, e := range d.l.Entries() {
		if e.Resource == "EmailCopies" && e.Operation != "Batch" {
			t.Fatalf("the worker sent %d %s to the copies' table; want only the transaction writing the new copy:\n%v", e.Requests, e.Operation, d.l)
		}
	}
	if got := crossRows(t, d.copies); !slices.Equal(got, []string{"email_Marketing/cara@contoso.com"}) {
		t.Fatalf("cross copies: %v", got)
	}
}

// A model with a single index of a kind keeps it as one with several does.
func TestModelWithOneCopiesIndexKeepsIt(t *testing.T) {
	d := newDirectory(t, false)
	ctx := t.Context()
	one, err := patterns.OpenModel(ctx, d.tbl, &patterns.ModelOptions[staffer]{Name: "one", Primary: "empid_",
		Copies: []patterns.IndexDef[staffer]{{Name: "email", Prefix: "email_", Unique: true, Value: func(s *staffer) string { return s.Email }}}})
	if err != nil {
		t.Fatal(err)
	}
	ann := staffOf("Sales", 1, "Ann", "Hall", "ann@contoso.com")
	if err := one.Add(ctx, ann, nil); err != nil {
		t.Fatal(err)
	}
	got, err := one.Lookup(ctx, "email", "Sales", "ann@contoso.com", nil)
	if err != nil || got.RowKey != ann.RowKey {
		t.Fatalf("Lookup in the model's one copies index: %+v %v", got, err)
	}
	if r, err := one.Verify(ctx, nil); err != nil || !r.OK() || r.Primaries != 1 || r.IndexRows != 1 {
		t.Fatalf("Verify: %+v %v", r, err)
	}
}
