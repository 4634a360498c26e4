package patterns

import (
	"errors"
	"strings"
	"testing"
)

// TestSharedValueErrorIsOneLineNotUnique: a Lookup of a value several
// primaries hold is ErrNotUnique, on one line naming the index, the value
// (quoted, so a line break in it stays escaped) and every owner.
func TestSharedValueErrorIsOneLineNotUnique(t *testing.T) {
	err := error(&sharedValueError{Index: "email", Value: "a\nb", Owners: []Owner{{PartitionKey: "HR", RowKey: "empid_2"}, {PartitionKey: "Sales", RowKey: "empid_1"}}})
	msg := err.Error()
	if !errors.Is(err, ErrNotUnique) || strings.Contains(msg, "\n") {
		t.Fatalf("%q: want ErrNotUnique on one line", msg)
	}
	for _, want := range []string{"email", `"a\nb"`, `("HR", "empid_2")`, `("Sales", "empid_1")`} {
		if !strings.Contains(msg, want) {
			t.Errorf("%q does not name %s", msg, want)
		}
	}
}
