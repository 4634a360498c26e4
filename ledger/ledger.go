// Package ledger counts the storage requests a program sends: an azcore
// pipeline policy that records every request (retries included) by service,
// operation, table / queue / container and partition, and totals retries.
// Add it to the clients you want to measure:
//
//	l := ledger.New()
//	opts := &aztables.ClientOptions{}
//	l.Attach(&opts.ClientOptions, ledger.Table)
//	// … run your code with a client made from opts …
//	fmt.Print(l)
//
// The patterns of tablekit promise a number of requests per operation; the
// ledger is how their tests, the tour and the benchmarks check it, and how
// you can check your own code. It never records secrets: no query string,
// header or body text is kept beyond the names it derives.
package ledger

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/tablekit/tablekit/internal/reqclass"
)

// Service is the storage service a policy is attached to.
type Service string

// The services a ledger tells apart.
const (
	Table Service = "table"
	Queue Service = "queue"
	Blob  Service = "blob"
)

// Key is what a request is counted under.
type Key struct {
	Service   Service
	Operation string // GetEntity, QueryEntities, Batch, DequeueMessages, PutBlob, …
	Resource  string // the table, queue or container
	Partition string // the PartitionKey, for table requests that name one
}

// Ledger counts requests. Safe for concurrent use.
type Ledger struct {
	mu      sync.Mutex
	counts  map[Key]int
	retried map[Key]int // of counts, the tries that repeated an earlier one
	total   int
	retries int
	seen    map[string]struct{} // client request ids, to tell retries
}

// New returns an empty ledger.
func New() *Ledger {
	return &Ledger{counts: map[Key]int{}, retried: map[Key]int{}, seen: map[string]struct{}{}}
}

// Attach adds the ledger to a client's options: a per-call policy that
// gives each call a client request id (x-ms-client-request-id, when the
// SDK has not) and a per-retry policy that counts every try, telling
// retries by their repeated id.
func (l *Ledger) Attach(co *azcore.ClientOptions, service Service) {
	co.PerCallPolicies = append(co.PerCallPolicies, callIDPolicy{})
	co.PerRetryPolicies = append(co.PerRetryPolicies, l.Policy(service))
}

// Policy returns the counting policy alone, for PerRetryPolicies; without
// Attach's per-call policy, retries are counted as requests but not told
// apart unless the SDK sets x-ms-client-request-id itself.
func (l *Ledger) Policy(service Service) policy.Policy { return servicePolicy{l: l, s: service} }

type callIDPolicy struct{}

func (callIDPolicy) Do(req *policy.Request) (*http.Response, error) {
	h := req.Raw().Header
	if h.Get("x-ms-client-request-id") == "" {
		var b [16]byte
		_, _ = rand.Read(b[:])
		h.Set("x-ms-client-request-id", hex.EncodeToString(b[:]))
	}
	return req.Next()
}

type servicePolicy struct {
	l *Ledger
	s Service
}

// maxSeen bounds the memory of request ids kept to detect retries.
const maxSeen = 1 << 16

func (p servicePolicy) Do(req *policy.Request) (*http.Response, error) {
	raw := req.Raw()
	key := classify(p.s, raw)
	id := raw.Header.Get("x-ms-client-request-id")
	p.l.mu.Lock()
	p.l.counts[key]++
	p.l.total++
	if id != "" {
		if _, again := p.l.seen[id]; again {
			p.l.retries++
			p.l.retried[key]++
		} else {
			if len(p.l.seen) >= maxSeen {
				clear(p.l.seen)
			}
			p.l.seen[id] = struct{}{}
		}
	}
	p.l.mu.Unlock()
	return req.Next()
}

// Total is every request counted, retries included.
func (l *Ledger) Total() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total
}

// Retries is how many of them repeated an earlier request.
func (l *Ledger) Retries() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.retries
}

// Count is the requests counted under k.
func (l *Ledger) Count(k Key) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.counts[k]
}

// Operation totals the requests of one operation of a service.
func (l *Ledger) Operation(s Service, op string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for k, c := range l.counts {
		if k.Service == s && k.Operation == op {
			n += c
		}
	}
	return n
}

// Entries lists the counts under each key, partition included, sorted
// by service, operation, resource and partition.
func (l *Ledger) Entries() []Count {
	l.mu.Lock()
	out := make([]Count, 0, len(l.counts))
	for k, c := range l.counts {
		out = append(out, Count{Key: k, Requests: c, Retries: l.retried[k]})
	}
	l.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].Key, out[j].Key
		if a.Service != b.Service {
			return a.Service < b.Service
		}
		if a.Operation != b.Operation {
			return a.Operation < b.Operation
		}
		if a.Resource != b.Resource {
			return a.Resource < b.Resource
		}
		return a.Partition < b.Partition
	})
	return out
}

// Snapshot is a ledger's counts at one moment, shaped for export as
// metrics: cumulative (monotonic) counters since New or the last Reset,
// with a small, bounded set of labels.
type Snapshot struct {
	// Requests is every request counted, retries included; Retries is how
	// many of them repeated an earlier request (a retry of the SDK's
	// policy, told by its repeated x-ms-client-request-id).
	Requests, Retries int
	// Counts splits both by service, operation and resource, sorted by
	// those. The partition is left out (each Count's Key.Partition is
	// ""): it is unbounded, a poor metric label; Entries has it.
	Counts []Count
}

// Count is the requests and retries counted under a Key: one key of
// Entries, or, in a Snapshot, one service, operation and resource (table,
// queue or container) with the Partition left empty.
type Count struct {
	Key
	Requests int
	Retries  int
}

// Snapshot returns the counts so far. Export them as counters: with
// OpenTelemetry, an Int64ObservableCounter per field whose callback
// observes each Count with attributes service, operation and resource (see
// the package Example); with Prometheus, a CounterFunc per Count. Taking a
// Snapshot does not reset the ledger.
func (l *Ledger) Snapshot() Snapshot {
	type sk struct {
		s      Service
		op, rs string
	}
	l.mu.Lock()
	agg := make(map[sk]*Count, len(l.counts))
	for k, c := range l.counts {
		g := sk{k.Service, k.Operation, k.Resource}
		if agg[g] == nil {
			agg[g] = &Count{Key: Key{Service: k.Service, Operation: k.Operation, Resource: k.Resource}}
		}
		agg[g].Requests += c
		agg[g].Retries += l.retried[k]
	}
	snap := Snapshot{Requests: l.total, Retries: l.retries, Counts: make([]Count, 0, len(agg))}
	l.mu.Unlock()
	for _, c := range agg {
		snap.Counts = append(snap.Counts, *c)
	}
	sort.Slice(snap.Counts, func(i, j int) bool {
		a, b := snap.Counts[i], snap.Counts[j]
		if a.Service != b.Service {
			return a.Service < b.Service
		}
		if a.Operation != b.Operation {
			return a.Operation < b.Operation
		}
		return a.Resource < b.Resource
	})
	return snap
}

// Reset empties the ledger.
func (l *Ledger) Reset() {
	l.mu.Lock()
	clear(l.counts)
	clear(l.retried)
	clear(l.seen)
	l.total, l.retries = 0, 0
	l.mu.Unlock()
}

// String renders the ledger as a small table.
func (l *Ledger) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-6s %-20s %-24s %-16s %8s\n", "svc", "operation", "resource", "partition", "requests")
	for _, e := range l.Entries() {
		fmt.Fprintf(&b, "%-6s %-20s %-24s %-16s %8d\n", e.Service, e.Operation, e.Resource, e.Partition, e.Requests)
	}
	fmt.Fprintf(&b, "total %d requests, %d retries\n", l.Total(), l.Retries())
	return b.String()
}

func classify(s Service, r *http.Request) Key {
	c := reqclass.Classify(reqclass.Service(s), r)
	return Key{Service: s, Operation: c.Operation, Resource: c.Resource, Partition: c.Partition}
}
