package conformance_test

import (
	"os"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/conformance"
	"github.com/tablekit/tablekit/internal/testenv"
)

// secondConnectionStringEnv names the second account of the two-account
// cases; scripts/azurite started twice, nested, sets it:
//
//	scripts/azurite run -- bash -c 'TABLEKIT_CONNECTION_STRING_2=$TABLEKIT_CONNECTION_STRING scripts/azurite run -- go test -run TestConformanceOnAzurite/Accounts ./conformance/'
const secondConnectionStringEnv = testenv.ConnectionStringEnv + "_2"

// TestConformanceOnAzurite runs the contract on the Azurite that
// scripts/azurite started (the fake's run is in package fake). Every suite
// runs in parallel with the others (scripts/test gives go test -parallel):
// they spend most of their time waiting on the service's clocks (leases of
// at least 15 s, visibility timeouts) and on its answers, each on tables,
// queues and containers of its own, so their waits overlap instead of
// adding up. BlobFidelity alone runs first and by itself: it times leases
// in real seconds, and the parallel suites' load on the emulator made a
// renewed lease read as expired 10 s early in two CI runs (it passes
// alone).
func TestConformanceOnAzurite(t *testing.T) {
	cs := testenv.ConnectionString(t)
	second := os.Getenv(secondConnectionStringEnv)
	if second == "" && testenv.Required() {
		t.Fatalf("the two-account cases need a second instance in %s (scripts/test starts one; see its doc)", secondConnectionStringEnv)
	}
	conformance.RunConformanceTests(t, func(t *testing.T) conformance.Harness {
		if !strings.HasSuffix(t.Name(), "/BlobFidelity") {
			t.Parallel()
		}
		h := conformance.AccountHarness(t, cs, conformance.AzuriteLacks())
		h.Name = "azurite"
		if second != "" {
			s := conformance.AccountHarness(t, second, conformance.AzuriteLacks())
			h.Second = &s
		}
		return h
	})
}
