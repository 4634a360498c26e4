package fake

import (
	"testing"

	"github.com/tablekit/tablekit/internal/keyrules"
	"github.com/tablekit/tablekit/table"
)

// FuzzFilterBuilderCannotInject: whatever the value, the builder's output
// parses (with the fake's own OData parser) to exactly one comparison of
// the intended property with the intended string.
func FuzzFilterBuilderCannotInject(f *testing.F) {
	f.Add("LastName", "O'Brien")
	f.Add("RowKey", "x' or RowKey ne '")
	f.Add("Name", "') or (1 eq 1) or ('")
	f.Add("A", "'''")
	f.Add("IsActive", "x' EQ 'y")
	f.Add("B", "' AND RowKey eq '")
	f.Add("Flag", "') or not (Flag")
	f.Fuzz(func(t *testing.T, prop, value string) {
		text, err := table.Prop(prop).Eq(value).Build()
		if err != nil {
			return // refused: a bad property name or invalid UTF-8
		}
		if keyrules.ValidatePropertyName(prop) != nil && prop != "PartitionKey" && prop != "RowKey" {
			t.Fatalf("accepted a bad property name %q", prop)
		}
		e, err := parseFilter(text)
		if err != nil {
			t.Fatalf("the builder's output does not parse: %q: %v", text, err)
		}
		c, ok := e.(cmpExpr)
		if !ok || c.prop != prop || c.op != "eq" || c.lit.typ != edmString || c.lit.s != value || c.negate {
			t.Fatalf("%q parsed to %#v, want %s eq %q", text, e, prop, value)
		}
		// Negated, it is still that one comparison, under a not that
		// covers all of it (not binds tighter than eq: the builder must
		// parenthesise).
		text, err = table.Not(table.Prop(prop).Eq(value)).Build()
		if err != nil {
			t.Fatalf("Not of a valid comparison: %v", err)
		}
		if e, err = parseFilter(text); err != nil {
			t.Fatalf("the builder's output does not parse: %q: %v", text, err)
		}
		n, ok := e.(notExpr)
		if c, isCmp := n.e.(cmpExpr); !ok || !isCmp || c.prop != prop || c.lit.s != value || c.negate {
			t.Fatalf("%q parsed to %#v, want not (%s eq %q)", text, e, prop, value)
		}
	})
}
