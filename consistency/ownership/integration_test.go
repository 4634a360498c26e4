package ownership_test

import (
	"testing"

	"github.com/tablekit/tablekit/internal/integration"
)

// Roles holding queues by blob leases (internal/integration) on the fake
// and on Azurite.

func TestOwnershipOnFake(t *testing.T)    { integration.RunOwnership(t, integration.FakeEnv()) }
func TestOwnershipOnAzurite(t *testing.T) { integration.RunOwnership(t, integration.AzuriteEnv(t)) }
