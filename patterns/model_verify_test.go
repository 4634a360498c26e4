package patterns_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/table"
)

// The entity model's Verify and Repair: each kind of drift, in each kind of
// index, found under the index's declared name, and repaired with every
// other index's rows in place.

// everything is every row of the directory's tables, "table:pk/rk".
func everything(t *testing.T, d *directory) []string {
	t.Helper()
	var out []string
	for name, tbl := range map[string]*table.Table[table.Entity]{"employees": d.raw, "copies": d.copies, "lists": d.lists} {
		for _, r := range rows(t, tbl) {
			out = append(out, name+":"+r)
		}
	}
	slices.Sort(out)
	return out
}

// verified runs m's Verify with opts and returns the issues it streamed,
// as "kind index pk/primary", sorted, and its summary, which must count
// them.
func verified[T any](t *testing.T, m *patterns.Model[T], opts *patterns.VerifyOptions) ([]string, patterns.VerifySummary, error) {
	t.Helper()
	var o patterns.VerifyOptions
	if opts != nil {
		o = *opts
	}
	out := []string{}
	byKind := map[patterns.IssueKind]int{}
	o.Issue = func(is patterns.IndexIssue) error {
		out = append(out, fmt.Sprintf("%s %s %s/%s", is.Kind, is.Index, is.PartitionKey, is.Primary))
		byKind[is.Kind]++
		return nil
	}
	sum, err := m.Verify(t.Context(), &o)
	if err == nil && (sum.Missing != byKind[patterns.IssueMissing] || sum.Orphans != byKind[patterns.IssueOrphan] || sum.Stale != byKind[patterns.IssueStale]) {
		t.Fatalf("the summary %+v does not count the issues streamed: %v", sum, out)
	}
	slices.Sort(out)
	return out, sum, err
}

// staffed is a directory with indexes of every kind holding Ann and Bob
// (Sales, Halls) and Cara (Marketing, a Jones), drained.
func staffed(t *testing.T) (*directory, []*staffer) {
	d := newDirectory(t, true)
	all := []*staffer{
		staffOf("Sales", 1, "Ann", "Hall", "ann@contoso.com"),
		staffOf("Sales", 2, "Bob", "Hall", "bob@contoso.com"),
		staffOf("Marketing", 3, "Cara", "Jones", "cara@contoso.com"),
	}
	for _, v := range all {
		if err := d.m.Add(t.Context(), v, nil); err != nil {
			t.Fatal(err)
		}
	}
	d.drain(t)
	d.l.Reset()
	return d, all
}

// Each drift is found in the index it belongs to, under the index's
// declared name, and nothing else is reported; Repair restores exactly
// the rows the model wrote, and leaves the other indexes' rows as they
// were.
func TestModelVerifyFindsAndRepairsEachDriftInItsIndex(t *testing.T) {
	ann := "Sales/empid_000001"
	for _, c := range []struct {
		name  string
		drift func(t *testing.T, d *directory, all []*staffer)
		want  []string
	}{
		{"an email copy deleted", func(t *testing.T, d *directory, all []*staffer) {
			if err := d.raw.Delete(t.Context(), "Sales", "email_ann@contoso.com", nil); err != nil {
				t.Fatal(err)
			}
		}, []string{"missing email " + ann}},
		{"a first-name copy altered", func(t *testing.T, d *directory, all []*staffer) {
			for rk, e := range indexRows(t, d, "Sales") {
				if owner, _ := e.Get("TkIndexOf"); rk[:6] == "first_" && owner.Equal(table.ValueOf(patterns.ID("Sales", "empid_000001"))) {
					e := &table.Entity{Meta: table.Meta{PartitionKey: "Sales", RowKey: rk}}
					e.Set("LastName", table.ValueOf("Changed"))
					if err := d.raw.Upsert(t.Context(), e, &table.UpsertOptions{Mode: aztables.UpdateModeMerge}); err != nil {
						t.Fatal(err)
					}
					return
				}
			}
		}, []string{"stale first " + ann}},
		{"an orphan email copy", func(t *testing.T, d *directory, all []*staffer) {
			e := &table.Entity{Meta: table.Meta{PartitionKey: "Sales", RowKey: "email_ghost@contoso.com"}}
			e.Set("TkIndexOf", table.ValueOf(patterns.ID("Sales", "empid_000009")))
			e.Set("Email", table.ValueOf("ghost@contoso.com"))
			if err := d.raw.Add(t.Context(), e, nil); err != nil {
				t.Fatal(err)
			}
		}, []string{"orphan email Sales/empid_000009"}},
		{"a cross copy deleted", func(t *testing.T, d *directory, all []*staffer) {
			rk, err := patterns.CrossCopyRowKey("cara@contoso.com", "Marketing", "empid_000003")
			if err != nil {
				t.Fatal(err)
			}
			if err := d.copies.Delete(t.Context(), "email_Marketing", rk, nil); err != nil {
				t.Fatal(err)
			}
		}, []string{"missing email-all email_Marketing/empid_000003"}}, // in the copy's partition
		{"an ID gone from a list across departments", func(t *testing.T, d *directory, all []*staffer) {
			remote, err := patterns.NewRemoteIndexEntities(d.lists, "lastnames", "ln_", nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := remote.Remove(t.Context(), "Model.Repair", "Hall", patterns.ID("Sales", "empid_000002")); err != nil {
				t.Fatal(err)
			}
		}, []string{"missing lastname-all /empid_000002"}}, // the list's partition its own; the owner's is PrimaryPartitionKey
		{"a partition's list entity deleted", func(t *testing.T, d *directory, all []*staffer) {
			for rk := range indexRows(t, d, "Marketing") {
				if len(rk) > 9 && rk[:9] == "lastname_" {
					if err := d.raw.Delete(t.Context(), "Marketing", rk, nil); err != nil {
						t.Fatal(err)
					}
				}
			}
		}, []string{"missing lastname Marketing/empid_000003"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, all := staffed(t)
			clean := everything(t, d)
			c.drift(t, d, all)
			got, r, err := verified(t, d.m, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, c.want) || r.OK() {
				t.Fatalf("Verify found %v, want %v", got, c.want)
			}
			if r.Primaries != 3 {
				t.Fatalf("Verify counted %d primaries, want 3", r.Primaries)
			}
			var heard []string
			sum, err := d.m.Repair(t.Context(), &patterns.RepairOptions{VerifyOptions: patterns.VerifyOptions{Issue: func(is patterns.IndexIssue) error {
				heard = append(heard, fmt.Sprintf("%s %s %s/%s", is.Kind, is.Index, is.PartitionKey, is.Primary))
				return nil
			}}})
			if err != nil {
				t.Fatal(err)
			}
			if slices.Sort(heard); !slices.Equal(heard, c.want) || sum.VerifySummary.Missing != r.Missing || sum.VerifySummary.Orphans != r.Orphans || sum.VerifySummary.Stale != r.Stale {
				t.Fatalf("Repair heard %v and counted %+v; want what Verify found, %v", heard, sum.VerifySummary, c.want)
			}
			if sum.Written+sum.Deleted == 0 {
				t.Fatalf("Repair of %v: %+v, nothing done", c.want, sum)
			}
			if got, r, err := verified(t, d.m, nil); err != nil || !r.OK() {
				t.Fatalf("Verify after Repair: %v %v", got, err)
			}
			if got := everything(t, d); !slices.Equal(got, clean) {
				t.Fatalf("rows after Repair:\n%v\nwant the model's own:\n%v", got, clean)
			}
		})
	}
}

// A primary written around the model lacks its row in every index; a
// partition's Verify finds it there and nowhere else, and Repair writes
// each of them.
func TestModelRepairBackfillsAPrimaryWrittenAroundIt(t *testing.T) {
	d, _ := staffed(t)
	ctx := t.Context()
	dan := staffOf("Sales", 4, "Dan", "Hall", "dan@contoso.com")
	if err := d.tbl.Add(ctx, dan, nil); err != nil {
		t.Fatal(err)
	}
	got, r, err := verified(t, d.m, &patterns.VerifyOptions{Partition: "Marketing"})
	if err != nil || !r.OK() || r.Partition != "Marketing" {
		t.Fatalf("Verify of Marketing: %v %v; want clean", got, err)
	}
	got, r, err = verified(t, d.m, &patterns.VerifyOptions{Partition: "Sales"})
	if err != nil {
		t.Fatal(err)
	}
	dk := "Sales/empid_000004"
	want := []string{"missing email " + dk, "missing email-all email_" + dk, "missing first " + dk, "missing lastname " + dk, "missing lastname-all /empid_000004"}
	if !slices.Equal(got, want) || r.Primaries != 3 {
		t.Fatalf("Verify of Sales: %d primaries, %v; want 3 and %v", r.Primaries, got, want)
	}
	for index, n := range map[string]int{"email": 1, "email-all": 1, "first": 1, "lastname": 1, "lastname-all": 1} {
		if r.ByIndex[index][patterns.IssueMissing] != n || len(r.ByIndex[index]) != 1 {
			t.Fatalf("Verify of Sales counted %v by index; want one missing row in each index", r.ByIndex)
		}
	}
	// Indexes narrows Verify and Repair to the indexes named.
	only := []string{"email", "lastname-all"}
	got, r, err = verified(t, d.m, &patterns.VerifyOptions{Partition: "Sales", Indexes: only})
	if want := []string{"missing email " + dk, "missing lastname-all /empid_000004"}; err != nil || !slices.Equal(got, want) {
		t.Fatalf("Verify of %v: %v %v; want %v", only, got, err, want)
	}
	if sum, err := d.m.Repair(ctx, &patterns.RepairOptions{VerifyOptions: patterns.VerifyOptions{Partition: "Sales", Indexes: only}}); err != nil || sum.Written != 2 {
		t.Fatalf("Repair of %v: %+v %v; want 2 rows written", only, sum, err)
	}
	got, _, err = verified(t, d.m, &patterns.VerifyOptions{Partition: "Sales"})
	if want := []string{"missing email-all email_" + dk, "missing first " + dk, "missing lastname " + dk}; err != nil || !slices.Equal(got, want) {
		t.Fatalf("Verify after the narrow Repair: %v %v; want the other indexes' rows still missing, %v", got, err, want)
	}
	if _, err := d.m.Repair(ctx, &patterns.RepairOptions{VerifyOptions: patterns.VerifyOptions{Partition: "Sales"}}); err != nil {
		t.Fatal(err)
	}
	if got, r, err := verified(t, d.m, nil); err != nil || !r.OK() || r.Primaries != 4 {
		t.Fatalf("Verify after Repair: %v %v", got, err)
	}
	found, err := d.m.Lookup(ctx, "email", "Sales", "dan@contoso.com", nil)
	if err != nil || found.RowKey != dan.RowKey {
		t.Fatalf("Lookup of the backfilled copy: %+v %v", found, err)
	}
	if l := lastNames(t, d, "Sales", "Hall"); len(l) != 3 {
		t.Fatalf("the Sales Hall list after Repair: %v", l)
	}
}

// Verify and Repair refuse an index the model does not declare, Repair
// options out of range, and a Partition no key can hold: each before any
// request.
func TestModelVerifyAndRepairRefuseBadInputBeforeAnyRequest(t *testing.T) {
	d, _ := staffed(t)
	ctx := t.Context()
	d.l.Reset()
	unknown := patterns.VerifyOptions{Indexes: []string{"email", "nosuch"}}
	if _, err := d.m.Verify(ctx, &unknown); !isUnknownIndex(err) {
		t.Errorf("Verify of an index the model does not declare: %v", err)
	}
	if _, err := d.m.Repair(ctx, &patterns.RepairOptions{VerifyOptions: unknown}); !isUnknownIndex(err) {
		t.Errorf("Repair of an index the model does not declare: %v", err)
	}
	for _, n := range []int{1, 101, -1} {
		if _, err := d.m.Repair(ctx, &patterns.RepairOptions{PerTransaction: n}); !errors.Is(err, table.ErrBadOption) {
			t.Errorf("Repair with PerTransaction %d: %v, want ErrBadOption", n, err)
		}
	}
	if _, err := d.m.Verify(ctx, &patterns.VerifyOptions{Partition: "a/b"}); err == nil {
		t.Error("Verify of a Partition no key can hold succeeded")
	}
	if _, err := d.m.Repair(ctx, &patterns.RepairOptions{VerifyOptions: patterns.VerifyOptions{Partition: "a/b"}}); err == nil {
		t.Error("Repair of a Partition no key can hold succeeded")
	}
	// A model with no index refuses it too, though no part checks it.
	bare, err := patterns.OpenModel(ctx, d.tbl, &patterns.ModelOptions[staffer]{Name: "bare"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bare.Verify(ctx, &patterns.VerifyOptions{Partition: "a/b"}); err == nil {
		t.Error("Verify of a model without indexes, Partition a/b, succeeded")
	}
	if n := d.l.Total(); n != 0 {
		t.Fatalf("refused calls sent %d requests:\n%v", n, d.l)
	}
	// A clean model's Repair only reads: it writes and deletes nothing.
	if sum, err := d.m.Repair(ctx, nil); err != nil || !sum.OK() || sum.Transactions+sum.Written+sum.Deleted != 0 || sum.Primaries != 3 {
		t.Fatalf("Repair of a clean model: %+v %v", sum, err)
	}
	// An error from Issue ends the run with it.
	stop := errors.New("stop")
	if err := d.raw.Delete(ctx, "Sales", "email_ann@contoso.com", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := d.m.Repair(ctx, &patterns.RepairOptions{VerifyOptions: patterns.VerifyOptions{Issue: func(patterns.IndexIssue) error { return stop }}}); !errors.Is(err, stop) {
		t.Fatalf("Repair whose Issue fails: %v, want its error", err)
	}
	if got, _, _ := verified(t, d.m, nil); !slices.Equal(got, []string{"missing email Sales/empid_000001"}) {
		t.Fatalf("after the stopped Repair: %v; want the issue still there (it stopped before repairing)", got)
	}
}

// isUnknownIndex tells the refusal of an index the model does not
// declare: a *table.InputError on Indexes, patterns.ErrUnknownIndex.
func isUnknownIndex(err error) bool {
	var ie *table.InputError
	return errors.As(err, &ie) && ie.Field == "Indexes" && errors.Is(err, patterns.ErrUnknownIndex)
}

// A model whose same-partition copies and cross-partition copies both
// live in the primaries' table verifies clean: the cross index's Verify
// does not take the partition's copies (rows that name their owner too)
// for orphans of its own, which its Repair would delete.
func TestModelVerifyKeepsCopiesAndCrossCopiesOfOneTableApart(t *testing.T) {
	ctx := t.Context()
	client := fake.NewTableService(nil).NewClient("staff", nil)
	if _, err := client.CreateTable(ctx, nil); err != nil {
		t.Fatal(err)
	}
	queues := fake.NewQueueService(nil)
	q, poison := queues.NewQueueClient("staff", nil), queues.NewQueueClient("staff-poison", nil)
	_, _ = q.Create(ctx, nil)
	_, _ = poison.Create(ctx, nil)
	m, err := patterns.OpenModel(ctx, tableOf(table.New[staffer](client, nil)), &patterns.ModelOptions[staffer]{Name: "staff", Primary: "empid_", Queue: q,
		Copies:      []patterns.IndexDef[staffer]{{Name: "email", Prefix: "email_", Unique: true, Value: func(s *staffer) string { return s.Email }}},
		CrossCopies: []patterns.IndexDef[staffer]{{Name: "dept-email", PartitionKey: func(s *staffer) string { return "email_" + s.PartitionKey }, Value: func(s *staffer) string { return s.Email }}},
	})
	if err != nil {
		t.Fatal(err)
	}
	w := consistency.NewWorker(q, poison, nil)
	if err := w.Handle(m.MessageType(), m.Process); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*staffer{staffOf("Sales", 1, "Ann", "Hall", "ann@contoso.com"), staffOf("Sales", 2, "Bob", "Jones", "bob@contoso.com")} {
		if err := m.Add(ctx, s, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Drain(ctx, nil); err != nil {
		t.Fatal(err)
	}
	for _, opts := range []*patterns.VerifyOptions{nil, {Partition: "Sales"}} {
		r, err := m.Verify(ctx, opts)
		if err != nil || !r.OK() || r.Primaries != 2 || r.IndexRows != 4 {
			t.Fatalf("Verify(%+v): %+v, %v; want 2 primaries, 4 copies, nothing to repair", opts, r, err)
		}
	}
	if got, err := m.Lookup(ctx, "email", "Sales", "ann@contoso.com", nil); err != nil || got.RowKey != "empid_000001" {
		t.Fatalf("the partition's copy: %+v, %v", got, err)
	}
}

// The summary accounts for every row Verify judged, counted from the
// tables: each primary once, and each index row of every index once (the
// partition's copies, the cross copies, each ID a list holds), for the
// whole table and for one partition.
func TestModelVerifySummaryAccountsForEveryRowRead(t *testing.T) {
	d, _ := staffed(t)
	count := func(pk string) (primaries, copies, cross int) {
		for _, r := range everything(t, d) {
			tbl, key, _ := strings.Cut(r, ":")
			if pk != "" && !strings.HasPrefix(key, pk+"/") && tbl == "employees" {
				continue
			}
			switch {
			case tbl == "employees" && strings.Contains(key, "/empid_"):
				primaries++
			case tbl == "employees" && (strings.Contains(key, "/email_") || strings.Contains(key, "/first_")):
				copies++
			case tbl == "copies" && (pk == "" || strings.HasPrefix(key, "email_"+pk+"/")): // a cross copy is under "email_" and its owner's partition
				cross++
			}
		}
		return
	}
	for _, pk := range []string{"", "Sales"} {
		_, sum, err := verified(t, d.m, &patterns.VerifyOptions{Partition: pk})
		if err != nil {
			t.Fatal(err)
		}
		primaries, copies, cross := count(pk)
		// Each primary is listed once in the partition's last-name list
		// and once in the list across departments.
		if want := copies + cross + 2*primaries; !sum.OK() || sum.Primaries != primaries || sum.IndexRows != want {
			t.Fatalf("Verify of %q: %+v; want %d primaries and %d index rows (%d copies, %d cross copies, %d listed IDs)", pk, sum, primaries, want, copies, cross, 2*primaries)
		}
	}
}

// A cross copy, or a listed ID, naming an owner outside the primaries'
// prefix names no primary: Verify reports it as an orphan (it does not
// read the owner, which the primaries' table refuses) and Repair deletes
// it.
func TestModelVerifyReportsOwnersOutsideThePrimaryPrefixAsOrphans(t *testing.T) {
	d, _ := staffed(t)
	ctx := t.Context()
	rk, err := patterns.CrossCopyRowKey("x@contoso.com", "Sales", "other_1")
	if err != nil {
		t.Fatal(err)
	}
	e := &table.Entity{Meta: table.Meta{PartitionKey: "email_Sales", RowKey: rk}}
	e.Set("TkIndexOf", table.ValueOf(patterns.ID("Sales", "other_1")))
	if err := d.copies.Add(ctx, e, nil); err != nil {
		t.Fatal(err)
	}
	remote, err := patterns.NewRemoteIndexEntities(d.lists, "lastnames", "ln_", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Add(ctx, "Model.Repair", "Hall", patterns.ID("Sales", "other_2")); err != nil {
		t.Fatal(err)
	}
	got, _, err := verified(t, d.m, nil)
	if want := []string{"orphan email-all email_Sales/other_1", "orphan lastname-all /other_2"}; err != nil || !slices.Equal(got, want) {
		t.Fatalf("Verify: %v %v; want %v", got, err, want)
	}
	if sum, err := d.m.Repair(ctx, nil); err != nil || sum.Deleted != 2 {
		t.Fatalf("Repair: %+v %v; want the two deleted", sum, err)
	}
	if got, _, err := verified(t, d.m, nil); err != nil || len(got) != 0 {
		t.Fatalf("Verify after Repair: %v %v", got, err)
	}
}
