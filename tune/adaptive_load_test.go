package tune_test

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/tune"
)

// A load test: single-entity writes over partitions, from workers, for a
// duration of virtual time, against an account at scaled-down targets.
type load struct {
	partitionTarget, accountTarget float64
	partitions, workers            int
	duration                       time.Duration
}

// loadLatency is how long each try takes, as the network and the service
// would make it.
const loadLatency = 5 * time.Millisecond

// latency holds each try for loadLatency, as the network and the service
// would; in a synctest bubble the wait is virtual.
type latency struct{}

func (latency) Do(req *policy.Request) (*http.Response, error) {
	time.Sleep(loadLatency)
	return req.Next()
}

// loadResult is what one client configuration got from the busy account.
type loadResult struct {
	accepted, throttled, failed int
	duration                    time.Duration
}

func (r loadResult) rate() float64 { return float64(r.accepted) / r.duration.Seconds() }
func (r loadResult) throttledShare() float64 {
	return float64(r.throttled) / float64(r.accepted+r.throttled)
}

// run writes single entities in a synctest bubble against a busy fake at
// the load's targets, with the SDK's default retry options and delays plus
// the policies given, and reports what the account accepted and refused.
func (l load) run(t *testing.T, perCall, perRetry []policy.Policy) loadResult {
	res := loadResult{duration: l.duration}
	synctest.Test(t, func(t *testing.T) {
		busy := fake.NewBusy(&fake.BusyOptions{PerPartition: l.partitionTarget, PerAccount: l.accountTarget})
		svc := fake.NewTableService(&fake.TableServiceOptions{Busy: busy})
		svc.SetRetryDelays(0, 0) // the SDK's own delays, as against an account
		co := &aztables.ClientOptions{}
		co.PerCallPolicies = perCall
		co.PerRetryPolicies = append(append([]policy.Policy{}, perRetry...), latency{})
		client := svc.NewClient("load", co)
		if _, err := client.CreateTable(t.Context(), nil); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		var wg sync.WaitGroup
		var mu sync.Mutex
		for w := range l.workers {
			wg.Go(func() {
				for i := 0; time.Since(start) < l.duration; i++ {
					pk := (w + i*l.workers) % l.partitions
					e := fmt.Appendf(nil, `{"PartitionKey":"p%02d","RowKey":"%d-%d"}`, pk, w, i)
					if _, err := client.UpsertEntity(t.Context(), e, nil); err != nil {
						mu.Lock()
						res.failed++
						mu.Unlock()
					}
				}
			})
		}
		wg.Wait()
		res.accepted, res.throttled = busy.Passed()-1, busy.Throttled()
	})
	return res
}

// compare runs the load three ways, side by side: the SDK's default retry
// alone, a Limiter set to the targets, and an Adaptive left at its default
// ceilings (the service's real targets), which must find the account's
// rate. It logs each and returns the Adaptive's.
func (l load) compare(t *testing.T) loadResult {
	sdk := l.run(t, nil, nil)
	lim := l.run(t, []policy.Policy{tune.NewLimiter(&tune.LimiterOptions{PerPartition: l.partitionTarget, PerAccount: l.accountTarget})}, nil)
	ad := l.run(t, nil, []policy.Policy{tune.NewAdaptive(nil)})
	t.Logf("%v per partition, %v per account, %d partitions, %d workers, %v of virtual time:", l.partitionTarget, l.accountTarget, l.partitions, l.workers, l.duration)
	for _, r := range []struct {
		name string
		loadResult
	}{{"SDK retry alone", sdk}, {"Limiter at the targets", lim}, {"Adaptive", ad}} {
		t.Logf("%-22s %6.0f entities/s (%5.1f %% of the account's target), %5.2f %% of requests throttled, %d failed after retries",
			r.name, r.rate(), 100*r.rate()/l.accountTarget, 100*r.throttledShare(), r.failed)
	}
	if ad.rate() < 0.9*l.accountTarget || ad.throttledShare() > 0.02 {
		t.Errorf("Adaptive: %.0f entities/s and %.2f %% throttled; want at least %v and at most 2 %%", ad.rate(), 100*ad.throttledShare(), 0.9*l.accountTarget)
	}
	return ad
}

// On an account at a hundredth of the service's targets (20 entities a
// second per partition, 200 per account), a load over 64 partitions from
// 16 workers: the Adaptive reaches at least 90 % of the account's target
// with at most 2 % of requests throttled.
func TestAdaptiveReachesTheAccountTarget(t *testing.T) {
	load{partitionTarget: 20, accountTarget: 200, partitions: 64, workers: 16, duration: 30 * time.Second}.compare(t)
}

// The same at a tenth of the targets (200 and 2,000 entities a second)
// and 64 workers, a load of 20 virtual seconds that takes that many
// seconds of CPU; run with -args -busy.
func TestAdaptiveAtATenthOfTheTargets(t *testing.T) {
	if !*busyScale {
		t.Skip("a long load: run with -args -busy")
	}
	load{partitionTarget: 200, accountTarget: 2000, partitions: 64, workers: 64, duration: 20 * time.Second}.compare(t)
}
