package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/internal/testenv"
)

func TestTourInMemory(t *testing.T) {
	var out bytes.Buffer
	if err := run(t.Context(), &out, ""); err != nil {
		t.Fatalf("tour failed: %v\n%s", err, out.String())
	}
	for _, want := range []string{"000123_2012", "Logins20261121", "precondition failed = true", "2 employees [1 requests]", "age +1", "EmployeeIDs of Jones in Sales: [000152 000223]", "consistent = true", "*main.Review *main.Review", "2 departments: 4 transactions", "in Archive = true, gone from Current = true", "Lookup by email -> empid_Sales/000223 Ben Jones", "the ten most recent claims", "(H14 = 42)", "365 properties", "12 events in time order", "2 dropped", "tour complete"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("tour output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestTourAgainstAzurite(t *testing.T) {
	conn := testenv.ConnectionString(t)
	var out bytes.Buffer
	if err := run(t.Context(), &out, conn); err != nil {
		t.Fatalf("tour failed: %v\n%s", err, out.String())
	}
	for _, want := range []string{"2 employees [1 requests]", "precondition failed = true", "tour complete"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("tour output lacks %q:\n%s", want, out.String())
		}
	}
}
