// Package tune applies the Table storage performance checklist to the Go
// SDK's clients: an optional client-side limiter that keeps a process under
// the service's scalability targets at a fixed rate, and an adaptive rate
// that finds what the service will take.
//
// Retries are the SDK's, configured once in the client's
// policy.RetryOptions: azcore's policy backs off exponentially with jitter,
// honours Retry-After, and retries 408, 429, 500, 502, 503 and 504, never
// other 400-class answers. Bulk work wants more attempts and longer
// back-off, so a throttled partition (503 Server Busy) gets time to
// recover:
//
//	policy.RetryOptions{MaxRetries: 6, TryTimeout: 30 * time.Second, RetryDelay: 500 * time.Millisecond, MaxRetryDelay: 30 * time.Second}
//
// Requests a user waits on want few, short attempts, so a slow service
// fails fast and the caller can degrade instead of hanging:
//
//	policy.RetryOptions{MaxRetries: 2, TryTimeout: 3 * time.Second, RetryDelay: 100 * time.Millisecond, MaxRetryDelay: 400 * time.Millisecond}
//
// Limiter holds the rates it is given (by default the targets: 2,000
// entities a second per partition, 20,000 per account). Adaptive starts at
// those rates as ceilings and follows the service's answers, in the manner
// of aws-sdk-go-v2's adaptive retry mode. Each partition and the account
// have a token bucket whose fill rate is the flow's rate; every try waits
// for its entities' tokens in both (a query's page is charged as it is
// read, except that a batched read, whose filter names its RowKeys,
// reserves one per RowKey before it goes, so that reads in flight at once
// do not overrun a partition). A throttling answer (503 ServerBusy,
// 429, 500 OperationTimedOut, or one of those inside a transaction's 202)
// lowers one flow: the account's when the message says the account is over
// its limit, else the partition's. The decrease keeps 0.7 of the lower of
// the flow's rate and the rate the service accepted over the last second,
// and records that rate as wMax; answers to requests paced before the
// decrease are of the same overload and lower nothing more. While answers
// are clean the rate follows the CUBIC curve wMax*(1+c*(t-K)^3), with
// c = 0.3/K^3: concave, back at wMax K = 4 s after the decrease, then
// convex, probing for more, but never past twice what the service accepted
// over the last second, nor past the ceiling. aws-sdk-go-v2 fixes c
// instead, which makes recovery take longer the higher the rate; K fixed
// suits a table's thousands of entities a second as well as a few.
//
// Adaptive belongs among a client's PerRetryPolicies: it then paces every
// try, the SDK's retries included, and sees every answer, while the SDK's
// retry policy stays the one that retries 503 and 500. Code that sends
// through the client needs nothing else: table's operations, batch.Submit,
// the batch.Writer (whose resends of a throttled transaction go through
// the same pipeline) and the patterns and consistency types built on a
// table.Client all go at its rates.
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
