// Package reqcount gives the conformance suite a request counter per
// client: a thin wrapper over package ledger, which does the counting.
package reqcount

import (
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/ledger"
)

// Counter counts the requests of the clients made from its options; the
// zero value is ready to use.
type Counter struct {
	// Faults, when set, runs after the counter on every attempt (a fault
	// injector); the SDK then retries after 1 ms instead of 0.8 s, and up
	// to 6 times instead of 3: at 10 % faults, 4 attempts all fail once in
	// 10,000 requests, which a soak of thousands of requests would meet.
	Faults policy.Policy

	once sync.Once
	l    *ledger.Ledger
}

func (c *Counter) ledger() *ledger.Ledger {
	c.once.Do(func() { c.l = ledger.New() })
	return c.l
}

// N is the number of requests counted, retries included.
func (c *Counter) N() int { return c.ledger().Total() }

// Reset sets the count to zero.
func (c *Counter) Reset() { c.ledger().Reset() }

// TableOptions returns client options that count every request.
func (c *Counter) TableOptions() *aztables.ClientOptions {
	o := &aztables.ClientOptions{}
	c.attach(&o.ClientOptions, ledger.Table)
	return o
}

// QueueOptions returns queue client options that count every request; a
// nil Counter returns nil (the defaults).
func (c *Counter) QueueOptions() *azqueue.ClientOptions {
	if c == nil {
		return nil
	}
	o := &azqueue.ClientOptions{}
	c.attach(&o.ClientOptions, ledger.Queue)
	return o
}

// BlobOptions returns blob client options that count every request; a nil
// Counter returns nil (the defaults).
func (c *Counter) BlobOptions() *azblob.ClientOptions {
	if c == nil {
		return nil
	}
	o := &azblob.ClientOptions{}
	c.attach(&o.ClientOptions, ledger.Blob)
	return o
}

func (c *Counter) attach(o *azcore.ClientOptions, s ledger.Service) {
	c.ledger().Attach(o, s)
	if c.Faults != nil {
		o.PerRetryPolicies = append(o.PerRetryPolicies, c.Faults)
		o.Retry.RetryDelay, o.Retry.MaxRetryDelay = time.Millisecond, 10*time.Millisecond
		o.Retry.MaxRetries = 6
	}
}

// Ledger is the ledger behind the counter, for counts by operation.
func (c *Counter) Ledger() *ledger.Ledger { return c.ledger() }
