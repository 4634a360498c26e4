package patterns_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/ledger"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/table"
)

// The entity model's writes on the fake, over one declaration of the
// guide's employee directory: employees under "empid_" in their
// department's partition, a unique email copy ("email_") and a non-unique
// first-name copy ("first_") beside them, last-name index entities in the
// partition ("lastname_"), and, with cross set, an email copy in another
// table and last-name lists across departments, both through a queue.

// staffer is an employee of the directory.
type staffer struct {
	table.Meta
	FirstName string
	LastName  string
	Email     string
	Salary    int
}

// directory is one model with every kind of index, the fake's tables and
// queue behind it, and a ledger that counts every request of every client.
type directory struct {
	m      *patterns.Model[staffer]
	tbl    *table.Table[staffer]
	raw    *table.Table[table.Entity] // the primaries' table, as rows
	copies *table.Table[table.Entity] // CrossCopies' table (cross only)
	lists  *table.Table[table.Entity] // RemoteLists' table (cross only)
	q      *azqueue.QueueClient
	w      *consistency.Worker
	l      *ledger.Ledger
	svc    *fake.TableService // its faults
}

// modelDeadline bounds each model test: a write or a drain that loops
// fails in seconds with every goroutine's stack, not at go test's timeout.
// It bounds a hang, not speed (each test takes well under a second).
// heavyModelDeadline is for the loads that fill 4 MiB requests or hold
// 10,000 entities: 9 to 12 s each under -race on a quiet 2-core machine,
// and past 20 s when CI's other packages share it.
const (
	modelDeadline      = 20 * time.Second
	heavyModelDeadline = 3 * time.Minute
)

func newDirectory(t *testing.T, cross bool) *directory {
	t.Helper()
	modelTimeout(t)
	ctx := t.Context()
	d := &directory{l: ledger.New()}
	tables := fake.NewTableService(nil)
	d.svc = tables
	newTable := func(name string) *table.Table[table.Entity] {
		opts := &aztables.ClientOptions{}
		d.l.Attach(&opts.ClientOptions, ledger.Table)
		c := tables.NewClient(name, opts)
		if _, err := c.CreateTable(ctx, nil); err != nil {
			t.Fatal(err)
		}
		return tableOf(table.New[table.Entity](c, nil))
	}
	d.raw = newTable("Employees")
	d.tbl = tableOf(table.New[staffer](d.raw.Client(), &table.Options{Name: "Employees"}))
	def := &patterns.ModelOptions[staffer]{
		Name:    "staff",
		Primary: "empid_",
		Copies: []patterns.IndexDef[staffer]{
			{Name: "email", Prefix: "email_", Unique: true, Value: func(s *staffer) string { return s.Email }},
			{Name: "first", Prefix: "first_", Value: func(s *staffer) string { return s.FirstName }, Project: []string{"FirstName", "LastName"}},
		},
		Lists: []patterns.ListDef[staffer]{
			{Name: "lastname", Prefix: "lastname_", Value: func(s *staffer) string { return s.LastName }},
		},
	}
	if cross {
		d.copies, d.lists = newTable("EmailCopies"), newTable("LastNames")
		queues := fake.NewQueueService(nil)
		qopts := &azqueue.ClientOptions{}
		d.l.Attach(&qopts.ClientOptions, ledger.Queue)
		d.q = queues.NewQueueClient("staff", qopts)
		poison := queues.NewQueueClient("staff-poison", nil)
		if _, err := d.q.Create(ctx, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := poison.Create(ctx, nil); err != nil {
			t.Fatal(err)
		}
		// A failed write leaves its hidden message to appear when the
		// delay ends: short here, so that drain sees it.
		def.Queue, def.PublishDelay = d.q, 300*time.Millisecond
		def.CrossCopies = []patterns.IndexDef[staffer]{{
			Name: "email-all", Table: d.copies,
			PartitionKey: func(s *staffer) string { return "email_" + s.PartitionKey },
			Value:        func(s *staffer) string { return s.Email },
		}}
		def.RemoteLists = []patterns.ListDef[staffer]{{Name: "lastname-all", Value: func(s *staffer) string { return s.LastName }, Table: d.lists, Partition: "lastnames", Prefix: "ln_"}}
		d.w = consistency.NewWorker(d.q, poison, &consistency.WorkerOptions{
			Visibility: time.Second, Backoff: func(int64) time.Duration { return 0 },
			PollInterval: 20 * time.Millisecond, MaxPollInterval: 100 * time.Millisecond,
		})
	}
	m, err := patterns.OpenModel(ctx, d.tbl, def)
	if err != nil {
		t.Fatal(err)
	}
	d.m = m
	if d.w != nil {
		if err := d.w.Handle(m.MessageType(), m.Process); err != nil {
			t.Fatal(err)
		}
	}
	d.l.Reset()
	return d
}

// modelTimeout fails the test binary, with every goroutine's stack, when t
// runs past modelDeadline.
func modelTimeout(t *testing.T) { modelTimeoutAfter(t, modelDeadline) }

// modelTimeoutAfter is modelTimeout with deadline d.
func modelTimeoutAfter(t *testing.T, d time.Duration) {
	name := t.Name()
	timer := time.AfterFunc(d, func() {
		buf := make([]byte, 4<<20)
		n := runtime.Stack(buf, true)
		panic(fmt.Sprintf("%s did not finish within %v (a loop or a deadlock?); goroutines:\n%s", name, d, buf[:n]))
	})
	t.Cleanup(func() { timer.Stop() })
}

// drain hands every message of the queue to the model's Handle.
func (d *directory) drain(t *testing.T) {
	t.Helper()
	for range 60 {
		if _, err := d.w.Drain(t.Context(), nil); err != nil {
			t.Fatal(err)
		}
		p, err := d.q.GetProperties(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if *p.ApproximateMessagesCount == 0 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("the model's queue did not drain")
}

func staffOf(pk string, id int, first, last, email string) *staffer {
	return &staffer{Meta: table.Meta{PartitionKey: pk, RowKey: fmt.Sprintf("empid_%06d", id)}, FirstName: first, LastName: last, Email: email, Salary: 1000 + id}
}

// rows is every row of tbl as "pk/rk", in key order.
// crossRows is rows for a table of cross copies, each shown by the value
// its RowKey encodes (patterns.CrossCopyRowKey): "partition/value".
func crossRows(t *testing.T, tbl *table.Table[table.Entity]) []string {
	t.Helper()
	var out []string
	for _, r := range rows(t, tbl) {
		pk, rk, _ := strings.Cut(r, "/")
		out = append(out, pk+"/"+copyValue(rk))
	}
	return out
}

// copyValue is the value a cross copy's RowKey encodes (rk itself if it
// encodes none).
func copyValue(rk string) string {
	if parts, err := keys.DecodeTuple(rk); err == nil && len(parts) == 2 {
		return parts[0]
	}
	return rk
}

func rows(t *testing.T, tbl *table.Table[table.Entity]) []string {
	t.Helper()
	var out []string
	for e, err := range tbl.Query(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e.PartitionKey+"/"+e.RowKey)
	}
	return out
}

// indexRows is the partition's rows other than primaries, by RowKey, each
// with the primary its TkIndexOf names ("" for a list's index entity, which
// names none) and its properties.
func indexRows(t *testing.T, d *directory, pk string) map[string]*table.Entity {
	t.Helper()
	out := map[string]*table.Entity{}
	for e, err := range d.raw.Query(t.Context(), &table.QueryOptions{Filter: table.Partition(pk)}) {
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(e.RowKey, "empid_") {
			out[e.RowKey] = e
		}
	}
	return out
}

// copyRows are the partition's copies (email_ and first_ rows): RowKey →
// the primary they name.
func copyRows(t *testing.T, d *directory, pk string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for rk, e := range indexRows(t, d, pk) {
		if strings.HasPrefix(rk, "lastname_") {
			continue
		}
		v, _ := e.Get("TkIndexOf")
		out[rk], _ = v.AsString()
	}
	return out
}

// firstCopies are the first-name copies of the partition: owner → FirstName.
func firstCopies(t *testing.T, d *directory, pk string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for rk, e := range indexRows(t, d, pk) {
		if strings.HasPrefix(rk, "first_") {
			owner, _ := e.Get("TkIndexOf")
			first, _ := e.Get("FirstName")
			o, _ := owner.AsString()
			out[o], _ = first.AsString()
		}
	}
	return out
}

// lastNames is what the partition's list of last name holds, as RowKeys.
func lastNames(t *testing.T, d *directory, pk, last string) []string {
	t.Helper()
	got, err := d.m.LookupEntities(t.Context(), "lastname", pk, last, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, v := range got {
		out = append(out, v.RowKey)
	}
	slices.Sort(out)
	return out
}

// An Add writes the primary, its email copy, its first-name copy and its
// ID in its last name's list in one transaction, after one read of that
// list: two requests, as Add's documentation counts them.
func TestModelAddWritesEverySamePartitionIndexInOneTransaction(t *testing.T) {
	d := newDirectory(t, false)
	ctx := t.Context()
	ann := staffOf("Sales", 1, "Ann", "Hall", "ann@contoso.com")
	if err := d.m.Add(ctx, ann, nil); err != nil {
		t.Fatal(err)
	}
	if got := d.l.Operation(ledger.Table, "Batch"); got != 1 || d.l.Total() != 2 {
		t.Fatalf("Add: %d requests, %d of them transactions; want 2 (the list's read, one transaction):\n%v", d.l.Total(), got, d.l)
	}
	if ann.ETag == "" {
		t.Fatal("Add left the primary's ETag empty")
	}
	stored, err := d.tbl.Get(ctx, "Sales", ann.RowKey, nil)
	if err != nil || stored.ETag != ann.ETag || stored.Email != ann.Email {
		t.Fatalf("the primary: %+v %v; want it stored with the ETag Add set", stored, err)
	}
	id := patterns.ID("Sales", ann.RowKey)
	if got := copyRows(t, d, "Sales"); got["email_ann@contoso.com"] != id || len(got) != 2 {
		t.Fatalf("copies %v; want email_ann@contoso.com and one first-name copy, both naming %s", got, id)
	}
	if got := firstCopies(t, d, "Sales"); got[id] != "Ann" {
		t.Fatalf("first-name copies %v; want Ann's", got)
	}
	if got := lastNames(t, d, "Sales", "Hall"); !slices.Equal(got, []string{ann.RowKey}) {
		t.Fatalf("the Hall list holds %v", got)
	}
	// A second Hall shares the list; an entity without a first name has no
	// first-name copy.
	bob := staffOf("Sales", 2, "", "Hall", "bob@contoso.com")
	if err := d.m.Add(ctx, bob, nil); err != nil {
		t.Fatal(err)
	}
	if got := lastNames(t, d, "Sales", "Hall"); !slices.Equal(got, []string{ann.RowKey, bob.RowKey}) {
		t.Fatalf("the Hall list holds %v, want both", got)
	}
	if got := firstCopies(t, d, "Sales"); len(got) != 1 {
		t.Fatalf("first-name copies %v; want Ann's only (Bob has no first name)", got)
	}
	// An entity that exists is refused and changes nothing.
	before := rows(t, d.raw)
	if err := d.m.Add(ctx, staffOf("Sales", 1, "Ann", "Other", "other@contoso.com"), nil); !table.Is(err, table.ErrAlreadyExists) {
		t.Fatalf("Add of an existing entity: %v, want ErrAlreadyExists", err)
	}
	if after := rows(t, d.raw); !slices.Equal(before, after) {
		t.Fatalf("the refused Add changed the table: %v → %v", before, after)
	}
}

// A unique value another entity holds is *ValueTakenError naming the index,
// the value and the partition; nothing is written. The same value in
// another partition is free.
func TestModelAddRefusesATakenUniqueValue(t *testing.T) {
	d := newDirectory(t, false)
	ctx := t.Context()
	if err := d.m.Add(ctx, staffOf("Sales", 1, "Ann", "Hall", "x@contoso.com"), nil); err != nil {
		t.Fatal(err)
	}
	before := rows(t, d.raw)
	err := d.m.Add(ctx, staffOf("Sales", 2, "Bob", "Jones", "x@contoso.com"), nil)
	var vt *patterns.ValueTakenError
	if !errors.As(err, &vt) || vt.Index != "email" || vt.Value != "x@contoso.com" || vt.PartitionKey != "Sales" {
		t.Fatalf("Add of a taken email: %v; want *ValueTakenError{email, x@contoso.com, Sales}", err)
	}
	if after := rows(t, d.raw); !slices.Equal(before, after) {
		t.Fatalf("the refused Add changed the table: %v → %v", before, after)
	}
	if err := d.m.Add(ctx, staffOf("Marketing", 2, "Bob", "Jones", "x@contoso.com"), nil); err != nil {
		t.Fatalf("the same email in another partition: %v", err)
	}
	// An Update that takes the value is refused the same way.
	bob := staffOf("Sales", 3, "Bob", "Jones", "y@contoso.com")
	if err := d.m.Add(ctx, bob, nil); err != nil {
		t.Fatal(err)
	}
	bob.Email = "x@contoso.com"
	if err := d.m.Update(ctx, bob, nil); !errors.As(err, &vt) || vt.Index != "email" {
		t.Fatalf("Update onto a taken email: %v; want *ValueTakenError", err)
	}
	if got, _ := d.tbl.Get(ctx, "Sales", bob.RowKey, nil); got.Email != "y@contoso.com" {
		t.Fatalf("the refused Update stored %q", got.Email)
	}
}

// Update moves every index with the entity: the old email and first-name
// copies go, the new ones come, the ID leaves the old last name's list for
// the new one's; the other entity's rows stay. Replace drops a property
// the type does not hold; Merge (the default) keeps it.
func TestModelUpdateKeepsEveryIndex(t *testing.T) {
	d := newDirectory(t, false)
	ctx := t.Context()
	ann, bob := staffOf("Sales", 1, "Ann", "Hall", "ann@contoso.com"), staffOf("Sales", 2, "Bob", "Hall", "bob@contoso.com")
	for _, v := range []*staffer{ann, bob} {
		if err := d.m.Add(ctx, v, nil); err != nil {
			t.Fatal(err)
		}
	}
	// A property written around the model, which the type does not hold.
	extra := &table.Entity{Meta: table.Meta{PartitionKey: "Sales", RowKey: ann.RowKey}}
	extra.Set("Badge", table.ValueOf("B-1"))
	if err := d.raw.Upsert(ctx, extra, &table.UpsertOptions{Mode: aztables.UpdateModeMerge}); err != nil {
		t.Fatal(err)
	}
	cur, err := d.m.Get(ctx, "Sales", ann.RowKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	cur.FirstName, cur.LastName, cur.Email = "Anna", "Jones", "anna@contoso.com"
	d.l.Reset()
	if err := d.m.Update(ctx, cur, nil); err != nil {
		t.Fatal(err)
	}
	if n := d.l.Operation(ledger.Table, "Batch"); n != 1 {
		t.Fatalf("Update sent %d transactions, want 1:\n%v", n, d.l)
	}
	idA, idB := patterns.ID("Sales", ann.RowKey), patterns.ID("Sales", bob.RowKey)
	copies := copyRows(t, d, "Sales")
	if _, ok := copies["email_ann@contoso.com"]; ok || copies["email_anna@contoso.com"] != idA || copies["email_bob@contoso.com"] != idB || len(copies) != 4 {
		t.Fatalf("copies after the Update: %v; want Anna's new email and first name, Bob's untouched, Ann's old ones gone", copies)
	}
	if got := firstCopies(t, d, "Sales"); got[idA] != "Anna" || got[idB] != "Bob" {
		t.Fatalf("first-name copies %v", got)
	}
	if got := lastNames(t, d, "Sales", "Hall"); !slices.Equal(got, []string{bob.RowKey}) {
		t.Fatalf("Hall list %v, want Bob only", got)
	}
	if got := lastNames(t, d, "Sales", "Jones"); !slices.Equal(got, []string{ann.RowKey}) {
		t.Fatalf("Jones list %v, want Ann", got)
	}
	row, err := d.raw.Get(ctx, "Sales", ann.RowKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := row.Get("Badge"); !ok {
		t.Fatal("a Merge Update dropped a property the type does not hold")
	}
	if row.ETag != cur.ETag {
		t.Fatalf("Update left ETag %q, the stored one is %q", cur.ETag, row.ETag)
	}
	cur.Salary = 5000
	if err := d.m.Update(ctx, cur, &table.UpdateOptions{Mode: aztables.UpdateModeReplace}); err != nil {
		t.Fatal(err)
	}
	row, _ = d.raw.Get(ctx, "Sales", ann.RowKey, nil)
	if _, ok := row.Get("Badge"); ok {
		t.Fatal("a Replace Update kept a property the type does not hold")
	}
	// A stale version is refused and writes nothing.
	stale := *cur
	stale.ETag = ann.ETag
	stale.Email = "late@contoso.com"
	if err := d.m.Update(ctx, &stale, nil); !table.Is(err, table.ErrPreconditionFailed) {
		t.Fatalf("Update at an old version: %v, want ErrPreconditionFailed", err)
	}
	if _, ok := copyRows(t, d, "Sales")["email_late@contoso.com"]; ok {
		t.Fatal("the refused Update wrote its email copy")
	}
	// IfMatch * writes whatever the version.
	star := azcore.ETagAny
	stale.ETag = ""
	if err := d.m.Update(ctx, &stale, &table.UpdateOptions{IfMatch: &star}); err != nil {
		t.Fatalf("Update with IfMatch *: %v", err)
	}
	if got := copyRows(t, d, "Sales"); got["email_late@contoso.com"] != idA {
		t.Fatalf("copies after Update with IfMatch *: %v", got)
	}
}

// Upsert inserts an entity that does not exist (with its index rows) and
// writes over one that does, whatever its version, moving its indexes.
func TestModelUpsertInsertsOrOverwritesWithEveryIndex(t *testing.T) {
	d := newDirectory(t, false)
	ctx := t.Context()
	ann := staffOf("Sales", 1, "Ann", "Hall", "ann@contoso.com")
	if err := d.m.Upsert(ctx, ann, nil); err != nil {
		t.Fatal(err)
	}
	id := patterns.ID("Sales", ann.RowKey)
	if got := copyRows(t, d, "Sales"); got["email_ann@contoso.com"] != id || len(got) != 2 {
		t.Fatalf("copies after an inserting Upsert: %v", got)
	}
	extra := &table.Entity{Meta: table.Meta{PartitionKey: "Sales", RowKey: ann.RowKey}}
	extra.Set("Badge", table.ValueOf("B-1"))
	if err := d.raw.Upsert(ctx, extra, &table.UpsertOptions{Mode: aztables.UpdateModeMerge}); err != nil {
		t.Fatal(err)
	}
	again := staffOf("Sales", 1, "Ann", "Jones", "ann2@contoso.com") // no ETag: any version
	if err := d.m.Upsert(ctx, again, nil); err != nil {
		t.Fatal(err)
	}
	got := copyRows(t, d, "Sales")
	if _, old := got["email_ann@contoso.com"]; old || got["email_ann2@contoso.com"] != id || len(got) != 2 {
		t.Fatalf("copies after an overwriting Upsert: %v", got)
	}
	if l := lastNames(t, d, "Sales", "Hall"); len(l) != 0 {
		t.Fatalf("Hall list %v, want empty", l)
	}
	if l := lastNames(t, d, "Sales", "Jones"); !slices.Equal(l, []string{ann.RowKey}) {
		t.Fatalf("Jones list %v", l)
	}
	row, _ := d.raw.Get(ctx, "Sales", ann.RowKey, nil)
	if _, ok := row.Get("Badge"); !ok {
		t.Fatal("a Merge Upsert dropped a property the type does not hold")
	}
	if err := d.m.Upsert(ctx, again, &table.UpsertOptions{Mode: aztables.UpdateModeReplace}); err != nil {
		t.Fatal(err)
	}
	row, _ = d.raw.Get(ctx, "Sales", ann.RowKey, nil)
	if _, ok := row.Get("Badge"); ok {
		t.Fatal("a Replace Upsert kept a property the type does not hold")
	}
}

// Modify applies the change to a copy of the stored entity and writes it
// with its indexes: two requests (the read and the transaction) for a
// change that touches no list. A change that moves the keys, or a nil
// change, is refused; the change's own error is returned as it is.
func TestModelModifyWritesTheChangeWithItsIndexes(t *testing.T) {
	d := newDirectory(t, false)
	ctx := t.Context()
	ann := staffOf("Sales", 1, "Ann", "Hall", "ann@contoso.com")
	if err := d.m.Add(ctx, ann, nil); err != nil {
		t.Fatal(err)
	}
	extra := &table.Entity{Meta: table.Meta{PartitionKey: "Sales", RowKey: ann.RowKey}}
	extra.Set("Badge", table.ValueOf("B-1"))
	if err := d.raw.Upsert(ctx, extra, &table.UpsertOptions{Mode: aztables.UpdateModeMerge}); err != nil {
		t.Fatal(err)
	}
	d.l.Reset()
	out, err := d.m.Modify(ctx, "Sales", ann.RowKey, func(s *staffer) error { s.Email = "new@contoso.com"; return nil }, nil)
	if err != nil || out.Email != "new@contoso.com" || out.ETag == "" {
		t.Fatalf("Modify: %+v %v", out, err)
	}
	if n := d.l.Total(); n != 2 {
		t.Fatalf("Modify of the email: %d requests, want 2:\n%v", n, d.l)
	}
	id := patterns.ID("Sales", ann.RowKey)
	if got := copyRows(t, d, "Sales"); got["email_new@contoso.com"] != id || len(got) != 2 {
		t.Fatalf("copies after Modify: %v", got)
	}
	row, _ := d.raw.Get(ctx, "Sales", ann.RowKey, nil)
	if _, ok := row.Get("Badge"); ok {
		t.Fatal("Modify (Replace by default) kept a property the type does not hold")
	}
	if v, _ := row.Get("Email"); !v.Equal(table.ValueOf("new@contoso.com")) || row.ETag != out.ETag {
		t.Fatalf("stored %v at %q; Modify returned ETag %q", v, row.ETag, out.ETag)
	}
	if err := d.raw.Upsert(ctx, extra, &table.UpsertOptions{Mode: aztables.UpdateModeMerge}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.m.Modify(ctx, "Sales", ann.RowKey, func(s *staffer) error { s.LastName = "Jones"; return nil }, &table.ModifyOptions{Mode: aztables.UpdateModeMerge}); err != nil {
		t.Fatal(err)
	}
	row, _ = d.raw.Get(ctx, "Sales", ann.RowKey, nil)
	if _, ok := row.Get("Badge"); !ok {
		t.Fatal("a Merge Modify dropped a property the type does not hold")
	}
	if l := lastNames(t, d, "Sales", "Jones"); !slices.Equal(l, []string{ann.RowKey}) {
		t.Fatalf("Jones list %v", l)
	}
	mine := errors.New("no")
	if _, err := d.m.Modify(ctx, "Sales", ann.RowKey, func(*staffer) error { return mine }, nil); !errors.Is(err, mine) {
		t.Fatalf("Modify whose change fails: %v", err)
	}
	d.l.Reset()
	if _, err := d.m.Modify(ctx, "Sales", ann.RowKey, nil, nil); !errors.Is(err, table.ErrNilValue) {
		t.Fatalf("Modify with a nil change: %v", err)
	}
	if _, err := d.m.Modify(ctx, "Sales", "a/b", func(*staffer) error { return nil }, nil); err == nil {
		t.Fatal("Modify of a RowKey no key can hold succeeded")
	}
	if n := d.l.Total(); n != 0 {
		t.Fatalf("refused Modify calls sent %d requests", n)
	}
	_, err = d.m.Modify(ctx, "Sales", ann.RowKey, func(s *staffer) error { s.RowKey = "empid_999999"; return nil }, nil)
	if ie := (*table.InputError)(nil); !errors.As(err, &ie) {
		t.Fatalf("a change that moves the keys: %v, want *table.InputError", err)
	}
	if _, err := d.m.Get(ctx, "Sales", "empid_999999", nil); !table.Is(err, table.ErrNotFound) {
		t.Fatalf("the moved keys were written: %v", err)
	}
	if _, err := d.m.Modify(ctx, "Sales", "empid_000404", func(*staffer) error { return nil }, nil); !table.Is(err, table.ErrNotFound) {
		t.Fatalf("Modify of a missing entity: %v, want ErrNotFound", err)
	}
}

// Modify's change works on its own copy: a change that fails leaves the
// caller's view of the stored entity, and the stored entity, as they were.
func TestModelModifyRetriesAfterAnotherWriter(t *testing.T) {
	d := newDirectory(t, false)
	ctx := t.Context()
	ann := staffOf("Sales", 1, "Ann", "Hall", "ann@contoso.com")
	if err := d.m.Add(ctx, ann, nil); err != nil {
		t.Fatal(err)
	}
	calls := 0
	out, err := d.m.Modify(ctx, "Sales", ann.RowKey, func(s *staffer) error {
		calls++
		if calls == 1 { // another writer changes the entity in between
			other, err := d.m.Get(ctx, "Sales", ann.RowKey, nil)
			if err != nil {
				return err
			}
			other.Salary = 7
			if err := d.m.Update(ctx, other, nil); err != nil {
				return err
			}
		}
		s.FirstName = "Anna"
		return nil
	}, nil)
	if err != nil || calls != 2 || out.FirstName != "Anna" || out.Salary != 7 {
		t.Fatalf("Modify against another writer: %+v %v after %d calls; want the change applied to the newer version, second call", out, err, calls)
	}
	if got := firstCopies(t, d, "Sales"); got[patterns.ID("Sales", ann.RowKey)] != "Anna" || len(got) != 1 {
		t.Fatalf("first-name copies %v", got)
	}
}

// Delete removes the primary and every index row of it, and nothing of
// another entity; IfExists makes a missing entity a success; an IfMatch of
// an old version is refused and removes nothing.
func TestModelDeleteRemovesEveryIndexRow(t *testing.T) {
	d := newDirectory(t, false)
	ctx := t.Context()
	ann, bob := staffOf("Sales", 1, "Ann", "Hall", "ann@contoso.com"), staffOf("Sales", 2, "Bob", "Hall", "bob@contoso.com")
	for _, v := range []*staffer{ann, bob} {
		if err := d.m.Add(ctx, v, nil); err != nil {
			t.Fatal(err)
		}
	}
	old := ann.ETag
	ann.Salary = 1
	if err := d.m.Update(ctx, ann, nil); err != nil {
		t.Fatal(err)
	}
	before := rows(t, d.raw)
	if err := d.m.Delete(ctx, "Sales", ann.RowKey, &table.DeleteOptions{IfMatch: &old}); !table.Is(err, table.ErrPreconditionFailed) {
		t.Fatalf("Delete at an old version: %v, want ErrPreconditionFailed", err)
	}
	if after := rows(t, d.raw); !slices.Equal(before, after) {
		t.Fatalf("the refused Delete changed the table: %v → %v", before, after)
	}
	star := azcore.ETagAny
	if err := d.m.Delete(ctx, "Sales", ann.RowKey, &table.DeleteOptions{IfMatch: &star}); err != nil {
		t.Fatal(err)
	}
	idB := patterns.ID("Sales", bob.RowKey)
	if got := copyRows(t, d, "Sales"); len(got) != 2 || got["email_bob@contoso.com"] != idB {
		t.Fatalf("copies after Delete: %v; want Bob's two only", got)
	}
	if l := lastNames(t, d, "Sales", "Hall"); !slices.Equal(l, []string{bob.RowKey}) {
		t.Fatalf("Hall list %v, want Bob only", l)
	}
	if _, err := d.m.Get(ctx, "Sales", ann.RowKey, nil); !table.Is(err, table.ErrNotFound) {
		t.Fatalf("the deleted primary: %v", err)
	}
	if err := d.m.Delete(ctx, "Sales", ann.RowKey, nil); !table.Is(err, table.ErrNotFound) {
		t.Fatalf("Delete of a missing entity: %v, want ErrNotFound", err)
	}
	if err := d.m.Delete(ctx, "Sales", ann.RowKey, &table.DeleteOptions{IfExists: true}); err != nil {
		t.Fatalf("Delete IfExists of a missing entity: %v", err)
	}
	if err := d.m.Delete(ctx, "Sales", bob.RowKey, &table.DeleteOptions{IfMatch: &bob.ETag}); err != nil {
		t.Fatalf("Delete at the current version: %v", err)
	}
	if got := rows(t, d.raw); len(got) != 0 {
		t.Fatalf("rows left after deleting every entity: %v", got)
	}
}

// Bad input gets a typed error before any request: a nil value, a RowKey
// outside the Primary prefix, a value no index key can hold, an Update
// without a version, keys no entity can have, an unknown index.
func TestModelRefusesBadInputBeforeAnyRequest(t *testing.T) {
	d := newDirectory(t, true)
	ctx := t.Context()
	notPrimary := staffOf("Sales", 1, "Ann", "Hall", "ann@contoso.com")
	notPrimary.RowKey = "emp_000001"
	badEmail := staffOf("Sales", 2, "Ann", "Hall", "a/b@contoso.com")
	badList := staffOf("Sales", 3, "Ann", strings.Repeat("x", 1100), "c@contoso.com") // no RowKey holds it
	badKey := staffOf("Sales", 4, "Ann", "Hall", "d@contoso.com")
	badKey.PartitionKey = "a#b"
	var ie *table.InputError
	for name, v := range map[string]*staffer{"nil": nil, "not a primary": notPrimary, "bad email": badEmail, "bad last name": badList, "bad PartitionKey": badKey} {
		if err := d.m.Add(ctx, v, nil); !errors.As(err, &ie) {
			t.Errorf("Add(%s): %v, want *table.InputError", name, err)
		}
		if v != nil {
			if err := d.m.Upsert(ctx, v, nil); !errors.As(err, &ie) {
				t.Errorf("Upsert(%s): %v, want *table.InputError", name, err)
			}
		}
	}
	if err := d.m.Add(ctx, notPrimary, nil); !errors.Is(err, patterns.ErrNotPrimary) {
		t.Errorf("Add of a RowKey outside the Primary prefix: %v, want ErrNotPrimary", err)
	}
	noETag := staffOf("Sales", 5, "Ann", "Hall", "e@contoso.com")
	if err := d.m.Update(ctx, noETag, nil); !errors.Is(err, table.ErrNoETag) {
		t.Errorf("Update without an ETag: %v, want ErrNoETag", err)
	}
	if err := d.m.Update(ctx, nil, nil); !errors.Is(err, table.ErrNilValue) {
		t.Errorf("Update(nil): %v", err)
	}
	if err := d.m.Delete(ctx, "Sales", "a/b", nil); !errors.As(err, &ie) || ie.Op != "Model.Delete" {
		t.Errorf("Delete of a RowKey no key can hold: %v; want *table.InputError of Model.Delete", err)
	}
	if _, err := d.m.Modify(ctx, "a#b", "empid_1", func(*staffer) error { return nil }, nil); !errors.As(err, &ie) || ie.Op != "Model.Modify" || ie.Field != "PartitionKey" {
		t.Errorf("Modify of a PartitionKey no key can hold: %v; want *table.InputError of Model.Modify", err)
	}
	if _, err := d.m.Get(ctx, "Sales", "email_x", nil); !errors.Is(err, patterns.ErrNotPrimary) {
		t.Errorf("Get of an index row's key: %v, want ErrNotPrimary", err)
	}
	if _, err := d.m.Lookup(ctx, "nosuch", "Sales", "x", nil); !errors.Is(err, patterns.ErrUnknownIndex) {
		t.Errorf("Lookup in an unknown index: %v", err)
	}
	if _, err := d.m.Lookup(ctx, "lastname", "Sales", "x", nil); !errors.Is(err, patterns.ErrUnknownIndex) {
		t.Errorf("Lookup in a list index: %v, want ErrUnknownIndex (Lookup reads copies)", err)
	}
	if _, err := d.m.LookupEntities(ctx, "email", "Sales", "x", nil); !errors.Is(err, patterns.ErrUnknownIndex) {
		t.Errorf("LookupEntities in a copies index: %v, want ErrUnknownIndex", err)
	}
	if err := d.m.MoveSource().DeleteValue(ctx, nil, nil); !errors.Is(err, table.ErrNilValue) {
		t.Errorf("DeleteValue(nil): %v", err)
	}
	if err := d.m.MoveSource().DeleteValue(ctx, staffOf("Sales", 6, "", "", ""), nil); !errors.Is(err, table.ErrNoETag) {
		t.Errorf("DeleteValue without an ETag: %v", err)
	}
	if n := d.l.Total(); n != 0 {
		t.Fatalf("refused calls sent %d requests:\n%v", n, d.l)
	}
}

// OpenModel refuses a declaration whose rows would mix or whose writes the
// service cannot take, with ErrBadDefinition, naming what is wrong.
func TestOpenModelRefusesABadDeclaration(t *testing.T) {
	modelTimeout(t)
	tbl := tableOf(table.New[staffer](fake.NewTableService(nil).NewClient("T", nil), nil))
	email := func(s *staffer) string { return s.Email }
	copyDef := func(name, prefix string) patterns.IndexDef[staffer] {
		return patterns.IndexDef[staffer]{Name: name, Prefix: prefix, Value: email}
	}
	many := make([]patterns.IndexDef[staffer], 50)
	for i := range many {
		many[i] = copyDef(fmt.Sprintf("i%d", i), fmt.Sprintf("i%02d_", i))
	}
	for name, c := range map[string]struct {
		opts *patterns.ModelOptions[staffer]
		says string
	}{
		"nil options":                              {nil, "Name"},
		"no name":                                  {&patterns.ModelOptions[staffer]{}, "Name"},
		"a name no message takes":                  {&patterns.ModelOptions[staffer]{Name: "a b"}, ""},
		"copies without Primary":                   {&patterns.ModelOptions[staffer]{Name: "m", Copies: []patterns.IndexDef[staffer]{copyDef("e", "email_")}}, "Primary"},
		"lists without Primary":                    {&patterns.ModelOptions[staffer]{Name: "m", Lists: []patterns.ListDef[staffer]{{Name: "l", Prefix: "l_", Value: email}}}, "Primary"},
		"a bad Primary":                            {&patterns.ModelOptions[staffer]{Name: "m", Primary: "a/b", Copies: []patterns.IndexDef[staffer]{copyDef("e", "email_")}}, "Primary"},
		"two indexes, one name":                    {&patterns.ModelOptions[staffer]{Name: "m", Primary: "p_", Copies: []patterns.IndexDef[staffer]{copyDef("e", "e_"), copyDef("e", "f_")}}, "two indexes named e"},
		"a copy and a list, one name":              {&patterns.ModelOptions[staffer]{Name: "m", Primary: "p_", Copies: []patterns.IndexDef[staffer]{copyDef("e", "e_")}, Lists: []patterns.ListDef[staffer]{{Name: "e", Prefix: "l_", Value: email}}}, "two indexes named e"},
		"an index without a name":                  {&patterns.ModelOptions[staffer]{Name: "m", Primary: "p_", Copies: []patterns.IndexDef[staffer]{copyDef("", "e_")}}, "no Name"},
		"a prefix starting another":                {&patterns.ModelOptions[staffer]{Name: "m", Primary: "e_", Copies: []patterns.IndexDef[staffer]{copyDef("e", "e_mail_")}}, "starts the prefix"},
		"a list's prefix under the primary's":      {&patterns.ModelOptions[staffer]{Name: "m", Primary: "p", Lists: []patterns.ListDef[staffer]{{Name: "l", Prefix: "pl_", Value: email}}}, "starts the prefix"},
		"a list without a prefix":                  {&patterns.ModelOptions[staffer]{Name: "m", Primary: "p_", Lists: []patterns.ListDef[staffer]{{Name: "l", Value: email}}}, "Prefix and a Value"},
		"a list without a value":                   {&patterns.ModelOptions[staffer]{Name: "m", Primary: "p_", Lists: []patterns.ListDef[staffer]{{Name: "l", Prefix: "l_"}}}, "Prefix and a Value"},
		"too many same-partition indexes":          {&patterns.ModelOptions[staffer]{Name: "m", Primary: "p_", Copies: many}, "the service allows 100"},
		"a remote list without a Table or Blobs":   {&patterns.ModelOptions[staffer]{Name: "m", RemoteLists: []patterns.ListDef[staffer]{{Name: "r", Value: email}}, Queue: fake.NewQueueService(nil).NewQueueClient("q", nil)}, "a Table or Blobs"},
		"a remote list without a Value":            {&patterns.ModelOptions[staffer]{Name: "m", RemoteLists: []patterns.ListDef[staffer]{{Name: "r", Table: tableOf(table.New[table.Entity](fake.NewTableService(nil).NewClient("L", nil), nil)), Partition: "p", Prefix: "ln_"}}, Queue: fake.NewQueueService(nil).NewQueueClient("q", nil)}, "a Value func"},
		"a remote list without a Queue":            {&patterns.ModelOptions[staffer]{Name: "m", RemoteLists: []patterns.ListDef[staffer]{{Name: "r", Value: email, Table: tableOf(table.New[table.Entity](fake.NewTableService(nil).NewClient("L", nil), nil)), Partition: "p", Prefix: "ln_"}}}, "set Queue"},
		"a cross copy without a Queue":             {&patterns.ModelOptions[staffer]{Name: "m", CrossCopies: []patterns.IndexDef[staffer]{{Name: "c", PartitionKey: email, Value: email}}}, "set Queue"},
		"a cross copy without a PartitionKey func": {&patterns.ModelOptions[staffer]{Name: "m", CrossCopies: []patterns.IndexDef[staffer]{{Name: "c", Value: email}}, Queue: fake.NewQueueService(nil).NewQueueClient("q", nil)}, "a PartitionKey"},
		"a copy without a Value func":              {&patterns.ModelOptions[staffer]{Name: "m", Primary: "p_", Copies: []patterns.IndexDef[staffer]{{Name: "e", Prefix: "e_"}}}, "no Value func"},
		"a copy projecting no property":            {&patterns.ModelOptions[staffer]{Name: "m", Primary: "p_", Copies: []patterns.IndexDef[staffer]{{Name: "e", Prefix: "e_", Value: email, Project: []string{"Nope"}}}}, "Nope"},
		"a list with MaxListUnits out of range":    {&patterns.ModelOptions[staffer]{Name: "m", Primary: "p_", Lists: []patterns.ListDef[staffer]{{Name: "l", Prefix: "l_", Value: email, MaxListUnits: -1}}}, "MaxListUnits"},
		"a list prefix no RowKey holds":            {&patterns.ModelOptions[staffer]{Name: "m", Primary: "p_", Lists: []patterns.ListDef[staffer]{{Name: "l", Prefix: "l/", Value: email}}}, "list l"},
		"a copy with a PartitionKey func":          {&patterns.ModelOptions[staffer]{Name: "m", Primary: "p_", Copies: []patterns.IndexDef[staffer]{{Name: "e", Prefix: "e_", Value: email, PartitionKey: email}}}, "one of CrossCopies"},
		"a cross copy with a Prefix":               {&patterns.ModelOptions[staffer]{Name: "m", CrossCopies: []patterns.IndexDef[staffer]{{Name: "c", Prefix: "c_", PartitionKey: email, Value: email}}, Queue: fake.NewQueueService(nil).NewQueueClient("q", nil)}, "one of Copies"},
		"a list with a Table":                      {&patterns.ModelOptions[staffer]{Name: "m", Primary: "p_", Lists: []patterns.ListDef[staffer]{{Name: "l", Prefix: "l_", Value: email, Partition: "elsewhere"}}}, "one of RemoteLists"},
		"a cross copy named as a copy":             {&patterns.ModelOptions[staffer]{Name: "m", Primary: "p_", Copies: []patterns.IndexDef[staffer]{copyDef("e", "e_")}, CrossCopies: []patterns.IndexDef[staffer]{{Name: "e", PartitionKey: email, Value: email}}, Queue: fake.NewQueueService(nil).NewQueueClient("q", nil)}, "two indexes named e"},
	} {
		_, err := patterns.OpenModel(context.Background(), tbl, c.opts)
		if !errors.Is(err, patterns.ErrBadDefinition) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v; want ErrBadDefinition saying %q", name, err, c.says)
		}
	}
	if _, err := patterns.OpenModel[staffer](context.Background(), nil, &patterns.ModelOptions[staffer]{Name: "m"}); !errors.Is(err, patterns.ErrBadDefinition) {
		t.Errorf("no table: %v", err)
	}
	// The largest legal declaration: 49 same-partition indexes make
	// transactions of 99 operations.
	if _, err := patterns.OpenModel(context.Background(), tbl, &patterns.ModelOptions[staffer]{Name: "m", Primary: "p_", Copies: many[:49]}); err != nil {
		t.Errorf("49 copies: %v", err)
	}
	type reserved struct {
		table.Meta
		TkIndexOf string
	}
	// table.New already refuses the type: TkIndexOf marks index copies.
	if _, err := table.New[reserved](fake.NewTableService(nil).NewClient("T", nil), nil); !errors.Is(err, table.ErrUnsupportedType) {
		t.Errorf("a type with a TkIndexOf field: %v", err)
	}
	m, err := patterns.OpenModel(context.Background(), tbl, &patterns.ModelOptions[staffer]{Name: "staff"})
	if err != nil || m.Name() != "staff" || m.MessageType() != "tablekit.model.staff.v1" || m.Table() != tbl {
		t.Fatalf("a model without indexes: %v; name %q, message type %q", err, m.Name(), m.MessageType())
	}
}

// A read that fails (the service answers 500, after the SDK's retries)
// ends Update, Upsert, Modify and Delete with the service's error, and
// nothing is written.
func TestModelWritesReturnTheirReadsFailure(t *testing.T) {
	d := newDirectory(t, false)
	ctx := t.Context()
	ann := staffOf("Sales", 1, "Ann", "Hall", "ann@contoso.com")
	if err := d.m.Add(ctx, ann, nil); err != nil {
		t.Fatal(err)
	}
	before := rows(t, d.raw)
	changed := *ann
	changed.Email = "new@contoso.com"
	for name, write := range map[string]func() error{
		"Update": func() error { return d.m.Update(ctx, &changed, nil) },
		"Upsert": func() error { return d.m.Upsert(ctx, &changed, nil) },
		"Modify": func() error {
			_, err := d.m.Modify(ctx, "Sales", ann.RowKey, func(s *staffer) error { s.Email = "new@contoso.com"; return nil }, nil)
			return err
		},
		"Delete": func() error { return d.m.Delete(ctx, "Sales", ann.RowKey, nil) },
	} {
		d.svc.FailNext(fake.OpGetEntity, 4, 500, "InternalError") // the SDK's try and three retries
		var re *azcore.ResponseError
		if err := write(); !errors.As(err, &re) || re.StatusCode != 500 {
			t.Errorf("%s whose read fails: %v; want the service's 500", name, err)
		}
		if after := rows(t, d.raw); !slices.Equal(before, after) {
			t.Fatalf("%s whose read failed changed the table: %v", name, after)
		}
	}
}

// badged has a binary field whose bytes an index reads.
type badged struct {
	table.Meta
	Badge []byte
}

// Modify's change works on a copy of the version it read, so a change made
// in place (a byte of a slice) still moves the index: the old value's copy
// goes, the new one's comes.
func TestModelModifyChangesACopyOfWhatItRead(t *testing.T) {
	modelTimeout(t)
	ctx := t.Context()
	client := fake.NewTableService(nil).NewClient("Badges", nil)
	if _, err := client.CreateTable(ctx, nil); err != nil {
		t.Fatal(err)
	}
	m, err := patterns.OpenModel(ctx, tableOf(table.New[badged](client, nil)), &patterns.ModelOptions[badged]{Name: "badges", Primary: "id_",
		Copies: []patterns.IndexDef[badged]{{Name: "badge", Prefix: "badge_", Unique: true, Value: func(b *badged) string { return string(b.Badge) }}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Add(ctx, &badged{Meta: table.Meta{PartitionKey: "p", RowKey: "id_1"}, Badge: []byte("A1")}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Modify(ctx, "p", "id_1", func(b *badged) error { b.Badge[0] = 'B'; return nil }, nil); err != nil {
		t.Fatal(err)
	}
	if got, err := m.Lookup(ctx, "badge", "p", "B1", nil); err != nil || got.RowKey != "id_1" {
		t.Fatalf("Lookup of the new badge: %+v %v", got, err)
	}
	if _, err := m.Lookup(ctx, "badge", "p", "A1", nil); !table.Is(err, table.ErrNotFound) {
		t.Fatalf("the old badge's copy: %v, want it gone", err)
	}
	if r, err := m.Verify(ctx, nil); err != nil || !r.OK() {
		t.Fatalf("Verify: %+v %v", r, err)
	}
}

// secretStaffer has an encrypted field beside the clear ones its index reads.
type secretStaffer struct {
	table.Meta
	Email string
	SSN   string `table:",encrypt"`
}

// Modify of an encrypted type keeps the encrypted field and moves the
// index on the clear one.
func TestModelModifyKeepsAnEncryptedField(t *testing.T) {
	modelTimeout(t)
	ctx := t.Context()
	client := fake.NewTableService(nil).NewClient("Secrets", nil)
	if _, err := client.CreateTable(ctx, nil); err != nil {
		t.Fatal(err)
	}
	enc := &table.Encryption{KeyID: "k1", Keys: table.LocalKeys{"k1": []byte("0123456789abcdef0123456789abcdef")}}
	tbl := tableOf(table.New[secretStaffer](client, &table.Options{Encryption: enc}))
	m, err := patterns.OpenModel(ctx, tbl, &patterns.ModelOptions[secretStaffer]{Name: "secret", Primary: "id_",
		Copies: []patterns.IndexDef[secretStaffer]{{Name: "email", Prefix: "email_", Unique: true, Value: func(s *secretStaffer) string { return s.Email }}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Add(ctx, &secretStaffer{Meta: table.Meta{PartitionKey: "p", RowKey: "id_1"}, Email: "x@contoso.com", SSN: "123-45-6789"}, nil); err != nil {
		t.Fatal(err)
	}
	out, err := m.Modify(ctx, "p", "id_1", func(s *secretStaffer) error { s.Email = "y@contoso.com"; return nil }, nil)
	if err != nil || out.SSN != "123-45-6789" {
		t.Fatalf("Modify: %+v %v", out, err)
	}
	got, err := m.Get(ctx, "p", "id_1", nil)
	if err != nil || got.SSN != "123-45-6789" || got.Email != "y@contoso.com" {
		t.Fatalf("stored after Modify: %+v %v", got, err)
	}
	if cp, err := m.Lookup(ctx, "email", "p", "y@contoso.com", nil); err != nil || cp.RowKey != "id_1" {
		t.Fatalf("Lookup of the new email: %+v %v", cp, err)
	}
}
