package doccheck

import (
	"bytes"
	"context"
	"go/format"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit/internal/testenv"
)

const (
	// programStartsBy is the README line by which its program must start,
	// so that the first screen shows code.
	programStartsBy = 40
	// programMaxLines bounds the program's length.
	programMaxLines = 30
)

// printsLine is the README's sentence after the program that states its
// output, "prints `...`".
var printsLine = regexp.MustCompile("prints `([^`]+)`")

// readmeProgram returns the README's first ```go block, the line it starts
// on and the output the README says it prints.
func readmeProgram(t *testing.T) (code string, line int, want string) {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(src), "\n")
	for i, l := range lines {
		if l != "```go" {
			continue
		}
		if i == 0 || strings.TrimSpace(lines[i-1]) != programMarker {
			t.Fatalf("README.md:%d: the first Go block is not marked %s", i+1, programMarker)
		}
		for j := i + 1; j < len(lines); j++ {
			if strings.HasPrefix(lines[j], "```") {
				m := printsLine.FindStringSubmatch(strings.Join(lines[j+1:], "\n"))
				if m == nil {
					t.Fatalf("README.md:%d: no \"prints `OUTPUT`\" after the program", j+1)
				}
				return strings.Join(lines[i+1:j], "\n") + "\n", i + 1, m[1]
			}
		}
		t.Fatalf("README.md:%d: the program's block does not end", i+1)
	}
	t.Fatal("README.md has no Go block")
	return "", 0, ""
}

// TestReadmeProgramIsShortAndFormatted: the README starts with a whole
// program, early, short and as gofmt writes it. It runs without storage.
func TestReadmeProgramIsShortAndFormatted(t *testing.T) {
	code, line, _ := readmeProgram(t)
	if line > programStartsBy {
		t.Errorf("README.md: the program starts on line %d; the first screen ends at line %d", line, programStartsBy)
	}
	if n := strings.Count(code, "\n"); n > programMaxLines {
		t.Errorf("README.md: the program has %d lines; at most %d", n, programMaxLines)
	}
	formatted, err := format.Source([]byte(code))
	if err != nil {
		t.Fatalf("README.md: the program does not parse: %v", err)
	}
	if !bytes.Equal(formatted, []byte(code)) {
		t.Errorf("README.md: the program is not gofmt'd; gofmt writes:\n%s", formatted)
	}
	if !strings.HasPrefix(code, "package main\n") {
		t.Error("README.md: the program is not package main")
	}
}

// TestReadmeProgramRuns copies the README's program into a new module, as
// the README tells a user to add tablekit (a replace directive naming this
// checkout), runs it against the account of TABLEKIT_CONNECTION_STRING
// (Azurite under scripts/test) and compares what it prints with what the
// README says it prints.
func TestReadmeProgramRuns(t *testing.T) {
	code, _, want := readmeProgram(t)
	conn := testenv.ConnectionString(t)
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(code), 0o644); err != nil {
		t.Fatal(err)
	}
	// The checkout's go.sum holds the checksums of tablekit's dependencies,
	// as the checksum database gives them to a user.
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	env := append(os.Environ(), "GOTOOLCHAIN=local", "GOWORK=off", "GOFLAGS=", testenv.ConnectionStringEnv+"="+conn)
	goCmd := func(env []string, args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Dir, cmd.Env = dir, env
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("go %s: %v\n%s%s", strings.Join(args, " "), err, stdout.Bytes(), stderr.Bytes())
		}
		return stdout.String()
	}
	goCmd(env, "mod", "init", "example.com/readme")
	goCmd(env, "mod", "edit", "-replace", "github.com/tablekit/tablekit="+root)
	// No version of tablekit is published yet: v0.0.0 names the replaced one.
	goCmd(env, "get", "github.com/tablekit/tablekit@v0.0.0")
	goCmd(env, "mod", "tidy")
	// The test binary's build flags, so that the build cache it warmed serves.
	got := goCmd(append(env, "GOFLAGS="+testenv.GoFlagsEnv()), "run", ".")
	if strings.TrimSpace(got) != want {
		t.Errorf("the README's program printed %q; the README says it prints %q", got, want)
	}
}
