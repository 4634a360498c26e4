package integration

import (
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/internal/reqcount"
	"github.com/tablekit/tablekit/internal/testenv"
)

// AzuriteEnv is the Azurite that scripts/azurite started. Every Azurite
// suite runs in parallel with the others (scripts/test gives go test
// -parallel): they spend most of their time waiting on the service's
// clocks (leases of at least 15 s, visibility timeouts) and on its
// answers, each on tables, queues and containers of its own, so their
// waits overlap instead of adding up. The fake's suites are CPU-bound and
// stay serial.
func AzuriteEnv(t *testing.T) Env {
	t.Parallel()
	return SerialAzuriteEnv(t)
}

// SerialAzuriteEnv is AzuriteEnv for a suite that must not share Azurite
// with the parallel suites of its package: Consistency asserts exact
// request counts and poison counts with a 1 s visibility timeout, and a
// handler slowed past it by a busy Azurite sees its message delivered
// again (seen: Current 48 requests, want 41; 7 poisoned, want 4). Serial
// tests run before the parallel ones of their package start.
func SerialAzuriteEnv(t *testing.T) Env {
	env := AccountEnv(t, testenv.ConnectionString(t), AzuriteLacks())
	env.Name = "azurite"
	return env
}

// Services returns how the suites that list and create tables get a
// service client of env's backend.
func Services(env Env) func(t *testing.T, c *reqcount.Counter) *aztables.ServiceClient {
	return func(t *testing.T, c *reqcount.Counter) *aztables.ServiceClient {
		return env.NewServiceClient(t, c.TableOptions())
	}
}

// SplittingFakeEnv is the fake with the service's paging freedoms on,
// for RunQueryDensity: pages split at partitions, every second page empty.
func SplittingFakeEnv() Env { return splittingFakeEnv() }
