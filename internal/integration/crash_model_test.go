package integration

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/table"
)

// The entity model's multi-step operations in the crash matrix: a write
// that changes a same-partition index and a cross-partition one, a bulk
// load of one partition's transaction, and a move to the archive. After every death
// a fresh process recovers as the model's docs say (drain the queue; for
// Load, run it again with Idempotent) and the final state is checked
// exactly: the primaries, every email row, every last-name list, and a
// clean Verify of the model.

func init() { crashScenarios = append(crashScenarios, modelCrashScenarios...) }

// modelOf is the model of a crash process: Staff in Current with an email
// index in the partition and a last-name list in Lists.
// modelOf opens the scenarios' model in process p: one request, the read
// of its indexes' state, at which p can die like at any other.
func modelOf(p *crashProc) (*patterns.Model[Staff], error) {
	people, _ := table.New[Staff](p.table(p.names.Current), nil)
	m, err := patterns.OpenModel(context.Background(), people, &patterns.ModelOptions[Staff]{
		Name: "staff", Primary: "empid_",
		Copies:       []patterns.IndexDef[Staff]{{Name: "email", Prefix: "email_", Unique: true, Value: func(s *Staff) string { return s.Email }}},
		RemoteLists:  []patterns.ListDef[Staff]{{Name: "lastname", Value: func(s *Staff) string { return s.LastName }, Table: tableOf(table.New[table.Entity](p.table(p.names.Lists), nil)), Partition: "lname", Prefix: "lname_"}},
		Queue:        p.queue(p.names.Queue),
		PublishDelay: time.Second,
	})
	if err != nil {
		return nil, fmt.Errorf("crash test: opening the model: %w", err)
	}
	return m, nil
}

// mustModel opens the model in a process that does not die.
func mustModel(t *testing.T, p *crashProc) *patterns.Model[Staff] {
	t.Helper()
	m, err := modelOf(p)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func modelArchiveOf(p *crashProc, m *patterns.Model[Staff]) *consistency.Mover[Staff] {
	arc, _ := table.New[Staff](p.table(p.names.Archive), nil)
	return consistency.NewMover(m.MoveSource(), arc, consistency.NewSender(p.queue(p.names.Queue), nil), nil)
}

func modelHandlers(p *crashProc) (map[string]consistency.Handler, error) {
	m, err := modelOf(p)
	if err != nil {
		return nil, err
	}
	mv := modelArchiveOf(p, m)
	return map[string]consistency.Handler{m.MessageType(): m.Process, mv.MessageType(): mv.Process}, nil
}

func mustHandlers(t *testing.T, p *crashProc) map[string]consistency.Handler {
	t.Helper()
	h, err := modelHandlers(p)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func runModelWorker(ctx context.Context, p *crashProc) error {
	h, err := modelHandlers(p)
	if err != nil {
		return err
	}
	_, err = crashWorker(p, h).Drain(ctx, nil)
	return err
}

// checkModel checks the whole stored state against want (the primaries,
// by RowKey): exactly their rows and email rows in Current, exactly their
// IDs in the last-name lists, and a clean Verify.
func checkModel(t *testing.T, p *crashProc, want map[string]*Staff) {
	t.Helper()
	ctx := t.Context()
	var rows []string
	for rk, s := range want {
		rows = append(rows, "Sales/"+rk, "Sales/email_"+s.Email)
	}
	slices.Sort(rows)
	if got := rowKeys(t, p.table(p.names.Current)); !slices.Equal(got, rows) {
		t.Fatalf("Current holds %q, want %q", got, rows)
	}
	m := mustModel(t, p)
	byLast := map[string][]string{}
	for rk, s := range want {
		got, err := m.Get(ctx, "Sales", rk, nil)
		if err != nil || got.Email != s.Email || got.LastName != s.LastName {
			t.Fatalf("primary %s: %+v %v, want %+v", rk, got, err, s)
		}
		byLast[s.LastName] = append(byLast[s.LastName], listID("Sales", rk))
	}
	for _, name := range []string{"Lee", "Hall", "Jones"} {
		owners, err := m.IDs(ctx, "lastname", "", name, nil)
		if err != nil && !table.Is(err, table.ErrNotFound) {
			t.Fatal(err)
		}
		var ids []string
		for _, o := range owners {
			ids = append(ids, listID(o.PartitionKey, o.RowKey))
		}
		slices.Sort(ids)
		w := byLast[name]
		slices.Sort(w)
		if !slices.Equal(ids, w) {
			t.Fatalf("last-name list %s holds %q, want %q", name, ids, w)
		}
	}
	r, err := verifyOf(ctx, m, nil)
	if err != nil || !r.OK() || r.Primaries != len(want) {
		t.Fatalf("Verify: %+v %v", r, err)
	}
}

var modelCrashScenarios = []crashScenario{{
	name: "model modify",
	ack:  5, // the model opened (its state read), the read, the message hidden, the transaction, the message shown
	setup: func(ctx context.Context, p *crashProc) error {
		m, err := modelOf(p)
		if err != nil {
			return err
		}
		if err := m.Add(ctx, staff("000001", "Ann", "Lee", "ann@contoso.com", 41), nil); err != nil {
			return err
		}
		return runModelWorker(ctx, p)
	},
	run: func(ctx context.Context, p *crashProc) error {
		m, err := modelOf(p)
		if err != nil {
			return err
		}
		_, err = m.Modify(ctx, "Sales", "empid_000001", func(s *Staff) error {
			s.LastName, s.Email = "Hall", "ann.hall@contoso.com"
			return nil
		}, nil)
		if err != nil {
			return err
		}
		return runModelWorker(ctx, p)
	},
	recover: func(t *testing.T, p *crashProc) { drainWith(t, p, mustHandlers(t, p)) },
	check: func(t *testing.T, p *crashProc, acked bool) {
		got, err := mustModel(t, p).Get(t.Context(), "Sales", "empid_000001", nil)
		if err != nil {
			t.Fatal(err)
		}
		if acked && got.LastName != "Hall" {
			t.Fatalf("the acknowledged change is lost: %+v", got)
		}
		checkModel(t, p, map[string]*Staff{"empid_000001": got}) // old or new, never a mix
	},
}, {
	name: "model load",
	ack:  4, // the model opened (its state read); one partition: the message hidden, the transaction, the message shown
	run: func(ctx context.Context, p *crashProc) error {
		m, err := modelOf(p)
		if err != nil {
			return err
		}
		_, err = m.Load(ctx, slices.Values(modelLoadSet()), &patterns.ModelLoadOptions{Parallelism: 1, Idempotent: true})
		if err != nil {
			return err
		}
		return runModelWorker(ctx, p)
	},
	setup: func(ctx context.Context, p *crashProc) error { return nil },
	recover: func(t *testing.T, p *crashProc) {
		// The documented recovery: run the load again, then drain.
		if sum, err := mustModel(t, p).Load(t.Context(), slices.Values(modelLoadSet()), &patterns.ModelLoadOptions{Idempotent: true}); err != nil || len(sum.Failures) != 0 {
			t.Fatalf("Load again: %+v %v", sum, err)
		}
		drainWith(t, p, mustHandlers(t, p))
	},
	check: func(t *testing.T, p *crashProc, acked bool) {
		want := map[string]*Staff{}
		for _, s := range modelLoadSet() {
			want[s.RowKey] = s
		}
		checkModel(t, p, want)
	},
}, {
	name: "model archive move",
	ack:  3, // the model opened (its state read); Request: the read of the version, the enqueue
	setup: func(ctx context.Context, p *crashProc) error {
		m, err := modelOf(p)
		if err != nil {
			return err
		}
		for _, s := range []*Staff{staff("000001", "Ann", "Lee", "ann@contoso.com", 41), staff("000002", "Bo", "Lee", "bo@contoso.com", 30)} {
			if err := m.Add(ctx, s, nil); err != nil {
				return err
			}
		}
		return runModelWorker(ctx, p)
	},
	run: func(ctx context.Context, p *crashProc) error {
		m, err := modelOf(p)
		if err != nil {
			return err
		}
		mv := modelArchiveOf(p, m)
		if err := mv.Request(ctx, "Sales", "empid_000001", nil); err != nil {
			return err
		}
		return runModelWorker(ctx, p)
	},
	recover: func(t *testing.T, p *crashProc) { drainWith(t, p, mustHandlers(t, p)) },
	check: func(t *testing.T, p *crashProc, acked bool) {
		bo := staff("000002", "Bo", "Lee", "bo@contoso.com", 30)
		arc := rowKeys(t, p.table(p.names.Archive))
		switch {
		case slices.Equal(arc, []string{"Sales/empid_000001"}):
			checkModel(t, p, map[string]*Staff{"empid_000002": bo})
		case len(arc) == 0 && !acked:
			checkModel(t, p, map[string]*Staff{"empid_000001": staff("000001", "Ann", "Lee", "ann@contoso.com", 41), "empid_000002": bo})
		default:
			t.Fatalf("Archive holds %q (move acknowledged: %v)", arc, acked)
		}
	},
}}

// modelLoadSet is what the load scenario loads: three entities in Sales.
func modelLoadSet() []*Staff {
	return []*Staff{
		staff("000011", "Cy", "Jones", "cy@contoso.com", 20),
		staff("000012", "Di", "Jones", "di@contoso.com", 22),
		staff("000013", "Ed", "Hall", "ed@contoso.com", 24),
	}
}
