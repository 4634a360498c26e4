package batch_test

import (
	"testing"

	"github.com/tablekit/tablekit/internal/integration"
)

// The retry rule (the SDK's retry policy is the transport retry; tablekit
// adds only the documented reads and ETag rounds, and batch.Writer's
// resend of a throttled operation) and writes under injected faults,
// counted on the fake and on Azurite (internal/integration).

func TestRetriesOnFake(t *testing.T)    { integration.RunRetries(t, integration.FakeEnv()) }
func TestRetriesOnAzurite(t *testing.T) { integration.RunRetries(t, integration.AzuriteEnv(t)) }

func TestUnderFaultsOnFake(t *testing.T) {
	env := integration.FakeEnv()
	integration.RunUnderFaults(t, env, integration.Services(env))
}

func TestUnderFaultsOnAzurite(t *testing.T) {
	env := integration.AzuriteEnv(t)
	integration.RunUnderFaults(t, env, integration.Services(env))
}
