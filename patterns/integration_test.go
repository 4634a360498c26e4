package patterns_test

import (
	"testing"

	"github.com/tablekit/tablekit/internal/integration"
)

// The patterns' and the entity model's suites (internal/integration) on the
// fake and on Azurite; the paging-sensitive ones also on the fake with
// adversarial paging (every third response an empty page with a token):
// FakeEnv proves the service's request counts, AdversarialFakeEnv that
// every loop over pages follows tokens whatever a page holds.

func TestPatternsOnFake(t *testing.T)    { integration.RunPatterns(t, integration.FakeEnv()) }
func TestPatternsOnAzurite(t *testing.T) { integration.RunPatterns(t, integration.AzuriteEnv(t)) }

func TestCrossPartitionOnFake(t *testing.T) { integration.RunCrossPartition(t, integration.FakeEnv()) }
func TestCrossPartitionOnAzurite(t *testing.T) {
	integration.RunCrossPartition(t, integration.AzuriteEnv(t))
}

func TestShapeOnFake(t *testing.T) {
	env := integration.FakeEnv()
	integration.RunShape(t, env, integration.Services(env))
}

func TestShapeOnAzurite(t *testing.T) {
	env := integration.AzuriteEnv(t)
	integration.RunShape(t, env, integration.Services(env))
}

func TestShapeOnAdversarialFake(t *testing.T) {
	env := integration.AdversarialFakeEnv()
	integration.RunShape(t, env, integration.Services(env))
}

func TestBlobPatternsOnFake(t *testing.T) { integration.RunBlobPatterns(t, integration.FakeEnv()) }
func TestBlobPatternsOnAzurite(t *testing.T) {
	integration.RunBlobPatterns(t, integration.AzuriteEnv(t))
}

func TestLargeBySizeOnFake(t *testing.T)    { integration.RunLargeBySize(t, integration.FakeEnv()) }
func TestLargeBySizeOnAzurite(t *testing.T) { integration.RunLargeBySize(t, integration.AzuriteEnv(t)) }

func TestPatternDefectsOnFake(t *testing.T) { integration.RunPatternDefects(t, integration.FakeEnv()) }
func TestPatternDefectsOnAzurite(t *testing.T) {
	integration.RunPatternDefects(t, integration.AzuriteEnv(t))
}

func TestIndexMoveOnFake(t *testing.T)    { integration.RunIndexMove(t, integration.FakeEnv()) }
func TestIndexMoveOnAzurite(t *testing.T) { integration.RunIndexMove(t, integration.AzuriteEnv(t)) }

func TestIDListFormatOnFake(t *testing.T) { integration.RunIDListFormat(t, integration.FakeEnv()) }
func TestIDListFormatOnAzurite(t *testing.T) {
	integration.RunIDListFormat(t, integration.AzuriteEnv(t))
}

func TestLargeEntityRacesOnFake(t *testing.T) {
	integration.RunLargeEntityRaces(t, integration.FakeEnv())
}
func TestLargeEntityRacesOnAzurite(t *testing.T) {
	integration.RunLargeEntityRaces(t, integration.AzuriteEnv(t))
}

func TestLargeEntityUnderFaultsOnFake(t *testing.T) {
	env := integration.FakeEnv()
	integration.RunLargeEntityUnderFaults(t, env, integration.Services(env))
}

func TestLargeEntityUnderFaultsOnAzurite(t *testing.T) {
	env := integration.AzuriteEnv(t)
	integration.RunLargeEntityUnderFaults(t, env, integration.Services(env))
}

func TestPeriodsOnFake(t *testing.T) {
	env := integration.FakeEnv()
	integration.RunPeriods(t, env, integration.Services(env))
}

func TestPeriodsOnAzurite(t *testing.T) {
	env := integration.AzuriteEnv(t)
	integration.RunPeriods(t, env, integration.Services(env))
}

func TestModelDefectsOnFake(t *testing.T) { integration.RunModelDefects(t, integration.FakeEnv()) }
func TestModelDefectsOnAzurite(t *testing.T) {
	integration.RunModelDefects(t, integration.AzuriteEnv(t))
}

func TestModelTableHandlesOnFake(t *testing.T) {
	integration.RunModelTableHandles(t, integration.FakeEnv())
}
func TestModelTableHandlesOnAzurite(t *testing.T) {
	integration.RunModelTableHandles(t, integration.AzuriteEnv(t))
}

func TestModelReadsOnFake(t *testing.T) { integration.RunModelReads(t, integration.FakeEnv()) }
func TestModelReadsOnAzurite(t *testing.T) {
	integration.RunModelReads(t, integration.AzuriteEnv(t))
}
func TestModelReadsOnAdversarialFake(t *testing.T) {
	integration.RunModelReads(t, integration.AdversarialFakeEnv())
}

func TestModelWritesOnFake(t *testing.T) { integration.RunModelWrites(t, integration.FakeEnv()) }
func TestModelWritesOnAzurite(t *testing.T) {
	integration.RunModelWrites(t, integration.AzuriteEnv(t))
}
func TestModelWritesOnAdversarialFake(t *testing.T) {
	integration.RunModelWrites(t, integration.AdversarialFakeEnv())
}

func TestModelOnFake(t *testing.T)    { integration.RunModel(t, integration.FakeEnv()) }
func TestModelOnAzurite(t *testing.T) { integration.RunModel(t, integration.AzuriteEnv(t)) }
func TestModelOnAdversarialFake(t *testing.T) {
	integration.RunModel(t, integration.AdversarialFakeEnv())
}

func TestModelComposeOnFake(t *testing.T) { integration.RunModelCompose(t, integration.FakeEnv()) }
func TestModelComposeOnAdversarialFake(t *testing.T) {
	integration.RunModelCompose(t, integration.AdversarialFakeEnv())
}
func TestModelComposeOnAzurite(t *testing.T) {
	integration.RunModelCompose(t, integration.AzuriteEnv(t))
}

func TestModelErrorNamesOnFake(t *testing.T) {
	integration.RunModelErrorNames(t, integration.FakeEnv())
}
func TestModelErrorNamesOnAzurite(t *testing.T) {
	integration.RunModelErrorNames(t, integration.AzuriteEnv(t))
}

func TestModelEncryptedDefaultModeOnFake(t *testing.T) {
	integration.RunEncryptedDefaultMode(t, integration.FakeEnv())
}
func TestModelEncryptedDefaultModeOnAzurite(t *testing.T) {
	integration.RunEncryptedDefaultMode(t, integration.AzuriteEnv(t))
}
