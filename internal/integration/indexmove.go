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

// RunIndexMove moves indexed entities with consistency.Mover: over the
// index's MoveSource the copies follow the primary out (no orphan, Verify
// clean); over the plain table the primary leaves alone and Verify reports
// its copies as orphans.
func RunIndexMove(t *testing.T, env Env) {
	ctx := t.Context()
	emailDef := func(c table.Client) patterns.IndexDef[Emp] {
		return patterns.IndexDef[Emp]{Name: "email", Table: copiesIn(c),
			PartitionKey: func(e *Emp) string { return "email_" + e.Department },
			Value:        func(e *Emp) string { return e.Email }}
	}
	for _, indexAware := range []bool{true, false} {
		name := "inter-partition index: a Mover over MoveSource leaves no orphan copy"
		if !indexAware {
			name = "inter-partition index: a Mover over the plain table leaves an orphan Verify reports"
		}
		t.Run(name, func(t *testing.T) {
			primary := env.NewTable(t, &reqcount.Counter{})
			copies := env.NewTable(t, &reqcount.Counter{})
			archive := env.NewTable(t, &reqcount.Counter{})
			q, poison := env.NewQueue(t, nil), env.NewQueue(t, nil)
			idx, err := patterns.OpenModel(ctx, tableOf(table.New[Emp](primary, nil)), &patterns.ModelOptions[Emp]{Name: "idx", Queue: q, CrossCopies: []patterns.IndexDef[Emp]{emailDef(copies)}, PublishDelay: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			var src consistency.Source[Emp] = idx.Table()
			if indexAware {
				src = idx.MoveSource()
			}
			to, _ := table.New[Emp](archive, nil)
			mover := consistency.NewMover[Emp](src, to, consistency.NewSender(q, nil), nil)
			w := consistency.NewWorker(q, poison, quick(nil))
			_ = w.Handle(idx.MessageType(), idx.Process)
			_ = w.Handle(mover.MessageType(), mover.Process)
			for _, e := range []*Emp{emp("Sales", "000123", "Don", "Hall", "donh@contoso.com"), emp("Sales", "000223", "Ben", "Jones", "jonesj@contoso.com")} {
				if err := idx.Upsert(ctx, e, &table.UpsertOptions{Mode: aztables.UpdateModeReplace}); err != nil {
					t.Fatal(err)
				}
			}
			drainAll(t, q, w)
			if err := mover.Request(ctx, "empid_Sales", "000123", nil); err != nil {
				t.Fatal(err)
			}
			drainAll(t, q, w)
			if v, err := to.Get(ctx, "empid_Sales", "000123", nil); err != nil || v.Email != "donh@contoso.com" {
				t.Fatalf("archive: %+v %v", v, err)
			}
			if _, err := idx.Table().Get(ctx, "empid_Sales", "000123", nil); !table.Is(err, table.ErrNotFound) {
				t.Fatalf("the moved primary is still in the source: %v", err)
			}
			rep, err := verifyOf(ctx, idx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if indexAware {
				if !rep.OK() || rep.Primaries != 1 || rep.IndexRows != 1 {
					t.Fatalf("Verify after a move over MoveSource: %+v, want clean, 1 primary, 1 copy", rep)
				}
				return
			}
			if len(rep.Orphans) != 1 {
				t.Fatalf("Verify after a plain move: %+v, want the moved entity's copy as the one orphan", rep)
			}
			t.Logf("plain Mover: Verify reports orphan %+v", rep.Orphans[0])
		})
	}

	for _, indexAware := range []bool{true, false} {
		name := "intra-partition index: a Mover over MoveSource leaves no orphan copy"
		if !indexAware {
			name = "intra-partition index: a Mover over the plain table leaves orphans Verify reports"
		}
		t.Run(name, func(t *testing.T) {
			client := env.NewTable(t, &reqcount.Counter{})
			archive := env.NewTable(t, &reqcount.Counter{})
			q, poison := env.NewQueue(t, nil), env.NewQueue(t, nil)
			idx, err := patterns.OpenModel(ctx, tableOf(table.New[Staff](client, nil)), &patterns.ModelOptions[Staff]{Name: "idx", Primary: "empid_", Copies: staffIndexes()})
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range []*Staff{staff("000001", "A", "Jones", "a@x.com", 1), staff("000002", "B", "Smith", "b@x.com", 2)} {
				if err := idx.Add(ctx, s, nil); err != nil {
					t.Fatal(err)
				}
			}
			var src consistency.Source[Staff] = idx.Table()
			if indexAware {
				src = idx.MoveSource()
			}
			to, _ := table.New[Staff](archive, nil)
			mover := consistency.NewMover[Staff](src, to, consistency.NewSender(q, nil), nil)
			w := consistency.NewWorker(q, poison, quick(nil))
			_ = w.Handle(mover.MessageType(), mover.Process)
			if err := mover.Request(ctx, "Sales", "empid_000001", nil); err != nil {
				t.Fatal(err)
			}
			drainAll(t, q, w)
			if _, err := to.Get(ctx, "Sales", "empid_000001", nil); err != nil {
				t.Fatalf("archive: %v", err)
			}
			rep, err := verifyOf(ctx, idx, &patterns.VerifyOptions{Partition: "Sales"})
			if err != nil {
				t.Fatal(err)
			}
			if indexAware {
				if !rep.OK() || rep.Primaries != 1 || rep.IndexRows != 2 {
					t.Fatalf("Verify after a move over MoveSource: %+v, want clean, 1 primary, its 2 copies", rep)
				}
				return
			}
			if len(rep.Orphans) != 2 {
				t.Fatalf("Verify after a plain move: %+v, want the moved entity's 2 copies as orphans", rep)
			}
		})
	}
}
