package table_test

import (
	"errors"
	"testing"
	"time"

	"github.com/tablekit/tablekit/table"
)

// A datetime literal holds what the service's Edm.DateTime holds,
// 1601-01-01T00:00:00Z to 9999-12-31T23:59:59.9999999Z: both ends are
// accepted, an instant outside either is refused before any request.
func TestFilterDateTimeBounds(t *testing.T) {
	lo := time.Date(1601, 1, 1, 0, 0, 0, 0, time.UTC)
	hi := time.Date(9999, 12, 31, 23, 59, 59, 999_999_900, time.UTC)
	for _, c := range []struct {
		at   time.Time
		want string
	}{
		{lo, "T eq datetime'1601-01-01T00:00:00.0000000Z'"},
		{hi, "T eq datetime'9999-12-31T23:59:59.9999999Z'"},
	} {
		if got, err := table.Prop("T").Eq(c.at).Build(); err != nil || got != c.want {
			t.Errorf("%v: %q, %v; want %q", c.at, got, err, c.want)
		}
	}
	for _, out := range []time.Time{lo.Add(-time.Second), hi.Add(time.Nanosecond)} {
		if _, err := table.Prop("T").Eq(out).Build(); !errors.Is(err, table.ErrBadFilter) {
			t.Errorf("%v: %v, want ErrBadFilter", out, err)
		}
	}
}

// Each Go type becomes the literal of its EDM type: Int32 without a suffix,
// Int64 with L, Double always with a fraction.
func TestFilterLiteralOfEachType(t *testing.T) {
	for _, c := range []struct {
		f    table.Filter
		want string
	}{
		{table.Prop("N").Eq(int8(-8)), "N eq -8"},
		{table.Prop("N").Eq(int16(-16)), "N eq -16"},
		{table.Prop("N").Eq(uint8(8)), "N eq 8"},
		{table.Prop("N").Eq(uint16(16)), "N eq 16"},
		{table.Prop("N").Eq(uint32(32)), "N eq 32L"},
		{table.Prop("N").Eq(int64(-64)), "N eq -64L"},
		{table.Prop("N").Eq(7), "N eq 7L"},
		{table.Prop("X").Eq(float32(1.5)), "X eq 1.5"},
		{table.Prop("X").Eq(float32(3)), "X eq 3.0"},
		{table.Prop("X").Eq(1e21), "X eq 1000000000000000000000.0"},
		{table.Prop("B").Eq(false), "B eq false"},
		{table.Prop("N").Ne(int32(1)), "N ne 1"},
		{table.Prop("N").Le(int32(1)), "N le 1"},
		{table.Prop("Timestamp").Gt(time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)), "Timestamp gt datetime'2020-01-01T00:00:00.0000000Z'"},
		{table.Not(table.Filter{}), ""},
		{table.Or(table.Filter{}, table.Filter{}), ""},
		{table.Prop("PartitionKey").Eq("a").Or(table.Prop("PartitionKey").Eq("b"), table.Prop("PartitionKey").Eq("c")), "(PartitionKey eq 'a') or (PartitionKey eq 'b') or (PartitionKey eq 'c')"},
	} {
		if got, err := c.f.Build(); err != nil || got != c.want {
			t.Errorf("%q, %v; want %q", got, err, c.want)
		}
	}
}

// Comparisons counts every comparison, however deeply nested, and the
// limit is exactly MaxFilterComparisons.
func TestFilterComparisonsCountNested(t *testing.T) {
	f := table.Or(table.And(table.Prop("PartitionKey").Eq("a"), table.Not(table.Prop("RowKey").Eq("b"))), table.Prop("N").Gt(1))
	if n := f.Comparisons(); n != 3 {
		t.Errorf("Comparisons() = %d, want 3", n)
	}
	if n := (table.Filter{}).Comparisons(); n != 0 {
		t.Errorf("zero filter: %d comparisons", n)
	}
	if !(table.Filter{}).IsZero() || f.IsZero() || table.Prop("1x").Eq("y").IsZero() {
		t.Error("IsZero is wrong")
	}
	if err := table.Prop("1x").Eq("y").Err(); err == nil {
		t.Error("Err() of a bad filter is nil")
	}
	if table.MaxFilterComparisons != 15 {
		t.Errorf("MaxFilterComparisons = %d, want 15", table.MaxFilterComparisons)
	}
	var nested table.Filter
	for i := range table.MaxFilterComparisons + 1 {
		nested = table.Not(table.Or(nested, table.Prop("N").Eq(int32(i))))
		_, err := nested.Build()
		if i < table.MaxFilterComparisons && err != nil || i == table.MaxFilterComparisons && !errors.Is(err, table.ErrBadFilter) {
			t.Fatalf("%d nested comparisons: %v", i+1, err)
		}
	}
}

// Classify: a RowKey bounded by any of gt, ge, lt, le in one partition is
// a range query; a RowKey ne is a partition scan.
func TestClassifyEachRowKeyBound(t *testing.T) {
	for name, f := range map[string]table.Filter{
		"gt": table.Partition("p").And(table.Prop("RowKey").Gt("a")),
		"ge": table.Partition("p").And(table.Prop("RowKey").Ge("a")),
		"lt": table.Partition("p").And(table.Prop("RowKey").Lt("a")),
		"le": table.Partition("p").And(table.Prop("RowKey").Le("a")),
	} {
		if k := f.Kind(); k != table.RangeQuery {
			t.Errorf("%s: %v, want a range query", name, k)
		}
	}
	if k := (table.Partition("p").And(table.Prop("RowKey").Ne("a"))).Kind(); k != table.PartitionScan {
		t.Errorf("RowKey ne: %v, want a partition scan", k)
	}
	if k := (table.Partition("p").And(table.Prop("RowKeyX").Eq("a"))).Kind(); k != table.PartitionScan {
		t.Errorf("another property: %v", k)
	}
	if k := (table.Prop("PartitionKey").Ne("p").And(table.Prop("RowKey").Eq("a"))).Kind(); k != table.TableScan {
		t.Errorf("PartitionKey ne: %v, want a table scan", k)
	}
	for k, want := range map[table.QueryKind]string{
		table.PointQuery: "point query", table.RangeQuery: "range query", table.PartitionScan: "partition scan",
		table.TableScan: "table scan", table.QueryKind(0): "QueryKind(0)",
	} {
		if got := k.String(); got != want {
			t.Errorf("%d: %q, want %q", int(k), got, want)
		}
	}
}
