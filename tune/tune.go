// Package tune applies the Table storage performance checklist to the Go
// SDK's clients: retry options for throughput and for latency, and an
// optional client-side limiter that keeps a process under the service's
// scalability targets.
//
// Connection pool: azcore's default transport keeps 10 idle connections
// per host. Against Azurite at several levels of concurrency
// (BENCHMARKS.md), a pool sized to the concurrency dials as many
// connections and serves as many requests per second as the default: in a
// steady loop each caller re-takes its connection at once, so the cap never
// closes one. tablekit therefore offers no pool-size option. The transport
// table.ClientOptions gives a client is about CPU, not pool size: it keeps
// the same cap of 10.
//
// Go's net.Dialer turns Nagle's algorithm off on TCP connections by default
// (TCP_NODELAY), which is what the checklist asks of .NET clients; nothing
// is needed. The Table service's JSON "no metadata" format is not exposed
// by aztables for reads of entities, which tablekit decodes by the Go
// type's fields, so the type annotations of minimal metadata cost nothing.
package tune

import (
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
)

// ThroughputRetry suits bulk work: more attempts and longer back-off, so a
// throttled partition (503 Server Busy) gets time to recover. azcore's retry
// policy backs off exponentially with jitter, honours Retry-After, and
// retries 408, 429, 500, 502, 503 and 504, never other 400-class answers.
func ThroughputRetry() policy.RetryOptions {
	return policy.RetryOptions{MaxRetries: 6, TryTimeout: 30 * time.Second, RetryDelay: 500 * time.Millisecond, MaxRetryDelay: 30 * time.Second}
}

// LatencyRetry suits requests a user waits on: few, short attempts, so a
// slow service fails fast and the caller can degrade instead of hanging.
func LatencyRetry() policy.RetryOptions {
	return policy.RetryOptions{MaxRetries: 2, TryTimeout: 3 * time.Second, RetryDelay: 100 * time.Millisecond, MaxRetryDelay: 400 * time.Millisecond}
}
