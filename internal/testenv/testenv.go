// Package testenv gives integration tests the storage account to run against.
//
// Integration tests read a connection string from TABLEKIT_CONNECTION_STRING
// (scripts/azurite sets it to a fresh Azurite; a real account works too).
// When it is unset they skip, saying how to run them, unless
// TABLEKIT_REQUIRE_AZURITE is set (scripts/test sets it), in which case
// they fail, so CI can never pass by skipping them.
package testenv

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/internal/http11"
	"github.com/tablekit/tablekit/internal/wirepolicy"
)

const (
	// ConnectionStringEnv names the variable that holds the connection string.
	ConnectionStringEnv = "TABLEKIT_CONNECTION_STRING"
	// RequireEnv, when set to anything but "" or "0", turns skips into failures.
	RequireEnv = "TABLEKIT_REQUIRE_AZURITE"
)

// Required reports whether integration tests must run.
func Required() bool {
	v := os.Getenv(RequireEnv)
	return v != "" && v != "0"
}

// ConnectionString returns the account to test against, or skips (fails,
// when Required) the test.
func ConnectionString(tb testing.TB) string {
	tb.Helper()
	cs := os.Getenv(ConnectionStringEnv)
	if cs != "" {
		return cs
	}
	const how = "run it with scripts/test, or: scripts/azurite run -- go test ./..."
	if Required() {
		tb.Fatalf("%s is not set but %s is: integration tests must run (%s)", ConnectionStringEnv, RequireEnv, how)
	}
	tb.Skipf("integration test: %s is not set; %s", ConnectionStringEnv, how)
	return ""
}

// TableService returns a service client for the test account, built as
// aztables.NewServiceClientFromConnectionString with table.ClientOptions
// builds it (tablekit's policy in its pipeline, tablekit's transport under
// it: the default path); table's own tests import testenv, so it cannot
// call table.ClientOptions itself.
func TableService(tb testing.TB) *aztables.ServiceClient {
	tb.Helper()
	cs := ConnectionString(tb)
	opts := &aztables.ClientOptions{}
	wirepolicy.Add(&opts.ClientOptions)
	opts.Transport = http11.New()
	svc, err := aztables.NewServiceClientFromConnectionString(cs, opts)
	if err != nil {
		tb.Fatalf("table service client: %v", err)
	}
	return svc
}

// UniqueName is prefix followed by 12 random hex characters: a valid table
// name (for an alphanumeric prefix) that no other run uses.
func UniqueName(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// NewTable creates a uniquely named table, deleted when the test ends.
func NewTable(tb testing.TB, prefix string) *aztables.Client {
	tb.Helper()
	svc := TableService(tb)
	name := UniqueName(strings.ToLower(prefix))
	if _, err := svc.CreateTable(tb.Context(), name, nil); err != nil {
		tb.Fatalf("create table %s: %v", name, err)
	}
	tb.Cleanup(func() { _, _ = svc.DeleteTable(context0(), name, nil) })
	return svc.NewClient(name)
}

// LongEnv, when set to anything but "" or "0", runs the long tests: soaks
// and exhaustive matrices. scripts/test sets it with -long (CI's long job,
// .ci/long); its default run (.ci/run) leaves them out, saying which.
const LongEnv = "TABLEKIT_LONG"

// Long skips tb, naming what it leaves out, unless long tests are asked
// for.
func Long(tb testing.TB, what string) {
	tb.Helper()
	if v := os.Getenv(LongEnv); v != "" && v != "0" {
		return
	}
	tb.Skipf("long test (%s): set %s=1 to run it (scripts/test -long; CI runs it)", what, LongEnv)
}

// BuildFlags are the flags a test passes to a go command it runs to build
// a program (an example, the CLI, a user's module): -race when the test
// itself runs under the race detector. The child's build then reuses the
// packages the race run already compiled; without it, a fresh machine
// compiles the module and every dependency a second time, uninstrumented
// (the largest part of a cold CI run after the first build), and the
// program runs without the detector the rest of the run has. And
// -ldflags=-w: the program is linked without DWARF, which only a debugger
// reads (race reports and panics are symbolised from the binary's line
// tables), a third less link time for each of the dozen programs a run
// builds.
func BuildFlags() []string {
	if Race {
		return []string{"-race", "-ldflags=-w"}
	}
	return []string{"-ldflags=-w"}
}

// GoFlagsEnv is BuildFlags as a GOFLAGS value joined to extra (flags the
// caller wants besides), for a go command started through a script or
// with an environment of its own.
func GoFlagsEnv(extra ...string) string {
	return strings.Join(append(extra, BuildFlags()...), " ")
}
