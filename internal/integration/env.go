// Package integration holds the suites that test tablekit's own behaviour
// (patterns, the entity model, consistency's workers, event streams,
// tracing, encryption, faults, crashes…) on the in-memory fake and on
// Azurite. Only tests import it: the packages they test run its RunXxx
// from their integration_test.go files, on FakeEnv, AdversarialFakeEnv and
// an Azurite AccountEnv. What every backend must answer as the service
// does is the public contract, package conformance.
package integration

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/conformance"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/internal/reqcount"
)

// Env is one backend.
type Env struct {
	Name string
	// NewTable creates a fresh, uniquely named table (dropped at the end of
	// the test) and returns a client whose every request c counts.
	NewTable func(t *testing.T, c *reqcount.Counter) *aztables.Client
	// NewServiceClient returns a client of the backend's Table service
	// built with opts (which may carry a Counter's policies and others),
	// for the suites that create, list and drop tables themselves (Shape,
	// UnderFaults, ErrorChain, LargeEntityUnderFaults, Periods, WirePath).
	// nil: RunAll reports those suites as not run.
	NewServiceClient func(t *testing.T, opts *aztables.ClientOptions) *aztables.ServiceClient
	// NewQueue creates a fresh, uniquely named queue (deleted at the end)
	// and returns a client whose requests c counts (nil: not counted).
	NewQueue func(t *testing.T, c *reqcount.Counter) *azqueue.QueueClient
	// NewContainer creates a fresh, uniquely named container and returns a
	// client for the account, whose requests c counts (nil: not counted),
	// and the container's name.
	NewContainer func(t *testing.T, c *reqcount.Counter) (*azblob.Client, string)
	// QueueService returns a service client of the backend's Queue service,
	// for cases that create and delete queues themselves.
	QueueService func(t *testing.T) *azqueue.ServiceClient
	// SASTable creates a fresh table and returns a client for it with the
	// account's key, and a client that carries the token sas makes for it.
	SASTable func(t *testing.T, sas func(account, key, table string) string) (admin, scoped *aztables.Client)
	// Advance lets time pass for the backend's clocks: on the fake it moves
	// the services' clock forward at once; on a real backend it sleeps.
	Advance func(d time.Duration)
	// Lacks names the documented behaviours this backend does not have,
	// each with the reason; a case that needs one is not run here and says
	// so (see Env.Has).
	Lacks map[Capability]string
	// Fake is the in-memory service when the backend is the fake, for
	// cases that need its knobs (short pages); nil otherwise.
	Fake *fake.TableService

	// tables maps the *aztables.Client values FakeEnv's NewTable (and the
	// cases that create tables by name) returned to their tables' names,
	// so that a case can switch one table's paging; nil on other backends.
	tables *sync.Map
	// adversarial is set on AdversarialFakeEnv: its pages are cut more
	// often than the service's, so request counts may be higher.
	adversarial bool
}

// Capability is conformance's: a behaviour of the documented service that
// a backend may lack. The suites here ask Env.Has as conformance's cases
// do, with the same constants and Azurite's same reasons.
type Capability = conformance.Capability

// The capabilities the suites here rely on.
const (
	CapStalePopReceiptNotFound = conformance.CapStalePopReceiptNotFound
	CapTableBeingDeleted       = conformance.CapTableBeingDeleted
	CapSASKeyRanges            = conformance.CapSASKeyRanges
	CapExponentLiteral         = conformance.CapExponentLiteral
	CapDateTime100ns           = conformance.CapDateTime100ns
)

// AzuriteLacks is conformance.AzuriteLacks.
func AzuriteLacks() map[Capability]string { return conformance.AzuriteLacks() }

// Has reports whether the backend has capability c. When it does not, it
// logs "not run on <backend>: <reason>" so that the output lists every
// case a backend could not run; the caller then checks what it can (often
// the backend's own, recorded answer) or returns.
func (env Env) Has(t testing.TB, c Capability) bool {
	t.Helper()
	reason, lacks := env.Lacks[c]
	if lacks {
		t.Logf("not run on %s: %s: %s", env.Name, c, reason)
	}
	return !lacks
}

// context0 shortens handler signatures in the cases.
type context0 = context.Context
