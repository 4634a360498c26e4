package patterns_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/internal/fakehttp"
	"github.com/tablekit/tablekit/internal/integration"
	"github.com/tablekit/tablekit/internal/reqcount"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/table"
)

// Index evolution on a live model, on the fake: a Build while writes go
// on, writes forced between a range's read and its write, a process with
// the old declaration, a Drop, and a worker process killed mid-build.

// evolveRefresh is the models' StateRefresh here: a build's planner waits
// twice as long (the queue's 1 s at least).
const evolveRefresh = 500 * time.Millisecond

// evolveEnv is one table and queue that several declarations of the
// directory's model open.
type evolveEnv struct {
	tables        func(name string) *aztables.Client
	q, poison     *azqueue.QueueClient
	raw           *table.Table[table.Entity]
	newQueue      func(name string) *azqueue.QueueClient
	remoteClients bool // clients forward over HTTP to the parent's fakes
	// container returns a blob client and a fresh container.
	container func(t *testing.T) (*azblob.Client, string)
}

func newEvolveEnv(t *testing.T) *evolveEnv {
	t.Helper()
	tables, queues := fake.NewTableService(nil), fake.NewQueueService(nil)
	e := &evolveEnv{
		tables:   func(name string) *aztables.Client { return tables.NewClient(name, nil) },
		newQueue: func(name string) *azqueue.QueueClient { return queues.NewQueueClient(name, nil) },
		container: func(t *testing.T) (*azblob.Client, string) {
			bc := fake.NewBlobService(nil).NewClient(nil)
			if _, err := bc.CreateContainer(t.Context(), "lists", nil); err != nil {
				t.Fatal(err)
			}
			return bc, "lists"
		},
	}
	e.setup(t)
	return e
}

func (e *evolveEnv) setup(t *testing.T) {
	ctx := t.Context()
	c := e.tables("Staff")
	if !e.remoteClients {
		if _, err := c.CreateTable(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
	e.raw = tableOf(table.New[table.Entity](c, nil))
	e.q, e.poison = e.newQueue("staff"), e.newQueue("staff-poison")
	if !e.remoteClients {
		for _, q := range []*azqueue.QueueClient{e.q, e.poison} {
			if _, err := q.Create(ctx, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// oldDecl declares the model before the new indexes: one copies index.
func oldDecl(e *evolveEnv) *patterns.ModelOptions[staffer] {
	return &patterns.ModelOptions[staffer]{
		Name: "staff", Primary: "empid_", Queue: e.q, StateRefresh: evolveRefresh, RangeSize: 40,
		Copies: []patterns.IndexDef[staffer]{
			{Name: "first", Prefix: "first_", Value: func(s *staffer) string { return s.FirstName }},
		},
	}
}

// midDecl adds a unique email copy.
func midDecl(e *evolveEnv) *patterns.ModelOptions[staffer] {
	o := oldDecl(e)
	o.Copies = append(o.Copies, patterns.IndexDef[staffer]{Name: "email", Prefix: "email_", Unique: true, Value: func(s *staffer) string { return s.Email }})
	return o
}

// newDecl adds a last-name list to midDecl.
func newDecl(e *evolveEnv) *patterns.ModelOptions[staffer] {
	o := midDecl(e)
	o.Lists = []patterns.ListDef[staffer]{{Name: "lastname", Prefix: "lastname_", Value: func(s *staffer) string { return s.LastName }}}
	return o
}

func (e *evolveEnv) open(t *testing.T, o *patterns.ModelOptions[staffer]) *patterns.Model[staffer] {
	t.Helper()
	m, err := patterns.OpenModel(t.Context(), tableOf(table.New[staffer](e.raw.Client(), &table.Options{Name: "Staff"})), o)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func (e *evolveEnv) worker(t *testing.T, m *patterns.Model[staffer]) *consistency.Worker {
	t.Helper()
	w := consistency.NewWorker(e.q, e.poison, &consistency.WorkerOptions{
		Visibility: time.Second, Backoff: func(int64) time.Duration { return 0 },
		PollInterval: 20 * time.Millisecond, MaxPollInterval: 100 * time.Millisecond,
	})
	if err := w.Handle(m.MessageType(), m.Process); err != nil {
		t.Fatal(err)
	}
	return w
}

// buildBoth builds email from midDecl (the model's first Build records
// the other declared indexes active), then lastname from newDecl, and
// returns newDecl's model.
func (e *evolveEnv) buildBoth(t *testing.T) *patterns.Model[staffer] {
	t.Helper()
	if err := e.open(t, midDecl(e)).Build(t.Context(), "email", nil); err != nil {
		t.Fatal(err)
	}
	m := e.open(t, newDecl(e))
	if err := m.Build(t.Context(), "lastname", nil); err != nil {
		t.Fatal(err)
	}
	return m
}

// until drains w until index is in state want.
func until(t *testing.T, m *patterns.Model[staffer], w *consistency.Worker, index string, want patterns.IndexState) *patterns.IndexProgress {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		_, _ = w.Drain(t.Context(), nil) // failures come back; the build converges
		p, err := m.IndexStatus(t.Context(), index, nil)
		if err != nil {
			t.Fatal(err)
		}
		if p.State == want {
			return p
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("index %s did not become %s", index, want)
	return nil
}

func loadStaff(t *testing.T, m *patterns.Model[staffer], n int) {
	t.Helper()
	for i := range n {
		pk := []string{"Sales", "Ops", "Dev"}[i%3]
		if i >= n/3 {
			pk = "Dev" // a large partition: several RowKey ranges
		}
		s := staffOf(pk, i, fmt.Sprintf("F%d", i%7), fmt.Sprintf("L%d", i%5), fmt.Sprintf("e%d@x", i))
		if err := m.Add(t.Context(), s, nil); err != nil {
			t.Fatal(err)
		}
	}
}

func verifyOK(t *testing.T, m *patterns.Model[staffer]) {
	t.Helper()
	r, err := m.Verify(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !r.OK() {
		t.Fatalf("Verify: missing %v, orphans %v, stale %v", r.Missing, r.Orphans, r.Stale)
	}
}

// envOf is an evolveEnv on env's backend (Azurite): a fresh table and
// queues.
func envOf(t *testing.T, env integration.Env) *evolveEnv {
	t.Helper()
	c := &reqcount.Counter{}
	tbl := env.NewTable(t, c)
	e := &evolveEnv{remoteClients: true, tables: func(string) *aztables.Client { return tbl },
		container: func(t *testing.T) (*azblob.Client, string) { return env.NewContainer(t, c) }}
	queues := map[string]*azqueue.QueueClient{}
	e.newQueue = func(name string) *azqueue.QueueClient {
		if q, ok := queues[name]; ok {
			return q
		}
		q := env.NewQueue(t, c)
		queues[name] = q
		return q
	}
	e.setup(t)
	return e
}

func TestModelEvolutionOnAzurite(t *testing.T) {
	env := integration.AzuriteEnv(t)
	t.Run("build while writes go on", func(t *testing.T) { testBuildFills(t, envOf(t, env)) })
	t.Run("a write between a range's read and its write", func(t *testing.T) { testBuildRaces(t, envOf(t, env)) })
	t.Run("drop", func(t *testing.T) { testDrop(t, envOf(t, env)) })
	t.Run("drop of indexes outside the partition", func(t *testing.T) { testDropElsewhere(t, envOf(t, env)) })
}

func TestModelBuildFillsANewIndexWhileWritesGoOn(t *testing.T) { testBuildFills(t, newEvolveEnv(t)) }

func testBuildFills(t *testing.T, e *evolveEnv) {
	modelTimeoutAfter(t, 2*time.Minute)
	ctx := t.Context()
	old := e.open(t, oldDecl(e))
	loadStaff(t, old, 150)
	m := e.buildBoth(t)
	// Building: reads refused before any request, writes maintain it.
	if _, err := m.Lookup(ctx, "email", "Dev", "e100@x", nil); !errors.Is(err, patterns.ErrIndexNotReady) || !errors.Is(err, patterns.ErrUnknownIndex) {
		t.Fatalf("Lookup of a building index: %v", err)
	}
	if _, err := m.IDs(ctx, "lastname", "Dev", "L0", nil); !errors.Is(err, patterns.ErrIndexNotReady) {
		t.Fatalf("IDs of a building index: %v", err)
	}
	if err := m.Add(ctx, staffOf("Dev", 1000, "New", "L9", "new@x"), nil); err != nil {
		t.Fatal(err)
	}
	// The process with the old declaration is refused once it has read
	// the state again, before any write request.
	time.Sleep(evolveRefresh + 100*time.Millisecond)
	err := old.Add(ctx, staffOf("Dev", 1001, "Old", "L9", "old@x"), nil)
	if !errors.Is(err, patterns.ErrIndexDeclaration) || !strings.Contains(err.Error(), `"email"`) {
		t.Fatalf("a write with the old declaration: %v", err)
	}
	if _, err := e.raw.Get(ctx, "Dev", "empid_001001", nil); !table.Is(err, table.ErrNotFound) {
		t.Fatalf("the refused write was stored: %v", err)
	}
	w := e.worker(t, m)
	p := until(t, m, w, "email", patterns.IndexActive)
	until(t, m, w, "lastname", patterns.IndexActive)
	if !p.Planned || p.Entities != 151 || len(p.Ranges) < 4 {
		t.Fatalf("progress: planned %v, entities %d, ranges %d; want planned, 151, at least 4", p.Planned, p.Entities, len(p.Ranges))
	}
	verifyOK(t, m)
	got, err := m.Lookup(ctx, "email", "Dev", "e100@x", nil)
	if err != nil || got.RowKey != "empid_000100" {
		t.Fatalf("Lookup after the build: %v, %v", got, err)
	}
	ids, err := m.IDs(ctx, "lastname", "Dev", "L9", nil)
	if err != nil || len(ids) != 1 || ids[0].RowKey != "empid_001000" {
		t.Fatalf("IDs after the build: %v, %v", ids, err)
	}
}

func TestModelBuildLosesNoRowToAWriteBetweenItsReadAndItsWrite(t *testing.T) {
	testBuildRaces(t, newEvolveEnv(t))
}

func testBuildRaces(t *testing.T, e *evolveEnv) {
	modelTimeoutAfter(t, 2*time.Minute)
	ctx := t.Context()
	loadStaff(t, e.open(t, oldDecl(e)), 60)
	m := e.open(t, newDecl(e))
	writer := e.open(t, newDecl(e))
	var raced atomic.Int32
	patterns.SetBeforeBackfill(m, func() {
		// The first pages: a primary of the page changes its indexed
		// values after the range read it, and one is deleted.
		switch raced.Add(1) {
		case 1:
			if _, err := writer.Modify(ctx, "Sales", "empid_000000", func(s *staffer) error {
				s.Email, s.LastName = "changed@x", "Changed"
				return nil
			}, nil); err != nil {
				t.Error(err)
			}
		case 2:
			if err := writer.Delete(ctx, "Dev", "empid_000030", nil); err != nil {
				t.Error(err)
			}
		}
	})
	if err := e.open(t, midDecl(e)).Build(ctx, "email", nil); err != nil {
		t.Fatal(err)
	}
	if err := m.Build(ctx, "lastname", nil); err != nil {
		t.Fatal(err)
	}
	// A primary that changed or went after its range read it makes the
	// range read its page again, not fail and come back.
	var retried atomic.Int32
	w := consistency.NewWorker(e.q, e.poison, &consistency.WorkerOptions{
		Visibility: time.Second, Backoff: func(int64) time.Duration { return 0 },
		PollInterval: 20 * time.Millisecond, MaxPollInterval: 100 * time.Millisecond,
		OnRetried: func(_ *consistency.Message, err error) { retried.Add(1); t.Logf("a range failed: %v", err) },
	})
	if err := w.Handle(m.MessageType(), m.Process); err != nil {
		t.Fatal(err)
	}
	until(t, m, w, "email", patterns.IndexActive)
	until(t, m, w, "lastname", patterns.IndexActive)
	if raced.Load() < 2 {
		t.Fatalf("the racing writes ran %d times; want 2", raced.Load())
	}
	if n := retried.Load(); n != 0 {
		t.Fatalf("%d range messages failed and came back; want none", n)
	}
	verifyOK(t, m)
	if _, err := e.raw.Get(ctx, "Sales", "email_e0@x", nil); !table.Is(err, table.ErrNotFound) {
		t.Fatalf("the old email's copy: %v; want none", err)
	}
	if _, err := e.raw.Get(ctx, "Dev", "email_e30@x", nil); !table.Is(err, table.ErrNotFound) {
		t.Fatalf("the deleted primary's copy: %v; want none", err)
	}
	got, err := m.Lookup(ctx, "email", "Sales", "changed@x", nil)
	if err != nil || got.RowKey != "empid_000000" {
		t.Fatalf("Lookup of the changed email: %v, %v", got, err)
	}
}

func TestModelDropRemovesTheIndexRowsWhileWritesGoOn(t *testing.T) { testDrop(t, newEvolveEnv(t)) }

func testDrop(t *testing.T, e *evolveEnv) {
	modelTimeoutAfter(t, 2*time.Minute)
	ctx := t.Context()
	m := e.open(t, newDecl(e))
	loadStaff(t, m, 90)
	if err := m.Drop(ctx, "first", nil); err != nil {
		t.Fatal(err)
	}
	if err := m.Drop(ctx, "lastname", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Lookup(ctx, "first", "Dev", "F1", nil); !errors.Is(err, patterns.ErrIndexNotReady) {
		t.Fatalf("Lookup of a dropping index: %v", err)
	}
	w := e.worker(t, m)
	until(t, m, w, "first", patterns.IndexDropped)
	until(t, m, w, "lastname", patterns.IndexDropped)
	// Writes after the drop keep the other indexes and no longer the
	// dropped ones.
	if err := m.Add(ctx, staffOf("Dev", 500, "F1", "L1", "late@x"), nil); err != nil {
		t.Fatal(err)
	}
	for _, prefix := range []string{"first_", "lastname_"} {
		for pk := range map[string]bool{"Sales": true, "Ops": true, "Dev": true} {
			for r, err := range e.raw.Query(ctx, &table.QueryOptions{Filter: table.RowPrefix(pk, prefix)}) {
				if err != nil {
					t.Fatal(err)
				}
				t.Errorf("a row of a dropped index is left: %s %s", r.PartitionKey, r.RowKey)
			}
		}
	}
	verifyOK(t, m)
	if _, err := m.Lookup(ctx, "email", "Dev", "late@x", nil); err != nil {
		t.Fatalf("the kept index: %v", err)
	}
}

// elsewhereDecl keeps the first names' copies in the primary's partition
// and three indexes outside it: cross copies of the email in the
// primaries' table, the last names' lists as index entities in a partition
// of their own, and as blobs.
func elsewhereDecl(e *evolveEnv, q *azqueue.QueueClient, lists *table.Table[table.Entity], bc *azblob.Client, container string) *patterns.ModelOptions[staffer] {
	o := oldDecl(e)
	o.Queue = q
	o.CrossCopies = []patterns.IndexDef[staffer]{{Name: "dept-email", PartitionKey: func(s *staffer) string { return "email_" + s.PartitionKey }, Value: func(s *staffer) string { return s.Email }}}
	o.RemoteLists = []patterns.ListDef[staffer]{
		{Name: "lastname-all", Value: func(s *staffer) string { return s.LastName }, Table: lists, Partition: "lastnames", Prefix: "ln_"},
		{Name: "lastname-blobs", Value: func(s *staffer) string { return s.LastName }, Blobs: bc, Container: container, Prefix: "ln/"},
	}
	return o
}

// elsewhereRows counts the rows of elsewhereDecl's indexes outside the
// partition: cross copies, index entities, blobs.
func elsewhereRows(t *testing.T, e *evolveEnv, lt *table.Table[table.Entity], bc *azblob.Client, container string) (copies, lists, blobs int) {
	t.Helper()
	ctx := t.Context()
	for r, err := range e.raw.Query(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(r.PartitionKey, "email_") {
			copies++
		}
	}
	for _, err := range lt.Query(ctx, &table.QueryOptions{Filter: table.Partition("lastnames")}) {
		if err != nil {
			t.Fatal(err)
		}
		lists++
	}
	pager := bc.NewListBlobsFlatPager(container, &azblob.ListBlobsFlatOptions{Prefix: to.Ptr("ln/")})
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		blobs += len(page.Segment.BlobItems)
	}
	return copies, lists, blobs
}

func TestModelDropRemovesIndexesOutsideThePartitionWhileWritesGoOn(t *testing.T) {
	testDropElsewhere(t, newEvolveEnv(t))
}

// testDropElsewhere drops a CrossCopies index and two RemoteLists (index
// entities, blobs) while a writer goes on, and processes, once they are
// dropped, messages of writes made before the drop (another queue holds
// them meanwhile): no row of a dropped index is left or made again, and
// the index kept in the partition verifies clean.
func testDropElsewhere(t *testing.T, e *evolveEnv) {
	modelTimeoutAfter(t, 3*time.Minute)
	ctx := t.Context()
	bc, container := e.container(t)
	// The lists' own table (on Azurite, the env's one table).
	lc := e.tables("StaffLists")
	if !e.remoteClients {
		if _, err := lc.CreateTable(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
	lt := tableOf(table.New[table.Entity](lc, nil))
	m := e.open(t, elsewhereDecl(e, e.q, lt, bc, container))
	loadStaff(t, m, 60)
	w := e.worker(t, m)
	if _, err := w.Drain(ctx, nil); err != nil {
		t.Fatal(err)
	}
	verifyOK(t, m)
	if c, l, b := elsewhereRows(t, e, lt, bc, container); c != 60 || l == 0 || b == 0 {
		t.Fatalf("before the drop: %d cross copies, %d index entities, %d blobs; want 60 and some", c, l, b)
	}
	// Writes whose messages wait in another queue until the indexes are
	// dropped: a message in flight across the drop.
	late := e.newQueue("staff-late")
	if !e.remoteClients {
		if _, err := late.Create(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
	held := e.open(t, elsewhereDecl(e, late, lt, bc, container))
	for i := range 5 {
		if _, err := held.Modify(ctx, "Dev", fmt.Sprintf("empid_%06d", 30+i), func(s *staffer) error {
			s.Email, s.LastName = fmt.Sprintf("held%d@x", i), "Held"
			return nil
		}, nil); err != nil {
			t.Fatal(err)
		}
	}
	// A writer goes on through the drop.
	wctx, stop := context.WithCancel(ctx)
	done := make(chan int)
	go func() {
		n := 0
		defer func() { done <- n }()
		for i := 0; wctx.Err() == nil; i++ {
			var err error
			if i%4 == 3 {
				err = m.Add(ctx, staffOf("Ops", 2000+i, "W", fmt.Sprintf("LW%d", i%3), fmt.Sprintf("w%d@x", i)), nil)
			} else {
				_, err = m.Modify(ctx, "Dev", fmt.Sprintf("empid_%06d", 20+i%10), func(s *staffer) error {
					s.Email, s.LastName = fmt.Sprintf("v%d@x", i), fmt.Sprintf("LV%d", i%4)
					return nil
				}, nil)
			}
			if err != nil {
				t.Error(err)
				return
			}
			n++
			time.Sleep(20 * time.Millisecond)
		}
	}()
	for _, name := range []string{"dept-email", "lastname-all", "lastname-blobs"} {
		if err := m.Drop(ctx, name, nil); err != nil {
			t.Fatalf("Drop %s: %v", name, err)
		}
	}
	if _, err := m.LookupEntities(ctx, "lastname-all", "", "L1", nil); !errors.Is(err, patterns.ErrIndexNotReady) {
		t.Fatalf("LookupEntities of a dropping index: %v", err)
	}
	for _, name := range []string{"dept-email", "lastname-all", "lastname-blobs"} {
		until(t, m, w, name, patterns.IndexDropped)
	}
	stop()
	if n := <-done; n == 0 {
		t.Fatal("the writer wrote nothing during the drop")
	}
	if _, err := w.Drain(ctx, nil); err != nil {
		t.Fatal(err)
	}
	// The held messages, processed now, find the indexes dropped.
	hw := consistency.NewWorker(late, e.poison, &consistency.WorkerOptions{Visibility: time.Second, Backoff: func(int64) time.Duration { return 0 }})
	if err := hw.Handle(m.MessageType(), m.Process); err != nil {
		t.Fatal(err)
	}
	if sum, err := hw.Drain(ctx, nil); err != nil || sum.Processed != 5 {
		t.Fatalf("the held messages: %+v, %v; want 5 processed", sum, err)
	}
	if c, l, b := elsewhereRows(t, e, lt, bc, container); c+l+b != 0 {
		t.Fatalf("after the drop: %d cross copies, %d index entities, %d blobs left; want none", c, l, b)
	}
	verifyOK(t, m)
	found := 0
	for _, err := range m.Find(ctx, "first", "Dev", "F1", nil) {
		if err != nil {
			t.Fatalf("Find through the kept index: %v", err)
		}
		found++
	}
	if found == 0 {
		t.Fatal("Find through the kept index found nothing")
	}
}

// Two CrossCopies indexes may keep their copies in one table, under the
// same PartitionKeys: a Drop of one deletes only the copies no other index
// of the model calls for.
func TestModelDropOfCrossCopiesLeavesAnotherIndexsCopiesInTheirTable(t *testing.T) {
	modelTimeoutAfter(t, 2*time.Minute)
	ctx := t.Context()
	e := newEvolveEnv(t)
	o := oldDecl(e)
	dept := func(s *staffer) string { return "x_" + s.PartitionKey }
	o.CrossCopies = []patterns.IndexDef[staffer]{
		{Name: "dept-email", PartitionKey: dept, Value: func(s *staffer) string { return s.Email }},
		{Name: "dept-last", PartitionKey: dept, Value: func(s *staffer) string { return s.LastName }},
	}
	m := e.open(t, o)
	loadStaff(t, m, 30)
	w := e.worker(t, m)
	if _, err := w.Drain(ctx, nil); err != nil {
		t.Fatal(err)
	}
	copies := func() int {
		n := 0
		for r, err := range e.raw.Query(ctx, nil) {
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasPrefix(r.PartitionKey, "x_") {
				n++
			}
		}
		return n
	}
	if n := copies(); n != 60 {
		t.Fatalf("before the drop: %d copies; want 60", n)
	}
	if err := m.Drop(ctx, "dept-email", nil); err != nil {
		t.Fatal(err)
	}
	until(t, m, w, "dept-email", patterns.IndexDropped)
	if n := copies(); n != 30 {
		t.Fatalf("after the drop: %d copies; want dept-last's 30", n)
	}
	for _, last := range []string{"L0", "L1", "L2", "L3", "L4"} {
		n := 0
		for v, err := range m.Find(ctx, "dept-last", "x_Dev", last, nil) {
			if err != nil {
				t.Fatal(err)
			}
			if v.LastName != last {
				t.Fatalf("Find %s: %+v", last, v)
			}
			n++
		}
		if n == 0 {
			t.Fatalf("Find %s through the kept dept-last: nothing", last)
		}
	}
}

func TestModelBuildRefusesWhatCannotEvolveBeforeAnyRequest(t *testing.T) {
	ctx := t.Context()
	e := newEvolveEnv(t)
	m := e.open(t, newDecl(e))
	if err := m.Build(ctx, "nope", nil); !errors.Is(err, patterns.ErrUnknownIndex) {
		t.Fatalf("Build of an undeclared index: %v", err)
	}
	noQueue := newDecl(e)
	noQueue.Queue = nil
	if err := e.open(t, noQueue).Build(ctx, "email", nil); !errors.Is(err, patterns.ErrBadDefinition) {
		t.Fatalf("Build without a queue: %v", err)
	}
	flat, err := patterns.OpenModel(ctx, tableOf(table.New[staffer](e.raw.Client(), nil)), &patterns.ModelOptions[staffer]{Name: "flat", Queue: e.q})
	if err != nil {
		t.Fatal(err)
	}
	var ie *table.InputError
	if err := flat.Build(ctx, "email", nil); !errors.As(err, &ie) || !errors.Is(err, patterns.ErrBadDefinition) {
		t.Fatalf("Build without a Primary prefix: %v", err)
	}
	// A list kept in blobs without a Prefix: its blobs cannot be told from
	// the container's others, so Drop would delete them all.
	bc, container := e.container(t)
	noPrefix := newDecl(e)
	noPrefix.RemoteLists = []patterns.ListDef[staffer]{{Name: "last-blobs", Value: func(s *staffer) string { return s.LastName }, Blobs: bc, Container: container}}
	if err := e.open(t, noPrefix).Drop(ctx, "last-blobs", nil); !errors.As(err, &ie) || !errors.Is(err, patterns.ErrBadDefinition) {
		t.Fatalf("Drop of a blob list without a Prefix: %v", err)
	}
	if p, _ := e.q.GetProperties(ctx, nil); *p.ApproximateMessagesCount != 0 {
		t.Fatalf("%d messages sent", *p.ApproximateMessagesCount)
	}
	if _, err := e.raw.Get(ctx, "~tablekit", "~tablekit.model.staff", nil); !table.Is(err, table.ErrNotFound) {
		t.Fatalf("the control row: %v; want none", err)
	}
}

// The killed-worker test: a child process works through the build's
// ranges on the parent's fakes, served over HTTP, and is killed with
// SIGKILL while it holds a range; the parent's worker completes the build.

const evolveChildEnv = "TABLEKIT_EVOLVE_CHILD"

func serveEvolveFakes(t *testing.T) (string, *fake.TableService, *fake.QueueService) {
	tables, queues := fake.NewTableService(nil), fake.NewQueueService(nil)
	url := fakehttp.Serve(t, fakehttp.Service{Name: "table", Fake: tables, URL: tables.URL()}, fakehttp.Service{Name: "queue", Fake: queues, URL: queues.URL()})
	return url, tables, queues
}

// TestModelBuildChild is the worker process of the killed-worker test; it
// runs only when that test starts it, until it is killed.
func TestModelBuildChild(t *testing.T) {
	base := os.Getenv(evolveChildEnv)
	if base == "" {
		t.Skip("a worker process of TestModelBuildCompletesAfterAWorkerIsKilled; started by it")
	}
	via := func(service string) azcore.ClientOptions {
		return azcore.ClientOptions{Transport: fakehttp.Transport(base, service)}
	}
	e := &evolveEnv{remoteClients: true,
		tables: func(name string) *aztables.Client {
			s, err := aztables.NewServiceClientWithNoCredential(fake.NewTableService(nil).URL(), &aztables.ClientOptions{ClientOptions: via("table")})
			if err != nil {
				t.Fatal(err)
			}
			return s.NewClient(name)
		},
		newQueue: func(name string) *azqueue.QueueClient {
			q, err := azqueue.NewQueueClientWithNoCredential(fake.NewQueueService(nil).URL()+name, &azqueue.ClientOptions{ClientOptions: via("queue")})
			if err != nil {
				t.Fatal(err)
			}
			return q
		},
	}
	e.setup(t)
	m := e.open(t, midDecl(e))
	w := consistency.NewWorker(e.q, e.poison, &consistency.WorkerOptions{
		Concurrency: 1, Visibility: 2 * time.Second, Backoff: func(int64) time.Duration { return 0 },
		PollInterval: 20 * time.Millisecond, MaxPollInterval: 100 * time.Millisecond,
	})
	// Slow, so the parent finds it in the middle of the build.
	if err := w.Handle(m.MessageType(), func(ctx context.Context, msg *consistency.Message) error {
		time.Sleep(300 * time.Millisecond)
		return m.Process(ctx, msg)
	}); err != nil {
		t.Fatal(err)
	}
	fmt.Println("READY")
	_ = w.Run(context.Background(), nil)
}

func TestModelBuildCompletesAfterAWorkerIsKilled(t *testing.T) {
	modelTimeoutAfter(t, 2*time.Minute)
	ctx := t.Context()
	url, tables, queues := serveEvolveFakes(t)
	e := &evolveEnv{
		tables:   func(name string) *aztables.Client { return tables.NewClient(name, nil) },
		newQueue: func(name string) *azqueue.QueueClient { return queues.NewQueueClient(name, nil) },
	}
	e.setup(t)
	loadStaff(t, e.open(t, oldDecl(e)), 300)
	m := e.open(t, midDecl(e))

	cmd := exec.Command(os.Args[0], "-test.run=^TestModelBuildChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), evolveChildEnv+"="+url)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	if err := m.Build(ctx, "email", nil); err != nil {
		t.Fatal(err)
	}
	// Kill the child once it has done part of the build, not all of it.
	deadline := time.Now().Add(60 * time.Second)
	for {
		if time.Now().After(deadline) {
			t.Fatalf("the child made no progress; its output:\n%s", out.String())
		}
		p, err := m.IndexStatus(ctx, "email", nil)
		if err != nil {
			t.Fatal(err)
		}
		if p.State != patterns.IndexBuilding {
			t.Fatalf("the build ended before the child was killed (%s); its output:\n%s", p.State, out.String())
		}
		if p.Entities > 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	<-exited
	w := e.worker(t, m)
	p := until(t, m, w, "email", patterns.IndexActive)
	if p.Entities != 300 {
		t.Fatalf("the ranges did %d entities; want 300", p.Entities)
	}
	verifyOK(t, m)
	raw, _ := json.Marshal(p.Ranges)
	t.Logf("ranges: %s", raw)
}
