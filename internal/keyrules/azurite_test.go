package keyrules_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	keys "github.com/tablekit/tablekit/internal/keyrules"
	"github.com/tablekit/tablekit/internal/testenv"
)

// TestServiceOrderMatchesEncoders writes entities whose RowKeys come from the
// encoders in shuffled order, lists them back, and checks that the service
// returns them in exactly the order the encoders intend.
func TestServiceOrderMatchesEncoders(t *testing.T) {
	client := testenv.NewTable(t, "keysorder")
	ctx := t.Context()

	type sample struct{ pk, rk string }
	var want []sample
	add := func(pk string, rks []string) {
		for _, rk := range rks {
			want = append(want, sample{pk, rk})
		}
	}

	ints := []int64{math.MinInt64, -1e12, -10, -9, -1, 0, 1, 9, 10, 1e12, math.MaxInt64}
	var rks []string
	for _, n := range ints {
		rks = append(rks, keys.Int64(n))
	}
	add("int64", rks)

	rks = nil
	for i := len(ints) - 1; i >= 0; i-- {
		rks = append(rks, keys.DescInt64(ints[i]))
	}
	add("descint64", rks)

	base := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	rks = nil
	for _, d := range []time.Duration{time.Hour, time.Second, 100, 0, -100, -time.Hour, -24 * 365 * time.Hour} {
		rks = append(rks, keys.InvertedTicks(base.Add(d)))
	}
	add("inverted", rks)

	tuples := [][]string{{"", ""}, {"", "a"}, {" "}, {"#"}, {"#", "z"}, {"."}, {"/"}, {"0"}, {"?"}, {"A"}, {"\\"}, {"a"}, {"a", "b"}, {"a\x00"}, {"ab"}, {"~"}, {"é"}, {"😀"}}
	rks = nil
	for _, tup := range tuples {
		k, err := keys.EncodeTuple(tup...)
		if err != nil {
			t.Fatal(err)
		}
		rks = append(rks, k)
	}
	add("tuple", rks)

	// Characters where UTF-16 order differs from code point order: the
	// service, like keys.Compare, puts U+10000 before U+E000.
	unicodeKeys := []string{"a", "z", "é", "\ud7ff", "\U00010000", "\U0001F600", "\U0010FFFF", "\ue000", "\uffef"}
	add("utf16", unicodeKeys)

	order := rand.Perm(len(want))
	for _, i := range order {
		s := want[i]
		e := aztables.EDMEntity{Entity: aztables.Entity{PartitionKey: s.pk, RowKey: s.rk}}
		body, err := e.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := client.AddEntity(ctx, body, nil); err != nil {
			t.Fatalf("add %q/%q: %v", s.pk, s.rk, err)
		}
	}

	var got []sample
	pager := client.NewListEntitiesPager(&aztables.ListEntitiesOptions{Select: to.Ptr("PartitionKey,RowKey")})
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, raw := range page.Entities {
			var e aztables.EDMEntity
			if err := e.UnmarshalJSON(raw); err != nil {
				t.Fatal(err)
			}
			got = append(got, sample{e.PartitionKey, e.RowKey})
		}
	}
	slices.SortStableFunc(want, func(a, b sample) int { return strings.Compare(a.pk, b.pk) }) // partitions are ASCII
	if !slices.Equal(got, want) {
		t.Fatalf("service order differs from encoder order:\n got %q\nwant %q", got, want)
	}
	// keys.Compare is the service's order.
	for i := 1; i < len(got); i++ {
		if got[i].pk == got[i-1].pk && keys.Compare(got[i-1].rk, got[i].rk) >= 0 {
			t.Fatalf("keys.Compare disagrees with the service on %q < %q", got[i-1].rk, got[i].rk)
		}
	}
}

// TestServiceAcceptsValidKeysAndPrefixRanges writes keys at the edges of
// what validation accepts and reads each prefix range back with a filter.
func TestServiceAcceptsValidKeysAndPrefixRanges(t *testing.T) {
	client := testenv.NewTable(t, "keysvalid")
	ctx := t.Context()
	edge := []string{
		"",
		strings.Repeat("x", keys.MaxKeyUTF16),
		strings.Repeat("😀", keys.MaxKeyUTF16/2),
		"\u00a0 spaces and 'quotes' \"double\" & <tags> %20 *+,;=@",
		"empid_000123", "empid_000152", "empid_000223", "empie", "empid`",
		"x\uffff", "y", "x\U0001F7FF", "x\U0001F800", "x\ud7ff", "x\U00010000",
	}
	for _, k := range edge {
		if err := keys.ValidateRowKey(k); err != nil {
			t.Fatalf("validation refused %q: %v", k, err)
		}
		if err := keys.ValidatePartitionKey(k); err != nil {
			t.Fatalf("validation refused %q: %v", k, err)
		}
		body, _ := (aztables.EDMEntity{Entity: aztables.Entity{PartitionKey: "p", RowKey: k}}).MarshalJSON()
		if _, err := client.AddEntity(ctx, body, nil); err != nil {
			t.Fatalf("service refused RowKey %q that validation accepted: %v", k, err)
		}
	}
	body, _ := (aztables.EDMEntity{Entity: aztables.Entity{PartitionKey: strings.Repeat("p", keys.MaxKeyUTF16), RowKey: "r"}}).MarshalJSON()
	if _, err := client.AddEntity(ctx, body, nil); err != nil {
		t.Fatalf("service refused a maximal PartitionKey: %v", err)
	}

	for _, p := range []string{"empid_", "x\U0001F7FF", "x\ud7ff", "x", "empid"} {
		lo, hi := keys.PrefixRange(p)
		filter := fmt.Sprintf("PartitionKey eq 'p' and RowKey ge '%s'", strings.ReplaceAll(lo, "'", "''"))
		if hi != "" {
			filter += fmt.Sprintf(" and RowKey lt '%s'", strings.ReplaceAll(hi, "'", "''"))
		}
		var got []string
		pager := client.NewListEntitiesPager(&aztables.ListEntitiesOptions{Filter: &filter})
		for pager.More() {
			page, err := pager.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, raw := range page.Entities {
				var e aztables.EDMEntity
				_ = e.UnmarshalJSON(raw)
				got = append(got, e.RowKey)
			}
		}
		var want []string
		for _, k := range edge {
			if strings.HasPrefix(k, p) {
				want = append(want, k)
			}
		}
		slices.SortFunc(want, keys.Compare)
		if !slices.Equal(got, want) {
			t.Errorf("prefix %q range [%q, %q): got %q, want %q", p, lo, hi, got, want)
		}
	}
}
