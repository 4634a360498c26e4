package conformance

import (
	"context"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/internal/reqcount"
	"github.com/tablekit/tablekit/internal/testenv"
	"github.com/tablekit/tablekit/internal/wirepolicy"
	"github.com/tablekit/tablekit/table"
)

// runWirePath runs the table and raw entity suites on both of tablekit's
// paths: its own wire path (clients built with table.ClientOptions, the
// default), where tablekit builds $batch bodies and decodes query pages
// and point reads from the raw response, and the SDK's path it falls back
// to on a client without the policy. A backend must answer both as the
// service does.
func runWirePath(t *testing.T, env backend) {
	t.Run("table suite on the own path", func(t *testing.T) { runTable(t, withWirePath(env, true)) })
	t.Run("raw entity suite on the own path", func(t *testing.T) { runRawEntity(t, withWirePath(env, true)) })
	t.Run("table suite on the SDK's path", func(t *testing.T) { runTable(t, withWirePath(env, false)) })
	t.Run("raw entity suite on the SDK's path", func(t *testing.T) { runRawEntity(t, withWirePath(env, false)) })
}

// withWirePath is env whose tables' clients have tablekit's policy (wire)
// or act as clients without it.
func withWirePath(env backend, wire bool) backend {
	w := env
	w.NewTable = func(t *testing.T, c *reqcount.Counter) *aztables.Client {
		client, _ := newTableOf(t, env, c, wire)
		return client
	}
	return w
}

// newTableOf creates a fresh table through a client with or without
// tablekit's policy, whose requests c counts.
func newTableOf(t *testing.T, env backend, c *reqcount.Counter, wire bool) (*aztables.Client, string) {
	t.Helper()
	sc := serviceOf(t, env, c, wire)
	name := testenv.UniqueName("wire")
	if _, err := sc.CreateTable(t.Context(), name, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = sc.DeleteTable(context.Background(), name, nil) })
	c.Reset()
	client := sc.NewClient(name)
	env.nameTable(client, name)
	return client, name
}

// serviceOf is a service client of env with or without tablekit's policy.
func serviceOf(t *testing.T, env backend, c *reqcount.Counter, wire bool) *aztables.ServiceClient {
	t.Helper()
	opts := c.TableOptions()
	if wire {
		opts = table.ClientOptions(opts)
	} else {
		// Whatever the backend's constructor adds (the fake's adds the
		// policy), the client takes the SDK's path.
		opts.PerCallPolicies = append(opts.PerCallPolicies, wirepolicy.Off{})
	}
	if env.NewServiceClient == nil {
		// RunConformanceTests does not run WirePath without it.
		t.Fatalf("conformance: the WirePath suite needs Harness.TableService, which %s leaves nil", env.Name)
	}
	return env.NewServiceClient(t, opts)
}
