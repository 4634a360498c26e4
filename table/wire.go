package table

import (
	"context"
	"sync/atomic"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/internal/http11"
	"github.com/tablekit/tablekit/internal/wirepolicy"
)

// The wire path: tablekit's policy in a client's pipeline lets tablekit
// send request bodies it built itself, and read raw response bodies,
// through that client's own pipeline, so that the client's authentication,
// retry, logging and tracing policies apply to them as to any request (the
// SDK keeps its pipeline unexported; a per-call policy is the public way
// in). Clients built with ClientOptions have it; every tablekit operation
// finds out by itself whether a client has it and takes the SDK's own path
// when it does not. What it buys: queries and point reads decode the service's
// bytes once instead of the SDK's map round trip; transactions are written
// in one buffer; and batch updates and upserts on keys with a single quote
// (O'Brien), which the SDK cannot send, work.
//
// Per call, not per retry: the policy runs once, before the SDK's retry
// policy, so every try (retries included) sends the body it set and is
// signed, logged and traced by the policies after it, and it reads the
// final response once. It acts only on requests tablekit marked with a
// wireExchange in their context; every other request passes through
// untouched.

// ClientOptions returns a copy of opts (nil: the zero options) with
// tablekit's per-call policy added to PerCallPolicies, once however often
// it is called on its own result. Build clients with the SDK's
// constructors and it:
//
//	svc, err := aztables.NewServiceClientFromConnectionString(conn, table.ClientOptions(nil))
//
// If opts.Transport is nil, the copy also gets tablekit's HTTP/1.1
// transport (Azure Storage speaks HTTP/1.1 only) with the SDK's default
// transport's timeouts and pool sizes: it makes each round trip on the
// calling goroutine, which costs a point read less client CPU
// (BENCHMARKS.md). Requests through a proxy (HTTPS_PROXY, HTTP_PROXY,
// NO_PROXY), and every request off Unix, go through a net/http transport
// as the SDK's do. Each call makes a new transport with its own pool of
// connections: build clients from one service client, or from one
// ClientOptions result, to share them. Set Transport to keep net/http's.
func ClientOptions(opts *aztables.ClientOptions) *aztables.ClientOptions {
	var o aztables.ClientOptions
	if opts != nil {
		o = *opts
	}
	wirepolicy.Add(&o.ClientOptions)
	if o.Transport == nil {
		o.Transport = http11.New()
	}
	return &o
}

// wirePath remembers what a Table's requests showed about its client
// (wireExchange.Invoked): 0 unknown, 1 has tablekit's policy, 2 has not.
type wirePath struct{ state atomic.Int32 }

// learn records what a request showed (x.Invoked) and returns it.
func (w *wirePath) learn(has bool) bool {
	if has {
		w.state.Store(1)
	} else {
		w.state.Store(2)
	}
	return has
}

// wireExchange is one request routed through tablekit's policy (see
// ClientOptions): what tablekit asks the policy to send, and what the
// policy saw come back.
type wireExchange = wirepolicy.Exchange

// withWireExchange marks the requests made with the returned context for
// tablekit's policy (ClientOptions).
func withWireExchange(ctx context.Context, x *wireExchange) context.Context {
	return wirepolicy.With(ctx, x)
}
