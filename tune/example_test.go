package tune_test

import (
	"context"
	"fmt"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/tune"
)

// A limiter holding one partition to 2 entities a second (the service's
// target is 2,000): a burst of one second's worth passes, later requests
// wait their turn. The clock here is frozen so the waits can be printed.
func ExampleLimiter() {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	var waits []time.Duration
	lim := tune.NewLimiter(&tune.LimiterOptions{
		PerPartition: 2,
		Now:          func() time.Time { return now },
		Sleep:        func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil },
	})
	opts := &aztables.ClientOptions{}
	opts.PerCallPolicies = append(opts.PerCallPolicies, lim)
	opts.Retry = policy.RetryOptions{MaxRetries: 6, TryTimeout: 30 * time.Second, RetryDelay: 500 * time.Millisecond, MaxRetryDelay: 30 * time.Second}
	svc := fake.NewTableService(nil)
	client := svc.NewClient("Events", opts)
	_, _ = client.CreateTable(context.Background(), nil)
	for i := 0; i < 4; i++ {
		_, _ = client.AddEntity(context.Background(), fmt.Appendf(nil, `{"PartitionKey":"hot","RowKey":"%d"}`, i), nil)
	}
	fmt.Println(waits)
	// Output: [500ms 1s]
}
