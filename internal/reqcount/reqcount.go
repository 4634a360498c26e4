// Package reqcount counts the HTTP requests a client sends, retries included,
// so tests can assert what an operation costs against any backend.
package reqcount

import (
	"net/http"
	"sync"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
)

// Counter is a per-retry pipeline policy: it sees every request on the wire.
type Counter struct {
	mu sync.Mutex
	n  int
}

// Do counts the request and passes it on.
func (c *Counter) Do(req *policy.Request) (*http.Response, error) {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
	return req.Next()
}

// N is the number of requests counted.
func (c *Counter) N() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// Reset sets the count to zero.
func (c *Counter) Reset() {
	c.mu.Lock()
	c.n = 0
	c.mu.Unlock()
}

// TableOptions returns client options that route every request through c.
func (c *Counter) TableOptions() *aztables.ClientOptions {
	return &aztables.ClientOptions{ClientOptions: azcore.ClientOptions{PerRetryPolicies: []policy.Policy{c}}}
}
