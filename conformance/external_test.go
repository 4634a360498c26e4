package conformance_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// externalTimeout bounds each go command in the copied module; a hang fails
// the test instead of holding the machine.
const externalTimeout = 4 * time.Minute

// userTest is the _test.go file of a user's module: the exported suite on
// the fake, on a backend of the user's own (built from package fake's
// public API and conformance.Counter, as a port implementation would be),
// and RunAll on a backend that sets only NewTable.
const userTest = `package myport_test

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/conformance"
	"github.com/tablekit/tablekit/fake"
)

func TestTableOnFake(t *testing.T) { conformance.RunTable(t, conformance.FakeEnv()) }

func TestBatchOnFake(t *testing.T) { conformance.RunBatch(t, conformance.FakeEnv()) }

// tablesOnly is a backend of the user's own that serves tables only.
func tablesOnly() conformance.Env {
	svc := fake.NewTableService(nil)
	var n atomic.Int64
	return conformance.Env{
		Name: "mine",
		NewTable: func(t *testing.T, c *conformance.Counter) *aztables.Client {
			sc := svc.NewServiceClient(c.TableOptions())
			name := fmt.Sprintf("mine%d", n.Add(1))
			if _, err := sc.CreateTable(t.Context(), name, nil); err != nil {
				t.Fatal(err)
			}
			c.Reset()
			return sc.NewClient(name)
		},
	}
}

func TestAllOnMine(t *testing.T) {
	conformance.RunAll(t, func(t *testing.T) conformance.Env { return tablesOnly() })
}
`

// TestExportedSuiteRunsFromAnExternalModule writes a module of its own that
// requires tablekit (replaced by this checkout), as a user's would, and runs
// the exported suite from its test: RunTable and RunBatch on FakeEnv, and
// RunAll on a backend the user built, which reports the suites it cannot
// run. It fails if the suite needs anything a user cannot import.
func TestExportedSuiteRunsFromAnExternalModule(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: building a module of its own takes a link")
	}
	// Building and linking the module takes a while: it overlaps with the
	// Azurite suites, which mostly wait, instead of delaying them.
	t.Parallel()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The checkout's go.sum holds the checksums of tablekit's dependencies,
	// as the checksum database would give them to a user: the module then
	// needs no lookup for them (scripts/copytest does the same).
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	write("go.sum", string(sum))
	// No version of tablekit is published yet: v0.0.0 names the replaced one.
	write("go.mod", "module example.com/myport\n\ngo 1.25.0\n\nrequire github.com/tablekit/tablekit v0.0.0\n\nreplace github.com/tablekit/tablekit => "+root+"\n")
	write("myport_test.go", userTest)
	if strings.Contains(userTest, "tablekit/internal") {
		t.Fatal("the user's test imports tablekit's internal packages")
	}
	run := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), externalTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Dir = dir
		// -mod=mod lets go add the requirements the test's imports need
		// (from tablekit's go.mod, through the replace); the toolchain at
		// hand, never one downloaded for the copy. The suite runs on the
		// fake alone: no account is handed to it.
		env := []string{"GOFLAGS=-mod=mod", "GOTOOLCHAIN=local"}
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "GOFLAGS=") && !strings.HasPrefix(kv, "GOTOOLCHAIN=") && !strings.HasPrefix(kv, "TABLEKIT_") {
				env = append(env, kv)
			}
		}
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s in the external module: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	out := run("test", "-count=1", "-v", "-run", "^(TestTableOnFake|TestBatchOnFake)$", ".")
	for _, want := range []string{"--- PASS: TestTableOnFake", "--- PASS: TestBatchOnFake", "ok  \texample.com/myport"} {
		if !strings.Contains(out, want) {
			t.Errorf("the external module's output lacks %q:\n%s", want, out)
		}
	}
	// RunAll on a backend with tables only: Table runs and passes, a suite
	// that needs queues and containers is reported, not called.
	out = run("test", "-count=1", "-v", "-run", "^TestAllOnMine$/^(Table|QueueAndBlob)$", ".")
	for _, want := range []string{
		"--- PASS: TestAllOnMine/Table ",
		"not run on mine: suite QueueAndBlob needs Env.NewQueue, Env.NewContainer",
		"ok  \texample.com/myport",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the external module's output lacks %q:\n%s", want, out)
		}
	}
}
