package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/faults"
	"github.com/tablekit/tablekit/internal/reqcount"
	"github.com/tablekit/tablekit/internal/testenv"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/table"
)

// soakEnv names the resources the two processes share; the child finds
// them in its environment.
const soakEnv = "TABLEKIT_SOAK_RESOURCES"

const (
	soakGoroutines = 8  // per process
	soakOpsEach    = 20 // per goroutine and kind of work
	soakStaff      = 16 // employees whose indexed email keeps changing
	soakMoves      = 240
	soakCross      = 8 // employees whose email the inter-partition index copies
	soakPutters    = 4 // goroutines per process changing them
)

// soakWork is what each process does at the same time as the other: its
// goroutines add employees to the last-name index entities, change the
// emails of the shared employees (one index in their partition, one in
// another table through the queue), and its worker moves entities to the
// archive and brings the inter-partition copies along; all under 10 %
// injected faults.
func soakWork(t *testing.T, cs string, proc int, names []string) (faults.Stats, error) {
	inj := faults.New(uint64(100+proc), &faults.Options{Fraction: 0.1})
	c := &reqcount.Counter{Faults: inj}
	svc, err := aztables.NewServiceClientFromConnectionString(cs, c.TableOptions())
	if err != nil {
		return faults.Stats{}, err
	}
	people, staffTable, current, archive := svc.NewClient(names[0]), svc.NewClient(names[1]), svc.NewClient(names[2]), svc.NewClient(names[3])
	primaries, copies := svc.NewClient(names[6]), svc.NewClient(names[7])
	q, err := azqueue.NewQueueClientFromConnectionString(cs, names[4], c.QueueOptions())
	if err != nil {
		return faults.Stats{}, err
	}
	poison, err := azqueue.NewQueueClientFromConnectionString(cs, names[5], c.QueueOptions())
	if err != nil {
		return faults.Stats{}, err
	}
	ctx := t.Context()
	ix, _ := patterns.OpenModel(ctx, tableOf(table.New[Staff](people, nil)), soakListModel())
	idx, _ := patterns.OpenModel(ctx, tableOf(table.New[Staff](staffTable, nil)), &patterns.ModelOptions[Staff]{Name: "idx", Primary: "empid_", Copies: staffIndexes()})
	from, _ := table.New[Staff](current, nil)
	to, _ := table.New[Staff](archive, nil)
	mover := consistency.NewMover[Staff](from, to, consistency.NewSender(q, nil), nil)
	cross, _ := patterns.OpenModel(ctx, tableOf(table.New[Emp](primaries, nil)), &patterns.ModelOptions[Emp]{Name: "idx", Queue: q, CrossCopies: []patterns.IndexDef[Emp]{soakEmailIndex(copies)}, PublishDelay: 2 * time.Second})
	// The library's defaults (DefaultVisibility, DefaultMaxDequeues, the
	// default back-off and polling): the soak shows what a user running
	// NewWorker with nil options gets, not what test-tuned options get.
	w := consistency.NewWorker(q, poison, &consistency.WorkerOptions{Concurrency: 4})
	_ = w.Handle(mover.MessageType(), mover.Process)
	_ = w.Handle(cross.MessageType(), cross.Process)

	var wg sync.WaitGroup
	errs := make(chan error, 2*soakGoroutines+soakPutters+1)
	for g := 0; g < soakPutters; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; k < soakOpsEach; k++ {
				e := emp("Sales", fmt.Sprintf("%06d", (g*3+k)%soakCross), "F", "L", fmt.Sprintf("p%dg%dk%02d@contoso.com", proc, g, k))
				// Put reads the primary and writes over that version: a lost
				// race (or a lost response) is a conflict, so go round.
				_, err := table.RetryOnConflict(ctx, func(int) error { return cross.Upsert(ctx, e, &table.UpsertOptions{Mode: aztables.UpdateModeReplace}) }, &table.RetryOptions{MaxAttempts: 100})
				if err != nil {
					errs <- fmt.Errorf("inter-partition Put %s: %w", e.RowKey, err)
					return
				}
			}
		}()
	}
	for g := 0; g < soakGoroutines; g++ {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for k := 0; k < soakOpsEach; k++ {
				s := staff(fmt.Sprintf("p%dg%dk%02d", proc, g, k), "F", surnames[(g+k)%4], "", k)
				if err := ix.Add(ctx, s, idempotent); err != nil {
					errs <- fmt.Errorf("index entities Add %s: %w", s.RowKey, err)
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			for k := 0; k < soakOpsEach; k++ {
				rk := fmt.Sprintf("empid_%06d", (g*7+k)%soakStaff)
				_, err := idx.Modify(ctx, "Sales", rk, func(s *Staff) error {
					s.Email = fmt.Sprintf("p%dg%dk%02d@contoso.com", proc, g, k)
					s.LastName = surnames[(proc+g+k)%4]
					return nil
				}, &table.ModifyOptions{MaxAttempts: 100})
				if err != nil {
					errs <- fmt.Errorf("Modify %s: %w", rk, err)
					return
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			if _, err := w.Drain(ctx, nil); err != nil {
				errs <- fmt.Errorf("worker: %w", err)
				return
			}
			p, err := q.GetProperties(ctx, nil)
			if err == nil && *p.ApproximateMessagesCount == 0 {
				return
			}
		}
	}()
	wg.Wait()
	close(errs)
	var all error
	for e := range errs {
		all = errors.Join(all, e)
	}
	return inj.Stats(), all
}

// TestSoakChildProcess is the second process of the two-process soak; it
// runs only when the parent starts it.
func TestSoakChildProcess(t *testing.T) {
	spec := os.Getenv(soakEnv)
	if spec == "" {
		t.Skip("the second process of TestSoakTwoProcessesOnAzurite; started by it")
	}
	st, err := soakWork(t, testenv.ConnectionString(t), 1, strings.Split(spec, ","))
	t.Logf("child: faults %+v", st)
	if err != nil {
		t.Fatal(err)
	}
}

// TestSoakTwoProcessesOnAzurite runs the same work in this process and in
// a second one (this test binary again) against one Azurite, then the
// verifiers: no missing or stale index rows, no lost IDs, every entity
// moved once.
func TestSoakTwoProcessesOnAzurite(t *testing.T) {
	cs := testenv.ConnectionString(t)
	testenv.Long(t, "two processes under faults")
	ctx := t.Context()
	admin, err := aztables.NewServiceClientFromConnectionString(cs, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	newTable := func() *aztables.Client {
		name := testenv.UniqueName("soak")
		if _, err := admin.CreateTable(ctx, name, nil); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = admin.DeleteTable(context.Background(), name, nil) })
		names = append(names, name)
		return admin.NewClient(name)
	}
	newQueue := func() *azqueue.QueueClient {
		name := strings.ToLower(testenv.UniqueName("soak"))
		q, err := azqueue.NewQueueClientFromConnectionString(cs, name, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := q.Create(ctx, nil); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = q.Delete(context.Background(), nil) })
		names = append(names, name)
		return q
	}
	people, staffTable, current, archive := newTable(), newTable(), newTable(), newTable()
	q, poison := newQueue(), newQueue()
	primaries, copies := newTable(), newTable()

	idx, _ := patterns.OpenModel(ctx, tableOf(table.New[Staff](staffTable, nil)), &patterns.ModelOptions[Staff]{Name: "idx", Primary: "empid_", Copies: staffIndexes()})
	for i := 0; i < soakStaff; i++ {
		if err := idx.Add(ctx, staff(fmt.Sprintf("%06d", i), "F", "Jones", fmt.Sprintf("start%d@contoso.com", i), i), nil); err != nil {
			t.Fatal(err)
		}
	}
	from, _ := table.New[Staff](current, nil)
	var ops []batch.Op
	for i := 0; i < soakMoves; i++ {
		ops = append(ops, batch.Add(staff(fmt.Sprintf("%06d", i), "F", "L", "", i)))
	}
	if _, err := batch.NewWriter(current, nil).Write(ctx, slices.Values(ops), nil); err != nil {
		t.Fatal(err)
	}
	mover := consistency.NewMover[Staff](from, (*table.Table[Staff])(nil), consistency.NewSender(q, nil), nil)
	for i := 0; i < soakMoves; i++ {
		if err := mover.Request(ctx, "Sales", fmt.Sprintf("empid_%06d", i), nil); err != nil {
			t.Fatal(err)
		}
	}

	child := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestSoakChildProcess$", "-test.count=1", "-test.v")
	child.Env = append(os.Environ(), soakEnv+"="+strings.Join(names, ","))
	var out strings.Builder
	child.Stdout, child.Stderr = &out, &out
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	st, err := soakWork(t, cs, 0, names)
	werr := child.Wait()
	t.Logf("parent: faults %+v", st)
	t.Logf("child process:\n%s", out.String())
	if err != nil || werr != nil {
		t.Fatalf("parent: %v; child: %v", err, werr)
	}
	if !strings.Contains(out.String(), "--- PASS: TestSoakChildProcess") {
		t.Fatal("the child process did not run its share")
	}
	drainAll(t, q, consistency.NewWorker(q, poison, quick(nil))) // nothing left for it, or the test fails below

	// Index entities: every ID of both processes, once, under its value.
	ix, _ := patterns.OpenModel(ctx, tableOf(table.New[Staff](people, nil)), soakListModel())
	seen := map[string]int{}
	for _, last := range surnames {
		ids, err := ix.IDs(ctx, "lname", "Sales", last, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			seen[id.RowKey]++
		}
	}
	want := 2 * soakGoroutines * soakOpsEach
	for id, n := range seen {
		if n != 1 {
			t.Errorf("ID %s listed %d times", id, n)
		}
	}
	if len(seen) != want {
		t.Fatalf("index entities list %d IDs, want %d", len(seen), want)
	}
	// Intra-partition index: no missing, orphaned or stale copy.
	rep, err := verifyOf(ctx, idx, &patterns.VerifyOptions{Partition: "Sales"})
	if err != nil || !rep.OK() {
		t.Fatalf("Verify: %+v %v", rep, err)
	}
	// Mover: every entity in the archive once, none left, nothing poisoned.
	if n := countEntities(t, archive); n != soakMoves {
		t.Fatalf("archive holds %d entities, want %d", n, soakMoves)
	}
	if n := countEntities(t, current); n != 0 {
		t.Fatalf("%d entities were not moved", n)
	}
	if n := queueLen(t, poison); n != 0 {
		t.Fatalf("%d messages poisoned", n)
	}
	// Inter-partition index: after the queue drained, every copy matches
	// its primary and no stale copy is left.
	cross, _ := patterns.OpenModel(ctx, tableOf(table.New[Emp](primaries, nil)), &patterns.ModelOptions[Emp]{Name: "idx", Queue: q, CrossCopies: []patterns.IndexDef[Emp]{soakEmailIndex(copies)}})
	crep, err := verifyOf(ctx, cross, nil)
	if err != nil || !crep.OK() || crep.Primaries != soakCross || crep.IndexRows != soakCross {
		t.Fatalf("Verify: %+v %v", crep, err)
	}
	t.Logf("verified: %d index-entity IDs once each; %d employees' intra-partition indexes consistent after %d changes; "+
		"%d employees' inter-partition copies consistent after %d changes; %d entities moved once",
		len(seen), soakStaff, want, soakCross, 2*soakPutters*soakOpsEach, soakMoves)
}

// soakListModel is the model of the soak's last-name lists.
func soakListModel() *patterns.ModelOptions[Staff] {
	return &patterns.ModelOptions[Staff]{Name: "soak", Primary: "empid_",
		Lists: []patterns.ListDef[Staff]{{Name: "lname", Prefix: "lname_", Value: func(s *Staff) string { return s.LastName }}}}
}

func soakEmailIndex(copies *aztables.Client) patterns.IndexDef[Emp] {
	return patterns.IndexDef[Emp]{Name: "email", Table: tableOf(table.New[table.Entity](copies, nil)),
		PartitionKey: func(e *Emp) string { return "email_" + e.Department },
		Value:        func(e *Emp) string { return e.Email }}
}

func countEntities(t *testing.T, c *aztables.Client) int {
	t.Helper()
	n := 0
	pager := c.NewListEntitiesPager(&aztables.ListEntitiesOptions{Select: to.Ptr("RowKey")})
	for pager.More() {
		page, err := pager.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		n += len(page.Entities)
	}
	return n
}
