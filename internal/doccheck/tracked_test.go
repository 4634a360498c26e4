package doccheck

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestTrackedRefusesBuildOutput runs scripts/tracked, the test script's
// first check, on a clone of this repository: clean it passes; tracking an
// executable (whatever its name) or a file over 1 MiB fails and names
// each; a large file under testdata/ and a file of exactly 1 MiB pass.
func TestTrackedRefusesBuildOutput(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	if _, err := os.Stat(filepath.Join(root, ".git")); err != nil {
		t.Skip("not a git checkout: nothing is tracked")
	}
	script := filepath.Join(root, "scripts", "tracked")
	clone := filepath.Join(t.TempDir(), "clone")
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", clone, "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	if out, err := exec.Command("git", "clone", "-q", "--no-hardlinks", root, clone).CombinedOutput(); err != nil {
		t.Fatalf("git clone: %v\n%s", err, out)
	}
	run := func() (string, bool) {
		t.Helper()
		out, err := exec.Command("bash", script, clone).CombinedOutput()
		if err != nil {
			if _, exit := err.(*exec.ExitError); !exit {
				t.Fatalf("scripts/tracked: %v\n%s", err, out)
			}
		}
		return string(out), err == nil
	}
	if out, ok := run(); !ok {
		t.Fatalf("a clone of this repository fails the check:\n%s", out)
	}

	write := func(name string, data []byte) {
		t.Helper()
		p := filepath.Join(clone, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		git("add", "-f", name)
	}
	const mib = 1 << 20
	write("testdata/big.bin", bytes.Repeat([]byte("x"), 2*mib))
	write("docs/exactly.txt", bytes.Repeat([]byte("y"), mib))
	if out, ok := run(); !ok {
		t.Fatalf("a 2 MiB file under testdata/ and a file of exactly 1 MiB fail the check:\n%s", out)
	}

	executables := map[string][]byte{
		"build/tablekit": append([]byte("\x7fELF\x02\x01\x01"), make([]byte, 64)...),
		"tool.exe":       append([]byte("MZ\x90\x00"), make([]byte, 64)...),
		"out/mac":        append([]byte("\xcf\xfa\xed\xfe"), make([]byte, 64)...),
		"web/main.wasm":  append([]byte("\x00asm\x01\x00\x00\x00"), make([]byte, 8)...),
		"notes/huge.txt": bytes.Repeat([]byte("z"), mib+1),
	}
	for name, data := range executables {
		write(name, data)
	}
	out, ok := run()
	if ok {
		t.Fatalf("the check passes with executables and a file over 1 MiB tracked:\n%s", out)
	}
	for name := range executables {
		if !strings.Contains(out, "scripts/tracked: "+name+" ") {
			t.Errorf("the check does not name %s:\n%s", name, out)
		}
	}
	for _, name := range []string{"testdata/big.bin", "docs/exactly.txt"} {
		if strings.Contains(out, name) {
			t.Errorf("the check names %s, which is allowed:\n%s", name, out)
		}
	}
}
