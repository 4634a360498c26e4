package tune_test

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/internal/seqs"
	"github.com/tablekit/tablekit/table"
	"github.com/tablekit/tablekit/tune"
)

type row struct {
	table.Meta
	N int
}

// clock is a fake clock whose Sleep advances it.
type clock struct {
	mu    sync.Mutex
	t     time.Time
	slept time.Duration
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) sleep(_ context.Context, d time.Duration) error {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.slept += d
	c.mu.Unlock()
	return nil
}

func TestLimiterKeepsUnderTheTargets(t *testing.T) {
	c := &clock{t: time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)}
	lim := tune.NewLimiter(&tune.LimiterOptions{PerPartition: 10, PerAccount: 100, Now: c.now, Sleep: c.sleep})
	svc := fake.NewTableService(nil)
	opts := &aztables.ClientOptions{}
	opts.PerCallPolicies = []policy.Policy{lim}
	client := svc.NewClient("rows", opts)
	if _, err := client.CreateTable(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	tb, _ := table.New[row](client, nil)
	c.slept = 0
	// 25 entities to one partition at 10/s: 10 pass at once, 15 wait 1.5 s.
	for i := 0; i < 25; i++ {
		if err := tb.Add(t.Context(), &row{Meta: table.Meta{PartitionKey: "hot", RowKey: fmt.Sprint(i)}}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if c.slept < 1400*time.Millisecond || c.slept > 1600*time.Millisecond {
		t.Fatalf("waited %v for 25 entities at 10/s, want about 1.5 s", c.slept)
	}
	// Another partition is not held back by the hot one.
	c.slept = 0
	for i := 0; i < 5; i++ {
		_ = tb.Add(t.Context(), &row{Meta: table.Meta{PartitionKey: "cold", RowKey: fmt.Sprint(i)}}, nil)
	}
	if c.slept != 0 {
		t.Fatalf("a cold partition waited %v", c.slept)
	}
	// A transaction counts its operations: 30 entities at 10/s.
	c.t = c.t.Add(time.Hour)
	c.slept = 0
	var ops []batch.Op
	for i := 0; i < 30; i++ {
		ops = append(ops, batch.Add(&row{Meta: table.Meta{PartitionKey: "bulk", RowKey: fmt.Sprint(i)}}))
	}
	if _, err := batch.Submit(t.Context(), client, ops, nil); err != nil {
		t.Fatal(err)
	}
	if c.slept < 1900*time.Millisecond || c.slept > 2100*time.Millisecond {
		t.Fatalf("a transaction of 30 waited %v, want about 2 s", c.slept)
	}
}

// A query page is as many entities as it returns, as the service counts
// them: a page of 30 at 10/s leaves the next request 2 s of debt.
func TestLimiterCountsAQueryPagesEntities(t *testing.T) {
	c := &clock{t: time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)}
	svc := fake.NewTableService(nil)
	plain := svc.NewClient("rows", nil)
	if _, err := plain.CreateTable(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	var ops []batch.Op
	for i := 0; i < 30; i++ {
		ops = append(ops, batch.Add(&row{Meta: table.Meta{PartitionKey: "p", RowKey: fmt.Sprintf("%02d", i)}}))
	}
	if _, err := batch.Submit(t.Context(), plain, ops, nil); err != nil {
		t.Fatal(err)
	}
	lim := tune.NewLimiter(&tune.LimiterOptions{PerPartition: 10, PerAccount: 100, Now: c.now, Sleep: c.sleep})
	opts := &aztables.ClientOptions{}
	opts.PerCallPolicies = []policy.Policy{lim}
	tb, _ := table.New[row](svc.NewClient("rows", opts), nil)
	got, err := seqs.Collect(tb.Query(t.Context(), &table.QueryOptions{Filter: table.Partition("p")}))
	if err != nil || len(got) != 30 {
		t.Fatalf("query: %d rows, %v", len(got), err)
	}
	c.slept = 0
	if _, err := tb.Get(t.Context(), "p", "00", nil); err != nil {
		t.Fatal(err)
	}
	// 10 tokens, 30 spent by the page, 1 by the read: 21 short at 10/s.
	if c.slept < 2000*time.Millisecond || c.slept > 2200*time.Millisecond {
		t.Fatalf("after a page of 30 entities at 10/s the next read waited %v, want about 2.1 s", c.slept)
	}
}

// Partitions a process stops touching are forgotten: a bucket that has
// refilled is the same as a new one. A million partitions, one request each,
// a millisecond apart, leave at most the last few seconds' buckets.
func TestLimiterForgetsIdlePartitions(t *testing.T) {
	c := &clock{t: time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)}
	lim := tune.NewLimiter(&tune.LimiterOptions{Now: c.now, Sleep: c.sleep})
	const n = 1_000_000
	for i := range n {
		lim.Reserve("rows", fmt.Sprint(i), 1)
		c.t = c.t.Add(time.Millisecond)
	}
	if got := lim.Partitions(); got > 3000 {
		t.Fatalf("%d partition buckets kept after %d partitions touched once each over %v; want only the recently used", got, n, time.Duration(n)*time.Millisecond)
	}
}

// BenchmarkLimiterManyPartitions touches a million partitions once each,
// a millisecond apart on a fake clock, and reports the heap the Limiter
// keeps afterwards and how many partition buckets it holds.
func BenchmarkLimiterManyPartitions(b *testing.B) {
	for b.Loop() {
		c := &clock{t: time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)}
		lim := tune.NewLimiter(&tune.LimiterOptions{Now: c.now, Sleep: c.sleep})
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for i := range 1_000_000 {
			lim.Reserve("rows", strconv.Itoa(i), 1)
			c.t = c.t.Add(time.Millisecond)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/(1<<20), "heap-MiB")
		b.ReportMetric(float64(lim.Partitions()), "buckets")
		runtime.KeepAlive(lim)
	}
}

// Reserving nothing, or a negative count, neither waits nor credits the
// budget.
func TestLimiterReserveOfNothing(t *testing.T) {
	c := &clock{t: time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)}
	lim := tune.NewLimiter(&tune.LimiterOptions{PerPartition: 10, PerAccount: 100, Now: c.now, Sleep: c.sleep})
	if w := lim.Reserve("t", "p", -1000); w != 0 {
		t.Fatalf("Reserve(-1000) = %v", w)
	}
	lim.Reserve("t", "p", 10)
	if w := lim.Reserve("t", "p", 10); w < 900*time.Millisecond {
		t.Fatalf("after a negative reservation the partition's budget grew: 20 entities at 10/s waited only %v", w)
	}
}

// A transaction draws on the same partition's budget as single-entity
// requests to that partition: 10 single writes at 10/s spend it, so a
// transaction of 10 more waits about a second.
func TestLimiterTransactionSharesItsPartitionsBudget(t *testing.T) {
	c := &clock{t: time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)}
	lim := tune.NewLimiter(&tune.LimiterOptions{PerPartition: 10, PerAccount: 1000, Now: c.now, Sleep: c.sleep})
	opts := &aztables.ClientOptions{}
	opts.PerCallPolicies = []policy.Policy{lim}
	svc := fake.NewTableService(nil)
	client := svc.NewClient("rows", opts)
	if _, err := client.CreateTable(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	tb, _ := table.New[row](client, nil)
	for i := range 10 {
		if err := tb.Add(t.Context(), &row{Meta: table.Meta{PartitionKey: "p", RowKey: fmt.Sprint(i)}}, nil); err != nil {
			t.Fatal(err)
		}
	}
	c.slept = 0
	var ops []batch.Op
	for i := 10; i < 20; i++ {
		ops = append(ops, batch.Add(&row{Meta: table.Meta{PartitionKey: "p", RowKey: fmt.Sprint(i)}}))
	}
	if _, err := batch.Submit(t.Context(), client, ops, nil); err != nil {
		t.Fatal(err)
	}
	if c.slept < 900*time.Millisecond || c.slept > 1100*time.Millisecond {
		t.Fatalf("a transaction of 10 after 10 single writes on a partition at 10/s waited %v, want about 1 s", c.slept)
	}
}
