// Package reqcount gives the conformance suite a request counter per
// client: a thin wrapper over package ledger, which does the counting.
package reqcount

import (
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/ledger"
)

// Counter counts the requests of the clients made from its options; the
// zero value is ready to use.
type Counter struct {
	// Faults, when set, runs after the counter on every attempt (a fault
	// injector); the SDK then retries after 1 ms instead of 0.8 s.
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
	c.ledger().Attach(&o.ClientOptions, ledger.Table)
	if c.Faults != nil {
		o.PerRetryPolicies = append(o.PerRetryPolicies, c.Faults)
		o.Retry.RetryDelay, o.Retry.MaxRetryDelay = time.Millisecond, 10*time.Millisecond
	}
	return o
}
