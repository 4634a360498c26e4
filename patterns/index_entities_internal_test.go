package patterns

import (
	"errors"
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
	x, err := newIndexEntities[person](tableOf(table.New[person](client, nil)), "lname_", func(p *person) string { return p.LastName }, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Each ID is 15 UTF-16 units of JSON ("emp000000001",); the brackets add
	// 2 and the last ID has no comma: n IDs take 15n + 1 units.
	n := (maxListUnits - 1) / 15
	ids := make([]string, n+1)
	for i := range ids {
		ids[i] = fmt.Sprintf("emp%09d", i)
	}
	if _, err := x.encodePart("Sales", "lname_Jones!0000", "Jones", ids, x.max); !errors.Is(err, errPartFull) {
		t.Fatalf("%d IDs should not fit one index entity", n+1)
	}
	ids = ids[:n]
	e, err := x.encodePart("Sales", "lname_Jones!0000", "Jones", ids, x.max)
	if err != nil {
		t.Fatal(err)
	}
	if err := x.raw.Add(t.Context(), e, nil); err != nil {
		t.Fatalf("a full index entity (%d bytes) was refused: %v", e.Size(), err)
	}
	parts, err := x.read(t.Context(), "IndexEntities.Lookup", "Sales", "Jones")
	if err != nil || len(parts) != 1 || len(parts[0].ids) != len(ids) {
		t.Fatalf("read back %d parts: %v", len(parts), err)
	}
	op, err := x.addTo("Sales", "Jones", "emp-one-more", parts)
	if err != nil || op.Kind != 1 || op.RowKey() != "lname_Jones!0001" {
		t.Fatalf("the next ID must start part 0001 with an Add: %+v %v", op, err)
	}
	t.Logf("one index entity holds %d IDs of 12 characters (%d bytes as the service counts)", len(ids), e.Size())
}

type staffer struct {
	table.Meta
	Email string
}

// backfillOfFive adds five employees, then a unique email index over them:
// Verify reports five missing copies.
func backfillOfFive(t *testing.T) (*fake.TableService, *table.Table[staffer], *intraPartitionIndex[staffer], *verifyRange) {
	t.Helper()
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
	idx, err := newIntraPartitionIndex[staffer](tableOf(table.New[staffer](client, nil)), "empid_", []IndexDef[staffer]{{Name: "email", Prefix: "email_", Unique: true, Value: func(s *staffer) string { return s.Email }}})
	if err != nil {
		t.Fatal(err)
	}
	rep, _ := verifyAll(ctx, idx, &VerifyOptions{Partition: "Sales"})
	if len(rep.Missing) != 5 {
		t.Fatalf("report: %+v", rep)
	}
	return svc, plain, idx, rep
}

// TestRepairInterruptedThenRerun shows what a Repair cut short leaves (the
// primaries it reached are whole, the rest untouched) and that Verify and
// Repair run again finish the job.
func TestRepairInterruptedThenRerun(t *testing.T) {
	deadline(t, loopDeadline)
	ctx := t.Context()
	svc, _, idx, rep := backfillOfFive(t)
	// The third transaction fails for good (the SDK's three retries of a 500
	// included), as if the process died there: the others commit whole.
	// Two operations per transaction keep each primary in its own.
	svc.FailNextAfter(fake.OpBatch, 2, 4, 500, "InternalError")
	sum, err := idx.repair(ctx, rep, &RepairOptions{PerTransaction: 2})
	if err == nil || sum.Transactions != 4 {
		t.Fatalf("interrupted Repair: %+v %v", sum, err)
	}
	rep, _ = verifyAll(ctx, idx, &VerifyOptions{Partition: "Sales"})
	if len(rep.Missing) != 1 || len(rep.Stale)+len(rep.Orphans) != 0 {
		t.Fatalf("after the interruption: %+v", rep)
	}
	if _, err := idx.repair(ctx, rep, nil); err != nil {
		t.Fatal(err)
	}
	if rep, _ := verifyAll(ctx, idx, &VerifyOptions{Partition: "Sales"}); !rep.OK() {
		t.Fatalf("after the rerun: %+v", rep)
	}
}

// TestRepairPackedFallsBackPerPrimary packs a backfill of five primaries into
// one transaction; one primary changed after Verify, so that transaction
// fails on its guard, and the other four are still repaired one by one.
func TestRepairPackedFallsBackPerPrimary(t *testing.T) {
	ctx := t.Context()
	svc, plain, idx, rep := backfillOfFive(t)
	changed := &staffer{Meta: table.Meta{PartitionKey: "Sales", RowKey: "empid_000002"}, Email: "new@x.com"}
	if err := plain.Upsert(ctx, changed, nil); err != nil {
		t.Fatal(err)
	}
	svc.ResetCounts()
	sum, err := idx.repair(ctx, rep, nil)
	if !table.Is(err, table.ErrPreconditionFailed) {
		t.Fatalf("Repair with one changed primary: %v", err)
	}
	if sum.Transactions != 4 || sum.Written != 4 {
		t.Fatalf("summary: %+v", sum)
	}
	// One packed attempt, then one transaction per primary.
	if n := svc.Count(fake.OpBatch); n != 6 || svc.Total() != 6 {
		t.Fatalf("requests: %d batches of %d", n, svc.Total())
	}
	rep, _ = verifyAll(ctx, idx, &VerifyOptions{Partition: "Sales"})
	if len(rep.Missing) != 1 || rep.Missing[0].Copy != "email_new@x.com" {
		t.Fatalf("after the fallback: %+v", rep)
	}
	sum, err = idx.repair(ctx, rep, nil)
	if err != nil || sum.Transactions != 1 {
		t.Fatalf("rerun: %+v %v", sum, err)
	}
}

// TestRepairPackedServiceFailureNoFallback: when a packed transaction fails
// because the service does (not because an entity changed), Repair does not
// resend its primaries one by one: that would only multiply the failures.
func TestRepairPackedServiceFailureNoFallback(t *testing.T) {
	svc, _, idx, rep := backfillOfFive(t)
	svc.ResetCounts()
	svc.FailNext(fake.OpBatch, 4, 500, "InternalError") // the SDK's try and three retries
	sum, err := idx.repair(t.Context(), rep, nil)
	if err == nil || sum.Transactions != 0 {
		t.Fatalf("Repair against a failing service: %+v %v", sum, err)
	}
	if n := svc.Count(fake.OpBatch); n != 4 {
		t.Fatalf("%d batch requests, want 4 (one packed transaction, retried by the SDK)", n)
	}
}
