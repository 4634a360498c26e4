package tune_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/fake"
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
	if _, err := batch.Submit(t.Context(), client, ops...); err != nil {
		t.Fatal(err)
	}
	if c.slept < 1900*time.Millisecond || c.slept > 2100*time.Millisecond {
		t.Fatalf("a transaction of 30 waited %v, want about 2 s", c.slept)
	}
}
