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

type staffer struct {
	table.Meta
	Email string
}

// TestRepairInterruptedThenRerun shows what a Repair cut short leaves (the
// primaries it reached are whole, the rest untouched) and that Verify and
// Repair run again finish the job.
func TestRepairInterruptedThenRerun(t *testing.T) {
	ctx := t.Context()
	svc := fake.NewTableService(nil)
	client := svc.NewClient("idx", nil)
	if _, err := client.CreateTable(ctx, nil); err != nil {
		t.Fatal(err)
	}
	plain, _ := table.New[staffer](client, nil)
	for i := 0; i < 5; i++ {
		v := &staffer{Meta: table.Meta{PartitionKey: "Sales", RowKey: fmt.Sprintf("empid_%06d", i)}, Email: fmt.Sprintf("e%d@x.com", i)}
		if err := plain.Add(ctx, v, nil); err != nil {
			t.Fatal(err)
		}
	}
	// A new index over existing entities: five primaries to backfill.
	idx, err := NewIntraPartitionIndex[staffer](client, "empid_", []IndexDef[staffer]{{Name: "email", Prefix: "email_", Unique: true, Value: func(s *staffer) string { return s.Email }}})
	if err != nil {
		t.Fatal(err)
	}
	rep, _ := idx.Verify(ctx, "Sales")
	if len(rep.Missing) != 5 {
		t.Fatalf("report: %+v", rep)
	}
	// The third transaction fails for good (the SDK's three retries of a 500
	// included), as if the process died there: the others commit whole.
	svc.FailNextAfter(fake.OpBatch, 2, 4, 500, "InternalError")
	sum, err := idx.Repair(ctx, rep)
	if err == nil || sum.Transactions != 4 {
		t.Fatalf("interrupted Repair: %+v %v", sum, err)
	}
	rep, _ = idx.Verify(ctx, "Sales")
	if len(rep.Missing) != 1 || len(rep.Stale)+len(rep.Orphans) != 0 {
		t.Fatalf("after the interruption: %+v", rep)
	}
	if _, err := idx.Repair(ctx, rep); err != nil {
		t.Fatal(err)
	}
	if rep, _ := idx.Verify(ctx, "Sales"); !rep.OK() {
		t.Fatalf("after the rerun: %+v", rep)
	}
}
