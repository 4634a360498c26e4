package table_test

import (
	"testing"

	"github.com/tablekit/tablekit/internal/integration"
)

// Table's own behaviour over a backend (internal/integration): encryption,
// tracing, compression, query density, typed keys (also with adversarial
// paging), tablekit's wire path and secrets kept out of errors and logs,
// on the fake and on Azurite.

func TestEncryptionOnFake(t *testing.T)    { integration.RunEncryption(t, integration.FakeEnv()) }
func TestEncryptionOnAzurite(t *testing.T) { integration.RunEncryption(t, integration.AzuriteEnv(t)) }

func TestTracingOnFake(t *testing.T)    { integration.RunTracing(t, integration.FakeEnv()) }
func TestTracingOnAzurite(t *testing.T) { integration.RunTracing(t, integration.AzuriteEnv(t)) }

func TestCompressionOnFake(t *testing.T)    { integration.RunCompression(t, integration.FakeEnv()) }
func TestCompressionOnAzurite(t *testing.T) { integration.RunCompression(t, integration.AzuriteEnv(t)) }

func TestQueryDensityOnFake(t *testing.T) {
	integration.RunQueryDensity(t, integration.SplittingFakeEnv())
}
func TestQueryDensityOnAzurite(t *testing.T) {
	integration.RunQueryDensity(t, integration.AzuriteEnv(t))
}

func TestTypedKeysOnFake(t *testing.T)    { integration.RunTypedKeys(t, integration.FakeEnv()) }
func TestTypedKeysOnAzurite(t *testing.T) { integration.RunTypedKeys(t, integration.AzuriteEnv(t)) }
func TestTypedKeysOnAdversarialFake(t *testing.T) {
	integration.RunTypedKeys(t, integration.AdversarialFakeEnv())
}

func TestWirePathOnFake(t *testing.T)    { integration.RunWirePath(t, integration.FakeEnv()) }
func TestWirePathOnAzurite(t *testing.T) { integration.RunWirePath(t, integration.AzuriteEnv(t)) }

func TestSecretsOnFake(t *testing.T)    { integration.RunSecrets(t, integration.FakeEnv()) }
func TestSecretsOnAzurite(t *testing.T) { integration.RunSecrets(t, integration.AzuriteEnv(t)) }
