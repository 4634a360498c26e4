// Package conformance is the contract between tablekit and the services it
// runs on: one list of behaviours, each run against the in-memory fake and
// against Azurite (or a real account). A case that passes on one backend and
// fails on the other is a bug in the fake. Where Azurite is laxer than the
// documented service, a case checks that tablekit refuses the input before
// sending anything, which holds on every backend.
package conformance

import (
	"context"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/internal/reqcount"
)

// Env is one backend.
type Env struct {
	Name string
	// NewTable creates a fresh, uniquely named table (dropped at the end of
	// the test) and returns a client whose every request c counts.
	NewTable func(t *testing.T, c *reqcount.Counter) *aztables.Client
	// NewQueue creates a fresh, uniquely named queue (deleted at the end)
	// and returns a client whose requests c counts (nil: not counted).
	NewQueue func(t *testing.T, c *reqcount.Counter) *azqueue.QueueClient
	// NewContainer creates a fresh, uniquely named container and returns a
	// client for the account, whose requests c counts (nil: not counted),
	// and the container's name.
	NewContainer func(t *testing.T, c *reqcount.Counter) (*azblob.Client, string)
	// SASTable creates a fresh table and returns a client for it with the
	// account's key, and a client that carries the token sas makes for it.
	SASTable func(t *testing.T, sas func(account, key, table string) string) (admin, scoped *aztables.Client)
	// Fake is the in-memory service when the backend is the fake, for
	// cases that need its knobs (short pages); nil otherwise.
	Fake *fake.TableService
}

// context0 shortens handler signatures in the cases.
type context0 = context.Context
