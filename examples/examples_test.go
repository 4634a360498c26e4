// Package examples_test builds the example programs and runs them as a user
// would: on the in-memory fake, against Azurite, and copied alone into an
// empty module. What users copy is what is tested.
package examples_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/internal/testenv"
)

// module is the import path of the module the examples live in.
const module = "github.com/tablekit/tablekit"

// runTimeout bounds one program's run; a hang fails the test instead of
// holding the machine.
const runTimeout = 3 * time.Minute

// wants lists, per example, lines its output must hold on any backend.
// Each program also checks its own results and exits non-zero when one is
// wrong; these lines show that the step the example is about ran.
var wants = map[string][]string{
	"logs": {
		"[applog/2014/07/31/1700/web1-000001.log applog/2014/07/31/1800/web1-000001.log]",
		"read those that overlap: 120 entries",
	},
	"photo": {
		"read it back: Don Hall, photo of 256 KiB",
		"sweep the blobs no entity names: 1 deleted",
		"the new photo of 128 KiB is intact",
	},
	"events": {
		"over [events_0 events_1 events_2 events_3]",
		// Its request count depends on paging: 4 where pages end only at
		// 1,000 entities (Azurite), more where they also end at partition
		// boundaries or come back empty (the fake; the service may).
		"  the events from 09:03 on, merged from 4 parallel range queries: 9 in time order, 9:03AM to 9:11AM",
	},
	"messagestats": {
		"H09 = 17, H14 = 42, H10 unset",
		"1  wide entity: 365 daily counts in 2 entities",
		"365 properties, Day364 = 1364",
	},
	"logins": {
		"3  expire the days more than a day past their end",
		"query the three days: 2 attempts left, the last day's",
	},
	"expenses": {
		"1  the ten most recent claims, newest first, one query: 2026-11-22T09:00:00Z (240.5) back to 2026-11-22T00:00:00Z (150.5)",
		"the claims since 2026-11-22T07:00:00Z: 3",
	},
	"directory": {
		"loaded 500 employees in",
		"email e000005@contoso.com: E000005 Kim, empid_000005",
		"last name Jones: 72 employees across departments",
		"Sales has 100 employees (the partition also holds their email rows and 3 logins)",
		"employee 000005 archived; the email row and the last-name entry left with it",
		"verify: 499 employees, every index row agrees",
	},
	"archive": {
		"the client asks for the move twice",
		"in Archive: Employee 456; in Current: not found; moved once though asked twice",
	},
	"departments": {
		"one point query: Don Hall <donh@contoso.com>",
		"each its own type: employee 000123 review 000123_2011 review 000123_2012",
		"1  join in the client: 100 department lookups",
	},
	"lastnames": {
		"EmployeeIDs of Jones in Sales: [empid_000152 empid_000223]",
		"the Joneses themselves: Jun Jones and Ben Jones",
		"Jones [empid_000152], Smith [empid_000223]",
		"Jones now []",
		"the Jones list at once: empty",
		"the Jones list, one point query: [Marketing/000301 Sales/000152]",
	},
	"entities": {
		"get Sales / empid_000123 (a point query): Don Hall, 34",
		"set the email to don.hall@contoso.com",
		"refused (412 precondition failed)",
		"range query (PartitionKey eq 'Sales') and (RowKey ge 'empid_000100') and (RowKey le 'empid_000199'): [empid_000123 empid_000152]",
		"table scan",
		"then get it: not found",
	},
	"transactions": {
		"300 operations in 4 transactions",
		"fails: operation 1, 409 EntityAlreadyExists",
		"not found, the transaction was all or nothing",
		"refused before sending",
	},
	"keys": {
		"the service returns [-42 -1 0 7 1000], numeric order",
		"one range query: 000123_2011, 000123_2012",
		"the newest reading, 11:00AM",
		"decoded to [\"Sales\" \"a/b?\"]",
		"refused before sending",
	},
	"employees": {
		"refused whole (don.hall@contoso.com), no employee written",
		"consistent = true",
		"not found yet (the window of inconsistency)",
		"look up don.hall@contoso.com in email_Sales again: Sales / empid_000123 Don Hall",
	},
}

// binDir holds the built examples; TestMain makes and removes it.
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "tablekit-examples-")
	if err != nil {
		panic(err)
	}
	binDir = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// build compiles every example into binDir, once per test binary: one go
// command, so the packages they share compile once.
var build = sync.OnceValue(func() error {
	args := append(append([]string{"build"}, testenv.BuildFlags()...), "-o", binDir+string(filepath.Separator), module+"/examples/...")
	out, err := exec.Command("go", args...).CombinedOutput()
	if err != nil {
		return &buildError{out: out, err: err}
	}
	return nil
})

type buildError struct {
	out []byte
	err error
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + string(e.out) }

// names lists the example programs: the directories under examples/.
func names(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var list []string
	for _, e := range entries {
		if e.IsDir() {
			list = append(list, e.Name())
		}
	}
	if len(list) < 2 {
		t.Fatalf("found examples %v; run the test from examples/", list)
	}
	return list
}

// runProgram runs one built example with args and an environment without
// a connection string (so the default is the fake), and returns its
// output; a non-zero exit fails the test.
func runProgram(t *testing.T, name string, args ...string) string {
	t.Helper()
	stdout, stderr, err := execProgram(t, name, withoutConnectionString(), args...)
	if err != nil {
		t.Fatalf("%s %s: %v\nstderr:\n%s\nstdout:\n%s", name, redact(args), err, stderr, stdout)
	}
	return stdout
}

// redact shows args with the connection string left out: it holds a key.
func redact(args []string) string {
	shown := slices.Clone(args)
	for i := range shown {
		if i > 0 && shown[i-1] == "-conn" {
			shown[i] = "<connection string>"
		}
	}
	return strings.Join(shown, " ")
}

// execProgram runs one built example with args in env.
func execProgram(t *testing.T, name string, env []string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	if err := build(); err != nil {
		t.Fatalf("go build ./examples/...: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), runTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, name), args...)
	cmd.Env = env
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

func withoutConnectionString() []string {
	return slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, testenv.ConnectionStringEnv+"=")
	})
}

func checkOutput(t *testing.T, name, out string) {
	t.Helper()
	for _, want := range append([]string{"requests (package ledger)", "\ntotal "}, wants[name]...) {
		if !strings.Contains(out, want) {
			t.Errorf("%s: output lacks %q", name, want)
		}
	}
	if t.Failed() {
		t.Logf("%s output:\n%s", name, out)
	}
}

func TestExamplesOnFake(t *testing.T) {
	for _, name := range names(t) {
		if name == "tour" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel() // each example makes its own fake
			out := runProgram(t, name)
			if !strings.Contains(out, "in memory") {
				t.Errorf("%s did not run in memory:\n%s", name, out)
			}
			checkOutput(t, name, out)
		})
	}
}

func TestExamplesOnAzurite(t *testing.T) {
	conn := testenv.ConnectionString(t)
	for _, name := range names(t) {
		if name == "tour" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			// Each example's names carry random digits of its own, and the
			// check below looks only for those: the examples can share
			// the account at once.
			t.Parallel()
			before := accountNames(t, conn)
			out := runProgram(t, name, "-conn", conn)
			if strings.Contains(out, "in memory") {
				t.Errorf("%s ran in memory, not on -conn:\n%s", name, out)
			}
			checkOutput(t, name, out)
			// The examples say they delete what they create. Their names
			// carry 8 random hex digits, which the first step prints.
			tokens := hex8.FindAllString(strings.ToLower(firstStep(out)), -1)
			if len(tokens) == 0 {
				t.Fatalf("%s: its first step names nothing it created:\n%s", name, out)
			}
			for _, n := range accountNames(t, conn) {
				if !slices.Contains(before, n) && slices.ContainsFunc(tokens, func(tok string) bool { return strings.Contains(n, tok) }) {
					t.Errorf("%s left %s behind", name, n)
				}
			}
		})
	}
}

// hex8 finds the 8 random hex digits the examples put in their names.
var hex8 = regexp.MustCompile(`[0-9a-f]{8}`)

// firstStep is the first step line an example printed: the set-up.
func firstStep(out string) string {
	_, rest, _ := strings.Cut(out, "  requests  step\n")
	line, _, _ := strings.Cut(rest, "\n")
	return line
}

// accountNames lists the account's tables, queues and containers, as
// "table name", "queue name" and "container name", lower-cased.
func accountNames(t *testing.T, conn string) []string {
	t.Helper()
	ctx := t.Context()
	var names []string
	tables, err := aztables.NewServiceClientFromConnectionString(conn, nil)
	if err != nil {
		t.Fatal(err)
	}
	for tp := tables.NewListTablesPager(nil); tp.More(); {
		page, err := tp.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range page.Tables {
			names = append(names, "table "+strings.ToLower(*x.Name))
		}
	}
	queues, err := azqueue.NewServiceClientFromConnectionString(conn, nil)
	if err != nil {
		t.Fatal(err)
	}
	for qp := queues.NewListQueuesPager(nil); qp.More(); {
		page, err := qp.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range page.Queues {
			names = append(names, "queue "+*x.Name)
		}
	}
	blobs, err := azblob.NewClientFromConnectionString(conn, nil)
	if err != nil {
		t.Fatal(err)
	}
	for cp := blobs.NewListContainersPager(nil); cp.More(); {
		page, err := cp.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range page.ContainerItems {
			names = append(names, "container "+*x.Name)
		}
	}
	return names
}

// TestEveryExampleIsInWants keeps wants in step with the directories.
func TestEveryExampleIsInWants(t *testing.T) {
	for _, name := range names(t) {
		if _, ok := wants[name]; !ok && name != "tour" {
			t.Errorf("examples/%s has no expected output in wants", name)
		}
	}
}

// public are tablekit's packages an application may import.
var public = []string{"keys", "table", "batch", "consistency", "patterns", "fake", "ledger", "faults", "tune", "accounts"}

// allowedImport: the standard library, the Azure SDK for Go, or a public
// tablekit package.
func allowedImport(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	switch {
	case !strings.Contains(first, "."):
		return true
	case strings.HasPrefix(path, "github.com/Azure/azure-sdk-for-go/sdk/"):
		return true
	default:
		return slices.Contains(public, strings.TrimPrefix(path, module+"/"))
	}
}

// TestExamplesUseOnlyPublicPackages: an example is one file, main.go, that
// imports no internal package, so a user can copy it.
func TestExamplesUseOnlyPublicPackages(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}:{{join .GoFiles ","}}:{{join .Imports ","}}`, module+"/examples/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(names(t))+1 {
		t.Errorf("go list found %d example packages, the directory has %d", len(lines), len(names(t)))
	}
	for _, line := range lines {
		pkg, rest, _ := strings.Cut(line, ":")
		if pkg == module+"/examples" {
			continue // this test's own directory
		}
		files, imports, _ := strings.Cut(rest, ":")
		if files != "main.go" {
			t.Errorf("%s is made of %s, not main.go alone", pkg, files)
		}
		for _, imp := range strings.Split(imports, ",") {
			if !allowedImport(imp) {
				t.Errorf("%s imports %s: an example uses only the standard library, the Azure SDK and tablekit's public packages", pkg, imp)
			}
		}
	}
}

// TestCopiedExampleRunsAlone copies each example's main.go into an empty
// module (scripts/copytest) and runs it there on the fake.
func TestCopiedExampleRunsAlone(t *testing.T) {
	for _, name := range names(t) {
		if name == "tour" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel() // each copy is a module in a temporary directory of its own
			if name != "employees" {
				// employees is the one the README says to copy; the
				// rest cost a module tidy and a link each.
				testenv.Long(t, "copying every example into its own module")
			}
			ctx, cancel := context.WithTimeout(t.Context(), runTimeout)
			defer cancel()
			cmd := exec.CommandContext(ctx, "bash", filepath.Join("..", "scripts", "copytest"), name)
			cmd.Env = withoutConnectionString()
			if f := testenv.GoFlagsEnv(); f != "" {
				cmd.Env = append(slices.DeleteFunc(cmd.Env, func(kv string) bool { return strings.HasPrefix(kv, "GOFLAGS=") }), "GOFLAGS="+f)
			}
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("scripts/copytest %s: %v\n%s", name, err, out)
			}
			checkOutput(t, name, string(out))
		})
	}
}

// tour runs the tour with args and checks that it ran every example.
func tour(t *testing.T, args ...string) string {
	t.Helper()
	out := runProgram(t, "tour", args...)
	for _, name := range names(t) {
		if name != "tour" && !strings.Contains(out, "(examples/"+name+")") {
			t.Errorf("the tour did not run examples/%s", name)
		}
	}
	if want := fmt.Sprintf("all %d examples passed", len(names(t))-1); !strings.Contains(out, want) {
		t.Errorf("the tour's output lacks %q", want)
	}
	if t.Failed() {
		t.Logf("tour output:\n%s", out)
	}
	return out
}

func TestTourOnFake(t *testing.T) {
	if out := tour(t); strings.Contains(out, "against the account") {
		t.Errorf("the tour did not run in memory")
	}
}

func TestTourOnAzurite(t *testing.T) {
	conn := testenv.ConnectionString(t)
	if out := tour(t, "-conn", conn); strings.Contains(out, "in memory") {
		t.Errorf("the tour ran in memory, not on -conn")
	}
}

// TestExamplesSignInWithAzidentity runs each example with -account and a
// DefaultAzureCredential limited (AZURE_TOKEN_CREDENTIALS) to an
// EnvironmentCredential that has no settings: the sign-in fails at once
// with no network, so this shows that -account goes through azidentity,
// sends nothing without a token, and exits non-zero on failure.
func TestExamplesSignInWithAzidentity(t *testing.T) {
	env := slices.DeleteFunc(withoutConnectionString(), func(kv string) bool {
		return strings.HasPrefix(kv, "AZURE_")
	})
	env = append(env, "AZURE_TOKEN_CREDENTIALS=EnvironmentCredential")
	for _, name := range names(t) {
		if name == "tour" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel() // no network: the sign-in fails before any request
			stdout, stderr, err := execProgram(t, name, env, "-account", "nosuchaccount0")
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 1 {
				t.Errorf("%s -account: want exit status 1, got %v", name, err)
			}
			for _, want := range []string{"against the account nosuchaccount0, signed in with azidentity", "total 0 requests"} {
				if !strings.Contains(stdout, want) {
					t.Errorf("%s -account: stdout lacks %q:\n%s", name, want, stdout)
				}
			}
			if !strings.Contains(stderr, "DefaultAzureCredential") || !strings.Contains(stderr, "EnvironmentCredential") {
				t.Errorf("%s -account: stderr does not show the failed sign-in:\n%s", name, stderr)
			}
		})
	}
}
