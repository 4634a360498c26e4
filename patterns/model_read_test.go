package patterns_test

import (
	"errors"
	"iter"
	"slices"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/table"
)

// The model's index reads: Find, Range and Prefix over copies indexes,
// IDs over list indexes, each returning whole primaries.

// collect is "pk/rk salary" of every value seq yields; a failure ends the test.
func collect(t *testing.T, seq iter.Seq2[*staffer, error]) []string {
	t.Helper()
	var out []string
	for v, err := range seq {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, v.PartitionKey+"/"+v.RowKey+" "+v.FirstName+" "+v.LastName+" "+v.Email+" "+string(rune('0'+v.Salary%10)))
	}
	return out
}

func addStaff(t *testing.T, d *directory) {
	t.Helper()
	for _, s := range []*staffer{
		staffOf("Sales", 1, "Ann", "Hall", "ann@contoso.com"),
		staffOf("Sales", 2, "Bob", "Jones", "bob@contoso.com"),
		staffOf("Sales", 3, "Ann", "Hall", "ann2@contoso.com"),
		staffOf("Sales", 4, "Cy", "Hall", "cy@contoso.com"),
		staffOf("Marketing", 5, "Ann", "Hall", "dee@contoso.com"),
	} {
		if err := d.m.Add(t.Context(), s, nil); err != nil {
			t.Fatal(err)
		}
	}
}

// Find, Range and Prefix over a same-partition copies index return whole
// primaries: a projected copy ("first" stores FirstName and LastName)
// sends a read of each primary, so Email and Salary are there too.
func TestModelFindRangePrefixReturnWholePrimaries(t *testing.T) {
	d := newDirectory(t, false)
	addStaff(t, d)
	ctx := t.Context()
	anns := []string{"Sales/empid_000001 Ann Hall ann@contoso.com 1", "Sales/empid_000003 Ann Hall ann2@contoso.com 3"}
	d.l.Reset()
	if got := collect(t, d.m.Find(ctx, "first", "Sales", "Ann", nil)); !slices.Equal(got, anns) {
		t.Fatalf("Find first Ann: %v, want %v", got, anns)
	}
	if n := d.l.Total(); n != 3 {
		t.Fatalf("Find of two projected copies sent %d requests, want 3 (the range, then each primary)", n)
	}
	if got, want := collect(t, d.m.Range(ctx, "first", "Sales", "Ann", "Bz", nil)), append(slices.Clone(anns), "Sales/empid_000002 Bob Jones bob@contoso.com 2"); !slices.Equal(got, want) {
		t.Fatalf("Range first [Ann, Bz): %v, want %v", got, want)
	}
	if got := collect(t, d.m.Range(ctx, "first", "Sales", "C", "", nil)); !slices.Equal(got, []string{"Sales/empid_000004 Cy Hall cy@contoso.com 4"}) {
		t.Fatalf("Range first [C, ): %v", got)
	}
	if got := collect(t, d.m.Prefix(ctx, "first", "Sales", "A", nil)); !slices.Equal(got, anns) {
		t.Fatalf("Prefix first A: %v, want %v", got, anns)
	}
	// A unique index of whole copies: Find is one point read.
	d.l.Reset()
	if got := collect(t, d.m.Find(ctx, "email", "Sales", "bob@contoso.com", nil)); !slices.Equal(got, []string{"Sales/empid_000002 Bob Jones bob@contoso.com 2"}) {
		t.Fatalf("Find email bob: %v", got)
	}
	if n := d.l.Total(); n != 1 {
		t.Fatalf("Find of a whole unique copy sent %d requests, want 1", n)
	}
	if got := collect(t, d.m.Find(ctx, "email", "Sales", "nobody@contoso.com", nil)); len(got) != 0 {
		t.Fatalf("Find of a value nobody holds: %v", got)
	}
	if got := collect(t, d.m.Prefix(ctx, "email", "Sales", "ann", nil)); len(got) != 2 {
		t.Fatalf("Prefix email ann: %v", got)
	}
	if got := collect(t, d.m.Range(ctx, "email", "Sales", "b", "d", nil)); len(got) != 2 {
		t.Fatalf("Range email [b, d): %v", got)
	}
	// Another partition's copies are not read.
	if got := collect(t, d.m.Find(ctx, "first", "Marketing", "Ann", nil)); !slices.Equal(got, []string{"Marketing/empid_000005 Ann Hall dee@contoso.com 5"}) {
		t.Fatalf("Find first Ann in Marketing: %v", got)
	}
}

// A projected copy whose primary no longer calls for it (the primary
// changed since, around the model) is skipped, not returned as another
// value's primary.
func TestModelFindSkipsACopyItsPrimaryNoLongerHas(t *testing.T) {
	d := newDirectory(t, false)
	addStaff(t, d)
	ctx := t.Context()
	// Rename Ann (1) to Zoe behind the model's back: her "first" copy of
	// Ann stays.
	e, err := d.raw.Get(ctx, "Sales", "empid_000001", nil)
	if err != nil {
		t.Fatal(err)
	}
	e.Set("FirstName", table.ValueOf("Zoe"))
	if err := d.raw.Update(ctx, e, &table.UpdateOptions{Mode: aztables.UpdateModeReplace}); err != nil {
		t.Fatal(err)
	}
	if got := collect(t, d.m.Find(ctx, "first", "Sales", "Ann", nil)); !slices.Equal(got, []string{"Sales/empid_000003 Ann Hall ann2@contoso.com 3"}) {
		t.Fatalf("Find first Ann after Ann 1 became Zoe: %v", got)
	}
}

// Over cross-partition copies the reads address the copies' partition.
func TestModelFindRangePrefixOverCrossCopies(t *testing.T) {
	d := newDirectory(t, true)
	addStaff(t, d)
	d.drain(t)
	ctx := t.Context()
	if got := collect(t, d.m.Find(ctx, "email-all", "email_Sales", "bob@contoso.com", nil)); !slices.Equal(got, []string{"Sales/empid_000002 Bob Jones bob@contoso.com 2"}) {
		t.Fatalf("Find email-all bob: %v", got)
	}
	if got := collect(t, d.m.Prefix(ctx, "email-all", "email_Sales", "ann", nil)); len(got) != 2 {
		t.Fatalf("Prefix email-all ann: %v", got)
	}
	if got := collect(t, d.m.Range(ctx, "email-all", "email_Sales", "b", "d", nil)); len(got) != 2 {
		t.Fatalf("Range email-all [b, d): %v", got)
	}
	if got := collect(t, d.m.Range(ctx, "email-all", "email_Marketing", "", "", nil)); len(got) != 1 {
		t.Fatalf("Range email-all over Marketing: %v", got)
	}
}

// IDs reads a list alone: the owners' keys, no primary read.
func TestModelIDsReadsTheListOnly(t *testing.T) {
	d := newDirectory(t, true)
	addStaff(t, d)
	d.drain(t)
	ctx := t.Context()
	d.l.Reset()
	got, err := d.m.IDs(ctx, "lastname", "Sales", "Hall", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []patterns.Owner{{PartitionKey: "Sales", RowKey: "empid_000001"}, {PartitionKey: "Sales", RowKey: "empid_000003"}, {PartitionKey: "Sales", RowKey: "empid_000004"}}
	if !slices.Equal(got, want) {
		t.Fatalf("IDs lastname Hall: %v, want %v", got, want)
	}
	if n := d.l.Total(); n != 1 {
		t.Fatalf("IDs sent %d requests, want 1", n)
	}
	all, err := d.m.IDs(ctx, "lastname-all", "", "Hall", nil)
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(all, func(a, b patterns.Owner) int {
		if a.PartitionKey != b.PartitionKey {
			return map[bool]int{true: -1, false: 1}[a.PartitionKey < b.PartitionKey]
		}
		return map[bool]int{true: -1, false: 1}[a.RowKey < b.RowKey]
	})
	if len(all) != 4 || all[0] != (patterns.Owner{PartitionKey: "Marketing", RowKey: "empid_000005"}) {
		t.Fatalf("IDs lastname-all Hall: %v", all)
	}
	if got, err := d.m.IDs(ctx, "lastname", "Sales", "Nobody", nil); err != nil || len(got) != 0 {
		t.Fatalf("IDs of a value nobody holds: %v, %v", got, err)
	}
}

// An index the model does not declare, or one of the other kind, is
// ErrUnknownIndex, and a bad PartitionKey a *table.InputError, before any
// request.
func TestModelIndexReadsRefuseBadIndexesBeforeAnyRequest(t *testing.T) {
	d := newDirectory(t, true)
	ctx := t.Context()
	first := func(seq iter.Seq2[*staffer, error]) error {
		for _, err := range seq {
			return err
		}
		return nil
	}
	d.l.Reset()
	for name, err := range map[string]error{
		"Find of no index":           first(d.m.Find(ctx, "nope", "Sales", "x", nil)),
		"Find of a list":             first(d.m.Find(ctx, "lastname", "Sales", "x", nil)),
		"Range of a remote list":     first(d.m.Range(ctx, "lastname-all", "Sales", "a", "b", nil)),
		"Prefix of no index":         first(d.m.Prefix(ctx, "nope", "Sales", "x", nil)),
		"Lookup of a list":           func() error { _, err := d.m.Lookup(ctx, "lastname", "Sales", "x", nil); return err }(),
		"IDs of a copies index":      func() error { _, err := d.m.IDs(ctx, "email", "Sales", "x", nil); return err }(),
		"IDs of a cross index":       func() error { _, err := d.m.IDs(ctx, "email-all", "Sales", "x", nil); return err }(),
		"IDs of no index":            func() error { _, err := d.m.IDs(ctx, "nope", "Sales", "x", nil); return err }(),
		"LookupEntities of a copies": func() error { _, err := d.m.LookupEntities(ctx, "first", "Sales", "x", nil); return err }(),
	} {
		if !errors.Is(err, patterns.ErrUnknownIndex) {
			t.Errorf("%s: %v, want ErrUnknownIndex", name, err)
		}
	}
	for got, want := range map[error]string{
		first(d.m.Find(ctx, "nope", "Sales", "x", nil)):                                       `declares no index "nope"`,
		first(d.m.Find(ctx, "lastname", "Sales", "x", nil)):                                   `"lastname" is a list index of model`,
		func() error { _, err := d.m.IDs(ctx, "email-all", "Sales", "x", nil); return err }(): `"email-all" is a copies index of model`,
	} {
		if got == nil || !strings.Contains(got.Error(), want) {
			t.Errorf("error %v, want it to say %s", got, want)
		}
	}
	for name, err := range map[string]error{
		"Find with a bad partition":   first(d.m.Find(ctx, "first", "a/b", "x", nil)),
		"Range with a bad partition":  first(d.m.Range(ctx, "email-all", "a#b", "a", "b", nil)),
		"Prefix with a bad partition": first(d.m.Prefix(ctx, "email", "a?b", "x", nil)),
		"Find of a bad unique value":  first(d.m.Find(ctx, "email", "Sales", "a/b", nil)),
	} {
		var ie *table.InputError
		if !errors.As(err, &ie) || !errors.Is(err, keys.ErrForbiddenChar) && !errors.Is(err, table.ErrInvalidValue) {
			t.Errorf("%s: %v, want a *table.InputError", name, err)
		}
	}
	if n := d.l.Total(); n != 0 {
		t.Fatalf("bad index reads sent %d requests", n)
	}
}
