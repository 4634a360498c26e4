package eventstream_test

import (
	"testing"

	"github.com/tablekit/tablekit/internal/integration"
)

// Event streams (internal/integration) on the fake, on Azurite, and on the
// fake with adversarial paging.

func TestEventStreamsOnFake(t *testing.T) { integration.RunEventStreams(t, integration.FakeEnv()) }
func TestEventStreamsOnAzurite(t *testing.T) {
	integration.RunEventStreams(t, integration.AzuriteEnv(t))
}
func TestEventStreamsOnAdversarialFake(t *testing.T) {
	integration.RunEventStreams(t, integration.AdversarialFakeEnv())
}
