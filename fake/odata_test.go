package fake

import (
	"strings"
	"testing"
)

// TestFilterFollowsTheService: the parser follows the service's OData
// where it is stricter or laxer than a naive one: operators are lower
// case, a Boolean property stands alone as a condition, and not binds
// tighter than a comparison (OData's precedence: not P eq v is (not P) eq v).
func TestFilterFollowsTheService(t *testing.T) {
	row := map[string]value{
		"B":   {typ: edmBoolean, b: true},
		"F":   {typ: edmBoolean, b: false},
		"I32": {typ: edmInt32, i: 7},
		"S":   {typ: edmString, s: "x"},
	}
	get := func(name string) (value, bool) { v, ok := row[name]; return v, ok }
	for _, c := range []struct {
		filter string
		want   bool
	}{
		{"B", true},
		{"F", false},
		{"not F", true},
		{"not B", false},
		{"not not B", true},
		{"B and I32 eq 7", true},
		{"F or S eq 'x'", true},
		{"(B)", true},
		{"not (I32 eq 8)", true},
		{"not B eq false", true}, // (not B) eq false
		{"not F eq true", true},  // (not F) eq true
		{"not I32 eq 8", false},  // (not I32) is no Boolean: no match, where not (I32 eq 8) would match
		{"S", false},             // a non-Boolean property alone matches nothing
		{"Missing", false},
		{"not Missing", false},
	} {
		e, err := parseFilter(c.filter)
		if err != nil {
			t.Errorf("%q: %v", c.filter, err)
			continue
		}
		if got := e.eval(get); got != c.want {
			t.Errorf("%q = %v, want %v", c.filter, got, c.want)
		}
	}
	for _, bad := range []string{"I32 EQ 7", "I32 Eq 7", "B AND I32 eq 7", "B Or F", "NOT B", "Not (I32 eq 7)"} {
		if _, err := parseFilter(bad); err == nil || !strings.Contains(err.Error(), "lower case") {
			t.Errorf("%q: %v, want refused: operators are lower case", bad, err)
		}
	}
	for _, bad := range []string{"I32 eq", "not", "B eq", "(B", "B)", "B I32"} {
		if _, err := parseFilter(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}
