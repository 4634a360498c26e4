package integration

import (
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/internal/reqcount"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/table"
)

// Emp is the guide's employee for the cross-partition index: primary
// PartitionKey "empid_<department>", RowKey the id.
type Emp struct {
	table.Meta
	Department string
	FirstName  string
	LastName   string
	Email      string
}

func emp(dept, id, first, last, email string) *Emp {
	return &Emp{Meta: table.Meta{PartitionKey: "empid_" + dept, RowKey: id}, Department: dept, FirstName: first, LastName: last, Email: email}
}

// failUpdateMessage fails every UpdateMessage: a process that died after
// its write and before showing the message.
type failUpdateMessage struct{ consistency.Queue }

func (failUpdateMessage) UpdateMessage(context0, string, string, string, *azqueue.UpdateMessageOptions) (azqueue.UpdateMessageResponse, error) {
	return azqueue.UpdateMessageResponse{}, errInjected
}

// RunCrossPartition runs the eventually consistent patterns.
func RunCrossPartition(t *testing.T, env Env) {
	ctx := t.Context()
	emailDef := func(c table.Client) patterns.IndexDef[Emp] {
		return patterns.IndexDef[Emp]{Name: "email", Table: copiesIn(c),
			PartitionKey: func(e *Emp) string { return "email_" + e.Department },
			Value:        func(e *Emp) string { return e.Email }}
	}

	t.Run("inter-partition index converges after the queue drains", func(t *testing.T) {
		pc := &reqcount.Counter{}
		primary := env.NewTable(t, pc)
		copies := env.NewTable(t, &reqcount.Counter{}) // the index lives in its own table
		q, poison := env.NewQueue(t, nil), env.NewQueue(t, nil)
		idx, err := patterns.OpenModel(ctx, tableOf(table.New[Emp](primary, nil)), &patterns.ModelOptions[Emp]{Name: "idx", Queue: q, CrossCopies: []patterns.IndexDef[Emp]{emailDef(copies)}, PublishDelay: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		w := consistency.NewWorker(q, poison, quick(nil))
		_ = w.Handle(idx.MessageType(), idx.Process)
		staffList := []*Emp{emp("Sales", "000123", "Don", "Hall", "donh@contoso.com"), emp("Sales", "000223", "Ben", "Jones", "jonesj@contoso.com"), emp("Marketing", "000152", "Jun", "Cao", "junc@contoso.com")}
		for _, e := range staffList {
			if err := idx.Upsert(ctx, e, &table.UpsertOptions{Mode: aztables.UpdateModeReplace}); err != nil {
				t.Fatal(err)
			}
		}
		drainAll(t, q, w)
		got, err := idx.Lookup(ctx, "email", "email_Sales", "jonesj@contoso.com", nil)
		if err != nil || got.PartitionKey != "empid_Sales" || got.RowKey != "000223" || got.FirstName != "Ben" {
			t.Fatalf("Lookup = %+v, %v", got, err)
		}
		var r []string
		for v, err := range idx.Range(ctx, "email", "email_Sales", "a", "z", nil) {
			if err != nil {
				t.Fatal(err)
			}
			r = append(r, v.RowKey)
		}
		if !slices.Equal(r, []string{"000123", "000223"}) {
			t.Fatalf("Range = %q", r)
		}
		// Change at the version in hand: a read and the write.
		cur, _ := idx.Table().Get(ctx, "empid_Sales", "000123", nil)
		next := *cur
		next.Email = "don.hall@contoso.com"
		pc.Reset()
		if err := idx.Update(ctx, &next, &table.UpdateOptions{Mode: aztables.UpdateModeReplace}); err != nil {
			t.Fatal(err)
		}
		wantRequests(t, pc, 2, "Update (primary table)")
		if err := idx.Delete(ctx, staffList[2].PartitionKey, staffList[2].RowKey, nil); err != nil {
			t.Fatal(err)
		}
		drainAll(t, q, w)
		if _, err := idx.Lookup(ctx, "email", "email_Sales", "donh@contoso.com", nil); !table.Is(err, table.ErrNotFound) {
			t.Fatalf("the old email's copy is still there: %v", err)
		}
		if v, err := idx.Lookup(ctx, "email", "email_Sales", "don.hall@contoso.com", nil); err != nil || v.RowKey != "000123" {
			t.Fatalf("new email: %v %v", v, err)
		}
		if _, err := idx.Lookup(ctx, "email", "email_Marketing", "junc@contoso.com", nil); !table.Is(err, table.ErrNotFound) {
			t.Fatalf("the deleted entity's copy is still there: %v", err)
		}
		rep, err := verifyOf(ctx, idx, nil)
		if err != nil || !rep.OK() || rep.Primaries != 2 || rep.IndexRows != 2 {
			t.Fatalf("Verify: %+v %v", rep, err)
		}
	})

	t.Run("inter-partition index: duplicates, reordering and crashes converge", func(t *testing.T) {
		primary := env.NewTable(t, &reqcount.Counter{})
		copies := env.NewTable(t, &reqcount.Counter{})
		q, poison := env.NewQueue(t, nil), env.NewQueue(t, nil)
		idx, _ := patterns.OpenModel(ctx, tableOf(table.New[Emp](primary, nil)), &patterns.ModelOptions[Emp]{Name: "idx", Queue: q, CrossCopies: []patterns.IndexDef[Emp]{emailDef(copies)}, PublishDelay: time.Second})
		w := consistency.NewWorker(q, poison, quick(nil))
		_ = w.Handle(idx.MessageType(), idx.Process)
		// Three versions, messages handled in reverse order, each twice.
		v1 := emp("Sales", "000123", "Don", "Hall", "a@x.com")
		if err := idx.Upsert(ctx, v1, &table.UpsertOptions{Mode: aztables.UpdateModeReplace}); err != nil {
			t.Fatal(err)
		}
		v2 := *v1
		v2.Email = "b@x.com"
		if err := idx.Upsert(ctx, &v2, &table.UpsertOptions{Mode: aztables.UpdateModeReplace}); err != nil {
			t.Fatal(err)
		}
		v3 := v2
		v3.Email = "c@x.com"
		if err := idx.Upsert(ctx, &v3, &table.UpsertOptions{Mode: aztables.UpdateModeReplace}); err != nil {
			t.Fatal(err)
		}
		var msgs []*azqueue.DequeuedMessage
		for len(msgs) < 3 {
			d, err := q.DequeueMessages(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			msgs = append(msgs, d.Messages...)
		}
		for i := len(msgs) - 1; i >= 0; i-- {
			for range 2 {
				if _, err := q.EnqueueMessage(ctx, *msgs[i].MessageText, nil); err != nil {
					t.Fatal(err)
				}
			}
			_, _ = q.DeleteMessage(ctx, *msgs[i].MessageID, *msgs[i].PopReceipt, nil)
		}
		drainAll(t, q, w)
		for _, old := range []string{"a@x.com", "b@x.com"} {
			if _, err := idx.Lookup(ctx, "email", "email_Sales", old, nil); !table.Is(err, table.ErrNotFound) {
				t.Fatalf("stale copy %s survived reordered, duplicated messages: %v", old, err)
			}
		}
		if v, err := idx.Lookup(ctx, "email", "email_Sales", "c@x.com", nil); err != nil || v.Email != "c@x.com" {
			t.Fatalf("current copy: %v %v", v, err)
		}

		// A crash after the write, before the message is shown: it shows
		// when the publish delay ends.
		crashing, _ := patterns.OpenModel(ctx, tableOf(table.New[Emp](primary, nil)), &patterns.ModelOptions[Emp]{Name: "idx", Queue: failUpdateMessage{q}, CrossCopies: []patterns.IndexDef[Emp]{emailDef(copies)}, PublishDelay: time.Second})
		v4 := v3
		v4.Email = "d@x.com"
		if err := crashing.Upsert(ctx, &v4, &table.UpsertOptions{Mode: aztables.UpdateModeReplace}); err != nil {
			t.Fatal(err)
		}
		env.Advance(1100 * time.Millisecond) // past the publish delay: the fake's clock moves, Azurite's passes
		drainAll(t, q, w)
		if _, err := idx.Lookup(ctx, "email", "email_Sales", "d@x.com", nil); err != nil {
			t.Fatalf("after a crash before showing the message: %v", err)
		}
		// A write that fails after the enqueue: the message converges to the
		// unchanged primary.
		bad := v4
		bad.Email = "e@x.com"
		etag := azcore.ETag(`W/"datetime'2000-01-01T00%3A00%3A00Z'"`) // a version that never was
		if err := idx.Update(ctx, &bad, &table.UpdateOptions{Mode: aztables.UpdateModeReplace, IfMatch: &etag}); !table.Is(err, table.ErrPreconditionFailed) {
			t.Fatalf("a failed write: %v", err)
		}
		env.Advance(1100 * time.Millisecond) // past the publish delay: the fake's clock moves, Azurite's passes
		drainAll(t, q, w)
		if _, err := idx.Lookup(ctx, "email", "email_Sales", "e@x.com", nil); !table.Is(err, table.ErrNotFound) {
			t.Fatalf("a copy was made for a write that failed: %v", err)
		}
		if rep, _ := verifyOf(ctx, idx, nil); !rep.OK() {
			t.Fatalf("Verify: %+v", rep)
		}
	})

	t.Run("inter-partition index: verify, repair, backfill with progress", func(t *testing.T) {
		primary := env.NewTable(t, &reqcount.Counter{})
		copies := env.NewTable(t, &reqcount.Counter{})
		q := env.NewQueue(t, nil)
		plain, _ := table.New[Emp](primary, nil)
		for i := 0; i < 150; i++ {
			if err := plain.Add(ctx, emp("Sales", fmt.Sprintf("%06d", i), "F", "L", fmt.Sprintf("e%03d@x.com", i)), nil); err != nil {
				t.Fatal(err)
			}
		}
		idx, _ := patterns.OpenModel(ctx, tableOf(table.New[Emp](primary, nil)), &patterns.ModelOptions[Emp]{Name: "idx", Queue: q, CrossCopies: []patterns.IndexDef[Emp]{emailDef(copies)}})
		var seen []int
		rep, err := verifyOf(ctx, idx, &patterns.VerifyOptions{Progress: func(n int) { seen = append(seen, n) }})
		if err != nil || len(rep.Missing) != 150 || len(seen) == 0 {
			t.Fatalf("backfill report: %d missing, progress %v, %v", len(rep.Missing), seen, err)
		}
		if sum, err := idx.Repair(ctx, repairOpts(rep, nil)); err != nil || sum.Missing != 150 || sum.Written != 150 {
			t.Fatalf("Repair: %+v, %v; want 150 missing and written", sum, err)
		}
		// Damage: a lost copy, a stale one, an orphan.
		ct, _ := table.New[Emp](copies, nil)
		if err := ct.Delete(ctx, "email_Sales", crossKey(t, "e000@x.com", "empid_Sales", "000000"), nil); err != nil {
			t.Fatal(err)
		}
		raw, _ := copies.GetEntity(ctx, "email_Sales", crossKey(t, "e001@x.com", "empid_Sales", "000001"), nil)
		tampered := append(raw.Value[:len(raw.Value)-1:len(raw.Value)-1], []byte(`,"FirstName":"Wrong"}`)...)
		if _, err := copies.UpsertEntity(ctx, tampered, &aztables.UpsertEntityOptions{UpdateMode: aztables.UpdateModeMerge}); err != nil {
			t.Fatal(err)
		}
		orphan := []byte(`{"PartitionKey":"email_Sales","RowKey":"gone@x.com","` + "TkIndexOf" + `":"empid_Sales!999999!"}`)
		if _, err := copies.AddEntity(ctx, orphan, nil); err != nil {
			t.Fatal(err)
		}
		rep, err = verifyOf(ctx, idx, nil)
		if err != nil || len(rep.Missing) != 1 || len(rep.Stale) != 1 || len(rep.Orphans) != 1 {
			t.Fatalf("report: %+v %v", rep, err)
		}
		if _, err := idx.Repair(ctx, repairOpts(rep, nil)); err != nil {
			t.Fatal(err)
		}
		if rep, _ := verifyOf(ctx, idx, nil); !rep.OK() {
			t.Fatalf("after repair: %+v", rep)
		}
	})

	for _, kind := range []string{"index table (option 3)", "blob per value (option 1)"} {
		t.Run("model lists elsewhere converge: "+kind, func(t *testing.T) {
			people := env.NewTable(t, &reqcount.Counter{})
			q, poison := env.NewQueue(t, nil), env.NewQueue(t, nil)
			list := patterns.ListDef[Emp]{Name: "lname", Value: func(e *Emp) string { return e.LastName }}
			if kind[0] == 'i' {
				list.Table, list.Partition, list.Prefix = tableOf(table.New[table.Entity](env.NewTable(t, &reqcount.Counter{}), nil)), "lastnames", "lname_"
			} else {
				list.Blobs, list.Container = env.NewContainer(t, nil)
				list.Prefix = "lname/"
			}
			ix, err := patterns.OpenModel(ctx, tableOf(table.New[Emp](people, nil)), &patterns.ModelOptions[Emp]{Name: "ix", Queue: q, RemoteLists: []patterns.ListDef[Emp]{list}})
			if err != nil {
				t.Fatal(err)
			}
			w := consistency.NewWorker(q, poison, quick(&consistency.WorkerOptions{Concurrency: 8}))
			_ = w.Handle(ix.MessageType(), ix.Process)
			all := []*Emp{emp("Sales", "000152", "Jun", "Jones", ""), emp("Marketing", "000223", "Ben", "Jones", ""), emp("Sales", "000123", "Don", "Hall", ""), emp("HR", "000777", "Ann", "O'Brien", "")}
			for _, e := range all {
				if err := ix.Add(ctx, e, nil); err != nil {
					t.Fatal(err)
				}
			}
			drainAll(t, q, w)
			check := func(value string, want ...string) {
				t.Helper()
				owners, err := ix.IDs(ctx, "lname", "", value, nil)
				if err != nil {
					t.Fatal(err)
				}
				var ids []string
				for _, o := range owners {
					ids = append(ids, o.PartitionKey+"/"+o.RowKey)
				}
				sort.Strings(ids)
				sort.Strings(want)
				if !slices.Equal(ids, want) {
					t.Fatalf("%s: %q, want %q", value, ids, want)
				}
			}
			check("Jones", "empid_Sales/000152", "empid_Marketing/000223")
			check("O'Brien", "empid_HR/000777")
			// Don Hall becomes Jones; Ben Jones leaves.
			if _, err := ix.Modify(ctx, "empid_Sales", "000123", func(e *Emp) error { e.LastName = "Jones"; return nil }, nil); err != nil {
				t.Fatal(err)
			}
			if err := ix.Delete(ctx, "empid_Marketing", "000223", nil); err != nil {
				t.Fatal(err)
			}
			drainAll(t, q, w)
			check("Jones", "empid_Sales/000152", "empid_Sales/000123")
			check("Hall")
		})
	}
}
