package consistency_test

import (
	"testing"

	"github.com/tablekit/tablekit/internal/integration"
)

// Consistency's suites (internal/integration) on the fake and on Azurite;
// MoverVersions also with adversarial paging.

func TestConsistencyOnFake(t *testing.T) { integration.RunConsistency(t, integration.FakeEnv()) }

// Consistency has Azurite to itself within this package: see
// integration.SerialAzuriteEnv.
func TestConsistencyOnAzurite(t *testing.T) {
	integration.RunConsistency(t, integration.SerialAzuriteEnv(t))
}

func TestWorkerOnFake(t *testing.T)    { integration.RunWorker(t, integration.FakeEnv()) }
func TestWorkerOnAzurite(t *testing.T) { integration.RunWorker(t, integration.AzuriteEnv(t)) }

// The latency cases wait out real seconds on Azurite; their scenarios run
// in parallel.
func TestWorkerLatencyOnFake(t *testing.T) { integration.RunWorkerLatency(t, integration.FakeEnv()) }
func TestWorkerLatencyOnAzurite(t *testing.T) {
	integration.RunWorkerLatency(t, integration.AzuriteEnv(t))
}

func TestPoisonQueueOnFake(t *testing.T)    { integration.RunPoisonQueue(t, integration.FakeEnv()) }
func TestPoisonQueueOnAzurite(t *testing.T) { integration.RunPoisonQueue(t, integration.AzuriteEnv(t)) }

func TestMoverVersionsOnFake(t *testing.T) { integration.RunMoverVersions(t, integration.FakeEnv()) }
func TestMoverVersionsOnAzurite(t *testing.T) {
	integration.RunMoverVersions(t, integration.AzuriteEnv(t))
}
func TestMoverVersionsOnAdversarialFake(t *testing.T) {
	integration.RunMoverVersions(t, integration.AdversarialFakeEnv())
}
