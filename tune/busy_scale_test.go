package tune_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"iter"
	"net/http"
	"slices"
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
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/internal/keyrules"
	"github.com/tablekit/tablekit/internal/seqs"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/table"
	"github.com/tablekit/tablekit/tune"
)

// The loads at scale: a million entities through the batch.Writer, a
// million moved by the batched mover and a million indexed by the model's
// batched handler, each on a busy account four ways side by side
// (busySides), one subtest a side. Each side
// runs in a testing/synctest bubble (virtual time, each try holding
// loadLatency), so a run costs the CPU of its requests, not the minutes
// of virtual time it spans.

// busyScale runs the loads at scale, which take minutes of CPU:
// TestBusyWriterMillion, TestBusyMoverDrain, TestBusyModelDrain and
// TestAdaptiveAtATenthOfTheTargets.
var busyScale = flag.Bool("busy", false, "run the loads at scale on a busy account (minutes of CPU)")

// The busy account's targets: a tenth of the service's, so that the
// account, not the partitions, bounds a load over 100 partitions, and
// the Adaptive, left at its ceilings (the service's targets), has to find
// its rate.
const (
	busyPartition = tune.PartitionTarget / 10
	busyAccount   = tune.AccountTarget / 10
)

// busySide is one way a client goes at the busy account: the policies
// its clients carry, made fresh for each run and shared by its clients,
// as one Limiter or Adaptive is shared by the clients of an account.
type busySide struct {
	name     string
	policies func() (perCall, perRetry []policy.Policy)
}

// busySides are the ways compared: the SDK's default retry alone; a
// Limiter told the account's targets; a Limiter at its defaults, the
// service's documented targets (ten times this account's); an Adaptive
// told nothing.
var busySides = []busySide{
	{"the SDK's retry alone", func() (_, _ []policy.Policy) { return nil, nil }},
	{"tune.Limiter at the account's targets", func() (_, _ []policy.Policy) {
		return []policy.Policy{tune.NewLimiter(&tune.LimiterOptions{PerPartition: busyPartition, PerAccount: busyAccount})}, nil
	}},
	{"tune.Limiter at the service's targets", func() (_, _ []policy.Policy) { return []policy.Policy{tune.NewLimiter(nil)}, nil }},
	{"tune.Adaptive", func() (_, _ []policy.Policy) { return nil, []policy.Policy{tune.NewAdaptive(nil)} }},
}

// busyAccountFake is the busy account of one run, in a synctest bubble:
// its tables behind a fake.Busy at busyPartition and busyAccount, a queue
// service of another, unthrottled account, and the options of the side's
// clients, which count what the account serves.
type busyAccountFake struct {
	busy   *fake.Busy
	tables *fake.TableService
	queues *fake.QueueService
	served *servedUnits
	side   *aztables.ClientOptions
	// setup is for the writes that prepare a run: paced by a Limiter of
	// its own at the targets, so that they teach the side's policies
	// nothing.
	setup *aztables.ClientOptions
}

func newBusyAccountFake(side busySide) *busyAccountFake {
	a := &busyAccountFake{served: &servedUnits{}, queues: fake.NewQueueService(nil)}
	a.busy = fake.NewBusy(&fake.BusyOptions{PerPartition: busyPartition, PerAccount: busyAccount})
	a.tables = fake.NewTableService(&fake.TableServiceOptions{Busy: a.busy})
	a.tables.SetRetryDelays(0, 0) // the SDK's own delays, as against an account
	perCall, perRetry := side.policies()
	a.side = &aztables.ClientOptions{}
	a.side.PerCallPolicies = perCall
	a.side.PerRetryPolicies = append(perRetry, latency{}, a.served)
	a.setup = &aztables.ClientOptions{}
	a.setup.PerCallPolicies = []policy.Policy{tune.NewLimiter(&tune.LimiterOptions{PerPartition: busyPartition, PerAccount: busyAccount})}
	a.setup.PerRetryPolicies = []policy.Policy{latency{}}
	return a
}

// table creates a table and returns a side's client of it and a setup
// client.
func (a *busyAccountFake) table(t *testing.T, name string) (side, setup *aztables.Client) {
	side, setup = a.tables.NewClient(name, a.side), a.tables.NewClient(name, a.setup)
	if _, err := setup.CreateTable(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	return side, setup
}

// queue creates a queue.
func (a *busyAccountFake) queue(t *testing.T, name string) consistency.Queue {
	q := a.queues.NewQueueClient(name, &azqueue.ClientOptions{ClientOptions: azcore.ClientOptions{PerRetryPolicies: []policy.Policy{latency{}}}})
	if _, err := q.Create(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	return q
}

// phase measures what the account serves the side's clients while f
// runs, after a quiet spell that refills the account's buckets, overdrawn
// by as much as a query page of the setup.
func (a *busyAccountFake) phase(f func()) (r busyResult) {
	time.Sleep(3 * time.Second)
	passed, throttled, units := a.busy.Passed(), a.busy.Throttled(), a.served.units.Load()
	start := time.Now()
	f()
	r.took = time.Since(start)
	r.units = int(a.served.units.Load() - units)
	r.requests, r.throttled = a.busy.Passed()-passed, a.busy.Throttled()-throttled
	return r
}

// servedUnits counts the entities the busy account charged for the
// answers it served, as fake.Busy counts them: a transaction's
// operations, a query page's entities (at least one), one for any other
// request; a 503 or 500 is a refusal, which costs nothing. It is the last
// of a client's per-retry policies.
type servedUnits struct{ units atomic.Int64 }

var (
	transactionPart = []byte("Content-Type: application/http")
	entityInPage    = []byte(`"odata.etag"`)
)

func (s *servedUnits) Do(req *policy.Request) (*http.Response, error) {
	n := int64(1)
	transaction := strings.HasSuffix(req.Raw().URL.Path, "$batch")
	if transaction && req.Body() != nil {
		body, _ := io.ReadAll(req.Body())
		_ = req.RewindBody()
		n = int64(max(bytes.Count(body, transactionPart), 1))
	}
	resp, err := req.Next()
	if err != nil || resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode == http.StatusInternalServerError {
		return resp, err
	}
	if !transaction && req.Raw().Method == http.MethodGet && resp.StatusCode == http.StatusOK && resp.Body != nil {
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(body))
		n = int64(max(bytes.Count(body, entityInPage), 1))
	}
	s.units.Add(n)
	return resp, nil
}

// busyResult is what one side got from the busy account.
type busyResult struct {
	side string
	// units is the entities the account served the side in the measured
	// phase, as it counts them; requests and throttled its requests
	// served and refused.
	units, requests, throttled int
	failed                     int // entities not written (or moved, or indexed) after every retry
	took                       time.Duration
	wall, cpu                  time.Duration
}

func (r busyResult) share() float64 { return float64(r.units) / r.took.Seconds() / busyAccount }
func (r busyResult) throttledShare() float64 {
	return float64(r.throttled) / float64(r.requests+r.throttled)
}

func (r busyResult) String() string {
	return fmt.Sprintf("%-38s %6.0f entities/s (%5.1f %% of the account target), %5.2f %% of %d requests throttled, %d failed, %v virtual, %v wall, %v CPU",
		r.side, float64(r.units)/r.took.Seconds(), 100*r.share(), 100*r.throttledShare(), r.requests+r.throttled, r.failed,
		r.took.Round(time.Second), r.wall.Round(time.Second), r.cpu.Round(time.Second))
}

// cpuTime is the CPU the process has used.
func cpuTime(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// busyRun runs f in a synctest bubble on a new busy account for side,
// and adds the side's name and the run's wall and CPU time (the setup's
// included) to f's result.
func busyRun(t *testing.T, side busySide, f func(t *testing.T, a *busyAccountFake) busyResult) (r busyResult) {
	wall, cpu := time.Now(), cpuTime(t)
	synctest.Test(t, func(t *testing.T) { r = f(t, newBusyAccountFake(side)) })
	r.side, r.wall, r.cpu = side.name, time.Since(wall), cpuTime(t)-cpu
	return r
}

// busyRow is the entity of the loads.
type busyRow struct {
	table.Meta
	Payload string
	N       int
}

// busyRowsPerPartition is how many RowKeys a partition of the Writer's
// load cycles through: its upserts overwrite them again and again, so
// the fake holds 100 partitions' worth of rows, not a million, while the
// account counts every upsert as the entity it is. At least
// batch.MaxOperations, so a transaction's keys are distinct.
const busyRowsPerPartition = 200

// upserts yields n upserts over parts partitions, round robin, made as
// the Writer takes them.
func upserts(n, parts int) iter.Seq[batch.Op] {
	return func(yield func(batch.Op) bool) {
		for i := range n {
			r := &busyRow{Meta: table.Meta{PartitionKey: fmt.Sprintf("p%03d", i%parts), RowKey: keyrules.Uint64(uint64(i / parts % busyRowsPerPartition))},
				Payload: "the quick brown fox jumps over the lazy dog", N: i}
			if !yield(batch.Upsert(r, aztables.UpdateModeReplace)) {
				return
			}
		}
	}
}

// writerLoad writes n entities over parts partitions with a batch.Writer
// (its default options) to the busy account, as side's client.
func writerLoad(t *testing.T, side busySide, n, parts int) busyResult {
	return busyRun(t, side, func(t *testing.T, a *busyAccountFake) busyResult {
		client, _ := a.table(t, "load")
		var sum batch.Summary
		r := a.phase(func() {
			var err error
			sum, err = batch.NewWriter(client, nil).Write(t.Context(), upserts(n, parts), nil)
			if err != nil && sum.Failed == 0 {
				t.Fatalf("Write: %v", err)
			}
		})
		r.failed = n - sum.Operations
		if r.units != sum.Operations {
			t.Errorf("the account served %d entities, the Writer wrote %d", r.units, sum.Operations)
		}
		return r
	})
}

// checkAdaptive fails t unless the Adaptive's run reached 90 % of the
// account's target with at most 2 % of its requests throttled and nothing
// failed.
func checkAdaptive(t *testing.T, r busyResult) {
	t.Helper()
	if r.share() < 0.9 || r.throttledShare() > 0.02 || r.failed > 0 {
		t.Errorf("%s: %.1f %% of the account target, %.2f %% throttled, %d failed; want at least 90 %%, at most 2 %%, none",
			r.side, 100*r.share(), 100*r.throttledShare(), r.failed)
	}
}

// A million upserts over 100 partitions through the batch.Writer, on an
// account at a tenth of the service's targets (200 entities a second per
// partition, 2,000 per account): with tune.Adaptive the Writer reaches at
// least 90 % of the account's target with at most 2 % of its requests
// throttled and nothing failed. The other busySides run beside it and
// are logged. Run with -args -busy.
func TestBusyWriterMillion(t *testing.T) {
	if !*busyScale {
		t.Skip("a million entities four ways: run with -args -busy")
	}
	for _, side := range busySides {
		t.Run(side.name, func(t *testing.T) {
			r := writerLoad(t, side, 1_000_000, 100)
			t.Log(r)
			if side.name == "tune.Adaptive" {
				checkAdaptive(t, r)
			}
		})
	}
}

// busyEntities is how many entities the mover and the model's handler
// drain, over 100 partitions.
var busyEntities = flag.Int("busy-entities", 1_000_000, "entities the busy mover and handler loads drain (with -busy)")

// busyMoveRun is how many moves of one partition are requested in a row.
const busyMoveRun = 100

// busyDrainers is how many drains of one queue run at once, as workers
// scale out on a queue: enough that the account's target, not the
// drains' own round trips, bounds them.
const busyDrainers = 4

// drainMover drains queue, a queue of m's moves, with a Worker running
// the batched mover.
func drainMover(ctx context.Context, m *consistency.Mover[busyRow], queue, poison consistency.Queue) (consistency.Stats, error) {
	return drainBatched(ctx, queue, poison, m.MessageType(), m.ProcessBatch)
}

// drainModel drains queue, a queue of m's messages, with a Worker running
// the model's batched handler.
func drainModel(ctx context.Context, m *patterns.Model[busyRow], queue, poison consistency.Queue) (consistency.Stats, error) {
	return drainBatched(ctx, queue, poison, m.MessageType(), m.ProcessBatch)
}

// drainBatched drains queue with a Worker at its defaults carrying h for
// msgType.
func drainBatched(ctx context.Context, queue, poison consistency.Queue, msgType string, h consistency.BatchHandler) (consistency.Stats, error) {
	w := consistency.NewWorker(queue, poison, nil)
	if err := w.HandleBatch(msgType, h); err != nil {
		return consistency.Stats{}, err
	}
	return w.Drain(ctx, nil)
}

// drainAll runs busyDrainers drainers of one queue at once, as workers
// that keep polling it: each drains, and drains again a second later
// while messages remain in the queue (left), visible or not, since a
// message whose handler failed (a transaction refused after the SDK's
// retries) reappears after its visibility timeout, when a Drain that
// found none visible has returned. A drain's *consistency.FailureReport
// is logged (the entities its messages failed to write count as failed
// only if they never are); any other error fails t.
func drainAll(t *testing.T, left func() int, drain func() (consistency.Stats, error)) {
	var wg sync.WaitGroup
	for range busyDrainers {
		wg.Go(func() {
			for {
				_, err := drain()
				if _, failures := err.(*consistency.FailureReport); failures {
					t.Logf("drain: %v", err)
				} else if err != nil {
					t.Errorf("drain: %v", err)
					return
				}
				if left() == 0 {
					return
				}
				time.Sleep(time.Second)
			}
		})
	}
	wg.Wait()
}

// busyRows returns n rows over parts partitions.
func busyRows(n, parts int) []*busyRow {
	rows := make([]*busyRow, n)
	for i := range rows {
		rows[i] = &busyRow{Meta: table.Meta{PartitionKey: fmt.Sprintf("p%03d", i%parts), RowKey: keyrules.Uint64(uint64(i))},
			Payload: "the quick brown fox jumps over the lazy dog", N: i}
	}
	return rows
}

// moverDrain stores n entities over parts partitions (n a multiple of
// parts*busyMoveRun), requests the move of each to an archive table,
// and drains the queue with the batched mover, as side's client: per
// entity, the account serves its read, its write to the archive and its
// delete from the source.
func moverDrain(t *testing.T, side busySide, n, parts int) busyResult {
	return busyRun(t, side, func(t *testing.T, a *busyAccountFake) busyResult {
		ctx := t.Context()
		curClient, curSetup := a.table(t, "current")
		arcClient, arcSetup := a.table(t, "archive")
		q, poison := a.queue(t, "moves"), a.queue(t, "moves-poison")
		if _, err := batch.NewWriter(curSetup, nil).Write(ctx, func(yield func(batch.Op) bool) {
			for _, v := range busyRows(n, parts) {
				if !yield(batch.Add(v)) {
					return
				}
			}
		}, nil); err != nil {
			t.Fatal(err)
		}
		cur, arc := mustTable(t, curSetup), mustTable(t, arcSetup)
		stored, err := seqs.Collect(cur.Query(ctx, nil)) // with their ETags
		if err != nil || len(stored) != n {
			t.Fatalf("stored %d of %d: %v", len(stored), n, err)
		}
		requests := consistency.NewMover(cur, arc, consistency.NewSender(q, nil), nil)
		// stored is in partition order: request the moves a partition's
		// hundred at a time, the partitions in turn, as a sweep that reads
		// a page of each partition's old entities asks for them.
		per := n / parts
		for c := range n / busyMoveRun {
			first := c%parts*per + c/parts*busyMoveRun
			for _, v := range stored[first : first+busyMoveRun] {
				if err := requests.RequestValue(ctx, v, nil); err != nil {
					t.Fatal(err)
				}
			}
		}
		mover := consistency.NewMover(mustTable(t, curClient), mustTable(t, arcClient), consistency.NewSender(q, nil), nil)
		r := a.phase(func() {
			drainAll(t, func() int { return a.queues.Len("moves") }, func() (consistency.Stats, error) { return drainMover(ctx, mover, q, poison) })
		})
		r.failed = n - a.tables.Len("archive")
		if left := a.tables.Len("current"); left != r.failed {
			t.Errorf("%d entities left in the source, %d not in the archive", left, r.failed)
		}
		return r
	})
}

// busyModel is the model of modelDrain over tbl: each entity has a copy
// in the copies table, under one of 100 teams' partitions, kept through
// the queue.
func busyModel(t *testing.T, tbl *table.Table[busyRow], copies *aztables.Client, q consistency.Queue) *patterns.Model[busyRow] {
	ct, err := table.New[table.Entity](copies, nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := patterns.OpenModel(context.Background(), tbl, &patterns.ModelOptions[busyRow]{
		Name: "busy",
		CrossCopies: []patterns.IndexDef[busyRow]{{
			Name: "byn", Table: ct,
			PartitionKey: func(v *busyRow) string { return fmt.Sprintf("team%03d", v.N%100) },
			Value:        func(v *busyRow) string { return keyrules.Uint64(uint64(v.N)) },
		}},
		Queue: q,
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// modelDrain loads n entities over parts partitions with Model.Load,
// whose messages (one a transaction) name the cross copies to write, and
// drains the queue with the model's batched handler, as side's client:
// per entity, the account serves the read of its primary and the write of
// its copy.
func modelDrain(t *testing.T, side busySide, n, parts int) busyResult {
	return busyRun(t, side, func(t *testing.T, a *busyAccountFake) busyResult {
		ctx := t.Context()
		primClient, primSetup := a.table(t, "primaries")
		copyClient, copySetup := a.table(t, "copies")
		q, poison := a.queue(t, "index"), a.queue(t, "index-poison")
		sum, err := busyModel(t, mustTable(t, primSetup), copySetup, q).Load(ctx, slices.Values(busyRows(n, parts)), nil)
		if err != nil || sum.Entities != n {
			t.Fatalf("Load: %d of %d: %v", sum.Entities, n, err)
		}
		m := busyModel(t, mustTable(t, primClient), copyClient, q)
		r := a.phase(func() {
			drainAll(t, func() int { return a.queues.Len("index") }, func() (consistency.Stats, error) { return drainModel(ctx, m, q, poison) })
		})
		r.failed = n - a.tables.Len("copies")
		return r
	})
}

func mustTable(t *testing.T, c *aztables.Client) *table.Table[busyRow] {
	tbl, err := table.New[busyRow](c, nil)
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// The batched mover draining 1,000,000 moves over 100 partitions,
// requested a hundred of a partition at a time, with 4 drains at once, on
// the busy account: with tune.Adaptive it reaches at
// least 90 % of the account's target with at most 2 % of its requests
// throttled and nothing failed. Run with -args -busy.
func TestBusyMoverDrain(t *testing.T) {
	if !*busyScale {
		t.Skip("the batched mover four ways: run with -args -busy")
	}
	for _, side := range busySides {
		t.Run(side.name, func(t *testing.T) {
			r := moverDrain(t, side, *busyEntities, 100)
			t.Log(r)
			if side.name == "tune.Adaptive" {
				checkAdaptive(t, r)
			}
		})
	}
}

// The model's batched handler draining the messages of a 1,000,000-entity
// Model.Load over 100 partitions, with 4 drains at once, on the busy
// account: with tune.Adaptive
// it reaches at least 90 % of the account's target with at most 2 % of
// its requests throttled and nothing failed. Run with -args -busy.
func TestBusyModelDrain(t *testing.T) {
	if !*busyScale {
		t.Skip("the model's batched handler four ways: run with -args -busy")
	}
	for _, side := range busySides {
		t.Run(side.name, func(t *testing.T) {
			r := modelDrain(t, side, *busyEntities, 100)
			t.Log(r)
			if side.name == "tune.Adaptive" {
				checkAdaptive(t, r)
			}
		})
	}
}
