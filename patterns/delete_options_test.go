package patterns_test

import (
	"testing"

	"github.com/tablekit/tablekit/internal/integration"
)

// The shared options of the patterns' Delete and Put (DeleteOptions,
// PutOptions) on every pattern, on the fake and on Azurite, requests
// counted by the ledger (internal/integration's RunDeleteOptions).

func TestDeleteOptionsOnFake(t *testing.T) { integration.RunDeleteOptions(t, integration.FakeEnv()) }
func TestDeleteOptionsOnAzurite(t *testing.T) {
	integration.RunDeleteOptions(t, integration.AzuriteEnv(t))
}
