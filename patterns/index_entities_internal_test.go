package patterns

import (
	"fmt"
	"testing"

	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/table"
)

type person struct {
	table.Meta
	LastName string
}

// TestFullIndexEntityFitsTheService fills one index entity to the default
// limit and has the fake (which enforces the 1 MiB rule as the service
// counts it) store it; one more ID must not fit.
func TestFullIndexEntityFitsTheService(t *testing.T) {
	svc := fake.NewTableService(nil)
	client := svc.NewClient("idx", nil)
	if _, err := client.CreateTable(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	x, err := NewIndexEntities[person](client, "lname_", func(p *person) string { return p.LastName }, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Each ID is 15 UTF-16 units of JSON ("emp000000001",); the brackets add
	// 2 and the last ID has no comma: n IDs take 15n + 1 units.
	n := (DefaultMaxListUnits - 1) / 15
	ids := make([]string, n+1)
	for i := range ids {
		ids[i] = fmt.Sprintf("emp%09d", i)
	}
	if _, ok := x.encodePart("Sales", "lname_Jones!0000", "Jones", ids); ok {
		t.Fatalf("%d IDs should not fit one index entity", n+1)
	}
	ids = ids[:n]
	body, _ := x.encodePart("Sales", "lname_Jones!0000", "Jones", ids)
	if _, err := client.AddEntity(t.Context(), body, nil); err != nil {
		t.Fatalf("a full index entity (%d bytes) was refused: %v", len(body), err)
	}
	parts, err := x.read(t.Context(), "Sales", "Jones")
	if err != nil || len(parts) != 1 || len(parts[0].ids) != len(ids) {
		t.Fatalf("read back %d parts: %v", len(parts), err)
	}
	op, err := x.addTo("Sales", "Jones", "emp-one-more", parts)
	if err != nil || op.Kind != 1 || op.RowKey() != "lname_Jones!0001" {
		t.Fatalf("the next ID must start part 0001 with an Add: %+v %v", op, err)
	}
	t.Logf("one index entity holds %d IDs of 12 characters (%d bytes of JSON)", len(ids), len(body))
}
