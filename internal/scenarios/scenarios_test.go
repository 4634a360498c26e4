package scenarios

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/internal/testenv"
)

// wants are lines each scenario must print, on any backend.
var wants = map[string][]string{
	"keys":         {"000123_2012", "Logins20261121"},
	"entities":     {"precondition failed = true", "2 employees [1 requests]", "email set to"},
	"transactions": {"2 departments: 4 transactions"},
	"employees":    {"consistent = true", "Lookup by email -> empid_Sales/000223 Ben Jones"},
	"lastnames":    {"EmployeeIDs of Jones in Sales: [000152 000223]"},
	"departments":  {"*scenarios.Review *scenarios.Review"},
	"archive":      {"in Archive = true, gone from Current = true"},
	"expenses":     {"the ten most recent claims"},
	"logins":       {"2 dropped"},
	"messagestats": {"(H14 = 42)", "365 properties"},
	"events":       {"12 events in time order"},
	"photo":        {"photo of 256 KiB", "0 found"},
	"logs":         {": 120 entries"},
}

func check(t *testing.T, conn string) {
	var out bytes.Buffer
	if err := Run(t.Context(), &out, conn); err != nil {
		t.Fatalf("tour failed: %v\n%s", err, out.String())
	}
	for _, s := range All() {
		for _, want := range wants[s.Name] {
			if !strings.Contains(out.String(), want) {
				t.Errorf("%s: output lacks %q", s.Name, want)
			}
		}
	}
	if len(wants) != len(All()) {
		t.Errorf("%d scenarios, %d with expectations", len(All()), len(wants))
	}
	if !strings.Contains(out.String(), "complete") || t.Failed() {
		t.Logf("output:\n%s", out.String())
	}
}

func TestScenariosInMemory(t *testing.T) { check(t, "") }

func TestScenariosAgainstAzurite(t *testing.T) { check(t, testenv.ConnectionString(t)) }

// TestEachProgramAlone runs every example program's scenario by itself, as
// `go run ./examples/<name>` does.
func TestEachProgramAlone(t *testing.T) {
	for _, s := range All() {
		var out bytes.Buffer
		if err := Run(t.Context(), &out, "", s.Name); err != nil {
			t.Errorf("%s: %v\n%s", s.Name, err, out.String())
		}
	}
	if err := Run(t.Context(), &bytes.Buffer{}, "", "nosuch"); err == nil {
		t.Fatal("an unknown scenario ran")
	}
}
