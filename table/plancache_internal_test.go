package table

import (
	"reflect"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
)

// TestOnePlanPerType: every codec, Table and Registry of a type shares one
// plan, so a fresh codec per write (as batch.NewTransaction(nil) makes)
// does not rebuild it.
func TestOnePlanPerType(t *testing.T) {
	type row struct {
		Meta
		A string
		B int64
	}
	typ := reflect.TypeFor[row]()
	var c1, c2 codec
	p1, err := c1.planFor(typ)
	if err != nil {
		t.Fatal(err)
	}
	p2, _ := c2.planFor(typ)
	tb, err := New[row](&aztables.Client{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := NewRegistry(nil)
	if err := Register[row](r, "row"); err != nil {
		t.Fatal(err)
	}
	if p1 != p2 || p1 != tb.plan || p1 != r.byType["row"] {
		t.Fatalf("plans differ: %p %p %p %p", p1, p2, tb.plan, r.byType["row"])
	}
	if p, _ := c1.planFor(entityType); p != entityPlan {
		t.Fatalf("Entity has its own plan %p, want %p", p, entityPlan)
	}
}
