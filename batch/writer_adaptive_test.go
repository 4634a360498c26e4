package batch_test

import (
	"fmt"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/tune"
)

// tryLatency holds each try for a few milliseconds, as the network and the
// service would; in a synctest bubble the wait is virtual.
type tryLatency struct{}

func (tryLatency) Do(req *policy.Request) (*http.Response, error) {
	time.Sleep(5 * time.Millisecond)
	return req.Next()
}

// writeToBusy writes 32 partitions of 200 entities with a Writer to a
// table on a busy fake (200 entities a second per partition, 2,000 per
// account), in virtual time, with the SDK's default retries and delays
// and the per-retry policies given, and returns the Writer's summary, the
// account's refusals and requests served, and the virtual time taken.
func writeToBusy(t *testing.T, perRetry ...policy.Policy) (sum batch.Summary, throttled, passed, stored int, took time.Duration) {
	synctest.Test(t, func(t *testing.T) {
		busy := fake.NewBusy(&fake.BusyOptions{PerPartition: 200, PerAccount: 2000})
		svc := fake.NewTableService(&fake.TableServiceOptions{Busy: busy})
		svc.SetRetryDelays(0, 0)
		co := &aztables.ClientOptions{}
		co.PerRetryPolicies = append(perRetry, tryLatency{})
		client := svc.NewClient("events", co)
		if _, err := client.CreateTable(t.Context(), nil); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		var err error
		sum, err = batch.NewWriter(client, nil).Write(t.Context(), func(yield func(batch.Op) bool) {
			for i := range 200 {
				for p := range 32 {
					if !yield(batch.Add(ev(fmt.Sprintf("p%02d", p), i))) {
						return
					}
				}
			}
		}, nil)
		took = time.Since(start)
		if err != nil {
			t.Fatalf("Write: %v", err)
		}
		throttled, passed, stored = busy.Throttled(), busy.Passed(), svc.Len("events")
	})
	return
}

// A Writer whose client carries a tune.Adaptive among its per-retry
// policies is paced by it with no option of its own: every transaction
// and every resend goes through the client's pipeline. On a busy account
// it writes everything, with fewer of its requests refused than by the
// SDK's retries alone (both are logged): those of the start, before the
// first refusal tells it the account's rate.
func TestWriterOnABusyAccountWithAdaptive(t *testing.T) {
	sdkSum, sdkThrottled, sdkPassed, _, sdkTook := writeToBusy(t)
	sum, throttled, passed, stored, took := writeToBusy(t, tune.NewAdaptive(nil))
	t.Logf("SDK retry alone: %d transactions, %d failed, %d of %d requests throttled, %v", sdkSum.Transactions, sdkSum.Failed, sdkThrottled, sdkThrottled+sdkPassed, sdkTook)
	t.Logf("Adaptive:        %d transactions, %d failed, %d of %d requests throttled, %v", sum.Transactions, sum.Failed, throttled, throttled+passed, took)
	if sum.Failed != 0 || stored != 32*200 {
		t.Fatalf("with Adaptive: %d transactions failed, %d entities stored of %d", sum.Failed, stored, 32*200)
	}
	if throttled >= sdkThrottled {
		t.Fatalf("with Adaptive %d requests were throttled, with the SDK's retries alone %d", throttled, sdkThrottled)
	}
}
