package tune_test

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/table"
	"github.com/tablekit/tablekit/tune"
)

// adaptiveTable is a table on a busy fake with an Adaptive of opts among
// its client's per-retry policies, the SDK's retries off (so that each
// answer is seen once), all on one manual clock that the Adaptive's
// waits advance.
func adaptiveTable(t *testing.T, busy fake.BusyOptions, opts tune.AdaptiveOptions) (*tune.Adaptive, *table.Table[row], *fake.TableService, *clock) {
	t.Helper()
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	busy.Now = c.now
	svc := fake.NewTableService(&fake.TableServiceOptions{Busy: fake.NewBusy(&busy), Now: c.now})
	opts.Now, opts.Sleep = c.now, c.sleep
	ad := tune.NewAdaptive(&opts)
	co := &aztables.ClientOptions{}
	co.Retry.MaxRetries = -1
	co.PerRetryPolicies = []policy.Policy{ad}
	client := svc.NewClient("rows", co)
	if _, err := client.CreateTable(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	tb, err := table.New[row](client, nil)
	if err != nil {
		t.Fatal(err)
	}
	return ad, tb, svc, c
}

func put(t *testing.T, tb *table.Table[row], pk string, i int) error {
	t.Helper()
	return tb.Upsert(t.Context(), &row{Meta: table.Meta{PartitionKey: pk, RowKey: fmt.Sprint(i)}}, nil)
}

// A partition's throttling answer lowers that partition's rate to 0.7 of
// what the service was accepting, and leaves the account's and other
// partitions' rates alone; an account's lowers the account's.
func TestAdaptiveDecrease(t *testing.T) {
	ad, tb, _, _ := adaptiveTable(t, fake.BusyOptions{PerPartition: 10, PerAccount: 100}, tune.AdaptiveOptions{})
	for i := range 10 {
		if err := put(t, tb, "hot", i); err != nil {
			t.Fatal(err)
		}
	}
	if got := ad.Rate("rows", "hot"); got != tune.PartitionTarget {
		t.Fatalf("rate before any throttling: %v, want the ceiling %v", got, tune.PartitionTarget)
	}
	if put(t, tb, "hot", 10) == nil {
		t.Fatal("the fake served over the partition's target")
	}
	// The service accepted 10 entities in the last second.
	if got := ad.Rate("rows", "hot"); got != 7 {
		t.Fatalf("partition rate after a throttling answer: %v, want 7", got)
	}
	if got := ad.Rate("rows", ""); got != tune.AccountTarget {
		t.Fatalf("account rate after a partition's throttling: %v, want the ceiling", got)
	}
	if got := ad.Rate("rows", "cold"); got != tune.PartitionTarget {
		t.Fatalf("another partition's rate: %v, want the ceiling", got)
	}
	// Over the account's target (100: the table's creation and 10
	// entities are spent) the account's rate falls.
	for i := 0; ; i++ {
		if err := put(t, tb, fmt.Sprint("p", i), 0); err != nil {
			break
		}
		if i > 200 {
			t.Fatal("never throttled by the account")
		}
	}
	if got := ad.Rate("rows", ""); got >= 100 {
		t.Fatalf("account rate after the account's throttling answer: %v, want under 100", got)
	}
}

// A transaction whose failed operation is throttled, inside the 202 the
// SDK does not retry, lowers its partition's rate too: the Writer resends
// it through the same pipeline, at the lower rate.
func TestAdaptiveDecreaseOnTransactionOperation(t *testing.T) {
	ad, tb, svc, _ := adaptiveTable(t, fake.BusyOptions{}, tune.AdaptiveOptions{PerPartition: 50})
	svc.FailTransactionOperation(0, 1, 503, "ServerBusy")
	w := batch.NewWriter(tb.Client(), &batch.WriterOptions{BaseDelay: time.Millisecond, MaxDelay: time.Millisecond})
	var ops []batch.Op
	for i := range 20 {
		ops = append(ops, batch.Add(&row{Meta: table.Meta{PartitionKey: "p", RowKey: fmt.Sprint(i)}}))
	}
	sum, err := w.Write(t.Context(), func(yield func(batch.Op) bool) {
		for _, op := range ops {
			if !yield(op) {
				return
			}
		}
	}, nil)
	if err != nil || sum.Failed != 0 {
		t.Fatalf("Write: %+v, %v", sum, err)
	}
	if got := ad.Rate("rows", "p"); got >= 50 {
		t.Fatalf("partition rate after a throttled operation in a 202: %v, want under the ceiling 50", got)
	}
}

// While answers are clean the rate climbs back on a CUBIC curve: concave
// up to the rate it had before the decrease, which it regains 4 s after
// it, then convex, probing past it.
func TestAdaptiveIncrease(t *testing.T) {
	ad, tb, _, c := adaptiveTable(t, fake.BusyOptions{PerPartition: 100, PerAccount: 10000}, tune.AdaptiveOptions{})
	i := 0
	for ; put(t, tb, "p", i) == nil; i++ {
	}
	wMax := 100.0 // what the service accepted in the last second
	if got := ad.Rate("rows", "p"); got != 0.7*wMax {
		t.Fatalf("rate after the decrease: %v, want %v", got, 0.7*wMax)
	}
	const k = 4 * time.Second
	cut := c.now()
	prev := 0.7 * wMax
	// Clean answers: a request every 20 ms keeps the partition under its
	// target (50 a second), so the rate is the curve's alone.
	for c.now().Sub(cut) < k+time.Second {
		c.sleep(t.Context(), 20*time.Millisecond)
		i++
		if err := put(t, tb, "p", i); err != nil {
			t.Fatalf("at %v after the decrease: %v", c.now().Sub(cut), err)
		}
		got := ad.Rate("rows", "p")
		if got < prev {
			t.Fatalf("rate fell from %v to %v on clean answers", prev, got)
		}
		prev = got
		if d := c.now().Sub(cut); d < k-100*time.Millisecond && got >= wMax {
			t.Fatalf("rate %v at %v, back at %v before %v", got, d, wMax, k)
		}
	}
	if prev < wMax {
		t.Fatalf("rate %v a second past %v after the decrease, want at least %v", prev, k, wMax)
	}
}

// The ceilings hold: before any throttling the rates are the ceilings
// (requests are paced at them, as by a Limiter), and however long the
// answers stay clean after a decrease the curve never passes them.
func TestAdaptiveCeiling(t *testing.T) {
	ad, tb, _, c := adaptiveTable(t, fake.BusyOptions{PerPartition: 10, PerAccount: 1000}, tune.AdaptiveOptions{PerPartition: 20, PerAccount: 500})
	if got := ad.Rate("rows", "p"); got != 20 {
		t.Fatalf("partition rate %v, want the ceiling 20", got)
	}
	if got := ad.Rate("rows", ""); got != 500 {
		t.Fatalf("account rate %v, want the ceiling 500", got)
	}
	i := 0
	for ; put(t, tb, "p", i) == nil; i++ {
	}
	if got := ad.Rate("rows", "p"); got >= 20*0.7 {
		t.Fatalf("rate after the decrease: %v, want at most 0.7 of the ceiling", got)
	}
	// An hour of clean answers, a request a second.
	for range 3600 {
		c.sleep(t.Context(), time.Second)
		i++
		if err := put(t, tb, "p", i); err != nil {
			t.Fatal(err)
		}
		if got := ad.Rate("rows", "p"); got > 20 {
			t.Fatalf("rate %v over the ceiling 20", got)
		}
	}
	if got := ad.Rate("rows", "p"); got < 2 {
		t.Fatalf("rate %v after an hour of clean answers", got)
	}
	// Sends are paced at the ceiling: 10 entities to a fresh partition (the
	// fake's burst) at 20 a second, a tenth of a second's worth at once,
	// take 0.4 s.
	start := c.now()
	for j := range 10 {
		if err := tb.Upsert(t.Context(), &row{Meta: table.Meta{PartitionKey: "fresh", RowKey: fmt.Sprint(j)}}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if d := c.now().Sub(start); d < 350*time.Millisecond || d > 450*time.Millisecond {
		t.Fatalf("10 entities at a ceiling of 20/s took %v, want 0.4 s", d)
	}
}

// Partitions a process stops touching are forgotten once their rate is
// back at the ceiling and their bucket full: such a flow is the same as a
// new one. A hundred thousand partitions, touched once each a millisecond
// apart, leave only the last few seconds' flows.
func TestAdaptiveForgetsIdlePartitions(t *testing.T) {
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	ad := tune.NewAdaptive(&tune.AdaptiveOptions{Now: c.now, Sleep: c.sleep})
	const n = 100_000
	for i := range n {
		ad.Rate("rows", fmt.Sprint(i))
		c.t = c.t.Add(time.Millisecond)
	}
	if got := ad.Partitions(); got > 3000 {
		t.Fatalf("%d partition flows kept after %d partitions touched once each; want only the recently used", got, n)
	}
}

// A batched read's RowKeys are reserved before it goes, as a
// transaction's operations are: reads in flight to one partition at once
// pass only as the partition's rate allows, where each passed for one
// entity and its page was charged once read, after the others had gone.
// At 100 entities a second the partition's bucket holds a tenth of a
// second, 10 entities: a read of 10 RowKeys empties it, and a second,
// sent before the first's page is read, waits 0.1 s for its 10.
func TestAdaptiveReservesABatchedReadsRowKeys(t *testing.T) {
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	svc := fake.NewTableService(&fake.TableServiceOptions{Now: c.now})
	plain := svc.NewClient("rows", nil)
	if _, err := plain.CreateTable(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	var ops []batch.Op
	for i := range 20 {
		ops = append(ops, batch.Add(&row{Meta: table.Meta{PartitionKey: "p", RowKey: fmt.Sprintf("%02d", i)}}))
	}
	if _, err := batch.Submit(t.Context(), plain, ops, nil); err != nil {
		t.Fatal(err)
	}
	ad := tune.NewAdaptive(&tune.AdaptiveOptions{PerPartition: 100, PerAccount: 1000, Now: c.now, Sleep: c.sleep})
	pl := runtime.NewPipeline("tune", "v0", runtime.PipelineOptions{}, &policy.ClientOptions{
		PerRetryPolicies: []policy.Policy{ad}, Transport: svc, Retry: policy.RetryOptions{MaxRetries: -1}})
	read := func(from int) *http.Response {
		t.Helper()
		keys := make([]string, 10)
		for i := range keys {
			keys[i] = fmt.Sprintf("(RowKey eq '%02d')", from+i)
		}
		filter := "(PartitionKey eq 'p') and (" + strings.Join(keys, " or ") + ")"
		req, err := runtime.NewRequest(t.Context(), http.MethodGet, svc.URL()+"rows()?"+url.Values{"$filter": {filter}}.Encode())
		if err != nil {
			t.Fatal(err)
		}
		req.Raw().Header.Set("Accept", "application/json;odata=minimalmetadata")
		resp, err := pl.Do(req)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("read of %02d to %02d: %v, %v", from, from+9, resp, err)
		}
		return resp
	}
	first := read(0)
	if c.slept != 0 {
		t.Fatalf("the first read of 10 waited %v, want none: the bucket held 10", c.slept)
	}
	second := read(10)
	if c.slept < 99*time.Millisecond || c.slept > 101*time.Millisecond {
		t.Fatalf("a read of 10 RowKeys sent while another's page was unread waited %v, want 0.1 s", c.slept)
	}
	// Each page holds the 10 reserved: reading them adds no debt.
	for _, resp := range []*http.Response{first, second} {
		if _, err := io.ReadAll(resp.Body); err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
	}
	c.slept = 0
	resp := read(5)
	_, _ = io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if c.slept < 99*time.Millisecond || c.slept > 101*time.Millisecond {
		t.Fatalf("a third read of 10 waited %v, want 0.1 s: its 10 and nothing owed for the pages before it", c.slept)
	}
}
