package evolvescale_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime/metrics"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/internal/fakehttp"
	"github.com/tablekit/tablekit/internal/testenv"
	"github.com/tablekit/tablekit/internal/tuple"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/table"
)

// The scenarios of an index evolving on a live table, each with a writer
// process (4 goroutines updating, deleting and adding at a steady rate)
// that opened the model with the scenario's declaration before the first
// step, worker processes serving the model's queue, one of them killed
// with SIGKILL and started again, twice; then, with everything stopped,
// the model's streaming Verify and an independent raw scan of the table
// check the end state. Each child process samples its heap and reports the
// peak.
//
//   - Build: a table of primaries written by a model that declares no
//     index; Build "manager"; at the end every primary has exactly its
//     index row and no other.
//   - Drop: the table written with "manager" active; Drop it; at the end
//     no row of it is left and every primary is there (loaded + added −
//     deleted, as the writer counts them).
//   - Change: "manager" active; a declaration adding "manager2", another
//     projection under another prefix; Build manager2, read through it
//     once active, Drop manager; at the end manager2 is whole and no row
//     of manager is left.
//
// go test runs small scenarios on the fake and on Azurite. The sizes of
// the issue run with flags:
//
//	go test -count=1 -timeout 60m -run TestIndexBuildOnFake -v ./internal/evolvescale/ -args -entities 1000000
//	go test -count=1 -timeout 60m -run 'TestIndex(Drop|Change)OnFake' -v ./internal/evolvescale/ -args -entities 100000
//	scripts/azurite run -- go test -count=1 -timeout 60m -run TestIndexBuildOnAzurite -v ./internal/evolvescale/ -args -entities 100000 -workers 2

var (
	entitiesFlag = flag.Int("entities", 0, "entities of the scenario (0: the small one)")
	workersFlag  = flag.Int("workers", 0, "worker processes (0: 4 on the fake, 2 on Azurite)")
)

const childEnv = "TABLEKIT_EVOLVE_CHILD"

// Emp is the primary: PartitionKey "p0000"…, RowKey "e_" and a number.
type Emp struct {
	table.Meta
	Manager string
	Name    string
	N       int64
}

const (
	modelName    = "emp"
	primary      = "e_"
	indexName    = "manager"
	indexPrefix  = "m_"
	index2Name   = "manager2"
	index2Prefix = "n_"
)

// The declarations a scenario's processes open the model with.
const (
	declNone    = "none"    // no index
	declManager = "manager" // manager: whole copies under "m_"
	declBoth    = "both"    // manager, and manager2: Manager and Name under "n_"
)

// spec tells a child what to do and where the shared resources are.
type spec struct {
	Role         string // "worker" or "writer"
	ID           int
	Decl         string // declNone, declManager or declBoth
	FakeURL      string // the parent's fakes, served over HTTP, or
	Conn         string // Azurite's connection string
	Table, Queue string
	Poison       string
	Entities     int
	Partitions   int
	StateRefresh time.Duration
	RangeSize    int
	WriteRate    int // operations a second per writer goroutine
}

// report is a child's line on stdout: every second and at its end.
type report struct {
	Role     string
	ID       int
	PeakHeap uint64 // bytes of live heap objects, the highest sample
	Ops      int64  // writer: operations done
	Errors   int64  // writer: operations that failed other than as expected
	Adds     int64  // writer: entities added
	Deletes  int64  // writer: entities deleted (that were there)
	Done     bool
}

// layout: partition 0 holds a tenth of the entities, the others share the
// rest evenly, each a run of consecutive i (so a load in order of i fills
// whole transactions).
func layout(entities, partitions int) func(i int) (pk, rk string) {
	big := entities / 10
	per := (entities - big + partitions - 2) / (partitions - 1)
	return func(i int) (string, string) {
		if i < big {
			return "p0000", fmt.Sprintf("%s%08d", primary, i)
		}
		p := 1 + (i-big)/per
		return fmt.Sprintf("p%04d", p), fmt.Sprintf("%s%08d", primary, i)
	}
}

func manager(i, round int) string { return fmt.Sprintf("mgr%03d", (i*7+round*13)%500) }

type clients struct {
	tables *aztables.ServiceClient
	queue  func(name string) *azqueue.QueueClient
}

func open(t testing.TB, s spec) clients {
	if s.Conn != "" {
		tables, err := aztables.NewServiceClientFromConnectionString(s.Conn, nil)
		if err != nil {
			t.Fatal(err)
		}
		return clients{tables: tables, queue: func(name string) *azqueue.QueueClient {
			q, err := azqueue.NewQueueClientFromConnectionString(s.Conn, name, nil)
			if err != nil {
				t.Fatal(err)
			}
			return q
		}}
	}
	via := func(service string) azcore.ClientOptions {
		return azcore.ClientOptions{Transport: fakehttp.Transport(s.FakeURL, service)}
	}
	tables, err := aztables.NewServiceClientWithNoCredential(fake.NewTableService(nil).URL(), &aztables.ClientOptions{ClientOptions: via("table")})
	if err != nil {
		t.Fatal(err)
	}
	return clients{tables: tables, queue: func(name string) *azqueue.QueueClient {
		q, err := azqueue.NewQueueClientWithNoCredential(fake.NewQueueService(nil).URL()+name, &azqueue.ClientOptions{ClientOptions: via("queue")})
		if err != nil {
			t.Fatal(err)
		}
		return q
	}}
}

// serveFakes serves one fake Table and Queue service over HTTP, so child
// processes share them, and returns the parent's own clients of them
// (direct, without HTTP).
func serveFakes(t *testing.T) (string, clients) {
	tables, queues := fake.NewTableService(nil), fake.NewQueueService(nil)
	url := fakehttp.Serve(t, fakehttp.Service{Name: "table", Fake: tables, URL: tables.URL()}, fakehttp.Service{Name: "queue", Fake: queues, URL: queues.URL()})
	return url, clients{tables: tables.NewServiceClient(nil),
		queue: func(name string) *azqueue.QueueClient { return queues.NewQueueClient(name, nil) }}
}

// options declares the model as decl says.
func options(s spec, decl string, q consistency.Queue) *patterns.ModelOptions[Emp] {
	o := &patterns.ModelOptions[Emp]{Name: modelName, Primary: primary, Queue: q,
		StateRefresh: s.StateRefresh, RangeSize: s.RangeSize}
	byManager := func(e *Emp) string { return e.Manager }
	if decl == declManager || decl == declBoth {
		o.Copies = append(o.Copies, patterns.IndexDef[Emp]{Name: indexName, Prefix: indexPrefix, Value: byManager})
	}
	if decl == declBoth {
		o.Copies = append(o.Copies, patterns.IndexDef[Emp]{Name: index2Name, Prefix: index2Prefix, Value: byManager, Project: []string{"Manager", "Name"}})
	}
	return o
}

func openModel(ctx context.Context, t testing.TB, c clients, s spec, decl string) *patterns.Model[Emp] {
	tbl, err := table.New[Emp](c.tables.NewClient(s.Table), nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := patterns.OpenModel(ctx, tbl, options(s, decl, c.queue(s.Queue)))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// heapPeak samples the live heap every 20 ms until ctx ends.
type heapPeak struct{ peak atomic.Uint64 }

func (h *heapPeak) run(ctx context.Context) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		metrics.Read(sample)
		if v := sample[0].Value.Uint64(); v > h.peak.Load() {
			h.peak.Store(v)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// TestEvolveChild is a worker or writer process of the scenario; it runs
// only when the parent starts it, until SIGTERM (or SIGKILL).
func TestEvolveChild(t *testing.T) {
	s, ctx := fakehttp.Child[spec](t, childEnv, "TestIndex*On*")
	var heap heapPeak
	hctx, hstop := context.WithCancel(context.Background())
	defer hstop()
	go heap.run(hctx)
	c := open(t, s)
	m := openModel(context.Background(), t, c, s, s.Decl)
	var n counts
	out := json.NewEncoder(os.Stdout)
	say := func(done bool) {
		_ = out.Encode(report{Role: s.Role, ID: s.ID, PeakHeap: heap.peak.Load(), Ops: n.ops.Load(), Errors: n.fails.Load(),
			Adds: n.adds.Load(), Deletes: n.deletes.Load(), Done: done})
	}
	go func() {
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-hctx.Done():
				return
			case <-tick.C:
				say(false)
			}
		}
	}()
	switch s.Role {
	case "worker":
		w := consistency.NewWorker(c.queue(s.Queue), c.queue(s.Poison), &consistency.WorkerOptions{Visibility: 10 * time.Second, Concurrency: 4})
		if err := w.Handle(m.MessageType(), m.Process); err != nil {
			t.Fatal(err)
		}
		if err := w.Run(ctx, nil); err != nil {
			t.Logf("worker %d: %v", s.ID, err)
		}
	case "writer":
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Go(func() { write(ctx, m, s, g, &n) })
		}
		wg.Wait()
	default:
		t.Fatalf("role %q", s.Role)
	}
	say(true)
}

// counts are a writer's operations.
type counts struct{ ops, fails, adds, deletes atomic.Int64 }

// write updates, deletes and adds at s.WriteRate a second until stop
// ends: seven in ten operations change the indexed value of an existing
// entity, two delete one, one adds a new one. An operation under way when
// stop ends runs to its end, so the adds and deletes counted are those
// stored.
func write(stop context.Context, m *patterns.Model[Emp], s spec, g int, n *counts) {
	ctx := context.WithoutCancel(stop)
	at := layout(s.Entities, s.Partitions)
	rng := rand.New(rand.NewPCG(uint64(g), uint64(s.ID)))
	tick := time.NewTicker(time.Second / time.Duration(s.WriteRate))
	defer tick.Stop()
	added := 0
	for round := 1; ; round++ {
		select {
		case <-stop.Done():
			return
		case <-tick.C:
		}
		i := rng.IntN(s.Entities)
		pk, rk := at(i)
		var err error
		switch r := rng.IntN(10); {
		case r < 7:
			_, err = m.Modify(ctx, pk, rk, func(e *Emp) error { e.Manager = manager(i, round); return nil }, nil)
		case r < 9:
			if err = m.Delete(ctx, pk, rk, nil); err == nil {
				n.deletes.Add(1)
			}
		default:
			added++
			e := &Emp{Meta: table.Meta{PartitionKey: pk, RowKey: fmt.Sprintf("%sw%d_%d_%06d", primary, s.ID, g, added)}, Manager: manager(i, round), Name: "new"}
			if err = m.Add(ctx, e, nil); err == nil {
				n.adds.Add(1)
			}
		}
		switch {
		case err == nil, errors.Is(err, table.ErrNotFound):
		default:
			n.fails.Add(1)
			fmt.Fprintf(os.Stderr, "writer %d.%d: %v\n", s.ID, g, err)
		}
		n.ops.Add(1)
	}
}

// child is a started process and its last report.
type child struct {
	cmd     *exec.Cmd
	started time.Time
	mu      sync.Mutex
	last    report
	done    chan struct{}
}

func start(t *testing.T, s spec) *child {
	raw, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestEvolveChild$", "-test.v")
	cmd.Env = append(os.Environ(), childEnv+"="+string(raw))
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	k := &child{cmd: cmd, started: time.Now(), done: make(chan struct{})}
	go func() {
		defer close(k.done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var r report
			if json.Unmarshal(sc.Bytes(), &r) == nil && r.Role != "" {
				k.mu.Lock()
				k.last = r
				k.mu.Unlock()
			}
		}
		_ = cmd.Wait()
	}()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-k.done })
	return k
}

func (k *child) report() report {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.last
}

func (k *child) stop(t *testing.T) report {
	_ = k.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-k.done:
	case <-time.After(2 * time.Minute):
		t.Errorf("process %d did not stop", k.cmd.Process.Pid)
	}
	return k.report()
}

func (k *child) kill() {
	_ = k.cmd.Process.Signal(syscall.SIGKILL)
	<-k.done
}

// scenario is one evolution of a live table's indexes.
type scenario struct {
	name  string // in the logs
	load  string // the declaration the table is loaded with
	decl  string // the declaration of the writer, the workers and the steps
	steps []step
	kept  string   // the prefix of the index every primary has a row of at the end ("" none)
	gone  []string // the prefixes of indexes with no row left at the end
	// check runs at the end, everything stopped, with the decl model.
	check func(ctx context.Context, t *testing.T, m *patterns.Model[Emp], s spec)
}

// step is a Build or Drop of one index, done when the index is in state
// want; after (when not nil) runs then, the writer still going.
type step struct {
	verb  string // "Build" or "Drop"
	index string
	want  patterns.IndexState
	after func(ctx context.Context, t *testing.T, m *patterns.Model[Emp], s spec)
}

var (
	buildScenario = scenario{name: "build", load: declNone, decl: declManager,
		steps: []step{{verb: "Build", index: indexName, want: patterns.IndexActive}}, kept: indexPrefix}
	dropScenario = scenario{name: "drop", load: declManager, decl: declManager,
		steps: []step{{verb: "Drop", index: indexName, want: patterns.IndexDropped}}, gone: []string{indexPrefix}}
	changeScenario = scenario{name: "change", load: declManager, decl: declBoth,
		steps: []step{
			{verb: "Build", index: index2Name, want: patterns.IndexActive, after: readsThroughManager2},
			{verb: "Drop", index: indexName, want: patterns.IndexDropped},
		},
		kept: index2Prefix, gone: []string{indexPrefix}, check: manager2Whole}
)

func TestIndexBuildOnFake(t *testing.T)  { onFake(t, buildScenario) }
func TestIndexDropOnFake(t *testing.T)   { onFake(t, dropScenario) }
func TestIndexChangeOnFake(t *testing.T) { onFake(t, changeScenario) }

func TestIndexBuildOnAzurite(t *testing.T)  { onAzurite(t, buildScenario) }
func TestIndexDropOnAzurite(t *testing.T)   { onAzurite(t, dropScenario) }
func TestIndexChangeOnAzurite(t *testing.T) { onAzurite(t, changeScenario) }

func onFake(t *testing.T, sc scenario) {
	n := *entitiesFlag
	if n == 0 {
		n = 1000
	}
	workers := *workersFlag
	if workers == 0 {
		workers = 4
	}
	url, c := serveFakes(t)
	// Two kills at the issue's sizes; a small step of go test can end
	// before a restarted worker has run long enough to be killed again.
	kills := 1
	if n >= 100000 {
		kills = 2
	}
	run(t, sc, c, spec{FakeURL: url}, n, workers, kills)
}

func onAzurite(t *testing.T, sc scenario) {
	conn := testenv.ConnectionString(t)
	n := *entitiesFlag
	if n == 0 {
		n = 1000
	}
	workers := *workersFlag
	if workers == 0 {
		workers = 2
	}
	s := spec{Conn: conn}
	run(t, sc, open(t, s), s, n, workers, 1)
}

// run runs sc with n entities and the given worker processes, killing the
// first worker kills times during the steps.
func run(t *testing.T, sc scenario, c clients, s spec, n, workers, kills int) {
	ctx := context.Background()
	s.Table = testenv.UniqueName("evolve")
	s.Queue = strings.ToLower(testenv.UniqueName("evolve"))
	s.Poison = s.Queue + "p"
	s.Entities = n
	s.Partitions = max(2, n/1000)
	s.StateRefresh = time.Second
	s.RangeSize = max(200, n/200)
	s.WriteRate = 25
	s.Decl = sc.decl
	if _, err := c.tables.CreateTable(ctx, s.Table, nil); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{s.Queue, s.Poison} {
		if _, err := c.queue(q).Create(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}

	// The table as it stands before the steps: n primaries, written by
	// the model with the load declaration (its indexes active).
	began := time.Now()
	loader := openModel(ctx, t, c, s, sc.load)
	at := layout(n, s.Partitions)
	sum, err := loader.Load(ctx, func(yield func(*Emp) bool) {
		for i := range n {
			pk, rk := at(i)
			if !yield(&Emp{Meta: table.Meta{PartitionKey: pk, RowKey: rk}, Manager: manager(i, 0), Name: fmt.Sprint("emp", i), N: int64(i)}) {
				return
			}
		}
	}, nil)
	if err != nil || sum.Entities != n {
		t.Fatalf("load: %d written of %d: %v", sum.Entities, n, err)
	}
	t.Logf("loaded %d entities over %d partitions in %v", n, s.Partitions, time.Since(began).Round(time.Millisecond))

	// The writer opens the model with the scenario's declaration before
	// the first step.
	ws := s
	ws.Role = "writer"
	writer := start(t, ws)
	time.Sleep(2 * time.Second)

	m := openModel(ctx, t, c, s, sc.decl)
	var kids []*child
	var peaks []report
	killAt := []float64{0.25, 0.6}[:kills]
	began = time.Now()
	selfCPU := cpuTime(syscall.RUSAGE_SELF)
	for _, st := range sc.steps {
		stepBegan := time.Now()
		var err error
		if st.verb == "Build" {
			err = m.Build(ctx, st.index, nil)
		} else {
			err = m.Drop(ctx, st.index, nil)
		}
		if err != nil {
			t.Fatalf("%s %s: %v", st.verb, st.index, err)
		}
		for len(kids) < workers {
			k := s
			k.Role, k.ID = "worker", len(kids)
			kids = append(kids, start(t, k))
		}
		deadline := time.Now().Add(time.Duration(n/50+600) * time.Second)
		for {
			p, err := m.IndexStatus(ctx, st.index, nil)
			if err != nil {
				t.Fatal(err)
			}
			if p.State == st.want {
				break
			}
			// Kill worker 0 once the step has passed the mark and the
			// worker has run for a while (a restarted one too), so each
			// kill stops one that holds ranges. The mark counts against
			// the table's entities until the planner has cut every range:
			// the ranges run while it cuts, and a quick step is mostly
			// done by then.
			total := float64(n)
			if p.Planned {
				total = float64(p.Total)
			}
			if len(killAt) > 0 && total > 0 && float64(p.Entities) >= killAt[0]*total && time.Since(kids[0].started) > 2*time.Second {
				peaks = append(peaks, kids[0].report())
				kids[0].kill()
				t.Logf("killed worker 0 (SIGKILL) at %d of %d entities, %v into the %s of %s", p.Entities, p.Total, time.Since(stepBegan).Round(time.Millisecond), st.verb, st.index)
				k := s
				k.Role = "worker"
				kids[0] = start(t, k)
				killAt = killAt[1:]
			}
			if time.Now().After(deadline) {
				t.Fatalf("the %s of %s is not done after %v: %+v", st.verb, st.index, time.Since(stepBegan), p)
			}
			time.Sleep(200 * time.Millisecond)
		}
		took := time.Since(stepBegan)
		t.Logf("%s of %s over %d entities: %v, %.0f entities/s, %.0f per worker process", st.verb, st.index, n, took.Round(time.Millisecond),
			float64(n)/took.Seconds(), float64(n)/took.Seconds()/float64(workers))
		if st.after != nil {
			st.after(ctx, t, m, s)
		}
	}
	took := time.Since(began)
	selfCPU = cpuTime(syscall.RUSAGE_SELF) - selfCPU
	if len(killAt) > 0 {
		t.Errorf("the %s ended before every kill: %d left", sc.name, len(killAt))
	}
	wr := writer.stop(t)
	peaks = append(peaks, wr)
	for _, k := range kids {
		peaks = append(peaks, k.stop(t))
	}
	// Every child has been waited for: their CPU is the writer's and the
	// workers', the killed ones' included.
	kidsCPU := cpuTime(syscall.RUSAGE_CHILDREN)
	if wr.Ops == 0 || wr.Errors != 0 {
		t.Errorf("writer: %d operations, %d failed (see its stderr)", wr.Ops, wr.Errors)
	}
	t.Logf("writer: %d operations, %d adds, %d deletes", wr.Ops, wr.Adds, wr.Deletes)

	r := rawCheck(ctx, t, c, s, sc.kept, sc.gone)
	t.Logf("raw scan: %d primaries; %d missing, %d stale, %d orphan rows of %q; rows left of dropped indexes: %v", r.primaries, r.missing, r.stale, r.orphan, sc.kept, r.left)
	if r.missing+r.stale+r.orphan != 0 {
		t.Errorf("raw scan: %d missing, %d stale, %d orphan index rows", r.missing, r.stale, r.orphan)
	}
	for prefix, left := range r.left {
		if left != 0 {
			t.Errorf("raw scan: %d rows left under %q, of a dropped index", left, prefix)
		}
	}
	if want := n + int(wr.Adds) - int(wr.Deletes); r.primaries != want {
		t.Errorf("raw scan: %d primaries; want %d loaded + %d added - %d deleted = %d", r.primaries, n, wr.Adds, wr.Deletes, want)
	}
	verifyClean(ctx, t, m, r.primaries)
	if sc.check != nil {
		sc.check(ctx, t, m, s)
	}

	t.Logf("%s of %d entities: %v, %.0f entities/s, %.0f per worker process", sc.name, n, took.Round(time.Millisecond),
		float64(n)/took.Seconds(), float64(n)/took.Seconds()/float64(workers))
	t.Logf("CPU during the steps: %v the fake (this process), %v the workers and the writer; %.0f µs an entity in all",
		selfCPU.Round(time.Millisecond), kidsCPU.Round(time.Millisecond), float64((selfCPU+kidsCPU).Microseconds())/float64(n))
	var worst uint64
	for _, r := range peaks {
		t.Logf("peak heap %s %d: %.1f MiB", r.Role, r.ID, float64(r.PeakHeap)/(1<<20))
		worst = max(worst, r.PeakHeap)
	}
	if worst > 64<<20 {
		t.Errorf("a process's peak heap is %.1f MiB, over 64 MiB", float64(worst)/(1<<20))
	}
}

// sample is the values the change scenario reads through manager2: every
// manager of partition p0001, and the first twenty of p0000.
func sample(ctx context.Context, t *testing.T, m *patterns.Model[Emp]) map[[2]string]bool {
	out := map[[2]string]bool{}
	for _, pk := range []string{"p0000", "p0001"} {
		for e, err := range m.Query(ctx, &table.QueryOptions{Filter: table.Partition(pk)}) {
			if err != nil {
				t.Fatal(err)
			}
			if pk == "p0000" && e.Manager >= "mgr020" {
				continue
			}
			out[[2]string{pk, e.Manager}] = true
		}
	}
	return out
}

// readsThroughManager2: once manager2 is active, reads go through it (the
// writer still changing managers, so each value read is checked to hold
// the manager asked for, not compared with a scan).
func readsThroughManager2(ctx context.Context, t *testing.T, m *patterns.Model[Emp], _ spec) {
	read := 0
	for k := range sample(ctx, t, m) {
		for v, err := range m.Find(ctx, index2Name, k[0], k[1], nil) {
			if err != nil {
				t.Fatalf("Find through %s, %s %s: %v", index2Name, k[0], k[1], err)
			}
			if v.Manager != k[1] || v.PartitionKey != k[0] || !strings.HasPrefix(v.Name, "emp") && v.Name != "new" {
				t.Errorf("Find through %s, %s %s: %+v", index2Name, k[0], k[1], v)
			}
			read++
		}
	}
	t.Logf("read %d primaries through %s while the writer goes on", read, index2Name)
	if read == 0 {
		t.Error("no primary read through manager2")
	}
}

// manager2Whole: with everything stopped, Find through manager2 returns,
// for each value of the sample, exactly the primaries of the partition
// that hold it, whole; manager is refused.
func manager2Whole(ctx context.Context, t *testing.T, m *patterns.Model[Emp], _ spec) {
	want := map[[2]string]map[string]Emp{}
	for _, pk := range []string{"p0000", "p0001"} {
		for e, err := range m.Query(ctx, &table.QueryOptions{Filter: table.Partition(pk)}) {
			if err != nil {
				t.Fatal(err)
			}
			k := [2]string{pk, e.Manager}
			if want[k] == nil {
				want[k] = map[string]Emp{}
			}
			e.ETag = ""
			want[k][e.RowKey] = *e
		}
	}
	read := 0
	for k := range sample(ctx, t, m) {
		got := map[string]Emp{}
		for v, err := range m.Find(ctx, index2Name, k[0], k[1], nil) {
			if err != nil {
				t.Fatalf("Find through %s, %s %s: %v", index2Name, k[0], k[1], err)
			}
			v.ETag = ""
			got[v.RowKey] = *v
			read++
		}
		for rk, w := range want[k] {
			if g, ok := got[rk]; !ok || g.Manager != w.Manager || g.Name != w.Name || g.N != w.N {
				t.Errorf("Find through %s, %s %s: %s is %+v (found %v); want %+v", index2Name, k[0], k[1], rk, g, ok, w)
			}
		}
		if len(got) != len(want[k]) {
			t.Errorf("Find through %s, %s %s: %d primaries; want %d", index2Name, k[0], k[1], len(got), len(want[k]))
		}
	}
	t.Logf("read %d whole primaries through %s", read, index2Name)
	for _, err := range m.Find(ctx, indexName, "p0001", "mgr000", nil) {
		if !errors.Is(err, patterns.ErrIndexNotReady) {
			t.Errorf("Find through the dropped %s: %v; want ErrIndexNotReady", indexName, err)
		}
		break
	}
}

// scan is what rawCheck finds.
type scan struct {
	primaries              int
	missing, stale, orphan int            // rows of the kept index
	left                   map[string]int // rows under each dropped index's prefix
}

// rawCheck scans the whole table with the SDK alone and compares the kept
// index's rows with the primaries (each primary with a manager must have
// one row under its prefix naming it with its manager, and no other), and
// counts the rows under each prefix of gone.
func rawCheck(ctx context.Context, t *testing.T, c clients, s spec, kept string, gone []string) scan {
	client := c.tables.NewClient(s.Table)
	r := scan{left: map[string]int{}}
	for _, g := range gone {
		r.left[g] = 0
	}
	want := map[string]string{} // owner reference → manager
	got := map[string][]string{}
	pager := client.NewListEntitiesPager(nil)
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, raw := range page.Entities {
			var e map[string]any
			if err := json.Unmarshal(raw, &e); err != nil {
				t.Fatal(err)
			}
			pk, _ := e["PartitionKey"].(string)
			rk, _ := e["RowKey"].(string)
			mgr, _ := e["Manager"].(string)
			switch {
			case strings.HasPrefix(rk, primary):
				r.primaries++
				if mgr != "" {
					want[tuple.Encode(pk, rk)] = mgr
				}
			case kept != "" && strings.HasPrefix(rk, kept):
				owner, _ := e["TkIndexOf"].(string)
				got[owner] = append(got[owner], mgr)
			default:
				for _, g := range gone {
					if strings.HasPrefix(rk, g) {
						r.left[g]++
					}
				}
			}
		}
	}
	if kept == "" {
		return r
	}
	for owner, mgr := range want {
		rows := got[owner]
		switch {
		case len(rows) == 0:
			r.missing++
		case !slices.Contains(rows, mgr):
			r.stale++
			r.orphan += len(rows) - 1
		default:
			r.orphan += len(rows) - 1 // rows of the owner's earlier values
		}
		delete(got, owner)
	}
	for _, rows := range got {
		r.orphan += len(rows)
	}
	return r
}

// verifyClean runs the model's streaming Verify of every index it
// declares over the whole table (a dropped one: every primary calls for no
// row of it): it must find nothing, and have read every primary.
func verifyClean(ctx context.Context, t *testing.T, m *patterns.Model[Emp], primaries int) {
	shown := 0
	sum, err := m.Verify(ctx, &patterns.VerifyOptions{Issue: func(i patterns.IndexIssue) error {
		if shown++; shown <= 10 {
			t.Errorf("verify: %+v", i)
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("verify: %d primaries, %d index rows; %d missing, %d stale, %d orphan", sum.Primaries, sum.IndexRows, sum.Missing, sum.Stale, sum.Orphans)
	if !sum.OK() || sum.Primaries != primaries {
		t.Errorf("verify: %+v, want OK over %d primaries", sum, primaries)
	}
}

// cpuTime is the user and system CPU time getrusage reports for who.
func cpuTime(who int) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(who, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
