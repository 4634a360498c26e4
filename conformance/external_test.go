package conformance_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit/internal/testenv"
)

// externalTimeout bounds each go command in the copied module; a hang fails
// the test instead of holding the machine.
const externalTimeout = 4 * time.Minute

// userTest is the _test.go file of a user's module: the exported suite on
// a backend of the user's own (built from package fake's public API, as a
// port implementation would be), once with every service and once with
// tables only.
const userTest = `package myport_test

import (
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/conformance"
	"github.com/tablekit/tablekit/fake"
)

// mine is a backend of the user's own: three in-memory services.
func mine(t *testing.T) conformance.Harness {
	tables, queues, blobs := fake.NewTableService(nil), fake.NewQueueService(nil), fake.NewBlobService(nil)
	return conformance.Harness{
		Name: "mine",
		TableService: func(o *aztables.ClientOptions) (*aztables.ServiceClient, error) {
			return tables.NewServiceClient(o), nil
		},
		QueueService: func(o *azqueue.ClientOptions) (*azqueue.ServiceClient, error) {
			return queues.NewServiceClient(o), nil
		},
		BlobService: func(o *azblob.ClientOptions) (*azblob.Client, error) {
			return blobs.NewClient(o), nil
		},
	}
}

func TestConformanceOnMine(t *testing.T) { conformance.RunConformanceTests(t, mine) }

func TestConformanceOnTablesOnly(t *testing.T) {
	conformance.RunConformanceTests(t, func(t *testing.T) conformance.Harness {
		h := mine(t)
		h.Name, h.QueueService, h.BlobService = "tables only", nil, nil
		return h
	})
}
`

// TestExportedSuiteRunsFromAnExternalModule writes a module of its own that
// requires tablekit (replaced by this checkout), as a user's would, and runs
// the exported suite from its test on a backend the user built: Table and
// Batch pass, and with tables only the suites it cannot run are reported.
// It fails if the suite needs anything a user cannot import.
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
		env := []string{"GOFLAGS=" + testenv.GoFlagsEnv("-mod=mod"), "GOTOOLCHAIN=local"}
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
	out := run("test", "-count=1", "-v", "-run", "^TestConformanceOnMine$/^(Table|Batch|SASBuilder|Accounts)$", ".")
	for _, want := range []string{
		"--- PASS: TestConformanceOnMine/Table ",
		"--- PASS: TestConformanceOnMine/Batch ",
		"not run on mine: suite SASBuilder needs Harness.AccountName, Harness.AccountKey, Harness.TableURL, Harness.QueueURL, Harness.BlobURL",
		"not run on mine: suite Accounts needs Harness.Second",
		"ok  \texample.com/myport",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the external module's output lacks %q:\n%s", want, out)
		}
	}
	// Tables only: Table runs and passes, a suite that needs queues and
	// containers is reported, not called.
	out = run("test", "-count=1", "-v", "-run", "^TestConformanceOnTablesOnly$/^(Table|QueueAndBlob)$", ".")
	for _, want := range []string{
		"--- PASS: TestConformanceOnTablesOnly/Table ",
		"not run on tables only: suite QueueAndBlob needs Harness.QueueService, Harness.BlobService, Harness.Advance",
		"ok  \texample.com/myport",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the external module's output lacks %q:\n%s", want, out)
		}
	}
}
