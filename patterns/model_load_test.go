package patterns_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/internal/batchraw"
	"github.com/tablekit/tablekit/internal/svcanswer"
	"github.com/tablekit/tablekit/internal/tableio"
	"github.com/tablekit/tablekit/ledger"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/table"
)

// The entity model's bulk Load: entity group transactions packed up to the
// service's 100 operations with every same-partition index row, the
// service's refusals reported per entity, bad input refused before any
// request.

// crowd is n employees of pk with ids from first, last names from lasts in
// turn.
func crowd(pk string, first, n int, lasts ...string) []*staffer {
	var out []*staffer
	for i := first; i < first+n; i++ {
		out = append(out, staffOf(pk, i, fmt.Sprintf("F%d", i), lasts[i%len(lasts)], fmt.Sprintf("e%d@contoso.com", i)))
	}
	return out
}

// A load writes every entity with its copies and its ID in its list, one
// transaction per partition while it fits: 30 employees of three last
// names are 30 × 3 operations (primary, email copy, first-name copy) and 3
// × 2 for the lists, 96, one transaction.
func TestModelLoadKeepsEveryIndex(t *testing.T) {
	d := newDirectory(t, false)
	ctx := t.Context()
	all := slices.Concat(crowd("Sales", 0, 30, "Hall", "Jones", "Smith"), crowd("Marketing", 100, 30, "Hall", "Jones", "Smith"))
	sum, err := d.m.Load(ctx, slices.Values(all), nil)
	if err != nil || sum.Entities != 60 || sum.Transactions != 2 || sum.Messages != 0 || len(sum.Failures) != 0 {
		t.Fatalf("Load: %+v %v; want 60 entities in 2 transactions, no message, no failure", sum, err)
	}
	if n := d.l.Operation(ledger.Table, "Batch"); n != 2 {
		t.Fatalf("Load sent %d transactions, want 2", n)
	}
	for _, v := range all {
		if v.ETag == "" {
			t.Fatalf("Load left %s without its ETag", v.RowKey)
		}
	}
	for _, pk := range []string{"Sales", "Marketing"} {
		if got := copyRows(t, d, pk); len(got) != 60 {
			t.Fatalf("%s holds %d copies, want 60", pk, len(got))
		}
		var halls []string
		for _, v := range all {
			if v.PartitionKey == pk && v.LastName == "Hall" {
				halls = append(halls, v.RowKey)
			}
		}
		if got := lastNames(t, d, pk, "Hall"); !slices.Equal(got, halls) {
			t.Fatalf("%s's Hall list: %v, want %v", pk, got, halls)
		}
	}
	for _, v := range all[:3] {
		got, err := d.m.Lookup(ctx, "email", v.PartitionKey, v.Email, nil)
		if err != nil || got.RowKey != v.RowKey {
			t.Fatalf("Lookup %s: %+v %v", v.Email, got, err)
		}
	}
	if r, err := d.m.Verify(ctx, nil); err != nil || !r.OK() || r.Primaries != 60 {
		t.Fatalf("Verify after Load: %+v %v", r, err)
	}
}

// A partition too large for one transaction is split where the next entity
// would pass 100 operations: 150 employees of one last name are 3
// operations each plus 2 for the list in each transaction, 32 a
// transaction (98), so five.
func TestModelLoadSplitsAPartitionAtTheServiceLimit(t *testing.T) {
	d := newDirectory(t, false)
	all := crowd("Sales", 0, 150, "Hall")
	sum, err := d.m.Load(t.Context(), slices.Values(all), nil)
	if err != nil || sum.Entities != 150 || sum.Transactions != 5 || len(sum.Failures) != 0 {
		t.Fatalf("Load: %+v %v; want 150 entities in 5 transactions", sum, err)
	}
	if got := lastNames(t, d, "Sales", "Hall"); len(got) != 150 {
		t.Fatalf("the Hall list holds %d IDs, want 150", len(got))
	}
	// Entities without any index value are one operation each: 100 fit.
	bare := make([]*staffer, 250)
	for i := range bare {
		bare[i] = &staffer{Meta: table.Meta{PartitionKey: "Bare", RowKey: fmt.Sprintf("empid_%06d", i)}}
	}
	sum, err = d.m.Load(t.Context(), slices.Values(bare), nil)
	if err != nil || sum.Entities != 250 || sum.Transactions != 3 {
		t.Fatalf("Load of entities without index values: %+v %v; want 3 transactions", sum, err)
	}
}

// MaxBuffered bounds what Load holds: past it the fullest partition is
// sent at once, so with a bound of 1 each partition goes in more
// transactions than it would need, and every entity is still written.
// Parallelism 1 sends one transaction at a time.
func TestModelLoadSendsTheFullestPartitionPastMaxBuffered(t *testing.T) {
	d := newDirectory(t, false)
	all := slices.Concat(crowd("A", 0, 4, "Hall"), crowd("B", 10, 4, "Hall"))
	// Interleaved: A, B, A, B, …
	var mixed []*staffer
	for i := range 4 {
		mixed = append(mixed, all[i], all[4+i])
	}
	sum, err := d.m.Load(t.Context(), slices.Values(mixed), &patterns.ModelLoadOptions{MaxBuffered: 1, Parallelism: 1})
	if err != nil || sum.Entities != 8 || len(sum.Failures) != 0 {
		t.Fatalf("Load: %+v %v", sum, err)
	}
	if sum.Transactions <= 2 {
		t.Fatalf("Load held 8 entities with MaxBuffered 1: %d transactions, want more than one a partition", sum.Transactions)
	}
	if got := lastNames(t, d, "A", "Hall"); len(got) != 4 {
		t.Fatalf("A's Hall list: %v", got)
	}
	if r, err := d.m.Verify(t.Context(), nil); err != nil || !r.OK() {
		t.Fatalf("Verify: %+v %v", r, err)
	}
}

// An entity the service refuses is a Failure naming its keys and why (it
// exists: ErrAlreadyExists; its unique value is taken: *ValueTakenError),
// and the rest of its transaction is written without it. With Idempotent,
// an entity stored exactly as given is a success.
func TestModelLoadReportsEachRefusedEntity(t *testing.T) {
	d := newDirectory(t, false)
	ctx := t.Context()
	first := crowd("Sales", 0, 5, "Hall")
	if _, err := d.m.Load(ctx, slices.Values(first), nil); err != nil {
		t.Fatal(err)
	}
	taken := staffOf("Sales", 50, "X", "Hall", first[1].Email)
	again := crowd("Sales", 0, 1, "Hall")[0] // exists, as stored
	fresh := crowd("Sales", 20, 3, "Hall")
	sum, err := d.m.Load(ctx, slices.Values(slices.Concat([]*staffer{taken, again}, fresh)), nil)
	if err != nil || sum.Entities != 3 || len(sum.Failures) != 2 {
		t.Fatalf("Load: %+v %v; want 3 written, 2 failures", sum, err)
	}
	byRK := map[string]error{}
	for _, f := range sum.Failures {
		if f.PartitionKey != "Sales" {
			t.Fatalf("failure %+v names another partition", f)
		}
		byRK[f.RowKey] = f.Err
	}
	var vt *patterns.ValueTakenError
	if err := byRK[taken.RowKey]; !errors.As(err, &vt) || vt.Index != "email" || vt.Value != first[1].Email || vt.PartitionKey != "Sales" {
		t.Fatalf("the taken email's failure: %v", err)
	}
	if err := byRK[again.RowKey]; !table.Is(err, table.ErrAlreadyExists) {
		t.Fatalf("the existing entity's failure: %v", err)
	}
	if _, err := d.m.Get(ctx, "Sales", taken.RowKey, nil); !table.Is(err, table.ErrNotFound) {
		t.Fatalf("the refused entity was written: %v", err)
	}
	for _, v := range fresh {
		if got, err := d.m.Lookup(ctx, "email", "Sales", v.Email, nil); err != nil || got.RowKey != v.RowKey {
			t.Fatalf("%s: %+v %v", v.RowKey, got, err)
		}
	}
	if got := lastNames(t, d, "Sales", "Hall"); len(got) != 8 {
		t.Fatalf("the Hall list holds %d, want 8", len(got))
	}
	// Run again with Idempotent: everything stored as given is a success.
	sum, err = d.m.Load(ctx, slices.Values(slices.Concat(crowd("Sales", 0, 5, "Hall"), crowd("Sales", 20, 3, "Hall"))), &patterns.ModelLoadOptions{Idempotent: true})
	if err != nil || sum.Entities != 8 || len(sum.Failures) != 0 {
		t.Fatalf("Load again, idempotent: %+v %v", sum, err)
	}
	// An entity stored otherwise is still a failure.
	changed := crowd("Sales", 0, 1, "Hall")[0]
	changed.Salary = -1
	sum, err = d.m.Load(ctx, slices.Values([]*staffer{changed}), &patterns.ModelLoadOptions{Idempotent: true})
	if err != nil || sum.Entities != 0 || len(sum.Failures) != 1 || !table.Is(sum.Failures[0].Err, table.ErrAlreadyExists) {
		t.Fatalf("Load, idempotent, of an entity stored otherwise: %+v %v", sum, err)
	}
	if r, err := d.m.Verify(ctx, nil); err != nil || !r.OK() || r.Primaries != 8 {
		t.Fatalf("Verify: %+v %v", r, err)
	}
}

// A load of bad entities only is refused with their *table.InputError
// before any request, each a Failure. Bad options are refused the same way.
func TestModelLoadRefusesBadInputBeforeAnyRequest(t *testing.T) {
	d := newDirectory(t, true)
	ctx := t.Context()
	bad := staffOf("Sales", 9, "F", "Hall", "a/b@contoso.com")
	var ie *table.InputError
	for name, vs := range map[string][]*staffer{
		"a bad email":            {bad},
		"nil":                    {nil},
		"a RowKey not a primary": {{Meta: table.Meta{PartitionKey: "Sales", RowKey: "x"}}},
	} {
		sum, err := d.m.Load(ctx, slices.Values(vs), nil)
		if !errors.As(err, &ie) || sum.Entities != 0 || len(sum.Failures) != 1 || !errors.As(sum.Failures[0].Err, &ie) {
			t.Errorf("Load of %s: %+v %v, want one Failure with its *table.InputError", name, sum, err)
		}
	}
	for _, o := range []*patterns.ModelLoadOptions{{Parallelism: -1}, {MaxBuffered: -1}} {
		if _, err := d.m.Load(ctx, slices.Values(crowd("Sales", 0, 1, "Hall")), o); !errors.Is(err, table.ErrBadOption) {
			t.Errorf("Load with %+v: %v, want ErrBadOption", o, err)
		}
	}
	if n := d.l.Total(); n != 0 {
		t.Fatalf("refused loads sent %d requests:\n%v", n, d.l)
	}
}

// A bad entity among good ones is a Failure, refused before any request
// of its own, and the load goes on: every entity of the input is written
// or named, and the entities after the bad one are written too.
func TestModelLoadGoesOnPastABadEntity(t *testing.T) {
	d := newDirectory(t, false)
	ctx := t.Context()
	in := []*staffer{
		staffOf("Sales", 1, "A", "Hall", "a@contoso.com"),
		staffOf("Sales", 2, "B", "Hall", "b@contoso.com"),
		staffOf("Sales", 3, "C", "Hall", "c/bad@contoso.com"),
		staffOf("Sales", 4, "D", "Hall", "d@contoso.com"),
	}
	sum, err := d.m.Load(ctx, slices.Values(in), nil)
	var ie *table.InputError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "Failures") {
		t.Fatalf("Load: %v, want the bad entity's *table.InputError, pointing at the summary", err)
	}
	if sum.Entities != 3 || len(sum.Failures) != 1 || len(sum.NotSent) != 0 || sum.Failures[0].RowKey != in[2].RowKey || !errors.As(sum.Failures[0].Err, &ie) {
		t.Fatalf("Load of [ok, ok, bad, ok]: %+v; want 3 written and the bad one a Failure", sum)
	}
	for i, v := range in {
		_, err := d.m.Get(ctx, v.PartitionKey, v.RowKey, nil)
		if stored := err == nil; stored != (i != 2) {
			t.Errorf("entity %d (%s): Get %v", i, v.RowKey, err)
		}
	}
}

// A load's indexes outside the partition get one message per transaction
// listing its entities; the worker then writes every cross copy and list
// entry.
func TestModelLoadSendsOneMessageATransaction(t *testing.T) {
	d := newDirectory(t, true)
	ctx := t.Context()
	all := slices.Concat(crowd("Sales", 0, 10, "Hall", "Jones"), crowd("Marketing", 100, 5, "Hall"))
	sum, err := d.m.Load(ctx, slices.Values(all), nil)
	if err != nil || sum.Entities != 15 || sum.Transactions != 2 || sum.Messages != 2 {
		t.Fatalf("Load: %+v %v; want 15 entities, 2 transactions, 2 messages", sum, err)
	}
	if n := d.l.Operation(ledger.Queue, "EnqueueMessage"); n != 2 {
		t.Fatalf("Load enqueued %d messages, want 2", n)
	}
	d.drain(t)
	if got := rows(t, d.copies); len(got) != 15 {
		t.Fatalf("%d cross copies, want 15", len(got))
	}
	halls, err := d.m.LookupEntities(ctx, "lastname-all", "", "Hall", nil)
	if err != nil || len(halls) != 10 {
		t.Fatalf("the Hall list across departments: %d %v, want 10", len(halls), err)
	}
	if r, err := d.m.Verify(ctx, nil); err != nil || !r.OK() || r.Primaries != 15 {
		t.Fatalf("Verify: %+v %v", r, err)
	}
}

// A cancelled context ends the load with the context's error.
func TestModelLoadStopsWithItsContext(t *testing.T) {
	d := newDirectory(t, false)
	ctx, cancel := context.WithCancel(t.Context())
	var seq iter.Seq[*staffer] = func(yield func(*staffer) bool) {
		for i, v := range crowd("Sales", 0, 10, "Hall") {
			if i == 2 {
				cancel()
			}
			if !yield(v) {
				return
			}
		}
	}
	if _, err := d.m.Load(ctx, seq, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("Load under a cancelled context: %v", err)
	}
}

// Two entities of one load that claim the same row (the same unique email,
// or the same primary twice) are what the service would make of two Adds:
// one is written, the other is a Failure (its *ValueTakenError, or
// ErrAlreadyExists), and the other entities of the partition are written.
// A transaction may not name a row twice, so they cannot share one.
func TestModelLoadWritesOneOfTwoEntitiesClaimingOneRow(t *testing.T) {
	d := newDirectory(t, false)
	ctx := t.Context()
	a := staffOf("Sales", 1, "A", "Hall", "same@contoso.com")
	b := staffOf("Sales", 2, "B", "Hall", "same@contoso.com")
	c := staffOf("Sales", 3, "C", "Hall", "c@contoso.com")
	twice := staffOf("Sales", 3, "C", "Hall", "c2@contoso.com")
	e := staffOf("Sales", 4, "E", "Jones", "e@contoso.com")
	sum, err := d.m.Load(ctx, slices.Values([]*staffer{a, b, c, twice, e}), nil)
	if err != nil || sum.Entities != 3 || len(sum.Failures) != 2 {
		t.Fatalf("Load: %+v %v; want 3 written (A or B, C once, E) and 2 failures", sum, err)
	}
	var vt *patterns.ValueTakenError
	var taken, exists int
	for _, f := range sum.Failures {
		switch {
		case (f.RowKey == a.RowKey || f.RowKey == b.RowKey) && errors.As(f.Err, &vt) && vt.Value == "same@contoso.com":
			taken++
		case f.RowKey == c.RowKey && table.Is(f.Err, table.ErrAlreadyExists):
			exists++
		default:
			t.Fatalf("failure %+v: want A's or B's taken email, or C's second Add", f)
		}
	}
	if taken != 1 || exists != 1 {
		t.Fatalf("failures %+v", sum.Failures)
	}
	if got, err := d.m.Lookup(ctx, "email", "Sales", "e@contoso.com", nil); err != nil || got.RowKey != e.RowKey {
		t.Fatalf("E: %+v %v", got, err)
	}
	if r, err := d.m.Verify(ctx, nil); err != nil || !r.OK() || r.Primaries != 3 {
		t.Fatalf("Verify: %+v %v", r, err)
	}
}

// A transaction whose entities' rows do not fit one queue message sends
// them in several, each hidden before the transaction and shown after it:
// 30 entities with 200-character keys are more than one message holds.
func TestModelLoadSplitsMessagesThatWouldNotFitTheQueue(t *testing.T) {
	d := newDirectory(t, true)
	ctx := t.Context()
	pk := strings.Repeat("d", 200)
	var all []*staffer
	for i := range 30 {
		v := staffOf(pk, i, "F", "Hall", fmt.Sprintf("e%d@contoso.com", i))
		v.RowKey = fmt.Sprintf("empid_%s%04d", strings.Repeat("0", 190), i)
		all = append(all, v)
	}
	sum, err := d.m.Load(ctx, slices.Values(all), nil)
	if err != nil || sum.Entities != 30 || sum.Transactions != 1 || sum.Messages != 2 {
		t.Fatalf("Load: %+v %v; want 30 entities in 1 transaction, 2 messages", sum, err)
	}
	if n := d.l.Operation(ledger.Queue, "EnqueueMessage"); n != 2 {
		t.Fatalf("%d messages enqueued, want 2", n)
	}
	d.drain(t)
	if got := rows(t, d.copies); len(got) != 30 {
		t.Fatalf("%d cross copies, want 30", len(got))
	}
	if halls, err := d.m.LookupEntities(ctx, "lastname-all", "", "Hall", nil); err != nil || len(halls) != 30 {
		t.Fatalf("the Hall list across departments: %d %v", len(halls), err)
	}
}

// The worker reads the primaries a load's message names with one range
// query per partition, not one read each, and adds the IDs of one value to
// its list in one change; a message naming one primary (a single write's)
// reads it with one point read.
func TestModelHandleReadsALoadsPartitionInOneQuery(t *testing.T) {
	d := newDirectory(t, true)
	ctx := t.Context()
	reads := func() (gets, queries int) {
		for _, e := range d.l.Entries() {
			if e.Resource == "Employees" && e.Operation == "GetEntity" {
				gets += e.Requests
			}
			if e.Resource == "Employees" && e.Operation == "QueryEntities" {
				queries += e.Requests
			}
		}
		return gets, queries
	}
	if _, err := d.m.Load(ctx, slices.Values(crowd("Sales", 0, 2, "Hall")), nil); err != nil {
		t.Fatal(err)
	}
	d.l.Reset()
	d.drain(t)
	if g, q := reads(); g != 0 || q != 1 {
		t.Fatalf("the worker read a load of two with %d point reads and %d queries of the primaries; want one query", g, q)
	}
	// Both IDs of one value go into its list across departments in one
	// change: one read of the list (and one write).
	if n := d.l.Count(ledger.Key{Service: ledger.Table, Operation: "QueryEntities", Resource: "LastNames", Partition: "lastnames"}); n != 1 {
		t.Fatalf("the worker read the list across departments %d times for two IDs of one value; want once:\n%v", n, d.l)
	}
	if err := d.m.Add(ctx, staffOf("Sales", 7, "F", "Hall", "f@contoso.com"), nil); err != nil {
		t.Fatal(err)
	}
	d.l.Reset()
	d.drain(t)
	if g, q := reads(); g != 1 || q != 0 {
		t.Fatalf("the worker read one Add's primary with %d point reads and %d queries; want one point read", g, q)
	}
	if halls, err := d.m.LookupEntities(ctx, "lastname-all", "", "Hall", nil); err != nil || len(halls) != 3 {
		t.Fatalf("the Hall list across departments: %d %v", len(halls), err)
	}
}

// MaxBuffered is what Load holds before it sends: past it, the fullest
// partition goes at once, before the input ends; up to it, nothing is
// sent while the input still comes.
func TestModelLoadSendsTheFullestPartitionOncePastMaxBuffered(t *testing.T) {
	d := newDirectory(t, false)
	ctx := t.Context()
	stored := func() []string {
		var out []string
		for _, r := range rows(t, d.raw) {
			if strings.Contains(r, "/empid_") {
				out = append(out, r)
			}
		}
		return out
	}
	a := crowd("A", 0, 3, "Hall")
	b, c, e := staffOf("B", 10, "F", "Hall", "b@contoso.com"), staffOf("C", 20, "F", "Hall", "c@contoso.com"), staffOf("E", 30, "F", "Hall", "e@contoso.com")
	input := func(yield func(*staffer) bool) {
		for _, v := range append(a, b) { // 4 held: the bound, not past it
			if !yield(v) {
				return
			}
		}
		time.Sleep(300 * time.Millisecond) // room for a send that should not happen
		if got := stored(); len(got) != 0 {
			t.Errorf("with 4 entities held and MaxBuffered 4, Load sent %v before the input ended", got)
		}
		if !yield(c) { // 5 held: A, the fullest, goes now
			return
		}
		for range 100 {
			if len(stored()) >= 3 {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if got := stored(); !slices.Equal(got, []string{"A/empid_000000", "A/empid_000001", "A/empid_000002"}) {
			t.Errorf("past MaxBuffered, before the input ended: %v stored; want A's three, the fullest partition", got)
		}
		yield(e)
	}
	sum, err := d.m.Load(ctx, input, &patterns.ModelLoadOptions{MaxBuffered: 4, Parallelism: 1})
	if err != nil || sum.Entities != 6 || sum.Transactions != 4 {
		t.Fatalf("Load: %+v %v; want 6 entities in 4 transactions (one a partition)", sum, err)
	}
	if got := stored(); len(got) != 6 {
		t.Fatalf("stored %v", got)
	}
}

// A transaction the service fails as a whole (a 500, after the SDK's
// retries) makes each of its entities a Failure, and Load's error names the
// partition.
func TestModelLoadReportsATransactionThatFailedWhole(t *testing.T) {
	modelTimeout(t)
	tables := fake.NewTableService(nil)
	client := tables.NewClient("Employees", nil)
	if _, err := client.CreateTable(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	tbl := tableOf(table.New[staffer](client, nil))
	m, err := patterns.OpenModel(context.Background(), tbl, &patterns.ModelOptions[staffer]{Name: "m", Primary: "empid_",
		Copies: []patterns.IndexDef[staffer]{{Name: "email", Prefix: "email_", Unique: true, Value: func(s *staffer) string { return s.Email }}}})
	if err != nil {
		t.Fatal(err)
	}
	tables.FailNext(fake.OpBatch, 4, 500, "InternalError") // the SDK's try and three retries
	sum, err := m.Load(t.Context(), slices.Values(crowd("Sales", 0, 3, "Hall")), nil)
	if err == nil || !strings.Contains(err.Error(), `3 entities of partition "Sales" not written`) {
		t.Fatalf("Load against a failing service: %v %+v", err, sum)
	}
	if sum.Entities != 0 || len(sum.Failures) != 3 || sum.Failures[2].RowKey != "empid_000002" || sum.Failures[2].Err == nil {
		t.Fatalf("summary %+v", sum)
	}
}

// A taken value is attributed to its unique index whatever copies come
// before it in the declaration; a single entity's load keeps its list.
func TestModelLoadNamesTheTakenIndexAmongSeveral(t *testing.T) {
	d := newDirectory(t, false)
	ctx := t.Context()
	m, err := patterns.OpenModel(ctx, d.tbl, &patterns.ModelOptions[staffer]{Name: "m", Primary: "empid_",
		Copies: []patterns.IndexDef[staffer]{
			{Name: "first", Prefix: "first_", Value: func(s *staffer) string { return s.FirstName }},
			{Name: "last", Prefix: "last_", Value: func(s *staffer) string { return s.LastName }},
			{Name: "email", Prefix: "email_", Unique: true, Value: func(s *staffer) string { return s.Email }},
		},
		Lists: []patterns.ListDef[staffer]{{Name: "salary", Prefix: "salary_", Value: func(s *staffer) string { return fmt.Sprint(s.Salary) }}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Load(ctx, slices.Values([]*staffer{staffOf("Sales", 1, "A", "Hall", "x@contoso.com")}), nil); err != nil {
		t.Fatal(err)
	}
	if got, err := m.LookupEntities(ctx, "salary", "Sales", "1001", nil); err != nil || len(got) != 1 {
		t.Fatalf("the list of a load of one: %v %v", got, err)
	}
	sum, err := m.Load(ctx, slices.Values([]*staffer{staffOf("Sales", 2, "B", "Jones", "x@contoso.com")}), nil)
	var vt *patterns.ValueTakenError
	if err != nil || len(sum.Failures) != 1 || !errors.As(sum.Failures[0].Err, &vt) || vt.Index != "email" {
		t.Fatalf("Load of a taken email behind two other copies: %+v %v; want *ValueTakenError of email", sum, err)
	}
}

// A partition's transaction goes as soon as it is full, before the input
// ends: 32 of one last name fill one (3 operations each and 2 for the
// list), so the 33rd sends the first 32.
func TestModelLoadSendsAFullTransactionBeforeTheInputEnds(t *testing.T) {
	d := newDirectory(t, false)
	all := crowd("Sales", 0, 40, "Hall")
	input := func(yield func(*staffer) bool) {
		for i, v := range all {
			if i == 39 {
				n := 0
				for range 100 {
					if n = len(lastNames(t, d, "Sales", "Hall")); n >= 32 {
						break
					}
					time.Sleep(50 * time.Millisecond)
				}
				if n != 32 {
					t.Errorf("with 39 entities of one partition given, %d were written; want the first full transaction's 32", n)
				}
			}
			if !yield(v) {
				return
			}
		}
	}
	sum, err := d.m.Load(t.Context(), input, nil)
	if err != nil || sum.Entities != 40 || sum.Transactions != 2 {
		t.Fatalf("Load: %+v %v; want 40 entities in 2 transactions", sum, err)
	}
}

// bulky is an entity of about 120 KB.
type bulky struct {
	table.Meta
	A, B, C, D string
}

// Large entities fill a transaction's 4 MiB before its 100 operations: 60
// of about 120 KB each in one partition are written in several
// transactions, none refused.
func TestModelLoadSplitsATransactionAtTheRequestSizeLimit(t *testing.T) {
	modelTimeoutAfter(t, heavyModelDeadline)
	client := fake.NewTableService(nil).NewClient("Big", nil)
	if _, err := client.CreateTable(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	m, err := patterns.OpenModel(context.Background(), tableOf(table.New[bulky](client, nil)), &patterns.ModelOptions[bulky]{Name: "big"})
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Repeat("x", 30000)
	var vs []*bulky
	for i := range 60 {
		vs = append(vs, &bulky{Meta: table.Meta{PartitionKey: "p", RowKey: fmt.Sprintf("%03d", i)}, A: s, B: s, C: s, D: s})
	}
	sum, err := m.Load(t.Context(), slices.Values(vs), nil)
	if err != nil || sum.Entities != 60 || len(sum.Failures) != 0 || sum.Transactions < 2 {
		t.Fatalf("Load of 60 entities of 120 KB: %d written in %d transactions, %d failures, %v; want all 60 in two or more", sum.Entities, sum.Transactions, len(sum.Failures), err)
	}
	n := 0
	for _, err := range m.Query(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 60 {
		t.Fatalf("%d stored, want 60", n)
	}
}

// Load's default MaxBuffered is 10,000 entities: while 10,000 are held
// (none of their partitions full) nothing is sent; the 10,001st sends the
// fullest partition before the input goes on.
func TestModelLoadHoldsTenThousandEntitiesByDefault(t *testing.T) {
	modelTimeoutAfter(t, heavyModelDeadline)
	tables := fake.NewTableService(nil)
	client := tables.NewClient("Employees", nil)
	if _, err := client.CreateTable(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	m, err := patterns.OpenModel(context.Background(), tableOf(table.New[staffer](client, nil)), &patterns.ModelOptions[staffer]{Name: "m", Primary: "empid_"})
	if err != nil {
		t.Fatal(err)
	}
	const bound = 10000
	// 102 partitions of at most 99 entities: no partition fills a
	// transaction, so only the bound can send one.
	one := func(i int) *staffer {
		return staffOf(fmt.Sprintf("P%03d", i%102), i, "F", "Hall", fmt.Sprintf("e%d@contoso.com", i))
	}
	input := func(yield func(*staffer) bool) {
		for i := range bound {
			if !yield(one(i)) {
				return
			}
		}
		time.Sleep(200 * time.Millisecond) // room for a send that should not happen
		if n := tables.Count(fake.OpBatch); n != 0 {
			t.Errorf("with %d entities held, Load sent %d transactions before the input ended; want none", bound, n)
		}
		if !yield(staffOf("Q", bound, "F", "Hall", "q@contoso.com")) {
			return
		}
		for range 400 {
			if tables.Count(fake.OpBatch) > 0 {
				break
			}
			time.Sleep(25 * time.Millisecond)
		}
		if n := tables.Count(fake.OpBatch); n != 1 {
			t.Errorf("past %d entities held, Load sent %d transactions before the input went on; want 1, the fullest partition", bound, n)
		}
		yield(one(bound + 1))
	}
	sum, err := m.Load(t.Context(), input, nil)
	if err != nil || sum.Entities != bound+2 || len(sum.Failures) != 0 {
		t.Fatalf("Load: %d entities, %d failures, %v; want %d and none", sum.Entities, len(sum.Failures), err, bound+2)
	}
}

// grouped is a large entity listed by its Group.
type grouped struct {
	table.Meta
	Group      string
	A, B, C, D string
}

// A list's operation that would carry a transaction past the service's
// 4 MiB request is not dropped from it: the entities alone fit, their
// list does not, so the load is sent in halves, each with its list's
// operations, and the list names every entity.
func TestModelLoadKeepsAListOperationThatPassesTheRequestLimit(t *testing.T) {
	modelTimeoutAfter(t, heavyModelDeadline)
	client := fake.NewTableService(nil).NewClient("Big", nil)
	if _, err := client.CreateTable(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	tbl := tableOf(table.New[grouped](client, nil))
	m, err := patterns.OpenModel(context.Background(), tbl, &patterns.ModelOptions[grouped]{Name: "big", Primary: "id_",
		Lists: []patterns.ListDef[grouped]{{Name: "group", Prefix: "group_", Value: func(g *grouped) string { return g.Group }}}})
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Repeat("x", 30000)
	const k = 34
	var vs []*grouped
	for i := range k {
		vs = append(vs, &grouped{Meta: table.Meta{PartitionKey: "p", RowKey: fmt.Sprintf("id_%03d", i)}, Group: "g", A: s, B: s, C: s, D: s})
	}
	// Pad the entities until their Adds fill the request to within 64
	// bytes of the limit: any list operation passes it.
	size := func() int {
		tx := batch.NewTransaction(nil)
		for _, v := range vs {
			body, err := tableio.For(tbl).EncodeWrite(t.Context(), v, aztables.UpdateModeReplace)
			if err != nil {
				t.Fatal(err)
			}
			if err := tx.Append(batchraw.Op(batch.KindAdd, body, nil)); err != nil {
				t.Fatalf("the entities alone do not fit one transaction: %v", err)
			}
		}
		return tx.Size()
	}
	gap := batch.MaxRequestBytes - 64 - size()
	for _, v := range vs {
		for _, f := range []*string{&v.A, &v.B, &v.C, &v.D} {
			n := min(gap, 32000-len(*f)) // a string property holds 32,768 UTF-16 units
			*f += strings.Repeat("y", n)
			gap -= n
		}
	}
	if n := size(); n > batch.MaxRequestBytes-64 || n < batch.MaxRequestBytes-128 {
		t.Fatalf("the entities' transaction is %d bytes; want within 64 to 128 bytes of %d", n, batch.MaxRequestBytes)
	}
	sum, err := m.Load(t.Context(), slices.Values(vs), nil)
	if err != nil || sum.Entities != k || len(sum.Failures) != 0 || sum.Transactions < 2 {
		t.Fatalf("Load: %d written in %d transactions, %d failures, %v; want all %d in two or more", sum.Entities, sum.Transactions, len(sum.Failures), err, k)
	}
	got, err := m.LookupEntities(t.Context(), "group", "p", "g", nil)
	if err != nil || len(got) != k {
		t.Fatalf("the group's list names %d entities, %v; want all %d", len(got), err, k)
	}
}

// A list's operation failed inside the transaction's answer (500
// OperationTimedOut, which the SDK does not retry in a 202) belongs to no
// one entity: every entity of the transaction is a Failure, Load's error
// names the partition, nothing is stored, and the transaction is sent once.
func TestModelLoadFailsEveryEntityWhenAListOperationFails(t *testing.T) {
	d := newDirectory(t, false)
	ctx := t.Context()
	all := crowd("Sales", 0, 3, "Hall")
	// 3 × (primary, email copy, first-name copy), then the list: index 9.
	d.svc.FailTransactionOperation(9, 1, 500, "OperationTimedOut")
	sum, err := d.m.Load(ctx, slices.Values(all), nil)
	if err == nil || !strings.Contains(err.Error(), `3 entities of partition "Sales" not written`) || svcanswer.StatusCode(err) != 500 {
		t.Fatalf("Load with its list's operation failed: %v; want the partition's 3 entities not written, status 500", err)
	}
	if sum.Entities != 0 || len(sum.Failures) != 3 {
		t.Fatalf("summary %+v; want 3 failures", sum)
	}
	for i, f := range sum.Failures {
		if f.PartitionKey != "Sales" || f.RowKey != all[i].RowKey || svcanswer.StatusCode(f.Err) != 500 {
			t.Errorf("failure %d: %+v", i, f)
		}
	}
	if n := d.l.Operation(ledger.Table, "Batch"); n != 1 {
		t.Errorf("%d transactions sent, want 1", n)
	}
	if got := rows(t, d.raw); len(got) != 0 {
		t.Errorf("stored after a failed transaction: %v", got)
	}
}
