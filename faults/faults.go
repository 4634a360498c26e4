// Package faults makes storage requests fail on purpose, for your tests:
// an azcore pipeline policy that, with a seeded random source, fails a
// chosen fraction of requests before they reach the service (a refused or
// timed-out connection), after the service has done them (the response is
// lost, so the client sees an error for a write that happened), or with an
// error status from the service (500, 503, 409, 412 …). Use it with the
// fakes' own hooks (fake.TableService.FailNext) or against Azurite.
//
//	inj := faults.New(42, &faults.Options{Fraction: 0.1})
//	opts := &aztables.ClientOptions{}
//	opts.PerRetryPolicies = append(opts.PerRetryPolicies, inj)
package faults

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
)

// Kind is how a request fails.
type Kind int

const (
	// Before: the request never reaches the service (connection refused).
	Before Kind = iota + 1
	// After: the service does the request, the client gets an error.
	After
	// Status: the service answers with one of Options.Statuses.
	Status
	// Timeout: the request gets no answer in time and never reaches the
	// service; the error wraps ErrInjected and os.ErrDeadlineExceeded,
	// the net.Error (Timeout() true) a read deadline gives. Not among the
	// default Kinds.
	Timeout
)

// ErrInjected is the error of Before, After and Timeout faults (a Status
// fault is the service's answer).
var ErrInjected = errors.New("faults: injected connection failure")

// errTimedOut is the error of Timeout faults: errors.Is matches
// ErrInjected and os.ErrDeadlineExceeded, and errors.As finds a net.Error
// whose Timeout() is true, as after a read deadline.
var errTimedOut = fmt.Errorf("%w: timed out: %w", ErrInjected, os.ErrDeadlineExceeded)

// Options configure an Injector. nil means the defaults.
type Options struct {
	// Fraction of requests that fail, above 0 and up to 1 (to inject no
	// faults, leave the policy out). Default: 0.1.
	Fraction float64
	// Kinds to draw from, equally likely. Default: Before, After, Status.
	Kinds []Kind
	// Statuses for Status faults. Default: 500 and 503 (which the SDK
	// retries).
	Statuses []int
}

// Stats counts the faults injected.
type Stats struct {
	Requests, Before, After, Status, Timeout int
}

// Injector is the policy. Safe for concurrent use; deterministic for a
// seed when requests arrive in a deterministic order.
type Injector struct {
	mu    sync.Mutex
	rnd   *rand.Rand
	opts  Options
	stats Stats
}

// New returns an Injector drawing from seed.
func New(seed uint64, opts *Options) *Injector {
	i := &Injector{rnd: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), opts: Options{Fraction: 0.1}}
	if opts != nil {
		i.opts = *opts
	}
	if i.opts.Fraction <= 0 { // the zero value means the default, as everywhere
		i.opts.Fraction = 0.1
	}
	if len(i.opts.Kinds) == 0 {
		i.opts.Kinds = []Kind{Before, After, Status}
	}
	if len(i.opts.Statuses) == 0 {
		i.opts.Statuses = []int{http.StatusInternalServerError, http.StatusServiceUnavailable}
	}
	return i
}

// Stats returns the counts so far.
func (i *Injector) Stats() Stats {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.stats
}

func (i *Injector) draw() (Kind, int) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.stats.Requests++
	if i.rnd.Float64() >= i.opts.Fraction {
		return 0, 0
	}
	k := i.opts.Kinds[i.rnd.IntN(len(i.opts.Kinds))]
	switch k {
	case Before:
		i.stats.Before++
	case After:
		i.stats.After++
	case Timeout:
		i.stats.Timeout++
	case Status:
		i.stats.Status++
		return k, i.opts.Statuses[i.rnd.IntN(len(i.opts.Statuses))]
	}
	return k, 0
}

// Do fails the request or passes it on.
func (i *Injector) Do(req *policy.Request) (*http.Response, error) {
	kind, status := i.draw()
	switch kind {
	case Before:
		return nil, ErrInjected
	case Timeout:
		return nil, errTimedOut
	case After:
		resp, err := req.Next()
		if err == nil {
			resp.Body.Close()
		}
		return nil, ErrInjected
	case Status:
		body := []byte(`{"odata.error":{"code":"InjectedFault","message":{"lang":"en-US","value":"injected fault"}}}`)
		h := http.Header{}
		h.Set("x-ms-error-code", "InjectedFault")
		h.Set("Content-Type", "application/json")
		return &http.Response{
			Status:     strconv.Itoa(status) + " " + http.StatusText(status),
			StatusCode: status, Header: h, Request: req.Raw(),
			Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)),
		}, nil
	}
	return req.Next()
}

var _ policy.Policy = (*Injector)(nil)

// LoseResponse returns a policy that lets the service do the nth request
// it sees (counting from 1, retries included) and then drops the response,
// as a connection reset after the write would; every other request passes.
// Put it in PerRetryPolicies to test code that must settle exactly that
// ambiguity: the SDK retries, and the retry meets the first attempt's work
// (409 for an insert, 412 for a write guarded by an ETag).
func LoseResponse(n int) policy.Policy { return &loseResponse{n: int64(n)} }

type loseResponse struct {
	n    int64
	seen atomic.Int64
}

func (l *loseResponse) Do(req *policy.Request) (*http.Response, error) {
	resp, err := req.Next()
	if l.seen.Add(1) == l.n && err == nil {
		resp.Body.Close()
		return nil, ErrInjected
	}
	return resp, err
}
