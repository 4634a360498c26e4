package integration

import (
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/internal/reqcount"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/table"
)

// Member is an employee for the index core case: Nick is optional, so
// setting it to nil removes the property.
type Member struct {
	table.Meta
	Department string
	Email      string
	LastName   string
	Nick       *string
}

func member(id, email, last string) *Member {
	nick := "n" + id
	return &Member{Meta: table.Meta{PartitionKey: "Sales", RowKey: "empid_" + id}, Department: "Sales", Email: email, LastName: last, Nick: &nick}
}

// runIndexCore: every index kind lives through the same life (a property
// removed, an indexed value changed, an entity deleted, the queue
// drained) and verifies with zero problems afterwards; index entities,
// damaged around tablekit, are verified and repaired with progress.
func runIndexCore(t *testing.T, env Env) {
	ctx := t.Context()
	wantOK := func(t *testing.T, kind string, r *report, err error) {
		t.Helper()
		if err != nil || !r.OK() {
			t.Fatalf("%s: verify found %+v, %v", kind, r, err)
		}
	}

	t.Run("intra-partition index", func(t *testing.T) {
		client := env.NewTable(t, &reqcount.Counter{})
		idx, err := patterns.OpenModel(ctx, tableOf(table.New[Member](client, nil)), &patterns.ModelOptions[Member]{Name: "idx", Primary: "empid_", Copies: []patterns.IndexDef[Member]{
			{Name: "email", Prefix: "email_", Unique: true, Value: func(m *Member) string { return m.Email }},
			{Name: "lname", Prefix: "lname_", Value: func(m *Member) string { return m.LastName }},
		}})

		if err != nil {
			t.Fatal(err)
		}
		for _, m := range []*Member{member("1", "a@x", "Hall"), member("2", "b@x", "Jones"), member("3", "c@x", "Cao")} {
			if err := idx.Add(ctx, m, nil); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := idx.Modify(ctx, "Sales", "empid_1", func(m *Member) error { m.Nick = nil; return nil }, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := idx.Modify(ctx, "Sales", "empid_2", func(m *Member) error { m.Email, m.LastName = "b2@x", "Smith"; return nil }, nil); err != nil {
			t.Fatal(err)
		}
		if err := idx.Delete(ctx, "Sales", "empid_3", nil); err != nil {
			t.Fatal(err)
		}
		r, err := verifyOf(ctx, idx, &patterns.VerifyOptions{Partition: "Sales"})
		wantOK(t, "intra-partition", r, err)
		if r.Primaries != 2 || r.IndexRows != 4 {
			t.Fatalf("intra-partition: %d primaries, %d copies", r.Primaries, r.IndexRows)
		}
		// A copy written by an earlier version names its owner by RowKey
		// alone: it still reads, verifies stale, and repair rewrites it with
		// the owner reference every index uses.
		raw := tableOf(table.New[table.Entity](client, nil))
		legacy, err := raw.Get(ctx, "Sales", "email_b2@x", nil)
		if err != nil {
			t.Fatal(err)
		}
		legacy.Set("TkIndexOf", table.ValueOf("empid_2"))
		if err := raw.Upsert(ctx, legacy, &table.UpsertOptions{Mode: aztables.UpdateModeReplace}); err != nil {
			t.Fatal(err)
		}
		if v, err := idx.Lookup(ctx, "email", "Sales", "b2@x", nil); err != nil || v.RowKey != "empid_2" {
			t.Fatalf("Lookup through a copy of the earlier format: %+v, %v", v, err)
		}
		r, err = verifyOf(ctx, idx, &patterns.VerifyOptions{Partition: "Sales"})
		if err != nil || len(r.Stale) != 1 || r.Stale[0].Copy != "email_b2@x" {
			t.Fatalf("a copy of the earlier format: %+v, %v", r, err)
		}
		if _, err := idx.Repair(ctx, repairOpts(r, nil)); err != nil {
			t.Fatal(err)
		}
		r, err = verifyOf(ctx, idx, &patterns.VerifyOptions{Partition: "Sales"})
		wantOK(t, "intra-partition after migrating", r, err)
	})

	t.Run("inter-partition index", func(t *testing.T) {
		q, poison := env.NewQueue(t, nil), env.NewQueue(t, nil)
		idx, err := patterns.OpenModel(ctx, tableOf(table.New[Member](env.NewTable(t, &reqcount.Counter{}), nil)), &patterns.ModelOptions[Member]{Name: "idx", Queue: q, CrossCopies: []patterns.IndexDef[Member]{
			{Name: "email", Table: tableOf(table.New[table.Entity](env.NewTable(t, &reqcount.Counter{}), nil)), PartitionKey: func(m *Member) string { return "email_" + m.Department }, Value: func(m *Member) string { return m.Email }},
		}, PublishDelay: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		w := consistency.NewWorker(q, poison, quick(nil))
		if err := w.Handle(idx.MessageType(), idx.Process); err != nil {
			t.Fatal(err)
		}
		all := []*Member{member("1", "a@x", "Hall"), member("2", "b@x", "Jones"), member("3", "c@x", "Cao")}
		for _, m := range all {
			if err := idx.Upsert(ctx, m, &table.UpsertOptions{Mode: aztables.UpdateModeReplace}); err != nil {
				t.Fatal(err)
			}
		}
		drainAll(t, q, w)
		all[0].Nick = nil
		all[1].Email = "b2@x"
		for _, m := range all[:2] {
			if err := idx.Upsert(ctx, m, &table.UpsertOptions{Mode: aztables.UpdateModeReplace}); err != nil {
				t.Fatal(err)
			}
		}
		if err := idx.Delete(ctx, all[2].PartitionKey, all[2].RowKey, nil); err != nil {
			t.Fatal(err)
		}
		drainAll(t, q, w)
		r, err := verifyOf(ctx, idx, nil)
		if err != nil || !r.OK() || r.Primaries != 2 || r.IndexRows != 2 {
			t.Fatalf("inter-partition: verify found %+v, %v", r, err)
		}
	})

	t.Run("index entities, verified and repaired", func(t *testing.T) {
		client := env.NewTable(t, &reqcount.Counter{})
		ix, err := patterns.OpenModel(ctx, tableOf(table.New[Member](client, nil)), &patterns.ModelOptions[Member]{Name: "ix", Primary: "empid_",
			Lists: []patterns.ListDef[Member]{{Name: "lname", Prefix: "lname_", Value: func(m *Member) string { return m.LastName }}}})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range []*Member{member("1", "a@x", "Jones"), member("2", "b@x", "Jones"), member("3", "c@x", "Cao")} {
			if err := ix.Add(ctx, m, nil); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := ix.Modify(ctx, "Sales", "empid_1", func(m *Member) error { m.Nick, m.LastName = nil, "Hall"; return nil }, nil); err != nil {
			t.Fatal(err)
		}
		if err := ix.Delete(ctx, "Sales", "empid_3", nil); err != nil {
			t.Fatal(err)
		}
		r, err := verifyOf(ctx, ix, &patterns.VerifyOptions{Partition: "Sales"})
		wantOK(t, "index entities", r, err)
		if r.Primaries != 2 || r.IndexRows != 2 {
			t.Fatalf("index entities: %d entities, %d IDs listed", r.Primaries, r.IndexRows)
		}
		// Around tablekit: an entity deleted without its list, another added
		// without one.
		plain, _ := table.New[Member](client, nil)
		if err := plain.Delete(ctx, "Sales", "empid_2", nil); err != nil {
			t.Fatal(err)
		}
		if err := plain.Add(ctx, member("4", "d@x", "Jones"), nil); err != nil {
			t.Fatal(err)
		}
		r, err = verifyOf(ctx, ix, &patterns.VerifyOptions{Partition: "Sales"})
		if err != nil || len(r.Orphans) != 1 || len(r.Missing) != 1 || r.Orphans[0].Primary != "empid_2" || r.Missing[0].Primary != "empid_4" {
			t.Fatalf("index entities after damage: %+v, %v", r, err)
		}
		sum, err := ix.Repair(ctx, repairOpts(r, nil))
		if err != nil || sum.Transactions != 1 || sum.Written != 1 || sum.Missing != 1 || sum.Orphans != 1 {
			t.Fatalf("Repair: %+v, %v", sum, err)
		}
		r, err = verifyOf(ctx, ix, &patterns.VerifyOptions{Partition: "Sales"})
		wantOK(t, "index entities after repair", r, err)
		if ids, err := ix.IDs(ctx, "lname", "Sales", "Jones", nil); err != nil || len(ids) != 1 || ids[0].RowKey != "empid_4" {
			t.Fatalf("IDs after repair: %q, %v", ids, err)
		}
	})

	for _, kind := range []string{"remote index entities", "blob index"} {
		t.Run("eventual "+kind+", verified and repaired", func(t *testing.T) {
			people := env.NewTable(t, &reqcount.Counter{})
			q, poison := env.NewQueue(t, nil), env.NewQueue(t, nil)
			list := patterns.ListDef[Member]{Name: "lname", Value: func(m *Member) string { return m.LastName }}
			if kind[0] == 'r' {
				list.Table, list.Partition, list.Prefix = tableOf(table.New[table.Entity](env.NewTable(t, &reqcount.Counter{}), nil)), "lastnames", "lname_"
			} else {
				list.Blobs, list.Container = env.NewContainer(t, nil)
				list.Prefix = "lname/"
			}
			ix, err := patterns.OpenModel(ctx, tableOf(table.New[Member](people, nil)), &patterns.ModelOptions[Member]{Name: "core", Queue: q, RemoteLists: []patterns.ListDef[Member]{list}})
			if err != nil {
				t.Fatal(err)
			}
			w := consistency.NewWorker(q, poison, quick(nil))
			if err := w.Handle(ix.MessageType(), ix.Process); err != nil {
				t.Fatal(err)
			}
			for _, m := range []*Member{member("1", "a@x", "Jones"), member("2", "b@x", "Jones"), member("3", "c@x", "Cao"), member("9", "z@x", "Jones")} {
				if err := ix.Add(ctx, m, nil); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := ix.Modify(ctx, "Sales", "empid_1", func(m *Member) error { m.Nick, m.LastName = nil, "Hall"; return nil }, nil); err != nil {
				t.Fatal(err)
			}
			if err := ix.Delete(ctx, "Sales", "empid_3", nil); err != nil {
				t.Fatal(err)
			}
			drainAll(t, q, w)
			r, err := verifyOf(ctx, ix, nil)
			wantOK(t, kind, r, err)
			if r.Primaries != 3 || r.IndexRows != 3 {
				t.Fatalf("%s: %d entities, %d IDs listed", kind, r.Primaries, r.IndexRows)
			}
			// Around tablekit: an entity added with no message, one deleted
			// with none (its ID stays listed).
			tb, _ := table.New[Member](people, nil)
			if err := tb.Add(ctx, member("4", "d@x", "Jones"), nil); err != nil {
				t.Fatal(err)
			}
			if err := tb.Delete(ctx, "Sales", "empid_9", nil); err != nil {
				t.Fatal(err)
			}
			r, err = verifyOf(ctx, ix, nil)
			if err != nil || len(r.Missing) != 1 || len(r.Orphans) != 1 || r.Orphans[0].Primary != "empid_9" {
				t.Fatalf("%s after damage: %+v, %v", kind, r, err)
			}
			if sum, err := ix.Repair(ctx, repairOpts(r, nil)); err != nil || sum.Written != 1 || sum.Deleted != 1 {
				t.Fatalf("Repair: %+v, %v; want one written and one deleted", sum, err)
			}
			r, err = verifyOf(ctx, ix, nil)
			wantOK(t, kind+" after repair", r, err)
		})
	}
}
