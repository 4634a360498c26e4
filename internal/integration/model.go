package integration

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/internal/reqcount"
	"github.com/tablekit/tablekit/internal/testenv"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/table"
)

// DirEmp is the guide's running example as one entity model: employees
// under "empid_" in their department's partition, an email index beside
// them ("email_"), a last-name index across departments, logins in a log
// tail of the same partitions, departed employees in an archive.
type DirEmp struct {
	table.Meta
	FirstName string
	LastName  string
	Email     string
	Salary    int
}

// Login is a log-tail row in an employee's partition: a row kind the
// model's reads of primaries must never return.
type Login struct {
	table.Meta
	Who string
}

func workerModel(t *testing.T, env Env, c *reqcount.Counter, withLastNames bool) (*patterns.Model[DirEmp], *consistency.Worker, func()) {
	m, w, drain, _ := workerModelQ(t, env, c, withLastNames)
	return m, w, drain
}

func workerModelQ(t *testing.T, env Env, c *reqcount.Counter, withLastNames bool) (*patterns.Model[DirEmp], *consistency.Worker, func(), consistency.Queue) {
	t.Helper()
	employees, err := table.New[DirEmp](env.NewTable(t, c), &table.Options{Name: "Employees"})
	if err != nil {
		t.Fatal(err)
	}
	def := &patterns.ModelOptions[DirEmp]{
		Name:    "staff",
		Primary: "empid_",
		Copies: []patterns.IndexDef[DirEmp]{
			{Name: "email", Prefix: "email_", Unique: true, Value: func(e *DirEmp) string { return e.Email }},
		},
		PublishDelay: 2 * time.Second,
	}
	var w *consistency.Worker
	var queue consistency.Queue
	drain := func() {}
	if withLastNames {
		q, poison := env.NewQueue(t, c), env.NewQueue(t, nil)
		def.Queue, queue = q, q
		def.RemoteLists = []patterns.ListDef[DirEmp]{{Name: "lastname", Value: func(e *DirEmp) string { return e.LastName }, Table: tableOf(table.New[table.Entity](env.NewTable(t, c), nil)), Partition: "lastname", Prefix: "lastname_"}}
		w = consistency.NewWorker(q, poison, quick(nil))
		drain = func() { drainAll(t, q, w) }
	}
	m, err := patterns.OpenModel(context.Background(), employees, def)
	if err != nil {
		t.Fatal(err)
	}
	if w != nil {
		if err := w.Handle(m.MessageType(), m.Process); err != nil {
			t.Fatal(err)
		}
	}
	return m, w, drain, queue
}

func workerOf(dept string, i int) *DirEmp {
	return &DirEmp{Meta: table.Meta{PartitionKey: dept, RowKey: fmt.Sprintf("empid_%06d", i)},
		FirstName: fmt.Sprintf("F%d", i), LastName: fmt.Sprintf("Last%02d", i%37),
		Email: fmt.Sprintf("e%06d@contoso.com", i), Salary: 1000 + i%500}
}

// RunModel is the guide's employee directory on one entity model: a bulk
// load that keeps both indexes, exact lookups, partition queries that see
// primaries only, a log tail in the same partitions, an archive that takes
// every index row along, and one clean Verify at the end. Also: the
// requests each write costs, bad input costing none, a report of another
// index refused, an encrypted type indexed on its clear fields, and a
// backfill by Verify and Repair.
func RunModel(t *testing.T, env Env) {
	ctx := t.Context()
	directory := func(t *testing.T, n int) {
		const depts = 20
		m, w, drain, queue := workerModelQ(t, env, &reqcount.Counter{}, true)
		dept := func(i int) string { return fmt.Sprintf("Dept%02d", i%depts) }
		all := map[string]*DirEmp{}
		sum, err := m.Load(ctx, func(yield func(*DirEmp) bool) {
			for i := range n {
				e := workerOf(dept(i), i)
				all[e.RowKey] = e
				if !yield(e) {
					return
				}
			}
		}, &patterns.ModelLoadOptions{Idempotent: true})
		if err != nil || sum.Entities != n || len(sum.Failures) != 0 {
			t.Fatalf("Load: %+v %v; want %d entities, no failure", sum, err, n)
		}
		if sum.Transactions > n/50+depts {
			t.Fatalf("Load took %d transactions for %d entities (a primary and its copy each): want at most %d", sum.Transactions, n, n/50+depts)
		}
		drain()

		// Lookups by email are exact, in the department's partition.
		for i := 0; i < n; i += n / 20 {
			want := all[fmt.Sprintf("empid_%06d", i)]
			got, err := m.Lookup(ctx, "email", dept(i), want.Email, nil)
			if err != nil || got.RowKey != want.RowKey || got.LastName != want.LastName {
				t.Fatalf("Lookup email %s: %+v %v", want.Email, got, err)
			}
		}
		// The last-name list across departments holds exactly the primaries.
		byLast := map[string][]string{}
		for _, e := range all {
			byLast[e.LastName] = append(byLast[e.LastName], e.PartitionKey+"/"+e.RowKey)
		}
		checkLast := func(name string, want []string) {
			t.Helper()
			got, err := m.LookupEntities(ctx, "lastname", "", name, nil)
			if err != nil {
				t.Fatal(err)
			}
			var have []string
			for _, e := range got {
				have = append(have, e.PartitionKey+"/"+e.RowKey)
			}
			slices.Sort(have)
			slices.Sort(want)
			if !slices.Equal(have, want) {
				t.Fatalf("last name %s: %d entities %v…, want %d", name, len(have), have[:min(3, len(have))], len(want))
			}
		}
		checkLast("Last05", byLast["Last05"])

		// Logins in a log tail of the same partitions.
		logins, err := patterns.NewLogTail[Login](tableOf(table.New[Login](m.Table().Client(), nil)), nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			if err := logins.AppendAt(ctx, dept(0), time.Date(2026, 11, 26, 9, i, 0, 0, time.UTC), &Login{Who: fmt.Sprintf("empid_%06d", i*depts)}, nil); err != nil {
				t.Fatal(err)
			}
		}
		latest, err := logins.Latest(ctx, dept(0), 2, nil)
		if err != nil || len(latest) != 2 || latest[0].Who != fmt.Sprintf("empid_%06d", 2*depts) {
			t.Fatalf("latest logins: %+v %v", latest, err)
		}

		// A partition query sees primaries only: no email copy, no login.
		rich := table.Prop("Salary").Ge(1400)
		got := 0
		for e, err := range m.Query(ctx, &table.QueryOptions{Filter: table.Partition(dept(3)).And(rich)}) {
			if err != nil {
				t.Fatal(err)
			}
			if want := all[e.RowKey]; want == nil || want.PartitionKey != dept(3) || e.Salary < 1400 {
				t.Fatalf("the partition query returned (%q, %q), which is no primary it selects", e.PartitionKey, e.RowKey)
			}
			got++
		}
		want := 0
		for _, e := range all {
			if e.PartitionKey == dept(3) && e.Salary >= 1400 {
				want++
			}
		}
		if got != want {
			t.Fatalf("the partition query returned %d primaries, want %d", got, want)
		}

		// Departed employees move to the archive with every index row.
		archiveTbl, err := table.New[DirEmp](env.NewTable(t, &reqcount.Counter{}), nil)
		if err != nil {
			t.Fatal(err)
		}
		mover := consistency.NewMover(m.MoveSource(), archiveTbl, consistency.NewSender(queue, nil), nil)
		if err := w.Handle(mover.MessageType(), mover.Process); err != nil {
			t.Fatal(err)
		}
		var departed []*DirEmp
		for i := 5; i < n; i += n / 25 {
			departed = append(departed, all[fmt.Sprintf("empid_%06d", i)])
		}
		for _, e := range departed {
			if err := mover.Request(ctx, e.PartitionKey, e.RowKey, nil); err != nil {
				t.Fatal(err)
			}
		}
		drain()
		for _, e := range departed {
			if _, err := archiveTbl.Get(ctx, e.PartitionKey, e.RowKey, nil); err != nil {
				t.Fatalf("archive of %s: %v", e.RowKey, err)
			}
			if _, err := m.Get(ctx, e.PartitionKey, e.RowKey, nil); !table.Is(err, table.ErrNotFound) {
				t.Fatalf("the moved %s is still a primary: %v", e.RowKey, err)
			}
			if _, err := m.Lookup(ctx, "email", e.PartitionKey, e.Email, nil); !table.Is(err, table.ErrNotFound) {
				t.Fatalf("the moved %s still has its email copy: %v", e.RowKey, err)
			}
			delete(all, e.RowKey)
		}
		byLast = map[string][]string{}
		for _, e := range all {
			byLast[e.LastName] = append(byLast[e.LastName], e.PartitionKey+"/"+e.RowKey)
		}
		for _, e := range departed {
			checkLast(e.LastName, byLast[e.LastName])
		}

		// One Verify of the model is clean.
		r, err := verifyOf(ctx, m, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !r.OK() || r.Primaries != len(all) {
			t.Fatalf("Verify: %d primaries (want %d), missing %d, orphans %d, stale %d: %v %v %v", r.Primaries, len(all), len(r.Missing), len(r.Orphans), len(r.Stale), firstIssue(r.Missing), firstIssue(r.Orphans), firstIssue(r.Stale))
		}
	}
	t.Run("the employee directory: load, lookups, queries, log tail, archive, verify", func(t *testing.T) {
		// 1,000 employees, 500 under adversarial paging (which proves page
		// loops, not scale): the code paths of the guide's 5,000, which
		// the long run adds below (under -race they cost a minute of CPU).
		n := 1000
		if strings.Contains(env.Name, "adversarial") {
			n = 500
		}
		directory(t, n)
	})
	if env.Fake != nil && !strings.Contains(env.Name, "adversarial") {
		t.Run("the employee directory at the guide's 5,000", func(t *testing.T) {
			testenv.Long(t, "the employee directory at the guide's 5,000 employees, on the fake")
			directory(t, 5000)
		})
	}

	t.Run("requests: an Add is one transaction; an index outside the partition adds its one message", func(t *testing.T) {
		c := &reqcount.Counter{}
		local, _, _ := workerModel(t, env, c, false)
		c.Reset()
		if err := local.Add(ctx, workerOf("Sales", 1), nil); err != nil {
			t.Fatal(err)
		}
		if got := c.N(); got != 1 {
			t.Fatalf("Add with a same-partition index: %d requests, want 1 (one transaction)", got)
		}
		c2 := &reqcount.Counter{}
		both, _, _ := workerModel(t, env, c2, true)
		c2.Reset()
		if err := both.Add(ctx, workerOf("Sales", 2), nil); err != nil {
			t.Fatal(err)
		}
		if got := c2.N(); got != 3 {
			t.Fatalf("Add with a cross-partition index too: %d requests, want 3 (the message hidden, the transaction, the message shown)", got)
		}
		// A load run again after a crash settles each stored entity with
		// one read and sends the rest once: no round of retries.
		again := []*DirEmp{workerOf("Ops", 7), workerOf("Ops", 8), workerOf("Ops", 9)}
		if _, err := both.Load(ctx, slices.Values(again), nil); err != nil {
			t.Fatal(err)
		}
		c2.Reset()
		sum, err := both.Load(ctx, slices.Values([]*DirEmp{workerOf("Ops", 7), workerOf("Ops", 8), workerOf("Ops", 9)}), &patterns.ModelLoadOptions{Idempotent: true})
		if err != nil || sum.Entities != 3 || len(sum.Failures) != 0 {
			t.Fatalf("Load again: %+v %v", sum, err)
		}
		if got := c2.N(); got != 9 {
			t.Fatalf("Load again of 3 stored entities: %d requests, want 9 (per entity: the message hidden, the refused transaction, the read that settles it)", got)
		}
	})

	t.Run("bad input is refused before any request", func(t *testing.T) {
		c := &reqcount.Counter{}
		m, _, _ := workerModel(t, env, c, true)
		c.Reset()
		notPrimary := workerOf("Sales", 3)
		notPrimary.RowKey = "emp_000003"
		badEmail := workerOf("Sales", 4)
		badEmail.Email = "a/b@contoso.com"
		for _, v := range []*DirEmp{nil, notPrimary, badEmail} {
			if err := m.Add(ctx, v, nil); err == nil {
				t.Fatalf("Add(%+v) succeeded", v)
			} else if ie := (*table.InputError)(nil); !errors.As(err, &ie) {
				t.Fatalf("Add(%+v): %v is no *table.InputError", v, err)
			}
		}
		if _, err := m.Load(ctx, slices.Values([]*DirEmp{badEmail}), nil); err == nil {
			t.Fatal("Load of a bad entity succeeded")
		}
		if got := c.N(); got != 0 {
			t.Fatalf("refused writes sent %d requests", got)
		}
	})

	t.Run("Repair refuses an index the model does not declare; Verify then Repair backfill entities written around the model", func(t *testing.T) {
		c := &reqcount.Counter{}
		m, _, drain := workerModel(t, env, c, true)
		for i := range 3 {
			if err := m.Add(ctx, workerOf("HR", i), nil); err != nil {
				t.Fatal(err)
			}
		}
		// Two written around the model, as before it existed.
		for i := 3; i < 5; i++ {
			if err := m.Table().Add(ctx, workerOf("HR", i), nil); err != nil {
				t.Fatal(err)
			}
		}
		drain()
		c.Reset()
		if _, err := m.Repair(ctx, &patterns.RepairOptions{VerifyOptions: patterns.VerifyOptions{Indexes: []string{"nosuch"}}}); !unknownIndex(err) || c.N() != 0 {
			t.Fatalf("Repair of an index the model does not declare: %v after %d requests; want an InputError on Indexes and none", err, c.N())
		}
		r, err := verifyOf(ctx, m, &patterns.VerifyOptions{Partition: "HR"})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Missing) != 4 || r.Primaries != 5 { // each of the two lacks its email copy and its last-name entry
			t.Fatalf("Verify: %d primaries, missing %v; want 5 and 4 missing", r.Primaries, r.Missing)
		}
		if _, err := m.Repair(ctx, repairOpts(r, nil)); err != nil {
			t.Fatal(err)
		}
		if r, err := verifyOf(ctx, m, nil); err != nil || !r.OK() {
			t.Fatalf("Verify after Repair: %+v %v", r, err)
		}
	})

	t.Run("the guide's key layout declared on the type: Sales / empid_000123 / email_…", func(t *testing.T) {
		type Declared struct {
			table.Meta `table:",rkprefix:empid_"`
			Dept       string `table:"Dept,pk"`
			ID         int    `table:"ID,rk,pad:6"`
			Email      string
		}
		tbl, err := table.New[Declared](env.NewTable(t, &reqcount.Counter{}), nil)
		if err != nil {
			t.Fatal(err)
		}
		m, err := patterns.OpenModel(ctx, tbl, &patterns.ModelOptions[Declared]{Name: "declared", Primary: "empid_",
			Copies: []patterns.IndexDef[Declared]{{Name: "email", Prefix: "email_", Unique: true, Value: func(d *Declared) string { return d.Email }}}})
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Add(ctx, &Declared{Dept: "Sales", ID: 123, Email: "jonesj@contoso.com"}, nil); err != nil {
			t.Fatal(err)
		}
		var keysStored []string
		for e, err := range tbl.Entities().Query(ctx, nil) {
			if err != nil {
				t.Fatal(err)
			}
			keysStored = append(keysStored, e.PartitionKey+"/"+e.RowKey)
		}
		if want := []string{"Sales/email_jonesj@contoso.com", "Sales/empid_000123"}; !slices.Equal(keysStored, want) {
			t.Fatalf("stored keys %q, want the guide's %q", keysStored, want)
		}
		got, err := m.Lookup(ctx, "email", "Sales", "jonesj@contoso.com", nil)
		if err != nil || got.ID != 123 || got.Dept != "Sales" {
			t.Fatalf("Lookup: %+v %v", got, err)
		}
	})

	t.Run("an encrypted type is indexed on its clear fields", func(t *testing.T) {
		type Secret struct {
			table.Meta
			Email string
			SSN   string `table:",encrypt"`
		}
		enc := &table.Encryption{KeyID: "k1", Keys: table.LocalKeys{"k1": []byte("0123456789abcdef0123456789abcdef")}}
		client := env.NewTable(t, &reqcount.Counter{})
		tbl, err := table.New[Secret](client, &table.Options{Encryption: enc})
		if err != nil {
			t.Fatal(err)
		}
		m, err := patterns.OpenModel(ctx, tbl, &patterns.ModelOptions[Secret]{Name: "secret", Primary: "id_",
			Copies: []patterns.IndexDef[Secret]{{Name: "email", Prefix: "email_", Unique: true, Value: func(s *Secret) string { return s.Email }}}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := patterns.OpenModel(ctx, tbl, &patterns.ModelOptions[Secret]{Name: "leaky", Primary: "id_",
			Copies: []patterns.IndexDef[Secret]{{Name: "email", Prefix: "email_", Value: func(s *Secret) string { return s.Email }, Project: []string{"SSN"}}}}); !errors.Is(err, patterns.ErrBadDefinition) {
			t.Fatalf("a copy projecting the encrypted field: %v, want ErrBadDefinition", err)
		}
		s := &Secret{Meta: table.Meta{PartitionKey: "p", RowKey: "id_1"}, Email: "x@contoso.com", SSN: "123-45-6789"}
		if err := m.Add(ctx, s, nil); err != nil {
			t.Fatal(err)
		}
		got, err := m.Get(ctx, "p", "id_1", nil)
		if err != nil || got.SSN != "123-45-6789" {
			t.Fatalf("Get: %+v %v", got, err)
		}
		cp, err := m.Lookup(ctx, "email", "p", "x@contoso.com", nil)
		if err != nil || cp.RowKey != "id_1" || cp.SSN != "123-45-6789" {
			t.Fatalf("Lookup: %+v %v; want the whole primary, SSN read from it", cp, err)
		}
		row, err := tbl.Entities().Get(ctx, "p", "email_x@contoso.com", nil)
		if err != nil {
			t.Fatal(err)
		}
		for name := range row.Properties {
			if name == "SSN" || name == "TkEncryption" {
				t.Fatalf("the copy holds %s: %v", name, slices.Collect(maps.Keys(row.Properties)))
			}
		}
		if _, err := m.Modify(ctx, "p", "id_1", func(s *Secret) error { s.Email = "y@contoso.com"; return nil }, nil); err != nil {
			t.Fatal(err)
		}
		if r, err := verifyOf(ctx, m, nil); err != nil || !r.OK() || r.Primaries != 1 {
			t.Fatalf("Verify: %+v %v", r, err)
		}
	})
}

func firstIssue(is []patterns.IndexIssue) any {
	if len(is) == 0 {
		return nil
	}
	return is[0]
}
