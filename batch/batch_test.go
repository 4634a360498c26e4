package batch_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/internal/batchraw"
	"github.com/tablekit/tablekit/internal/keyrules"
	"github.com/tablekit/tablekit/internal/wirepolicy"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/table"
)

type Event struct {
	table.Meta
	Payload string
	N       int
}

func ev(pk string, i int) *Event {
	return &Event{Meta: table.Meta{PartitionKey: pk, RowKey: keyrules.Uint64(uint64(i))}, Payload: "x", N: i}
}

func newFake(t testing.TB, opts *aztables.ClientOptions) (*fake.TableService, *aztables.Client) {
	svc := fake.NewTableService(nil)
	c := svc.NewClient("events", opts)
	if _, err := c.CreateTable(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	svc.ResetCounts()
	return svc, c
}

// bodySizes records the size of every transaction request body sent.
type bodySizes struct {
	mu    sync.Mutex
	sizes []int
}

func (b *bodySizes) Do(req *policy.Request) (*http.Response, error) {
	if strings.HasSuffix(req.Raw().URL.Path, "$batch") && req.Body() != nil {
		n, _ := io.Copy(io.Discard, req.Body())
		_ = req.RewindBody()
		b.mu.Lock()
		b.sizes = append(b.sizes, int(n))
		b.mu.Unlock()
	}
	return req.Next()
}

// TestSizeBoundsWhatIsSent checks the 4 MiB bound against the bytes
// actually sent, on both paths: the estimate is never below them, and on
// the SDK's path (which writes <, > and & as six-byte escapes, the
// estimate's worst case) not far above.
func TestSizeBoundsWhatIsSent(t *testing.T) {
	for _, sdk := range []bool{true, false} {
		t.Run(map[bool]string{true: "SDK's path", false: "wire path"}[sdk], func(t *testing.T) { sizeBoundsWhatIsSent(t, sdk) })
	}
}

func sizeBoundsWhatIsSent(t *testing.T, sdk bool) {
	rec := &bodySizes{}
	pcp := []policy.Policy{rec}
	if sdk {
		pcp = append(pcp, wirepolicy.Off{})
	}
	_, c := newFake(t, &aztables.ClientOptions{ClientOptions: azcore.ClientOptions{PerCallPolicies: pcp}})
	cases := map[string][]batch.Op{}
	var small, escaped, quoted, deletes []batch.Op
	for i := 0; i < 100; i++ {
		small = append(small, batch.Add(ev("p", i)))
		e := ev("q", i)
		e.Payload = strings.Repeat("<&>", 300) + "é😀"
		escaped = append(escaped, batch.Upsert(e, aztables.UpdateModeReplace))
		k := &Event{Meta: table.Meta{PartitionKey: "ü p%", RowKey: fmt.Sprintf("ключ %d", i)}}
		quoted = append(quoted, batch.Update(k, aztables.UpdateModeMerge).IfMatch(azcore.ETagAny))
		deletes = append(deletes, batch.Delete("d", keyrules.Uint64(uint64(i))))
	}
	cases["100 small adds"], cases["HTML-escaped payloads"], cases["escaped keys"], cases["deletes"] = small, escaped, quoted, deletes
	for name, ops := range cases {
		tx := batch.NewTransaction(nil)
		for _, op := range ops {
			if err := tx.Append(op); err != nil {
				t.Fatal(err)
			}
		}
		rec.sizes = nil
		_, _ = tx.Submit(t.Context(), c, nil) // the updates of missing entities fail; the size is what counts
		if len(rec.sizes) != 1 {
			t.Fatalf("%s: %d requests", name, len(rec.sizes))
		}
		sent := rec.sizes[0]
		if tx.Size() < sent || sdk && tx.Size() > sent+100*1024 {
			t.Errorf("%s: estimate %d for %d bytes sent", name, tx.Size(), sent)
		}
	}
}

func TestTransactionBuilder(t *testing.T) {
	tx := batch.NewTransaction(nil)
	if tx.PartitionKey() != "" || tx.Len() != 0 {
		t.Fatal("empty")
	}
	if err := tx.Append(batch.Add(ev("p", 1))); err != nil {
		t.Fatal(err)
	}
	err := tx.Append(batch.Add(ev("q", 2)))
	var oe *batch.OpError
	if !errors.As(err, &oe) || oe.Index != 1 || oe.PartitionKey != "q" || !errors.Is(err, batch.ErrMixedPartitions) {
		t.Fatalf("mixed: %v", err)
	}
	if tx.Len() != 1 {
		t.Fatal("a refused operation was kept")
	}
	for _, bad := range []batch.Op{{}, batchraw.Op(batch.KindAdd, []byte(`{"RowKey":"x"}`), nil), batchraw.Op(batch.KindAdd, []byte(`nope`), nil), batch.Delete("p", "r").IfMatch("")} {
		if err := tx.Append(bad); err == nil {
			t.Errorf("accepted %+v", bad)
		}
	}
	etag := azcore.ETag(`W/"x"`)
	if err := tx.Append(batchraw.Op(batch.KindUpdateMerge, []byte(`{"PartitionKey":"p","RowKey":"raw","A":1}`), &etag)); err != nil {
		t.Fatal(err)
	}
	acts := tx.Actions()
	if acts[1].ActionType != aztables.TransactionTypeUpdateMerge || *acts[1].IfMatch != etag {
		t.Fatalf("raw action = %+v", acts[1])
	}
	if err := tx.Append(batch.Update(ev("p", 9), aztables.UpdateModeReplace).IfMatch(azcore.ETagAny)); err != nil {
		t.Fatal(err)
	}
	if acts := tx.Actions(); *acts[2].IfMatch != azcore.ETagAny {
		t.Fatal("update-only must send If-Match: *")
	}
	if err := tx.Append(batch.Delete("p", "O'Brien")); err != nil {
		t.Fatalf("quote in a delete's key: %v", err)
	}
	if acts := tx.Actions(); string(acts[3].Entity) != `{"PartitionKey":"p","RowKey":"O''Brien"}` {
		t.Fatalf("a delete's keys go to the URL only, OData-quoted: %s", acts[3].Entity)
	}
	if err := tx.Append(batch.Update(&Event{Meta: table.Meta{PartitionKey: "p", RowKey: "it's"}}, aztables.UpdateModeMerge).IfMatch(azcore.ETagAny)); err != nil {
		t.Fatalf("quote in an update's key (sent on the wire path; refused at Submit without it): %v", err)
	}
	if err := tx.Append(batch.Add(&Event{Meta: table.Meta{PartitionKey: "p", RowKey: "O'Brien2"}})); err != nil {
		t.Fatalf("an Add puts its keys in the body only, so quotes are fine: %v", err)
	}
	if batch.KindDelete.String() != "Delete" || batch.Kind(0).String() != "Kind(0)" {
		t.Fatal("Kind.String")
	}
}

func TestRequestCounts(t *testing.T) {
	deadline(t, writerDeadline)
	for _, n := range []int{1, 99, 100, 101, 250, 1000} {
		svc, c := newFake(t, nil)
		var ops []batch.Op
		for i := 0; i < n; i++ {
			ops = append(ops, batch.Add(ev("p", i)))
		}
		if _, err := batch.NewWriter(c, nil).Write(t.Context(), slices.Values(ops), nil); err != nil {
			t.Fatal(err)
		}
		if got, want := svc.Count(fake.OpBatch), (n+99)/100; got != want || svc.Total() != want {
			t.Errorf("%d entities in one partition: %d requests, want %d", n, got, want)
		}
		if svc.Len("events") != n {
			t.Errorf("%d entities written, want %d", svc.Len("events"), n)
		}
	}
	// Over P partitions: the sum over partitions.
	svc, c := newFake(t, nil)
	var ops []batch.Op
	sizes := []int{150, 1, 100, 37}
	for p, n := range sizes {
		for i := 0; i < n; i++ {
			ops = append(ops, batch.Add(ev(fmt.Sprint("p", p), i)))
		}
	}
	if _, err := batch.NewWriter(c, nil).Write(t.Context(), slices.Values(ops), nil); err != nil {
		t.Fatal(err)
	}
	if got := svc.Count(fake.OpBatch); got != 2+1+1+1 {
		t.Errorf("4 partitions: %d requests, want 5", got)
	}
}

func TestPlan(t *testing.T) {
	var ops []batch.Op
	for i := 0; i < 230; i++ {
		pk := []string{"a", "b", "c"}[i%3]
		ops = append(ops, batch.Upsert(ev(pk, i/3), aztables.UpdateModeMerge))
	}
	ops = append(ops, batch.Delete("a", keyrules.Uint64(0)), batch.Delete("z", "1"), batch.Delete("a", keyrules.Uint64(1)))
	plan, err := batch.Plan(ops, nil)
	if err != nil {
		t.Fatal(err)
	}
	var shape []string
	total := 0
	for _, tx := range plan {
		shape = append(shape, fmt.Sprintf("%s:%d", tx.PartitionKey(), tx.Len()))
		total += tx.Len()
	}
	// a has 77 upserts then deletes of RowKeys 0 and 1, already in its open
	// transaction: both go to a second one, in order. b 77, c 76, z 1.
	if got := strings.Join(shape, " "); got != "a:77 a:2 b:77 c:76 z:1" || total != len(ops) {
		t.Fatalf("plan = %s (%d ops)", got, total)
	}
	again, _ := batch.Plan(ops, nil)
	for i := range plan {
		if plan[i].PartitionKey() != again[i].PartitionKey() || plan[i].Len() != again[i].Len() {
			t.Fatal("plans differ for the same input")
		}
	}
	_, err = batch.Plan([]batch.Op{batch.Add(ev("a", 1)), batch.Add(ev("a/b", 2))}, nil)
	var oe *batch.OpError
	if !errors.As(err, &oe) || oe.Index != 1 || !errors.Is(err, keys.ErrForbiddenChar) {
		t.Fatalf("bad op in plan: %v", err)
	}
}

func TestWriterRetriesThrottlingOnly(t *testing.T) {
	deadline(t, writerDeadline)
	svc, c := newFake(t, nil)
	// Four 503s use up the SDK's first try and its three retries: the
	// writer adds none of its own (the SDK's policy is the only transport
	// retry), so the transaction fails after exactly four requests.
	svc.FailNext(fake.OpBatch, 4, http.StatusServiceUnavailable, "ServerBusy")
	w := batch.NewWriter(c, &batch.WriterOptions{BaseDelay: 1, MaxDelay: 1})
	sum, err := w.Write(t.Context(), slices.Values([]batch.Op{batch.Add(ev("p", 1))}), nil)
	if err == nil || sum.Retries != 0 || sum.Failed != 1 {
		t.Fatalf("after four 503s: %+v %v; want the transaction failed, no writer retry", sum, err)
	}
	if svc.Count(fake.OpBatch) != 4 {
		t.Fatalf("%d batch requests reached the service, want 4 (the SDK's tries only)", svc.Count(fake.OpBatch))
	}

	// A 409 is never retried; the failed partition stops, the others go on.
	if _, err := w.Write(t.Context(), slices.Values([]batch.Op{batch.Add(ev("p", 1))}), nil); err != nil {
		t.Fatal(err)
	}
	svc.ResetCounts()
	var ops []batch.Op
	ops = append(ops, batch.Add(ev("p", 1))) // exists: fails
	for i := 0; i < 150; i++ {
		ops = append(ops, batch.Add(ev("p", 100+i)))
	}
	for i := 0; i < 150; i++ {
		ops = append(ops, batch.Add(ev("other", i)))
	}
	var progress atomic.Int32
	w = batch.NewWriter(c, &batch.WriterOptions{Parallelism: 2, Progress: func(batch.Summary) { progress.Add(1) }})
	sum, err = w.Write(t.Context(), slices.Values(ops), nil)
	var we *batch.WriteError
	if !errors.As(err, &we) || len(we.Failures) != 1 || !errors.Is(err, table.ErrAlreadyExists) {
		t.Fatalf("want one failed transaction, got %v", err)
	}
	f := we.Failures[0]
	if f.Index != 0 || len(f.Ops) != 100 || f.Ops[0].RowKey() != keyrules.Uint64(1) || f.Op.RowKey() != keyrules.Uint64(1) {
		t.Fatalf("failure = index %d, %d ops", f.Index, len(f.Ops))
	}
	if sum.Failed != 1 || sum.Skipped != 51 || sum.Transactions != 2 || sum.Operations != 150 || sum.Retries != 0 {
		t.Fatalf("summary %+v", sum)
	}
	if svc.Count(fake.OpBatch) != 3 || progress.Load() != 3 {
		t.Fatalf("%d requests, %d progress calls", svc.Count(fake.OpBatch), progress.Load())
	}
}

func TestWriterStopsOnBadOpAndCancel(t *testing.T) {
	deadline(t, writerDeadline)
	svc, c := newFake(t, nil)
	ops := []batch.Op{batch.Add(ev("p", 1)), batch.Add(nil)}
	_, err := batch.NewWriter(c, nil).Write(t.Context(), slices.Values(ops), nil)
	var oe *batch.OpError
	if !errors.As(err, &oe) || oe.Index != 1 || !errors.Is(err, table.ErrNilValue) {
		t.Fatalf("bad op: %v", err)
	}
	if svc.Total() != 0 {
		t.Fatalf("%d requests after a bad op in the first transaction", svc.Total())
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := batch.NewWriter(c, nil).Write(ctx, slices.Values([]batch.Op{batch.Add(ev("p", 1))}), nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

func TestWriterParallelismIsBoundedAndPerPartitionSerial(t *testing.T) {
	deadline(t, writerDeadline)
	gate := &concurrency{}
	svc, c := newFake(t, &aztables.ClientOptions{ClientOptions: azcore.ClientOptions{PerCallPolicies: []policy.Policy{gate}}})
	var ops []batch.Op
	for p := 0; p < 12; p++ {
		for i := 0; i < 300; i++ {
			ops = append(ops, batch.Add(ev(fmt.Sprint("p", p), i)))
		}
	}
	sum, err := batch.NewWriter(c, &batch.WriterOptions{Parallelism: 3}).Write(t.Context(), slices.Values(ops), nil)
	if err != nil || sum.Transactions != 36 {
		t.Fatalf("%+v %v", sum, err)
	}
	if gate.max.Load() > 3 || gate.max.Load() < 2 {
		t.Fatalf("max in flight %d, want 2..3", gate.max.Load())
	}
	if gate.samePartition.Load() {
		t.Fatal("two transactions of one partition were in flight at once")
	}
	if svc.Len("events") != 3600 {
		t.Fatal("entities missing")
	}
}

// concurrency measures requests in flight, overall and per partition.
type concurrency struct {
	now, max      atomic.Int32
	mu            sync.Mutex
	busy          map[string]bool
	samePartition atomic.Bool
}

func (c *concurrency) Do(req *policy.Request) (*http.Response, error) {
	if !strings.HasSuffix(req.Raw().URL.Path, "$batch") {
		return req.Next()
	}
	body, _ := io.ReadAll(req.Body())
	_ = req.RewindBody()
	pk := ""
	if i := strings.Index(string(body), `"PartitionKey":"`); i >= 0 {
		rest := string(body[i+16:])
		pk = rest[:strings.IndexByte(rest, '"')]
	}
	c.mu.Lock()
	if c.busy == nil {
		c.busy = map[string]bool{}
	}
	if c.busy[pk] {
		c.samePartition.Store(true)
	}
	c.busy[pk] = true
	c.mu.Unlock()
	n := c.now.Add(1)
	for {
		m := c.max.Load()
		if n <= m || c.max.CompareAndSwap(m, n) {
			break
		}
	}
	resp, err := req.Next()
	c.now.Add(-1)
	c.mu.Lock()
	c.busy[pk] = false
	c.mu.Unlock()
	return resp, err
}

func TestTransactionErrorsClassifyByTheFailedOperation(t *testing.T) {
	_, c := newFake(t, nil)
	e := ev("p", 1)
	if _, err := batch.Submit(t.Context(), c, []batch.Op{batch.Add(e)}, nil); err != nil {
		t.Fatal(err)
	}
	stale := *e
	if _, err := batch.Submit(t.Context(), c, []batch.Op{batch.Update(e, aztables.UpdateModeMerge)}, nil); err != nil {
		t.Fatal(err)
	}
	_, err := batch.Submit(t.Context(), c, []batch.Op{batch.Add(ev("p", 2)), batch.Update(&stale, aztables.UpdateModeMerge)}, nil)
	if !table.Is(err, table.ErrPreconditionFailed) || !table.Is(err, table.ErrLostRace) || table.Is(err, table.ErrNotFound) || table.IsRetryable(err) {
		t.Fatalf("classification of a 412 inside a transaction: %v", err)
	}
	attempts, err := table.RetryOnConflict(t.Context(), func(int) error {
		_, err := batch.Submit(t.Context(), c, []batch.Op{batch.Update(&stale, aztables.UpdateModeMerge)}, nil)
		return err
	}, &table.RetryOptions{MaxAttempts: 3, BaseDelay: 1})
	var ce *table.ConflictError
	if attempts != 3 || !errors.As(err, &ce) {
		t.Fatalf("RetryOnConflict over transactions: %d, %v", attempts, err)
	}
}

// TestWriterCrashMidwayThenRerunConverges stops a write after two of its
// transactions (as a process dying would) and shows the state it leaves:
// whole transactions only, never part of one; rerunning the same upserts
// then reaches the same state as an uninterrupted run.
func TestWriterCrashMidwayThenRerunConverges(t *testing.T) {
	deadline(t, writerDeadline)
	svc, c := newFake(t, nil)
	var ops []batch.Op
	for p := 0; p < 4; p++ {
		for i := 0; i < 250; i++ {
			ops = append(ops, batch.Upsert(ev(fmt.Sprint("p", p), i), aztables.UpdateModeReplace))
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	var done atomic.Int32
	w := batch.NewWriter(c, &batch.WriterOptions{Parallelism: 1, Progress: func(s batch.Summary) {
		if done.Add(1) == 2 {
			cancel() // the process dies here
		}
	}})
	sum, err := w.Write(ctx, slices.Values(ops), nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted write: %+v %v", sum, err)
	}
	if n := svc.Len("events"); n%100 != 0 || n == 0 || n >= len(ops) {
		t.Fatalf("after the crash %d entities: not whole transactions", n)
	}
	if _, err := batch.NewWriter(c, nil).Write(t.Context(), slices.Values(ops), nil); err != nil {
		t.Fatal(err)
	}
	if n := svc.Len("events"); n != len(ops) {
		t.Fatalf("after the rerun %d entities, want %d", n, len(ops))
	}
}
