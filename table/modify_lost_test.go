package table_test

import (
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/faults"
	"github.com/tablekit/tablekit/table"
)

// The documented recipe for non-idempotent changes under lost responses:
// the change records its own ID and skips itself when already applied.
func TestModifyAfterALostWriteResponse(t *testing.T) {
	type Counter struct {
		table.Meta
		Count  int64
		LastOp string
	}
	ctx := t.Context()
	run := func(change func(*Counter) error) *Counter {
		svc := fake.NewTableService(nil)
		_, _ = svc.NewClient("counters", nil).CreateTable(ctx, nil)
		plain, _ := table.New[Counter](svc.NewClient("counters", nil), nil)
		if err := plain.Add(ctx, &Counter{Meta: table.Meta{PartitionKey: "p", RowKey: "r"}, Count: 5}, nil); err != nil {
			t.Fatal(err)
		}
		opts := &aztables.ClientOptions{}
		// Modify sends a read, then the write: lose the write's response.
		opts.PerRetryPolicies = append(opts.PerRetryPolicies, faults.LoseResponse(2))
		opts.Retry.RetryDelay = time.Millisecond
		tb, _ := table.New[Counter](svc.NewClient("counters", opts), nil)
		if _, err := tb.Modify(ctx, "p", "r", change, nil); err != nil {
			t.Fatal(err)
		}
		got, _ := plain.Get(ctx, "p", "r", nil)
		return got
	}
	// A bare increment: the SDK's retry meets 412, Modify reads 6 and adds
	// again. This is why the doc asks for the recipe below.
	if got := run(func(c *Counter) error { c.Count++; return nil }); got.Count != 7 {
		t.Fatalf("bare increment after a lost response: %d (the doc says it counts twice)", got.Count)
	}
	// The recipe: the change names itself and skips when already applied.
	if got := run(func(c *Counter) error {
		if c.LastOp == "op-42" {
			return table.ErrNoChange
		}
		c.Count++
		c.LastOp = "op-42"
		return nil
	}); got.Count != 6 {
		t.Fatalf("increment with its own ID: %d, want 6", got.Count)
	}
}
