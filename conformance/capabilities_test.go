package conformance

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/internal/fakedev"
)

var update = flag.Bool("update", false, "rewrite testdata/capabilities.md")

//go:generate go test -run TestCapabilityTable -update

// TestCapabilityTable keeps testdata/capabilities.md, the table RELIABILITY.md
// shows, equal to the capabilities the backends declare, and checks that
// every capability names the cases that need it.
func TestCapabilityTable(t *testing.T) {
	for _, c := range capabilities() {
		if len(capabilityCases()[c]) == 0 {
			t.Errorf("capability %q names no case", c)
		}
	}
	for c := range azuriteLacks() {
		if _, ok := capabilityCases()[c]; !ok {
			t.Errorf("azurite lacks %q, which Capabilities does not list", c)
		}
	}
	capabilities := capabilityTable(Harness{Name: "fake"}, Harness{Name: "Azurite 3.37", Lacks: azuriteLacks()})
	deviations := deviationTable()
	got := capabilities + "\n" + deviations
	path := filepath.Join("testdata", "capabilities.md")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go generate ./conformance)", err)
	}
	if string(want) != got {
		t.Fatalf("%s is out of date; run go generate ./conformance. Now:\n%s", path, got)
	}
	doc, err := os.ReadFile(filepath.Join("..", "RELIABILITY.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{capabilities, deviations} {
		if !strings.Contains(string(doc), strings.TrimSpace(table)) {
			t.Fatalf("RELIABILITY.md does not carry the capability and deviation tables as generated; paste %s there", path)
		}
	}
}

// deviationTable renders, as a Markdown table, where the fake's answers
// knowingly differ from the service's (internal/fakedev), with the reason,
// and whether a recorded exchange with the service shows it. Everything
// else the replay of recorded exchanges compares
// (fake.TestReplayRecordedExchanges) answers as the service did. It lives
// in a test file: the contract does not depend on the fake.
func deviationTable() string {
	var b strings.Builder
	b.WriteString("| Where the fake differs from the service | Why | Shown by a recorded exchange |\n|---|---|---|\n")
	for _, d := range fakedev.List() {
		shown := "no"
		if d.Recorded {
			shown = "yes"
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", cell(d.Name), cell(d.Reason), shown)
	}
	return b.String()
}
