package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/internal/seqs"
	"github.com/tablekit/tablekit/internal/testenv"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/table"
)

// The crash matrix: each multi-step operation runs in a "process" that
// dies right before its k-th request, for k = 1, 2, ... until it finishes
// without dying; after each death a fresh process recovers (drains the
// queue with a new worker, sweeps, verifies) and the final state is
// checked exactly: nothing acknowledged lost, nothing duplicated, no
// orphans.
//
// On Azurite the process is real: the test binary re-executed, killed
// with SIGKILL by its own request policy before the k-th request leaves
// (TestCrashChild). On the fake the services live in the test's memory, so
// a child process could not share them: there the process is in-process
// clients whose policy fails the k-th request and every later one, without
// retries, which is what a dead process's storage account sees.

// Environment of the child process.
const (
	crashRoleEnv  = "TABLEKIT_CRASH_ROLE"
	crashAtEnv    = "TABLEKIT_CRASH_AT"
	crashNamesEnv = "TABLEKIT_CRASH_NAMES"
)

// crashNames are the resources one run of a scenario uses.
type crashNames struct {
	Current, Archive, Copies, Lists string // tables
	Queue, Poison                   string
	Container                       string
}

// errDied is what the in-process variant's requests return once the
// process is dead. NonRetriable: the SDK must not retry it, a dead process
// sends nothing more.
type errDied struct{}

func (errDied) Error() string { return "crash test: the process is dead" }
func (errDied) NonRetriable() {}

// diePolicy dies before the at-th request of a process (every attempt
// counts, retries included), and names each request it lets through.
type diePolicy struct {
	at    int64
	n     atomic.Int64
	kill  func() // SIGKILL in a child; nil in process
	dead  atomic.Bool
	mu    sync.Mutex
	steps []string // the requests sent, named
	trace func(step string)
}

// servicePolicy is a process's diePolicy on one service's clients.
type servicePolicy struct {
	d   *diePolicy
	svc string
}

func (s servicePolicy) Do(req *policy.Request) (*http.Response, error) {
	d := s.d
	step := stepName(s.svc, req.Raw())
	if d.n.Add(1) >= d.at {
		if d.kill != nil {
			d.kill()
		}
		d.dead.Store(true)
	}
	if d.dead.Load() {
		return nil, errDied{}
	}
	d.mu.Lock()
	d.steps = append(d.steps, step)
	d.mu.Unlock()
	if d.trace != nil {
		d.trace(step)
	}
	return req.Next()
}

// stepName names a request for the boundary table.
func stepName(svc string, r *http.Request) string {
	q := r.URL.Query()
	switch svc {
	case "table":
		switch {
		case r.Method == http.MethodGet:
			return "table read"
		case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "$batch"):
			return "table transaction"
		case r.Method == http.MethodPost:
			return "table insert"
		case r.Method == http.MethodDelete:
			return "table delete"
		case r.Header.Get("If-Match") != "":
			return "table update"
		}
		return "table upsert"
	case "queue":
		switch {
		case r.Method == http.MethodPost:
			return "enqueue"
		case r.Method == http.MethodGet:
			return "dequeue"
		case r.Method == http.MethodPut:
			return "message update"
		case r.Method == http.MethodDelete:
			return "message delete"
		}
	case "blob":
		switch {
		case q.Get("comp") == "list":
			return "blob list"
		case r.Method == http.MethodPut:
			return "blob upload"
		case r.Method == http.MethodGet:
			return "blob read"
		case r.Method == http.MethodDelete:
			return "blob delete"
		}
	}
	return svc + " " + r.Method
}

// crashProc is one process's clients.
type crashProc struct {
	names  crashNames
	table  func(name string) *aztables.Client
	queue  func(name string) *azqueue.QueueClient
	blobs  *azblob.Client
	policy *diePolicy // nil: a process that does not die
}

// crashBackend makes processes over one storage account.
type crashBackend struct {
	name string
	proc func(names crashNames, p *diePolicy) *crashProc
	// cs is the connection string a child process uses; "" runs in process.
	cs string
}

func withPolicy(o *azcore.ClientOptions, p *diePolicy, svc string) {
	if p != nil {
		o.PerRetryPolicies = append(o.PerRetryPolicies, servicePolicy{d: p, svc: svc})
	}
}

func fakeCrashBackend() *crashBackend {
	tables := fake.NewTableService(nil)
	queues := fake.NewQueueService(nil)
	blobs := fake.NewBlobService(nil)
	return &crashBackend{name: "fake", proc: func(names crashNames, p *diePolicy) *crashProc {
		bo := &azblob.ClientOptions{}
		withPolicy(&bo.ClientOptions, p, "blob")
		return &crashProc{names: names, policy: p, blobs: blobs.NewClient(bo),
			table: func(name string) *aztables.Client {
				o := &aztables.ClientOptions{}
				withPolicy(&o.ClientOptions, p, "table")
				return tables.NewClient(name, o)
			},
			queue: func(name string) *azqueue.QueueClient {
				o := &azqueue.ClientOptions{}
				withPolicy(&o.ClientOptions, p, "queue")
				return queues.NewQueueClient(name, o)
			}}
	}}
}

func azuriteCrashBackend(cs string) *crashBackend {
	return &crashBackend{name: "azurite", cs: cs, proc: func(names crashNames, p *diePolicy) *crashProc {
		must := func(err error) {
			if err != nil {
				panic("crash test: client: " + err.Error())
			}
		}
		bo := &azblob.ClientOptions{}
		withPolicy(&bo.ClientOptions, p, "blob")
		bc, err := azblob.NewClientFromConnectionString(cs, bo)
		must(err)
		return &crashProc{names: names, policy: p, blobs: bc,
			table: func(name string) *aztables.Client {
				o := &aztables.ClientOptions{}
				withPolicy(&o.ClientOptions, p, "table")
				svc, err := aztables.NewServiceClientFromConnectionString(cs, o)
				must(err)
				return svc.NewClient(name)
			},
			queue: func(name string) *azqueue.QueueClient {
				o := &azqueue.ClientOptions{}
				withPolicy(&o.ClientOptions, p, "queue")
				c, err := azqueue.NewQueueClientFromConnectionString(cs, name, o)
				must(err)
				return c
			}}
	}}
}

// bubble runs f in virtual time (a testing/synctest bubble) in process:
// the fakes' clocks are time.Now, so the recoveries' waits for visibility
// timeouts and publish delays take no real time. Across processes the
// clock is real.
func (b *crashBackend) bubble(f func(t *testing.T)) func(t *testing.T) {
	if b.cs != "" {
		return f
	}
	return func(t *testing.T) { synctest.Test(t, f) }
}

// crashScenario is one operation of the matrix.
type crashScenario struct {
	name string
	// ack is how many requests the operation sends before it is
	// acknowledged to its caller: a process that died later must leave
	// its effect in place.
	ack int64
	// setup writes the state before the operation (a process that lives).
	setup func(ctx context.Context, p *crashProc) error
	// run is the operation, in the process that dies.
	run func(ctx context.Context, p *crashProc) error
	// recover is what runs after a death: a fresh worker drains, Sweep
	// runs; check then tests the final state exactly.
	recover func(t *testing.T, p *crashProc)
	check   func(t *testing.T, p *crashProc, acked bool)
}

// Test data and helpers shared by the scenarios.
var (
	crashPhotoA = bytes.Repeat([]byte{0xAA, 0x01}, 25_000) // 50 KB: offloaded
	crashPhotoB = bytes.Repeat([]byte{0xBB, 0x02}, 30_000)
)

func crashWorker(p *crashProc, handlers map[string]consistency.Handler) *consistency.Worker {
	w := consistency.NewWorker(p.queue(p.names.Queue), p.queue(p.names.Poison), quick(&consistency.WorkerOptions{Concurrency: 1, BatchSize: 1}))
	for typ, h := range handlers {
		_ = w.Handle(typ, h)
	}
	return w
}

func moverOf(p *crashProc) *consistency.Mover[Staff] {
	cur, _ := table.New[Staff](p.table(p.names.Current), nil)
	arc, _ := table.New[Staff](p.table(p.names.Archive), nil)
	return consistency.NewMover[Staff](cur, arc, consistency.NewSender(p.queue(p.names.Queue), nil), nil)
}

func largeOf(p *crashProc) *patterns.LargeEntity[Profile] {
	le, _ := patterns.NewLargeEntity[Profile](tableOf(table.New[Profile](p.table(p.names.Current), nil)), p.blobs, p.names.Container, []string{"Photo"}, 0, nil)
	return le
}

func crossOf(p *crashProc) *patterns.Model[Emp] {
	def := patterns.IndexDef[Emp]{Name: "email", Table: tableOf(table.New[table.Entity](p.table(p.names.Copies), nil)),
		PartitionKey: func(e *Emp) string { return "email_" + e.Department },
		Value:        func(e *Emp) string { return e.Email }}
	x, _ := patterns.OpenModel(context.Background(), tableOf(table.New[Emp](p.table(p.names.Current), nil)), &patterns.ModelOptions[Emp]{Name: "idx", Queue: p.queue(p.names.Queue), CrossCopies: []patterns.IndexDef[Emp]{def}, PublishDelay: time.Second})
	return x
}

func drainWith(t *testing.T, p *crashProc, handlers map[string]consistency.Handler) {
	t.Helper()
	drainAll(t, p.queue(p.names.Queue), crashWorker(p, handlers))
	if n := queueLen(t, p.queue(p.names.Poison)); n != 0 {
		t.Fatalf("%d messages poisoned", n)
	}
}

func rowKeys(t *testing.T, c *aztables.Client) []string {
	t.Helper()
	var out []string
	pager := c.NewListEntitiesPager(nil)
	for pager.More() {
		page, err := pager.NextPage(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for _, raw := range page.Entities {
			var m struct{ PartitionKey, RowKey string }
			if err := json.Unmarshal(raw, &m); err != nil {
				t.Fatal(err)
			}
			out = append(out, m.PartitionKey+"/"+crossValue(m.RowKey))
		}
	}
	return out
}

func blobsIn(t *testing.T, p *crashProc) []string {
	t.Helper()
	return slices.Sorted(func(yield func(string) bool) {
		for n := range blobNames(t, p.blobs, p.names.Container) {
			if !yield(n) {
				return
			}
		}
	})
}

var crashScenarios = []crashScenario{{
	name: "archive move",
	ack:  2, // Request: the read of the version, the enqueue
	setup: func(ctx context.Context, p *crashProc) error {
		cur, _ := table.New[Staff](p.table(p.names.Current), nil)
		return cur.Add(ctx, staff("000001", "Ann", "Lee", "ann@contoso.com", 41), nil)
	},
	run: func(ctx context.Context, p *crashProc) error {
		m := moverOf(p)
		if err := m.Request(ctx, "Sales", "empid_000001", nil); err != nil {
			return err
		}
		_, err := crashWorker(p, map[string]consistency.Handler{m.MessageType(): m.Process}).Drain(ctx, nil)
		return err
	},
	recover: func(t *testing.T, p *crashProc) {
		m := moverOf(p)
		drainWith(t, p, map[string]consistency.Handler{m.MessageType(): m.Process})
	},
	check: func(t *testing.T, p *crashProc, acked bool) {
		cur, arc := rowKeys(t, p.table(p.names.Current)), rowKeys(t, p.table(p.names.Archive))
		moved := len(cur) == 0 && slices.Equal(arc, []string{"Sales/empid_000001"})
		stayed := len(arc) == 0 && slices.Equal(cur, []string{"Sales/empid_000001"})
		if !(moved || (stayed && !acked)) {
			t.Fatalf("Current %q, Archive %q (move acknowledged: %v)", cur, arc, acked)
		}
		if moved {
			a, _ := table.New[Staff](p.table(p.names.Archive), nil)
			got, err := a.Get(t.Context(), "Sales", "empid_000001", nil)
			if err != nil || got.FirstName != "Ann" || got.Age != 41 || got.Email != "ann@contoso.com" {
				t.Fatalf("archived copy: %+v %v", got, err)
			}
		}
	},
}, {
	name: "batched archive move",
	ack:  0, // the moves were requested (and acknowledged) before
	setup: func(ctx context.Context, p *crashProc) error {
		cur, _ := table.New[Staff](p.table(p.names.Current), nil)
		m := moverOf(p)
		for i := 0; i < 6; i++ {
			s := staff(fmt.Sprintf("%06d", i), "F", "L", fmt.Sprintf("e%d@contoso.com", i), i)
			if i%2 == 1 {
				s.PartitionKey = "Ops"
			}
			if err := cur.Add(ctx, s, nil); err != nil {
				return err
			}
			if err := m.RequestValue(ctx, s, nil); err != nil {
				return err
			}
		}
		return nil
	},
	run: func(ctx context.Context, p *crashProc) error {
		return moverBatches(p)(ctx, p.queue(p.names.Queue), p.queue(p.names.Poison))
	},
	recover: func(t *testing.T, p *crashProc) { drainBatched(t, p, moverBatches(p)) },
	check: func(t *testing.T, p *crashProc, acked bool) {
		cur, arc := rowKeys(t, p.table(p.names.Current)), rowKeys(t, p.table(p.names.Archive))
		want := []string{"Ops/empid_000001", "Ops/empid_000003", "Ops/empid_000005", "Sales/empid_000000", "Sales/empid_000002", "Sales/empid_000004"}
		if len(cur) != 0 || !slices.Equal(arc, want) {
			t.Fatalf("Current %q, Archive %q", cur, arc)
		}
		a, _ := table.New[Staff](p.table(p.names.Archive), nil)
		all, err := seqs.Collect(a.Query(t.Context(), nil))
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range all {
			if g.Email != fmt.Sprintf("e%d@contoso.com", g.Age) {
				t.Fatalf("archived %+v", g)
			}
		}
	},
}, {
	name: "large entity put",
	ack:  2, // the photo's blob, the entity
	setup: func(ctx context.Context, p *crashProc) error {
		return largeOf(p).Put(ctx, &Profile{Meta: table.Meta{PartitionKey: "Sales", RowKey: "000123"}, Name: "v1", Photo: crashPhotoA}, nil)
	},
	run: func(ctx context.Context, p *crashProc) error {
		return largeOf(p).Put(ctx, &Profile{Meta: table.Meta{PartitionKey: "Sales", RowKey: "000123"}, Name: "v2", Photo: crashPhotoB}, nil)
	},
	recover: func(t *testing.T, p *crashProc) {
		if _, err := largeOf(p).Sweep(t.Context(), 0, nil); err != nil {
			t.Fatal(err)
		}
	},
	check: func(t *testing.T, p *crashProc, acked bool) {
		got, err := largeOf(p).Get(t.Context(), "Sales", "000123", nil)
		if err != nil {
			t.Fatalf("Get: %v", err)
		}
		v2 := got.Name == "v2" && bytes.Equal(got.Photo, crashPhotoB)
		v1 := got.Name == "v1" && bytes.Equal(got.Photo, crashPhotoA)
		if !(v2 || (v1 && !acked)) {
			t.Fatalf("entity %q with a %d-byte photo (put acknowledged: %v)", got.Name, len(got.Photo), acked)
		}
		if b := blobsIn(t, p); len(b) != 1 {
			t.Fatalf("blobs after Sweep: %q, want the entity's one", b)
		}
	},
}, {
	name: "large entity modify",
	ack:  4, // read the entity and its blob, the new blob, the guarded update
	setup: func(ctx context.Context, p *crashProc) error {
		return largeOf(p).Put(ctx, &Profile{Meta: table.Meta{PartitionKey: "Sales", RowKey: "000123"}, Name: "v1", Photo: crashPhotoA}, nil)
	},
	run: func(ctx context.Context, p *crashProc) error {
		_, err := largeOf(p).Modify(ctx, "Sales", "000123", func(v *Profile) error {
			v.Name, v.Photo = v.Name+"+m", crashPhotoB
			return nil
		}, nil)
		return err
	},
	recover: func(t *testing.T, p *crashProc) {
		if _, err := largeOf(p).Sweep(t.Context(), 0, nil); err != nil {
			t.Fatal(err)
		}
	},
	check: func(t *testing.T, p *crashProc, acked bool) {
		got, err := largeOf(p).Get(t.Context(), "Sales", "000123", nil)
		if err != nil {
			t.Fatalf("Get: %v", err)
		}
		modified := got.Name == "v1+m" && bytes.Equal(got.Photo, crashPhotoB)
		before := got.Name == "v1" && bytes.Equal(got.Photo, crashPhotoA)
		if !(modified || (before && !acked)) {
			t.Fatalf("entity %q with a %d-byte photo (modify acknowledged: %v)", got.Name, len(got.Photo), acked)
		}
		if b := blobsIn(t, p); len(b) != 1 {
			t.Fatalf("blobs after Sweep: %q, want the entity's one", b)
		}
	},
}, {
	name: "large entity delete",
	ack:  3, // the read, the entity's delete, the blob's delete
	setup: func(ctx context.Context, p *crashProc) error {
		return largeOf(p).Put(ctx, &Profile{Meta: table.Meta{PartitionKey: "Sales", RowKey: "000123"}, Name: "v1", Photo: crashPhotoA}, nil)
	},
	run: func(ctx context.Context, p *crashProc) error {
		return largeOf(p).Delete(ctx, "Sales", "000123", nil)
	},
	recover: func(t *testing.T, p *crashProc) {
		if _, err := largeOf(p).Sweep(t.Context(), 0, nil); err != nil {
			t.Fatal(err)
		}
	},
	check: func(t *testing.T, p *crashProc, acked bool) {
		got, err := largeOf(p).Get(t.Context(), "Sales", "000123", nil)
		b := blobsIn(t, p)
		switch {
		case table.Is(err, table.ErrNotFound) && len(b) == 0:
		case err == nil && !acked && got.Name == "v1" && bytes.Equal(got.Photo, crashPhotoA) && len(b) == 1:
		default:
			t.Fatalf("Get: %v, blobs %q (delete acknowledged: %v)", err, b, acked)
		}
	},
}, {
	name: "inter-partition index put",
	ack:  4, // read the primary, enqueue (hidden), write, show
	setup: func(ctx context.Context, p *crashProc) error {
		x := crossOf(p)
		if err := x.Upsert(ctx, emp("Sales", "000001", "Ann", "Lee", "ann@contoso.com"), &table.UpsertOptions{Mode: aztables.UpdateModeReplace}); err != nil {
			return err
		}
		_, err := crashWorker(p, map[string]consistency.Handler{x.MessageType(): x.Process}).Drain(ctx, nil)
		return err
	},
	run: func(ctx context.Context, p *crashProc) error {
		x := crossOf(p)
		if err := x.Upsert(ctx, emp("Sales", "000001", "Ann", "Lee", "ann.lee@contoso.com"), &table.UpsertOptions{Mode: aztables.UpdateModeReplace}); err != nil {
			return err
		}
		_, err := crashWorker(p, map[string]consistency.Handler{x.MessageType(): x.Process}).Drain(ctx, nil)
		return err
	},
	recover: func(t *testing.T, p *crashProc) {
		x := crossOf(p)
		drainWith(t, p, map[string]consistency.Handler{x.MessageType(): x.Process})
	},
	check: func(t *testing.T, p *crashProc, acked bool) {
		x := crossOf(p)
		got, err := x.Table().Get(t.Context(), "empid_Sales", "000001", nil)
		if err != nil {
			t.Fatal(err)
		}
		if got.Email != "ann.lee@contoso.com" && (acked || got.Email != "ann@contoso.com") {
			t.Fatalf("primary email %q (put acknowledged: %v)", got.Email, acked)
		}
		checkCross(t, p, x, []string{"email_Sales/" + got.Email})
	},
}, {
	name: "inter-partition index delete",
	ack:  4, // read the primary, enqueue (hidden), delete, show
	setup: func(ctx context.Context, p *crashProc) error {
		x := crossOf(p)
		if err := x.Upsert(ctx, emp("Sales", "000001", "Ann", "Lee", "ann@contoso.com"), &table.UpsertOptions{Mode: aztables.UpdateModeReplace}); err != nil {
			return err
		}
		_, err := crashWorker(p, map[string]consistency.Handler{x.MessageType(): x.Process}).Drain(ctx, nil)
		return err
	},
	run: func(ctx context.Context, p *crashProc) error {
		x := crossOf(p)
		if err := x.Delete(ctx, "empid_Sales", "000001", nil); err != nil {
			return err
		}
		_, err := crashWorker(p, map[string]consistency.Handler{x.MessageType(): x.Process}).Drain(ctx, nil)
		return err
	},
	recover: func(t *testing.T, p *crashProc) {
		x := crossOf(p)
		drainWith(t, p, map[string]consistency.Handler{x.MessageType(): x.Process})
	},
	check: func(t *testing.T, p *crashProc, acked bool) {
		x := crossOf(p)
		_, err := x.Table().Get(t.Context(), "empid_Sales", "000001", nil)
		switch {
		case table.Is(err, table.ErrNotFound):
			checkCross(t, p, x, nil)
		case err == nil && !acked:
			checkCross(t, p, x, []string{"email_Sales/ann@contoso.com"})
		default:
			t.Fatalf("primary: %v (delete acknowledged: %v)", err, acked)
		}
	},
}}

// checkCross verifies the index against its primaries and lists its copies.
func checkCross(t *testing.T, p *crashProc, x *patterns.Model[Emp], want []string) {
	t.Helper()
	rep, err := verifyOf(t.Context(), x, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("index verify: %+v", rep)
	}
	if got := rowKeys(t, p.table(p.names.Copies)); !slices.Equal(got, want) {
		t.Fatalf("copies %q, want %q", got, want)
	}
}

// newCrashNames creates the resources of one run.
func newCrashNames(t *testing.T, b *crashBackend) crashNames {
	t.Helper()
	n := crashNames{
		Current: testenv.UniqueName("crcur"), Archive: testenv.UniqueName("crarc"),
		Copies: testenv.UniqueName("crcpy"), Lists: testenv.UniqueName("crlst"),
		Queue: strings.ToLower(testenv.UniqueName("crq")), Poison: strings.ToLower(testenv.UniqueName("crp")),
		Container: strings.ToLower(testenv.UniqueName("crc")),
	}
	p := b.proc(n, nil)
	ctx := t.Context()
	for _, name := range []string{n.Current, n.Archive, n.Copies, n.Lists} {
		c := p.table(name)
		if _, err := c.CreateTable(ctx, nil); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = c.Delete(context.Background(), nil) })
	}
	for _, name := range []string{n.Queue, n.Poison} {
		q := p.queue(name)
		if _, err := q.Create(ctx, nil); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = q.Delete(context.Background(), nil) })
	}
	if _, err := p.blobs.CreateContainer(ctx, n.Container, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = p.blobs.DeleteContainer(context.Background(), n.Container, nil) })
	return n
}

// crashRow is one line of the boundary table the matrix logs.
type crashRow struct {
	scenario string
	boundary int64 // died before this request; 0: finished
	step     string
	acked    bool
}

// runCrashMatrix runs every scenario, dying at every request boundary.
func runCrashMatrix(t *testing.T, b *crashBackend) {
	var mu sync.Mutex
	var rows []crashRow
	stepsOf := map[string][]string{}
	t.Cleanup(func() {
		var lines []string
		for _, r := range rows {
			if steps := stepsOf[r.scenario]; r.boundary > 0 && int(r.boundary) <= len(steps) {
				r.step = steps[r.boundary-1]
			}
			at := fmt.Sprintf("before request %d (%s)", r.boundary, r.step)
			if r.boundary == 0 {
				at = "no crash"
			}
			lines = append(lines, fmt.Sprintf("| %s | %s | %v | exact |", r.scenario, at, r.acked))
		}
		t.Logf("%s crash matrix (%d runs):\n%s", b.name, len(rows), strings.Join(lines, "\n"))
	})
	for _, sc := range crashScenarios {
		t.Run(sc.name, func(t *testing.T) {
			if b.cs != "" {
				// Scenarios use names of their own; with real processes
				// each mostly waits for its children and Azurite, so they
				// overlap. The deaths within one scenario stay in order:
				// the first run that does not die ends the scenario.
				t.Parallel()
			}
			const most = 30 // far more requests than any scenario sends
			for k := int64(1); k <= most; k++ {
				done := false
				t.Run(fmt.Sprintf("die before request %d", k), b.bubble(func(t *testing.T) {
					names := newCrashNames(t, b)
					live := b.proc(names, nil)
					if err := sc.setup(t.Context(), live); err != nil {
						t.Fatalf("setup: %v", err)
					}
					died, steps := runDying(t, b, sc, names, k)
					acked := !died || k-1 >= sc.ack
					sc.recover(t, live)
					sc.check(t, live, acked)
					boundary := k
					mu.Lock()
					if !died {
						boundary, done = 0, true
						stepsOf[sc.name] = steps // the whole sequence, from the run that finished
					}
					rows = append(rows, crashRow{scenario: sc.name, boundary: boundary, acked: acked})
					mu.Unlock()
				}))
				if done || t.Failed() {
					return
				}
			}
			t.Fatalf("still dying after %d requests", most)
		})
	}
}

// runDying runs sc's operation in a process that dies before request k,
// and reports whether it died and the requests it sent.
func runDying(t *testing.T, b *crashBackend, sc crashScenario, names crashNames, k int64) (bool, []string) {
	t.Helper()
	if b.cs == "" {
		p := b.proc(names, &diePolicy{at: k})
		err := sc.run(t.Context(), p)
		if !p.policy.dead.Load() && err != nil {
			t.Fatalf("the operation failed without dying: %v", err)
		}
		return p.policy.dead.Load(), p.policy.steps
	}
	spec, _ := json.Marshal(names)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	child := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	child.Env = append(os.Environ(), testenv.ConnectionStringEnv+"="+b.cs, crashRoleEnv+"="+sc.name, crashAtEnv+"="+strconv.FormatInt(k, 10), crashNamesEnv+"="+string(spec))
	out, err := child.CombinedOutput()
	var steps []string
	for _, line := range strings.Split(string(out), "\n") {
		if step, ok := strings.CutPrefix(line, crashStepPrefix); ok {
			steps = append(steps, step)
		}
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			return true, steps
		}
	}
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	return false, steps
}

// crashStepPrefix starts the lines in which a child names each request
// before sending it.
const crashStepPrefix = "crash-step: "

// TestCrashChild is the process the Azurite crash matrix kills: it runs
// one scenario's operation and SIGKILLs itself before its k-th request.
func TestCrashChild(t *testing.T) {
	role := os.Getenv(crashRoleEnv)
	if role == "" {
		t.Skip("the child process of TestCrashOnAzurite; started by it")
	}
	var names crashNames
	if err := json.Unmarshal([]byte(os.Getenv(crashNamesEnv)), &names); err != nil {
		t.Fatal(err)
	}
	k, err := strconv.ParseInt(os.Getenv(crashAtEnv), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(crashScenarios, func(s crashScenario) bool { return s.name == role })
	if i < 0 {
		t.Fatalf("no scenario %q", role)
	}
	kill := func() {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // SIGKILL cannot be caught: the process ends here
	}
	trace := func(step string) { fmt.Fprintln(os.Stderr, crashStepPrefix+step) }
	p := azuriteCrashBackend(testenv.ConnectionString(t)).proc(names, &diePolicy{at: k, kill: kill, trace: trace})
	if err := crashScenarios[i].run(t.Context(), p); err != nil {
		t.Fatalf("the operation failed without dying: %v", err)
	}
}

// TestCrashOnFake runs the crash matrix with in-process deaths.
func TestCrashOnFake(t *testing.T) { runCrashMatrix(t, fakeCrashBackend()) }

// TestCrashOnAzurite runs the crash matrix with real processes killed
// with SIGKILL.
func TestCrashOnAzurite(t *testing.T) {
	t.Parallel() // waits on child processes and Azurite, as azuriteEnv's suites
	runCrashMatrix(t, azuriteCrashBackend(testenv.ConnectionString(t)))
}
