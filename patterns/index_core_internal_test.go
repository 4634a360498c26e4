package patterns

import (
	"errors"
	"testing"

	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/table"
)

// An owner reference names the primary's two keys, whatever they hold, and
// reads back to exactly them; anything else is not a reference.
func TestOwnerReferenceRoundTrip(t *testing.T) {
	for _, k := range [][2]string{{"p", "r"}, {"", ""}, {"a!b", "c~d"}, {"O'Brien", "x/y"}} {
		pk, rk, ok := ownerKeys(ownerRef(k[0], k[1]))
		if !ok || pk != k[0] || rk != k[1] {
			t.Errorf("ownerKeys(ownerRef(%q, %q)) = %q, %q, %v", k[0], k[1], pk, rk, ok)
		}
	}
	for _, ref := range []string{"only!", "a!b!c!", "a&"} {
		if pk, rk, ok := ownerKeys(ref); ok || pk != "" || rk != "" {
			t.Errorf("ownerKeys(%q) = %q, %q, %v; a tuple of one or three keys, or no tuple, is no reference", ref, pk, rk, ok)
		}
	}
	// A copy of an earlier version names its owner by RowKey alone: that
	// RowKey is the owner's; so is a reference to another partition's
	// primary taken whole.
	if got := ownerRowKey(ownerRef("p", "r"), "p"); got != "r" {
		t.Errorf("ownerRowKey in its partition = %q, want r", got)
	}
	if got := ownerRowKey("r-legacy", "p"); got != "r-legacy" {
		t.Errorf("legacy reference = %q", got)
	}
	ref := ownerRef("q", "r")
	if got := ownerRowKey(ref, "p"); got != ref {
		t.Errorf("another partition's reference = %q, want it whole", got)
	}
}

// RepairOptions.PerTransaction is 0 (the default) or 2 to 100; anything
// else is refused before any request, naming the field.
func TestRepairPerTransactionRange(t *testing.T) {
	for _, n := range []int{0, 2, 100} {
		if err := checkRepairOptions("Repair", &RepairOptions{PerTransaction: n}); err != nil {
			t.Errorf("PerTransaction %d: %v", n, err)
		}
	}
	if err := checkRepairOptions("Repair", nil); err != nil {
		t.Errorf("nil options: %v", err)
	}
	for _, n := range []int{-1, 1, 101} {
		err := checkRepairOptions("Repair", &RepairOptions{PerTransaction: n})
		var ie *table.InputError
		if !errors.As(err, &ie) || ie.Field != "PerTransaction" || !errors.Is(err, table.ErrBadOption) {
			t.Errorf("PerTransaction %d: %v, want ErrBadOption on PerTransaction", n, err)
		}
	}
}

// A range, and a summary, is OK only when it holds no missing, orphan or
// stale row; the summary counts each issue by kind and by index.
func TestRangeAndSummaryOK(t *testing.T) {
	issue := []IndexIssue{{Copy: "c"}}
	for name, r := range map[string]*verifyRange{
		"missing": {Missing: issue}, "orphans": {Orphans: issue}, "stale": {Stale: issue},
	} {
		if r.OK() {
			t.Errorf("a range with %s copies is OK", name)
		}
	}
	if !(&verifyRange{Primaries: 3, Copies: 3}).OK() {
		t.Error("a clean range is not OK")
	}
	for _, k := range []IssueKind{IssueMissing, IssueOrphan, IssueStale} {
		var s VerifySummary
		s.count(IndexIssue{Kind: k, Index: "email"})
		s.count(IndexIssue{Kind: k, Index: "lname"})
		if s.OK() || s.Missing+s.Orphans+s.Stale != 2 || s.ByIndex["email"][k] != 1 || s.ByIndex["lname"][k] != 1 {
			t.Errorf("%s: %+v", k, s)
		}
	}
	if s := (VerifySummary{Primaries: 3, IndexRows: 3}); !s.OK() {
		t.Error("a clean summary is not OK")
	}
}

// A copy carries its owner's reference and only the projected properties,
// under its own keys; removeIfOwned deletes a copy only while it belongs to
// the owner named.
func TestCopiesAndGuardedRemoval(t *testing.T) {
	svc := fake.NewTableService(nil)
	client := svc.NewClient("idx", nil)
	if _, err := client.CreateTable(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	people, err := table.New[person](client, nil)
	if err != nil {
		t.Fatal(err)
	}
	copies, err := table.New[table.Entity](client, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := &person{Meta: table.Meta{PartitionKey: "emp", RowKey: "1", ETag: "W/\"x\""}, LastName: "Jones"}
	owner := ownerRef("emp", "1")
	c, err := copyEntity(people, p, map[string]bool{}, "idx", "jones_1", owner)
	if err != nil {
		t.Fatal(err)
	}
	if c.PartitionKey != "idx" || c.RowKey != "jones_1" || c.ETag != "" {
		t.Errorf("copy keys %q/%q, ETag %q", c.PartitionKey, c.RowKey, c.ETag)
	}
	if _, ok := c.Get("LastName"); ok {
		t.Error("a property outside the projection was copied")
	}
	if of, ok := ownerOf(c); !ok || of != owner {
		t.Errorf("ownerOf = %q, %v", of, ok)
	}
	full, err := copyEntity(people, p, nil, "idx", "jones_1", owner)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := full.Get("LastName"); !ok || v != table.ValueOf("Jones") {
		t.Errorf("no projection: LastName %v, %v", v, ok)
	}
	if _, ok := ownerOf(&table.Entity{}); ok {
		t.Error("an entity without the property has an owner")
	}
	back, err := fromCopy(people, full, "emp", "1")
	if err != nil || back.LastName != "Jones" || back.PartitionKey != "emp" || back.RowKey != "1" || back.ETag != "" {
		t.Errorf("fromCopy = %+v, %v", back, err)
	}

	if err := copies.Add(t.Context(), full, nil); err != nil {
		t.Fatal(err)
	}
	if removed, err := removeIfOwned(t.Context(), copies, "idx", "jones_1", ownerRef("emp", "2")); removed || err != nil {
		t.Fatalf("another owner's removal: %v, %v", removed, err)
	}
	if _, err := copies.Get(t.Context(), "idx", "jones_1", nil); err != nil {
		t.Fatalf("the copy is gone after another owner's removal: %v", err)
	}
	if removed, err := removeIfOwned(t.Context(), copies, "idx", "jones_1", owner); !removed || err != nil {
		t.Fatalf("the owner's removal: %v, %v", removed, err)
	}
	if _, err := copies.Get(t.Context(), "idx", "jones_1", nil); !table.Is(err, table.ErrNotFound) {
		t.Fatalf("the copy is still there: %v", err)
	}
	if removed, err := removeIfOwned(t.Context(), copies, "idx", "jones_1", owner); removed || err != nil {
		t.Fatalf("removing a missing copy: %v, %v", removed, err)
	}
}
