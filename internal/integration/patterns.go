package integration

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/internal/reqcount"
	"github.com/tablekit/tablekit/internal/seqs"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/table"
)

// Staff is the guide's employee for the index patterns.
type Staff struct {
	table.Meta
	FirstName string
	LastName  string
	Email     string
	Age       int
}

func staff(id, first, last, email string, age int) *Staff {
	return &Staff{Meta: table.Meta{PartitionKey: "Sales", RowKey: "empid_" + id}, FirstName: first, LastName: last, Email: email, Age: age}
}

func staffIndexes() []patterns.IndexDef[Staff] {
	return []patterns.IndexDef[Staff]{
		{Name: "email", Prefix: "email_", Unique: true, Value: func(s *Staff) string { return s.Email }},
		{Name: "lname", Prefix: "lname_", Value: func(s *Staff) string { return s.LastName }, Project: []string{"FirstName", "LastName"}},
	}
}

func rowKeysOf[T any](t *testing.T, seq func(yield func(*T, error) bool), meta func(*T) *table.Meta) []string {
	t.Helper()
	var out []string
	for v, err := range seq {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, meta(v).RowKey)
	}
	return out
}

// RunPatterns runs the within-partition patterns.
func RunPatterns(t *testing.T, env Env) {
	ctx := t.Context()

	t.Run("intra-partition index: writes, lookups and their request counts", func(t *testing.T) {
		c := &reqcount.Counter{}
		client := env.NewTable(t, c)
		idx, err := patterns.OpenModel(ctx, tableOf(table.New[Staff](client, nil)), &patterns.ModelOptions[Staff]{Name: "idx", Primary: "empid_", Copies: staffIndexes()})
		if err != nil {
			t.Fatal(err)
		}
		wantRequests(t, c, 1, "opening the model (the read of its indexes' state)")
		don := staff("000123", "Don", "Hall", "donh@contoso.com", 34)
		if err := idx.Add(ctx, don, nil); err != nil {
			t.Fatal(err)
		}
		wantRequests(t, c, 1, "Add (new)")
		for _, s := range []*Staff{staff("000152", "Jun", "Jones", "junc@contoso.com", 47), staff("000223", "Ben", "Jones", "jonesj@contoso.com", 65)} {
			if err := idx.Add(ctx, s, nil); err != nil {
				t.Fatal(err)
			}
		}
		c.Reset()
		got, err := idx.Lookup(ctx, "email", "Sales", "jonesj@contoso.com", nil)
		if err != nil || got.RowKey != "empid_000223" || got.FirstName != "Ben" || got.Age != 65 || got.ETag != "" {
			t.Fatalf("Lookup = %+v, %v", got, err)
		}
		wantRequests(t, c, 1, "Lookup")
		meta := func(s *Staff) *table.Meta { return &s.Meta }
		if jones := rowKeysOf(t, idx.Find(ctx, "lname", "Sales", "Jones", nil), meta); !slices.Equal(jones, []string{"empid_000152", "empid_000223"}) {
			t.Fatalf("Find Jones = %q", jones)
		}
		wantRequests(t, c, 3, "Find (the range, then the primary of each projected copy)")
		for v, _ := range idx.Find(ctx, "lname", "Sales", "Jones", nil) {
			if v.Age == 0 || v.FirstName == "" || v.ETag == "" {
				t.Fatalf("Find of a projected copy returns the whole primary: %+v", v)
			}
		}
		if r := rowKeysOf(t, idx.Range(ctx, "email", "Sales", "d", "k", nil), meta); !slices.Equal(r, []string{"empid_000123", "empid_000223", "empid_000152"}) {
			t.Fatalf("Range email [d, k) = %q", r)
		}
		if r := rowKeysOf(t, idx.Prefix(ctx, "lname", "Sales", "Ha", nil), meta); !slices.Equal(r, []string{"empid_000123"}) {
			t.Fatalf("Prefix lname Ha = %q", r)
		}
		if r := rowKeysOf(t, idx.Range(ctx, "lname", "Sales", "Hall", "Jones", nil), meta); !slices.Equal(r, []string{"empid_000123"}) {
			t.Fatalf("Range lname [Hall, Jones) = %q", r)
		}
		c.Reset()

		// Change the email at the version in hand: a read and the transaction.
		next := *don
		next.Email = "don.hall@contoso.com"
		if err := idx.Update(ctx, &next, &table.UpdateOptions{Mode: aztables.UpdateModeReplace}); err != nil {
			t.Fatal(err)
		}
		wantRequests(t, c, 2, "Update")
		if _, err := idx.Lookup(ctx, "email", "Sales", "donh@contoso.com", nil); !table.Is(err, table.ErrNotFound) {
			t.Fatalf("the old email copy is still there: %v", err)
		}
		if v, err := idx.Lookup(ctx, "email", "Sales", "don.hall@contoso.com", nil); err != nil || v.RowKey != "empid_000123" {
			t.Fatalf("new email: %+v %v", v, err)
		}
		// The guard: an Update from the stale version fails whole.
		stale := *don
		stale.Email = "stale@contoso.com"
		if err := idx.Update(ctx, &stale, &table.UpdateOptions{Mode: aztables.UpdateModeReplace}); !table.Is(err, table.ErrPreconditionFailed) {
			t.Fatalf("Update from a stale version: %v", err)
		}
		if _, err := idx.Lookup(ctx, "email", "Sales", "stale@contoso.com", nil); !table.Is(err, table.ErrNotFound) {
			t.Fatal("a failed Put wrote a copy")
		}
		c.Reset()
		again := next
		again.LastName = "Hall-Jones"
		if err := idx.Upsert(ctx, &again, &table.UpsertOptions{Mode: aztables.UpdateModeReplace}); err != nil {
			t.Fatal(err)
		}
		wantRequests(t, c, 2, "Upsert")
		if _, err := idx.Modify(ctx, "Sales", "empid_000123", func(s *Staff) error { s.Age++; return nil }, nil); err != nil {
			t.Fatal(err)
		}
		wantRequests(t, c, 2, "Modify")
		// A unique value held by another entity is refused whole.
		dup := staff("000999", "Eve", "Doe", "jonesj@contoso.com", 20)
		err = idx.Add(ctx, dup, nil)
		var taken *patterns.ValueTakenError
		var re *azcore.ResponseError
		if !errors.As(err, &taken) || taken.Index != "email" || !errors.As(err, &re) || table.Is(err, table.ErrLostRace) {
			t.Fatalf("duplicate unique value: %v", err)
		}
		if _, err := idx.Get(ctx, "Sales", "empid_000999", nil); !table.Is(err, table.ErrNotFound) {
			t.Fatal("the refused entity was written")
		}
		cur, _ := idx.Get(ctx, "Sales", "empid_000223", nil)
		c.Reset()
		if err := idx.Delete(ctx, "Sales", "empid_000223", &table.DeleteOptions{IfMatch: &cur.ETag}); err != nil {
			t.Fatal(err)
		}
		wantRequests(t, c, 2, "Delete at a version (a read and the transaction)")
		if jones := rowKeysOf(t, idx.Find(ctx, "lname", "Sales", "Jones", nil), meta); !slices.Equal(jones, []string{"empid_000152"}) {
			t.Fatalf("after delete, Jones = %q", jones)
		}
		if err := idx.Delete(ctx, "Sales", "empid_000223", &table.DeleteOptions{IfExists: true}); err != nil {
			t.Fatal(err)
		}
		rep, err := verifyOf(ctx, idx, &patterns.VerifyOptions{Partition: "Sales"})
		if err != nil || !rep.OK() || rep.Primaries != 2 || rep.IndexRows != 4 {
			t.Fatalf("Verify after clean writes: %+v %v", rep, err)
		}
	})

	t.Run("intra-partition index: verify, repair and backfill", func(t *testing.T) {
		c := &reqcount.Counter{}
		client := env.NewTable(t, c)
		emailOnly := staffIndexes()[:1]
		idx, _ := patterns.OpenModel(ctx, tableOf(table.New[Staff](client, nil)), &patterns.ModelOptions[Staff]{Name: "idx", Primary: "empid_", Copies: emailOnly})
		for i, s := range []*Staff{staff("000001", "A", "Jones", "a@x.com", 1), staff("000002", "B", "Jones", "b@x.com", 2), staff("000003", "C", "Smith", "c@x.com", 3)} {
			if err := idx.Add(ctx, s, nil); err != nil {
				t.Fatal(i, err)
			}
		}
		plain, _ := table.New[Staff](client, nil)
		// Damage made around tablekit: a lost copy, a stale one, an orphan.
		if err := plain.Delete(ctx, "Sales", "email_a@x.com", nil); err != nil {
			t.Fatal(err)
		}
		staleCopy := &Kept{Meta: table.Meta{PartitionKey: "Sales", RowKey: "email_b@x.com"}, Name: "x",
			Other: table.Extra{"FirstName": {Value: []byte(`"Wrong"`)}, "TkIndexOf": {Value: []byte(`"empid_000002"`)}}}
		kt, _ := table.New[Kept](client, nil)
		if err := kt.Upsert(ctx, staleCopy, &table.UpsertOptions{Mode: aztables.UpdateModeReplace}); err != nil {
			t.Fatal(err)
		}
		orphan := &Kept{Meta: table.Meta{PartitionKey: "Sales", RowKey: "email_gone@x.com"}, Other: table.Extra{"TkIndexOf": {Value: []byte(`"empid_000404"`)}}}
		if err := kt.Add(ctx, orphan, nil); err != nil {
			t.Fatal(err)
		}
		rep, err := verifyOf(ctx, idx, &patterns.VerifyOptions{Partition: "Sales"})
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Missing) != 1 || rep.Missing[0].Copy != "email_a@x.com" || len(rep.Stale) != 1 || rep.Stale[0].Copy != "email_b@x.com" ||
			len(rep.Orphans) != 1 || rep.Orphans[0].Copy != "email_gone@x.com" {
			t.Fatalf("report = %+v", rep)
		}
		c.Reset()
		sum, err := idx.Repair(ctx, repairOpts(rep, nil))
		if err != nil || sum.Written != 2 || sum.Deleted != 1 {
			t.Fatalf("Repair = %+v, %v", sum, err)
		}
		wantRequests(t, c, 3, "Repair of two primaries and one orphan (the partition's page, one packed transaction, the orphan's delete)")
		if rep, err := verifyOf(ctx, idx, &patterns.VerifyOptions{Partition: "Sales"}); err != nil || !rep.OK() {
			t.Fatalf("after Repair: %+v %v", rep, err)
		}
		// Backfill: a new index over existing data.
		both, _ := patterns.OpenModel(ctx, tableOf(table.New[Staff](client, nil)), &patterns.ModelOptions[Staff]{Name: "idx", Primary: "empid_", Copies: staffIndexes()})
		rep, _ = verifyOf(ctx, both, &patterns.VerifyOptions{Partition: "Sales"})
		if len(rep.Missing) != 3 || rep.Missing[0].Index != "lname" {
			t.Fatalf("backfill report: %+v", rep)
		}
		if _, err := both.Repair(ctx, repairOpts(rep, nil)); err != nil {
			t.Fatal(err)
		}
		meta := func(s *Staff) *table.Meta { return &s.Meta }
		if jones := rowKeysOf(t, both.Find(ctx, "lname", "Sales", "Jones", nil), meta); len(jones) != 2 {
			t.Fatalf("after backfill, Jones = %q", jones)
		}
		// An entity changed after Repair read its partition and before it
		// repaired it (here, from the Issue callback, which runs in
		// between) fails that repair instead of writing stale copies.
		if err := plain.Delete(ctx, "Sales", "lname_Smith!000003!", nil); err != nil {
			t.Fatal(err)
		}
		changed := false
		change := func(patterns.IndexIssue) error {
			if changed {
				return nil
			}
			changed = true
			_, err := both.Modify(ctx, "Sales", "empid_000003", func(s *Staff) error { s.LastName = "Smyth"; return nil }, nil)
			return err
		}
		if _, err := both.Repair(ctx, &patterns.RepairOptions{VerifyOptions: patterns.VerifyOptions{Partition: "Sales", Issue: change}}); !changed || !table.Is(err, table.ErrPreconditionFailed) {
			t.Fatalf("Repair of an entity changed since its partition was read: %v", err)
		}
		if rep, _ := verifyOf(ctx, both, &patterns.VerifyOptions{Partition: "Sales"}); !rep.OK() {
			t.Fatalf("the guarded repair left damage: %+v", rep)
		}
	})

	t.Run("intra-partition index: bad definitions, no requests", func(t *testing.T) {
		c := &reqcount.Counter{}
		client := env.NewTable(t, c)
		v := func(s *Staff) string { return s.Email }
		var fifty []patterns.IndexDef[Staff]
		for i := 0; i < 50; i++ {
			fifty = append(fifty, patterns.IndexDef[Staff]{Name: fmt.Sprint("i", i), Prefix: fmt.Sprintf("i%02d_", i), Value: v})
		}
		cases := map[string][]patterns.IndexDef[Staff]{
			"50 indexes need 101 operations": fifty,
			"overlapping prefixes":           {{Name: "a", Prefix: "em", Value: v}, {Name: "b", Prefix: "email_", Value: v}},
			"prefix inside the primary's":    {{Name: "a", Prefix: "empid_x", Value: v}},
			"unknown projection":             {{Name: "a", Prefix: "a_", Value: v, Project: []string{"Salary"}}},
			"no Value":                       {{Name: "a", Prefix: "a_"}},
			"duplicate name":                 {{Name: "a", Prefix: "a_", Value: v}, {Name: "a", Prefix: "b_", Value: v}},
			"bad prefix":                     {{Name: "a", Prefix: "a/", Value: v}},
		}
		for name, defs := range cases {
			if _, err := patterns.OpenModel(ctx, tableOf(table.New[Staff](client, nil)), &patterns.ModelOptions[Staff]{Name: "idx", Primary: "empid_", Copies: defs}); !errors.Is(err, patterns.ErrBadDefinition) {
				t.Errorf("%s: %v", name, err)
			}
		}
		idx, _ := patterns.OpenModel(ctx, tableOf(table.New[Staff](client, nil)), &patterns.ModelOptions[Staff]{Name: "idx", Primary: "empid_", Copies: staffIndexes()})
		wantRequests(t, c, 1, "opening the model (the read of its indexes' state)")
		if err := idx.Add(ctx, &Staff{Meta: table.Meta{PartitionKey: "Sales", RowKey: "000123"}}, nil); !errors.Is(err, patterns.ErrNotPrimary) {
			t.Errorf("RowKey without the primary prefix: %v", err)
		}
		if err := idx.Add(ctx, staff("1", "a", "b", "a/b@x.com", 1), nil); !errors.Is(err, keys.ErrForbiddenChar) {
			t.Errorf("unique value with a slash: %v", err)
		}
		if err := idx.Add(ctx, nil, nil); !errors.Is(err, table.ErrNilValue) {
			t.Errorf("nil: %v", err)
		}
		if _, err := idx.Lookup(ctx, "lname", "Sales", "Jones", nil); !errors.Is(err, patterns.ErrNotUnique) {
			t.Errorf("Lookup on a non-unique index: %v", err)
		}
		if _, err := idx.Lookup(ctx, "nope", "Sales", "x", nil); !errors.Is(err, patterns.ErrUnknownIndex) {
			t.Errorf("unknown index: %v", err)
		}
		wantRequests(t, c, 0, "bad definitions and inputs")
	})

	t.Run("index entities: counts, overflow into parts, change of value", func(t *testing.T) {
		c := &reqcount.Counter{}
		client := env.NewTable(t, c)
		lastName := func(s *Staff) string { return s.LastName }
		// A tiny list size makes the value's list continue in new parts.
		ix, err := patterns.OpenModel(ctx, tableOf(table.New[Staff](client, nil)), &patterns.ModelOptions[Staff]{Name: "ix", Primary: "empid_",
			Lists: []patterns.ListDef[Staff]{{Name: "lname", Prefix: "lname_", Value: lastName, MaxListUnits: 40}}})
		if err != nil {
			t.Fatal(err)
		}
		wantRequests(t, c, 1, "opening the model (the read of its indexes' state)")
		rks := func(ids []patterns.Owner, err error) []string {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, id := range ids {
				out = append(out, id.RowKey)
			}
			return out
		}
		first := &Staff{Meta: table.Meta{PartitionKey: "Sales", RowKey: "empid_000152"}, LastName: "O'Brien"}
		if err := ix.Add(ctx, first, nil); err != nil {
			t.Fatalf("Add: %v", err)
		}
		wantRequests(t, c, 2, "Add with a list, without contention (the list's read and the transaction)")
		for _, id := range []string{"000223", "000301", "000302", "000303"} {
			if err := ix.Add(ctx, &Staff{Meta: table.Meta{PartitionKey: "Sales", RowKey: "empid_" + id}, LastName: "O'Brien"}, nil); err != nil {
				t.Fatal(err)
			}
		}
		c.Reset()
		if ids := rks(ix.IDs(ctx, "lname", "Sales", "O'Brien", nil)); !slices.Equal(ids, []string{"empid_000152", "empid_000223", "empid_000301", "empid_000302", "empid_000303"}) {
			t.Fatalf("IDs = %q", ids)
		}
		wantRequests(t, c, 1, "IDs over several parts")
		raw, _ := table.New[table.Entity](client, nil)
		all, _ := seqs.Collect(raw.Query(ctx, &table.QueryOptions{Filter: table.RowPrefix("Sales", "lname_")}))
		if len(all) < 2 {
			t.Fatalf("%d index entities: the list did not continue in a new part", len(all))
		}
		if err := ix.Add(ctx, first, nil); !table.Is(err, table.ErrAlreadyExists) {
			t.Fatalf("Add of an existing entity: %v", err)
		}
		ents, err := ix.LookupEntities(ctx, "lname", "Sales", "O'Brien", nil)
		if err != nil || len(ents) != 5 || ents[0].RowKey != "empid_000152" {
			t.Fatalf("LookupEntities: %d %v", len(ents), err)
		}
		// Change of value: three entities in one transaction.
		cur, _ := ix.Get(ctx, "Sales", "empid_000223", nil)
		next := *cur
		next.LastName = "Jones"
		c.Reset()
		if err := ix.Update(ctx, &next, &table.UpdateOptions{Mode: aztables.UpdateModeReplace}); err != nil {
			t.Fatal(err)
		}
		wantRequests(t, c, 4, "Update of a listed value (the entity's read, the two lists' reads and the transaction)")
		jones := rks(ix.IDs(ctx, "lname", "Sales", "Jones", nil))
		obrien := rks(ix.IDs(ctx, "lname", "Sales", "O'Brien", nil))
		if !slices.Equal(jones, []string{"empid_000223"}) || slices.Contains(obrien, "empid_000223") || len(obrien) != 4 {
			t.Fatalf("after Update: Jones %q, O'Brien %q", jones, obrien)
		}
		stale := *cur
		stale.LastName = "Smith"
		if err := ix.Update(ctx, &stale, &table.UpdateOptions{Mode: aztables.UpdateModeReplace}); !table.Is(err, table.ErrPreconditionFailed) {
			t.Fatalf("Update from a stale version: %v", err)
		}
		if err := ix.Delete(ctx, "Sales", "empid_000223", nil); err != nil {
			t.Fatal(err)
		}
		if jones := rks(ix.IDs(ctx, "lname", "Sales", "Jones", nil)); len(jones) != 0 {
			t.Fatalf("after Delete: %q", jones)
		}
		if _, err := ix.Get(ctx, "Sales", "empid_000223", nil); !table.Is(err, table.ErrNotFound) {
			t.Fatal("Delete left the entity")
		}
	})

	t.Run("index entities: 32 concurrent writers lose nothing", func(t *testing.T) {
		c := &reqcount.Counter{}
		client := env.NewTable(t, c)
		ix, _ := patterns.OpenModel(ctx, tableOf(table.New[Staff](client, nil)), &patterns.ModelOptions[Staff]{Name: "ix", Primary: "empid_",
			Lists: []patterns.ListDef[Staff]{{Name: "lname", Prefix: "lname_", Value: func(s *Staff) string { return s.LastName }}}})
		const writers = 32
		var wg sync.WaitGroup
		errs := make(chan error, writers)
		for w := 0; w < writers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs <- ix.Add(ctx, &Staff{Meta: table.Meta{PartitionKey: "Sales", RowKey: fmt.Sprintf("empid_%06d", w)}, LastName: "Jones"}, nil)
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		ids, err := ix.IDs(ctx, "lname", "Sales", "Jones", nil)
		if err != nil || len(ids) != writers {
			t.Fatalf("%d of %d IDs in the index (%v)", len(ids), writers, err)
		}
		slices.SortFunc(ids, func(a, b patterns.Owner) int { return strings.Compare(a.RowKey, b.RowKey) })
		if ids = slices.Compact(ids); len(ids) != writers {
			t.Fatal("duplicate IDs")
		}
		t.Logf("%s: %d writers, %d requests", env.Name, writers, c.N())
	})

	t.Run("denormalized copy changes with its source in one transaction", func(t *testing.T) {
		c := &reqcount.Counter{}
		client := env.NewTable(t, c)
		type Department struct {
			table.Meta
			Name         string
			ManagerID    string
			ManagerName  string
			ManagerEmail string
		}
		d, err := patterns.NewDenormalized[Staff, Department](tableOf(table.New[Staff](client, nil)), tableOf(table.New[Department](client, nil)), []string{"ManagerName", "ManagerEmail"}, func(s *Staff, dep *Department) {
			dep.ManagerName, dep.ManagerEmail = s.FirstName+" "+s.LastName, s.Email
		})
		if err != nil {
			t.Fatal(err)
		}
		deps, _ := table.New[Department](client, nil)
		if err := deps.Add(ctx, &Department{Meta: table.Meta{PartitionKey: "Sales", RowKey: "dept"}, Name: "Sales", ManagerID: "000123"}, nil); err != nil {
			t.Fatal(err)
		}
		mgr := staff("000123", "Don", "Hall", "donh@contoso.com", 34)
		c.Reset()
		if err := d.Update(ctx, mgr, []string{"dept"}, nil); err != nil {
			t.Fatal(err)
		}
		wantRequests(t, c, 1, "source and copy")
		dep, _ := deps.Get(ctx, "Sales", "dept", nil)
		if dep.ManagerName != "Don Hall" || dep.ManagerEmail != "donh@contoso.com" || dep.Name != "Sales" || dep.ManagerID != "000123" {
			t.Fatalf("department = %+v", dep)
		}
		mgr.Email = "don.hall@contoso.com"
		if err := d.Update(ctx, mgr, []string{"dept", "missing"}, nil); !table.Is(err, table.ErrNotFound) {
			t.Fatalf("missing target: %v", err)
		}
		st, _ := table.New[Staff](client, nil)
		if s, _ := st.Get(ctx, "Sales", "empid_000123", nil); s.Email != "donh@contoso.com" {
			t.Fatal("the source changed although its copy could not")
		}
		if _, err := patterns.NewDenormalized[Staff, Department](tableOf(table.New[Staff](client, nil)), tableOf(table.New[Department](client, nil)), []string{"Nope"}, func(*Staff, *Department) {}); !errors.Is(err, patterns.ErrBadDefinition) {
			t.Fatalf("bad field: %v", err)
		}
	})

	t.Run("related rows: parent and children in one range query", func(t *testing.T) {
		c := &reqcount.Counter{}
		client := env.NewTable(t, c)
		type Emp struct {
			table.Meta
			EntityType string
			Name       string
		}
		type Review struct {
			table.Meta
			EntityType    string
			ManagerRating int
			PeerRating    int
			Comments      string
		}
		reg := table.NewRegistry(nil)
		_ = table.Register[Emp](reg, "Employee")
		_ = table.Register[Review](reg, "Review")
		// Related rows need no pattern type: one transaction writes the
		// parent and its rows, and a Registry query over the parent's
		// RowKey prefix (fixed-width IDs) reads them back.
		parent := &Emp{Meta: table.Meta{PartitionKey: "Sales", RowKey: "000123"}, EntityType: "Employee", Name: "Don Hall"}
		ops := []batch.Op{batch.Upsert(parent, aztables.UpdateModeReplace)}
		for _, year := range []string{"2010", "2011", "2012"} {
			rk, err := keys.Compound{}.Join("000123", year)
			if err != nil {
				t.Fatal(err)
			}
			ops = append(ops, batch.Upsert(&Review{Meta: table.Meta{PartitionKey: "Sales", RowKey: rk}, EntityType: "Review", ManagerRating: 3, PeerRating: 4, Comments: "ok " + year}, aztables.UpdateModeReplace))
		}
		if _, err := batch.Submit(ctx, client, ops, nil); err != nil {
			t.Fatal(err)
		}
		for _, other := range []*Emp{{Meta: table.Meta{PartitionKey: "Sales", RowKey: "000122"}}, {Meta: table.Meta{PartitionKey: "Sales", RowKey: "000124"}}} {
			other.EntityType, other.Name = "Employee", "Not related"
			if _, err := batch.Submit(ctx, client, []batch.Op{batch.Upsert(other, aztables.UpdateModeReplace)}, nil); err != nil {
				t.Fatal(err)
			}
		}
		c.Reset()
		var rows []any
		for v, err := range reg.Query(ctx, client, &table.QueryOptions{Filter: table.RowPrefix("Sales", "000123")}) {
			if err != nil {
				t.Fatal(err)
			}
			rows = append(rows, v)
		}
		if len(rows) != 4 {
			t.Fatalf("read %d rows, want the parent and its 3", len(rows))
		}
		wantRequests(t, c, 1, "parent and related rows")
		if e, ok := rows[0].(*Emp); !ok || e.Name != "Don Hall" {
			t.Fatalf("first row = %#v", rows[0])
		}
		if r, ok := rows[3].(*Review); !ok || r.RowKey != "000123_2012" || r.Comments != "ok 2012" {
			t.Fatalf("last row = %#v", rows[3])
		}
	})

	t.Run("reference cache: joins in the client cost no requests", func(t *testing.T) {
		c := &reqcount.Counter{}
		client := env.NewTable(t, c)
		type Dept struct {
			table.Meta
			Name string
		}
		deps, _ := table.New[Dept](client, nil)
		var ops []batch.Op
		for _, n := range []string{"Sales", "Marketing", "HR"} {
			ops = append(ops, batch.Add(&Dept{Meta: table.Meta{PartitionKey: "dept", RowKey: strings.ToLower(n)}, Name: n}))
		}
		if _, err := batch.Submit(ctx, client, ops, nil); err != nil {
			t.Fatal(err)
		}
		now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
		var mu sync.Mutex
		clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
		cache := patterns.NewReferenceCache(deps, &patterns.ReferenceCacheOptions{TTL: time.Minute, Now: clock})
		c.Reset()
		var wg sync.WaitGroup
		for i := 0; i < 16; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := 0; j < 50; j++ {
					v, ok, err := cache.Get(ctx, "dept", "sales", nil)
					if err != nil || !ok || v.Name != "Sales" {
						t.Errorf("Get = %v %v %v", v, ok, err)
						return
					}
				}
			}()
		}
		wg.Wait()
		wantRequests(t, c, 1, "800 concurrent lookups")
		if cache.Loads() != 1 {
			t.Fatalf("%d loads", cache.Loads())
		}
		if _, ok, _ := cache.Get(ctx, "dept", "finance", nil); ok {
			t.Fatal("found a department that does not exist")
		}
		mu.Lock()
		now = now.Add(time.Minute)
		mu.Unlock()
		all, err := cache.All(ctx, nil)
		if err != nil || len(all) != 3 || cache.Loads() != 2 {
			t.Fatalf("after TTL: %d entities, %d loads, %v", len(all), cache.Loads(), err)
		}
		wantRequests(t, c, 1, "reload after the TTL")
	})
}
