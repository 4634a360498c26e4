package fake

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit/internal/keyrules"
)

// keyedRowKeys are RowKeys for the lookup tests: an empty one, a quote,
// and characters whose service order differs from Go's (above U+FFFF
// before U+E000-U+FFFF).
var keyedRowKeys = []string{"", "'", "a", "a'b", "b", "\uE000", "\U0001F600", "z"}

// keyedKey is a random RowKey, of the stored ones or near them.
func keyedKey(rng *rand.Rand, stored []string) string {
	if len(stored) > 0 && rng.IntN(3) > 0 {
		return stored[rng.IntN(len(stored))]
	}
	k := keyedRowKeys[rng.IntN(len(keyedRowKeys))]
	for range rng.IntN(3) {
		k += fmt.Sprint(rng.IntN(50))
	}
	return k
}

// quote is s as a filter's string literal.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// batchedRead is a random filter of a batched read's shape: one
// PartitionKey eq and RowKey eqs joined by or (1 to 14 of them, repeats
// allowed), either side of the and, the ors nested at random.
func batchedRead(rng *rand.Rand, pk string, stored []string) string {
	n := 1 + rng.IntN(14)
	terms := make([]string, n)
	for i := range terms {
		terms[i] = "RowKey eq " + quote(keyedKey(rng, stored))
	}
	for len(terms) > 1 && rng.IntN(3) == 0 {
		i := rng.IntN(len(terms) - 1)
		terms = append(terms[:i], append([]string{"(" + terms[i] + " or " + terms[i+1] + ")"}, terms[i+2:]...)...)
	}
	rks := strings.Join(terms, " or ")
	if n > 1 || rng.IntN(2) == 0 {
		rks = "(" + rks + ")"
	}
	if rng.IntN(2) == 0 {
		return "PartitionKey eq " + quote(pk) + " and " + rks
	}
	return rks + " and PartitionKey eq " + quote(pk)
}

// nearMiss is a filter one step from a batched read's shape, which the
// lookup must leave to the scan.
func nearMiss(rng *rand.Rand, pk string, stored []string) string {
	a, b := quote(keyedKey(rng, stored)), quote(keyedKey(rng, stored))
	p := quote(pk)
	misses := []string{
		"PartitionKey eq " + p + " and (RowKey eq " + a + " or RowKey eq " + b + ") and N ge 3",
		"PartitionKey eq " + p + " and (RowKey eq " + a + " or RowKey eq " + b + ") and RowKey eq " + a,
		"PartitionKey eq " + p + " and (RowKey eq " + a + " or RowKey ge " + b + ")",
		"PartitionKey eq " + p + " and (RowKey eq " + a + " or RowKey ne " + b + ")",
		"PartitionKey eq " + p + " and (RowKey lt " + a + " or RowKey eq " + b + ")",
		"PartitionKey eq " + p + " and not (RowKey eq " + a + " or RowKey eq " + b + ")",
		"PartitionKey eq " + p + " and (RowKey eq " + a + " or N eq 3)",
		"PartitionKey eq " + p + " and (RowKey eq " + a + " or RowKey eq 3)",
		"PartitionKey eq " + p + " and (RowKey eq " + a + " or RowKey eq " + b + " and N lt 3)",
		"PartitionKey eq " + p + " or (RowKey eq " + a + " or RowKey eq " + b + ")",
		"PartitionKey ge " + p + " and (RowKey eq " + a + " or RowKey eq " + b + ")",
		"PartitionKey eq " + p + " and PartitionKey eq " + p + " and RowKey eq " + a,
	}
	return misses[rng.IntN(len(misses))]
}

// keyedPages is every page of a query of filter to svc's table t, each
// as its response's body and continuation, following the continuation
// from the first page.
func keyedPages(t testing.TB, svc *TableService, filter string, top int) []string {
	t.Helper()
	var pages []string
	var npk, nrk string
	for {
		q := url.Values{"$filter": {filter}}
		if top > 0 {
			q.Set("$top", fmt.Sprint(top))
		}
		if npk != "" || nrk != "" {
			q.Set("NextPartitionKey", npk)
			q.Set("NextRowKey", nrk)
		}
		req, err := http.NewRequest(http.MethodGet, tableURL+"t()?"+q.Encode(), nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Accept", "application/json;odata=minimalmetadata")
		resp, err := svc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %s", filter, resp.StatusCode, body)
		}
		npk, nrk = resp.Header.Get("X-Ms-Continuation-Nextpartitionkey"), resp.Header.Get("X-Ms-Continuation-Nextrowkey")
		pages = append(pages, fmt.Sprintf("%s next %q %q", body, npk, nrk))
		if npk == "" && nrk == "" {
			return pages
		}
		if len(pages) > 100_000 {
			t.Fatalf("%s: no end after %d pages", filter, len(pages))
		}
	}
}

// A batched read's filter (PartitionKey eq 'p' and (RowKey eq 'a' or
// …)) is answered by looking its RowKeys up, and the answer is the
// scan's, page by page: the entities, the continuation tokens, pages cut
// at $top, at the page size, at the server's budget (the entities a scan
// examines) and empty pages. Filters one step from that shape are left
// to the scan. The reference is the same service told to scan every
// query; the stored entities are shared, so the pages are byte for byte
// the same.
func TestBatchedReadLookupAnswersAsTheScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(43, 1))
	looked, missed := 0, 0
	for round := range 200 {
		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		clock := func() time.Time { return now }
		paging := Paging{
			PageSize:         []int{1, 2, 5, 1000}[rng.IntN(4)],
			AcrossPartitions: rng.IntN(2) == 0,
			EmptyPageEvery:   []int{0, 0, 2, 3}[rng.IntN(4)],
			ScanCost:         []time.Duration{-1, 0, 250 * time.Millisecond, time.Second, 5 * time.Second, 7 * time.Second}[rng.IntN(6)],
		}
		lookup := NewTableService(&TableServiceOptions{Now: clock, Paging: &paging})
		scan := NewTableService(&TableServiceOptions{Now: clock, Paging: &paging})
		scan.scanOnly = true
		td := &tableData{name: "t"}
		pks := []string{"p", "q", "r"}
		var stored []string
		n, big, filters := rng.IntN(40), round%20 == 0, 20
		if big {
			n, filters = 6000+rng.IntN(6000), 5 // partition p past the budget at 1 ms an entity
		}
		for i := range n {
			rk := keyedKey(rng, nil)
			if i%3 == 0 {
				rk = keyrules.Uint64(uint64(rng.IntN(3 * n)))
			}
			stored = append(stored, rk)
			pk := pks[rng.IntN(len(pks))]
			if big && i%10 > 0 {
				pk = "p"
			}
			td.rows.put(&entity{pk: pk, rk: rk, ts: now, etag: `W/"1"`})
		}
		lookup.tables["t"], scan.tables["t"] = td, td
		for range filters {
			pk := pks[rng.IntN(len(pks))]
			if big {
				pk = "p"
			}
			filter := batchedRead(rng, pk, stored)
			shaped := true
			if !big && rng.IntN(4) == 0 {
				filter, shaped = nearMiss(rng, pk, stored), false
			}
			e, err := parseFilter(filter)
			if err != nil {
				t.Fatalf("%s: %v", filter, err)
			}
			_, keys, ok := rowKeys(e)
			if ok != shaped {
				t.Fatalf("%s: looked up %v, want %v", filter, ok, shaped)
			}
			if ok {
				looked++
				// The keys looked up are what the filter matches.
				for _, p := range td.rows.order {
					for _, x := range p.rows {
						_, in := slices.BinarySearchFunc(keys, x.rk, keyrules.Compare)
						if got := e.eval(x.get); got != (in && x.pk == pk) {
							t.Fatalf("%s: matches (%q, %q) %v, the lookup %v", filter, x.pk, x.rk, got, !got)
						}
					}
				}
			} else {
				missed++
			}
			top := 0
			if rng.IntN(3) == 0 {
				top = 1 + rng.IntN(4)
			}
			// The services share the table, and with it the count of
			// pages served that places the empty ones: each starts at the same.
			pages := td.pages
			got := keyedPages(t, lookup, filter, top)
			td.pages = pages
			want := keyedPages(t, scan, filter, top)
			if len(got) != len(want) {
				t.Fatalf("round %d, %s, %+v, $top %d: %d pages, the scan's %d\n%q\n%q", round, filter, paging, top, len(got), len(want), got, want)
			}
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("round %d, %s, %+v, $top %d: page %d\n%s\nthe scan's\n%s", round, filter, paging, top, i, got[i], want[i])
				}
			}
		}
	}
	if looked < 1000 || missed < 500 {
		t.Fatalf("%d filters looked up, %d near misses: too few to compare", looked, missed)
	}
}

// keyedPage serves a SAS's key range as the scan does: the entities out
// of it are not on the page, and still count toward its budget and its
// continuation.
func TestKeyedPageKeepsAsTheScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(43, 2))
	for range 2000 {
		td := &tableData{name: "t"}
		var stored []string
		for range rng.IntN(60) {
			rk := keyedKey(rng, nil)
			stored = append(stored, rk)
			td.rows.put(&entity{pk: "p", rk: rk})
		}
		filter := batchedRead(rng, "p", stored)
		e, err := parseFilter(filter)
		if err != nil {
			t.Fatal(err)
		}
		_, keys, ok := rowKeys(e)
		if !ok {
			t.Fatalf("%s: not looked up", filter)
		}
		lo, hi := keyedKey(rng, stored), keyedKey(rng, stored)
		keep := func(x *entity) bool { return keyrules.Compare(x.rk, lo) >= 0 && keyrules.Compare(x.rk, hi) <= 0 }
		inRange := func(x *entity) bool { return x.pk == "p" }
		paging := Paging{PageSize: 1 + rng.IntN(4), ScanCost: []time.Duration{0, time.Second, 2 * time.Second}[rng.IntN(3)]}
		budgetGone := func(examined int) bool { return time.Duration(examined)*paging.ScanCost >= serverTimeBudget }
		from := ""
		for page := 0; ; page++ {
			empty := page%3 == 2
			gotPage, gotNext := td.rows.keyedPage("p", from, keys, paging.PageSize, empty, paging.ScanCost, func() bool { return false }, keep)
			wantPage, wantNext := td.scanPage(e, "p", from, inRange, paging, paging.PageSize, empty, budgetGone, keep)
			if !slices.Equal(gotPage, wantPage) || gotNext != wantNext {
				t.Fatalf("%s, kept [%q, %q], %+v, from %q: got %v next %v, the scan's %v next %v", filter, lo, hi, paging, from, gotPage, gotNext, wantPage, wantNext)
			}
			if gotNext == nil {
				break
			}
			from = gotNext.rk
		}
	}
}

// A batched read of 14 RowKeys at the front of a partition of 10,000
// entities (a partition at a million moves over 100 partitions), all its
// pages, with the service's paging: scanned, each page examines 5,000
// entities; looked up, it reads 14.
func BenchmarkBatchedRead(b *testing.B) {
	for _, scanOnly := range []bool{true, false} {
		b.Run(map[bool]string{true: "scan", false: "lookup"}[scanOnly], func(b *testing.B) {
			svc := NewTableService(nil)
			svc.scanOnly = scanOnly
			td := &tableData{name: "t"}
			for i := range 10_000 {
				td.rows.put(&entity{pk: "p", rk: keyrules.Uint64(uint64(i)), ts: time.Now(), etag: `W/"1"`})
			}
			svc.tables["t"] = td
			terms := make([]string, 14)
			for i := range terms {
				terms[i] = "RowKey eq " + quote(keyrules.Uint64(uint64(i)))
			}
			filter := "PartitionKey eq 'p' and (" + strings.Join(terms, " or ") + ")"
			var pages int
			for b.Loop() {
				pages = len(keyedPages(b, svc, filter, 0))
			}
			b.ReportMetric(float64(pages), "pages/op")
		})
	}
}
