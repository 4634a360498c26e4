package table_test

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/table"
)

func TestFilterText(t *testing.T) {
	g, _ := table.ParseGUID("4D3C2B1A-0F1E-2D3C-4B5A-696887766554")
	tests := []struct {
		name string
		f    table.Filter
		want string
	}{
		{"guide range", table.Partition("Sales").And(table.Prop("RowKey").Ge("empid_000100"), table.Prop("RowKey").Le("empid_000199")),
			"(PartitionKey eq 'Sales') and (RowKey ge 'empid_000100') and (RowKey le 'empid_000199')"},
		{"guide point", table.Partition("Sales").And(table.Prop("RowKey").Eq("empid_000123")), "(PartitionKey eq 'Sales') and (RowKey eq 'empid_000123')"},
		{"partition", table.Partition("Sales"), "PartitionKey eq 'Sales'"},
		{"quote doubling", table.Prop("LastName").Eq("O'Brien"), "LastName eq 'O''Brien'"},
		{"injection stays a literal", table.Prop("RowKey").Eq("x' or 'a' eq 'a"), "RowKey eq 'x'' or ''a'' eq ''a'"},
		{"Int64", table.Prop("Age").Gt(30), "Age gt 30L"},
		{"Int32", table.Prop("Age").Gt(int32(30)), "Age gt 30"},
		{"Double", table.Prop("Rating").Ge(2.0), "Rating ge 2.0"},
		{"Double fraction", table.Prop("Rating").Lt(2.5), "Rating lt 2.5"},
		{"bool", table.Prop("Active").Eq(true), "Active eq true"},
		{"datetime", table.Prop("Hired").Lt(time.Date(2012, 1, 1, 1, 0, 0, 0, time.FixedZone("x", 3600))), "Hired lt datetime'2012-01-01T00:00:00.0000000Z'"},
		{"guid", table.Prop("Id").Eq(g), "Id eq guid'4d3c2b1a-0f1e-2d3c-4b5a-696887766554'"},
		{"binary", table.Prop("Hash").Eq([]byte{0xca, 0xfe}), "Hash eq X'cafe'"},
		{"or and not", table.Or(table.Prop("RowKey").Eq("a"), table.Not(table.Prop("X").Ne(int32(1)))), "(RowKey eq 'a') or (not (X ne 1))"},
		{"nested and flattens", table.And(table.Prop("PartitionKey").Eq("p"), table.And(table.Prop("RowKey").Ge("a"), table.Prop("RowKey").Lt("b"))), "(PartitionKey eq 'p') and (RowKey ge 'a') and (RowKey lt 'b')"},
		{"and inside or", table.Or(table.And(table.Prop("PartitionKey").Eq("a"), table.Prop("RowKey").Eq("b")), table.Prop("PartitionKey").Eq("c")), "((PartitionKey eq 'a') and (RowKey eq 'b')) or (PartitionKey eq 'c')"},
		{"prefix", table.RowPrefix("Sales", "empid_"), "(PartitionKey eq 'Sales') and (RowKey ge 'empid_') and (RowKey lt 'empid`')"},
		{"open range", table.RowRange("Sales", "a", ""), "(PartitionKey eq 'Sales') and (RowKey ge 'a')"},
		{"zero filters ignored", table.And(table.Filter{}, table.Prop("PartitionKey").Eq("p")), "PartitionKey eq 'p'"},
		{"zero", table.Filter{}, ""},
	}
	for _, tc := range tests {
		got, err := tc.f.Build()
		if err != nil || got != tc.want {
			t.Errorf("%s: %q, %v\n want %q", tc.name, got, err, tc.want)
		}
	}
}

func TestFilterErrors(t *testing.T) {
	var fifteen, sixteen []table.Filter
	for i := 0; i < 16; i++ {
		f := table.Prop("N").Ne(int32(i))
		if i < 15 {
			fifteen = append(fifteen, f)
		}
		sixteen = append(sixteen, f)
	}
	if _, err := table.And(fifteen...).Build(); err != nil {
		t.Fatalf("15 comparisons: %v", err)
	}
	tests := []struct {
		name string
		f    table.Filter
		rule error
	}{
		{"16 comparisons", table.And(sixteen...), table.ErrBadFilter},
		{"bad property name", table.Prop("Manager Rating").Eq("x"), keys.ErrInvalidName},
		{"unsupported literal", table.Prop("X").Eq(struct{}{}), table.ErrBadFilter},
		{"uint64 literal", table.Prop("X").Eq(uint64(1)), table.ErrBadFilter},
		{"nil literal", table.Prop("X").Eq(nil), table.ErrBadFilter},
		{"NaN", table.Prop("X").Eq(math.NaN()), table.ErrBadFilter},
		{"+Inf", table.Prop("X").Gt(math.Inf(1)), table.ErrBadFilter},
		{"-Inf", table.Prop("X").Lt(math.Inf(-1)), table.ErrBadFilter},
		{"float32 +Inf", table.Prop("X").Eq(float32(math.Inf(1))), table.ErrBadFilter},
		{"invalid UTF-8", table.Prop("X").Eq("\xff"), table.ErrBadFilter},
		{"datetime out of range", table.Prop("X").Eq(time.Time{}), table.ErrBadFilter},
		{"error survives combination", table.Or(table.Prop("PartitionKey").Eq("p"), table.Not(table.Prop("1x").Eq("y"))), keys.ErrInvalidName},
	}
	for _, tc := range tests {
		_, err := tc.f.Build()
		if !errors.Is(err, tc.rule) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.rule)
		}
		if !strings.HasPrefix(tc.f.String(), "invalid filter: ") {
			t.Errorf("%s: String() = %q", tc.name, tc.f.String())
		}
	}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		f    table.Filter
		want table.QueryKind
	}{
		{table.Partition("Sales").And(table.Prop("RowKey").Eq("000123")), table.PointQuery},
		{table.Partition("Sales").And(table.Prop("RowKey").Ge("a"), table.Prop("RowKey").Le("b")), table.RangeQuery},
		{table.RowPrefix("Sales", "empid_"), table.RangeQuery},
		{table.Partition("Sales").And(table.Prop("Age").Gt(30)), table.PartitionScan},
		{table.Partition("Sales"), table.PartitionScan},
		{table.Prop("LastName").Eq("Jones"), table.TableScan},
		{table.Prop("RowKey").Eq("000123"), table.TableScan},
		{table.Or(table.Partition("Sales"), table.Partition("Marketing")), table.TableScan},
		{table.Prop("PartitionKey").Ge("A").And(table.Prop("PartitionKey").Lt("B")), table.TableScan},
		{table.Filter{}, table.TableScan},
	}
	for _, tc := range tests {
		if got := tc.f.Kind(); got != tc.want {
			t.Errorf("Classify(%s) = %v, want %v", tc.f, got, tc.want)
		}
	}
	if table.TableScan.String() != "table scan" {
		t.Fatal(table.TableScan.String())
	}
}
