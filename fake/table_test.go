package fake_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/fake"
)

func newTable(t *testing.T, opts *fake.TableServiceOptions) (*fake.TableService, *aztables.Client) {
	t.Helper()
	svc := fake.NewTableService(opts)
	c := svc.NewClient("tbl", nil)
	if _, err := c.CreateTable(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	return svc, c
}

func code(t *testing.T, err error) (int, string) {
	t.Helper()
	var re *azcore.ResponseError
	if !errors.As(err, &re) {
		t.Fatalf("not a ResponseError: %v", err)
	}
	return re.StatusCode, re.ErrorCode
}

func entity(pk, rk string, extra string) []byte {
	b := fmt.Sprintf(`{"PartitionKey":%q,"RowKey":%q`, pk, rk)
	if extra != "" {
		b += "," + extra
	}
	return []byte(b + "}")
}

func TestServiceLimitsAzuriteDoesNotEnforce(t *testing.T) {
	_, c := newTable(t, nil)
	ctx := t.Context()
	var props []string
	for i := 0; i < 253; i++ {
		props = append(props, fmt.Sprintf(`"P%d":1`, i))
	}
	big := `"S0":"` + strings.Repeat("x", 32*1024) + `"`
	for i := 1; i < 17; i++ {
		big += fmt.Sprintf(`,"S%d":"%s"`, i, strings.Repeat("x", 32*1024))
	}
	cases := []struct {
		name   string
		body   []byte
		status int
		code   string
	}{
		{"253 properties", entity("p", "1", strings.Join(props, ",")), 400, "TooManyProperties"},
		{"entity over 1 MiB", entity("p", "2", big), 400, "EntityTooLarge"},
		{"bad property name", entity("p", "3", `"bad name":1`), 400, "PropertyNameInvalid"},
		{"long property name", entity("p", "4", `"`+strings.Repeat("n", 256)+`":1`), 400, "PropertyNameTooLong"},
		{"string over 32K", entity("p", "5", `"S":"`+strings.Repeat("x", 32*1024+1)+`"`), 400, "PropertyValueTooLarge"},
		{"bad Int64", entity("p", "6", `"N@odata.type":"Edm.Int64","N":"x"`), 400, "InvalidInput"},
		{"DateTime before 1601", entity("p", "7", `"T@odata.type":"Edm.DateTime","T":"1600-01-01T00:00:00Z"`), 400, "InvalidInput"},
		{"bad key character", entity("p/q", "8", ""), 400, "OutOfRangeInput"},
		{"key over 1 KiB", entity("p", strings.Repeat("k", 513), ""), 400, "KeyValueTooLarge"},
	}
	for _, tc := range cases {
		_, err := c.AddEntity(ctx, tc.body, nil)
		if st, cd := code(t, err); st != tc.status || cd != tc.code {
			t.Errorf("%s: %d %s, want %d %s", tc.name, st, cd, tc.status, tc.code)
		}
	}
	var cmps []string
	for i := 0; i < 16; i++ {
		cmps = append(cmps, fmt.Sprintf("(N ne %d)", i))
	}
	f := strings.Join(cmps, " and ")
	_, err := c.NewListEntitiesPager(&aztables.ListEntitiesOptions{Filter: &f}).NextPage(ctx)
	if st, cd := code(t, err); st != 400 || cd != "InvalidInput" {
		t.Errorf("16 comparisons: %d %s", st, cd)
	}
	_, err = c.NewListEntitiesPager(&aztables.ListEntitiesOptions{Top: to.Ptr(int32(0))}).NextPage(ctx)
	if st, _ := code(t, err); st != 400 {
		t.Errorf("$top=0: %d", st)
	}
}

// batchError parses what the SDK returns for a failed transaction.
func batchError(t *testing.T, err error) (index int, status int, errCode string) {
	t.Helper()
	var re *azcore.ResponseError
	if !errors.As(err, &re) || re.StatusCode != http.StatusAccepted || re.ErrorCode != "" {
		t.Fatalf("want the SDK's 202 ResponseError with no code, got %v", err)
	}
	body, _ := runtime.Payload(re.RawResponse)
	s := string(body)
	i := strings.Index(s, "HTTP/1.1 ")
	fmt.Sscanf(s[i+len("HTTP/1.1 "):], "%d", &status)
	j := strings.Index(s, "{")
	var e struct {
		Err struct {
			Code    string `json:"code"`
			Message struct {
				Value string `json:"value"`
			} `json:"message"`
		} `json:"odata.error"`
	}
	if err := json.Unmarshal([]byte(s[j:strings.LastIndex(s, "}")+1]), &e); err != nil {
		t.Fatalf("inner body: %v\n%s", err, s)
	}
	fmt.Sscanf(e.Err.Message.Value, "%d:", &index)
	return index, status, e.Err.Code
}

func adds(pk string, n int) []aztables.TransactionAction {
	var a []aztables.TransactionAction
	for i := 0; i < n; i++ {
		a = append(a, aztables.TransactionAction{ActionType: aztables.TransactionTypeAdd, Entity: entity(pk, fmt.Sprint(i), "")})
	}
	return a
}

func TestTransactions(t *testing.T) {
	svc, c := newTable(t, nil)
	ctx := t.Context()

	mixed := append(adds("a", 3), aztables.TransactionAction{ActionType: aztables.TransactionTypeAdd, Entity: entity("b", "x", "")})
	_, err := c.SubmitTransaction(ctx, mixed, nil)
	if i, st, cd := batchError(t, err); i != 3 || st != 400 || cd != "CommandsInBatchActOnDifferentPartitions" {
		t.Errorf("mixed partitions: %d %d %s", i, st, cd)
	}
	_, err = c.SubmitTransaction(ctx, adds("a", 101), nil)
	if _, st, cd := batchError(t, err); st != 400 || cd != "InvalidInput" {
		t.Errorf("101 operations: %d %s", st, cd)
	}
	dup := append(adds("a", 2), aztables.TransactionAction{ActionType: aztables.TransactionTypeInsertMerge, Entity: entity("a", "1", "")})
	_, err = c.SubmitTransaction(ctx, dup, nil)
	if i, st, cd := batchError(t, err); i != 2 || st != 400 || cd != "InvalidDuplicateRow" {
		t.Errorf("duplicate RowKey: %d %d %s", i, st, cd)
	}
	if svc.Len("tbl") != 0 {
		t.Fatal("a refused transaction wrote something")
	}

	// Atomic: the 100th operation fails, nothing of the other 99 persists.
	if _, err := c.AddEntity(ctx, entity("a", "99", ""), nil); err != nil {
		t.Fatal(err)
	}
	_, err = c.SubmitTransaction(ctx, adds("a", 100), nil)
	if i, st, cd := batchError(t, err); i != 99 || st != 409 || cd != "EntityAlreadyExists" {
		t.Errorf("conflict at 99: %d %d %s", i, st, cd)
	}
	if svc.Len("tbl") != 1 {
		t.Fatalf("failed transaction left %d entities", svc.Len("tbl"))
	}

	// Success: every operation's ETag is in the captured multipart body.
	var raw *http.Response
	ok := adds("z", 3)
	if _, err := c.SubmitTransaction(policy.WithCaptureResponse(ctx, &raw), ok, nil); err != nil {
		t.Fatal(err)
	}
	body, _ := runtime.Payload(raw)
	if n := strings.Count(string(body), "ETag: W/"); n != 3 {
		t.Fatalf("%d ETags in the batch response:\n%s", n, body)
	}
	// Update without If-Match is an upsert in a batch (the SDK's behaviour).
	up := []aztables.TransactionAction{{ActionType: aztables.TransactionTypeUpdateReplace, Entity: entity("z", "new", "")}}
	if _, err := c.SubmitTransaction(ctx, up, nil); err != nil {
		t.Fatal(err)
	}
	star := azcore.ETagAny
	up = []aztables.TransactionAction{{ActionType: aztables.TransactionTypeUpdateReplace, Entity: entity("z", "newer", ""), IfMatch: &star}}
	_, err = c.SubmitTransaction(ctx, up, nil)
	if i, st, _ := batchError(t, err); i != 0 || st != 404 {
		t.Errorf("update-only with *: %d %d", i, st)
	}
}

func TestETagsIncreaseWithAFrozenClock(t *testing.T) {
	at := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	_, c := newTable(t, &fake.TableServiceOptions{Now: func() time.Time { return at }})
	// Every write gets a new ETag, 100 ns after the last on a frozen
	// clock. The service writes the time without trailing zeros, so the
	// ETags are unique but do not sort as strings: code must only compare
	// them for equality.
	var last string
	seen := map[string]bool{}
	for i := 0; i < 5; i++ {
		resp, err := c.UpsertEntity(t.Context(), entity("p", "r", ""), nil)
		if err != nil {
			t.Fatal(err)
		}
		if seen[string(resp.ETag)] {
			t.Fatalf("ETag %s given twice", resp.ETag)
		}
		seen[string(resp.ETag)] = true
		last = string(resp.ETag)
	}
	if last != `W/"datetime'2026-11-21T10%3A00%3A00.0000004Z'"` {
		t.Fatalf("ETag = %s", last)
	}
}

func TestDeletedTableWindowAndNames(t *testing.T) {
	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	svc := fake.NewTableService(&fake.TableServiceOptions{Now: clock, DeletedTableWindow: time.Minute})
	sc := svc.NewServiceClient(nil)
	ctx := t.Context()
	if _, err := sc.CreateTable(ctx, "Logins20261121", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := sc.CreateTable(ctx, "logins20261121", nil); err == nil {
		t.Fatal("table names are case-insensitive")
	}
	if _, err := sc.DeleteTable(ctx, "Logins20261121", nil); err != nil {
		t.Fatal(err)
	}
	_, err := sc.CreateTable(ctx, "Logins20261121", nil)
	if st, cd := code(t, err); st != 409 || cd != "TableBeingDeleted" {
		t.Fatalf("recreate at once: %d %s", st, cd)
	}
	mu.Lock()
	now = now.Add(time.Minute)
	mu.Unlock()
	if _, err := sc.CreateTable(ctx, "Logins20261121", nil); err != nil {
		t.Fatalf("recreate after the window: %v", err)
	}
	if _, err := sc.CreateTable(ctx, "bad-name", nil); err == nil {
		t.Fatal("bad table name accepted")
	}
	if _, err := sc.DeleteTable(ctx, "Missing", nil); err == nil {
		t.Fatal("deleting a missing table succeeded")
	}
	for i := 0; i < 3; i++ {
		if _, err := sc.CreateTable(ctx, fmt.Sprintf("Extra%d", i), nil); err != nil {
			t.Fatal(err)
		}
	}
	var names []string
	pager := sc.NewListTablesPager(&aztables.ListTablesOptions{Top: to.Ptr(int32(2))})
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, tp := range page.Tables {
			names = append(names, *tp.Name)
		}
	}
	if strings.Join(names, ",") != "Extra0,Extra1,Extra2,Logins20261121" {
		t.Fatalf("tables = %q", names)
	}
	f := "TableName ge 'Extra1' and TableName lt 'Extra9'"
	page, err := sc.NewListTablesPager(&aztables.ListTablesOptions{Filter: &f}).NextPage(ctx)
	if err != nil || len(page.Tables) != 2 {
		t.Fatalf("filtered tables: %v %v", page.Tables, err)
	}
}

func TestFaultsAndCounters(t *testing.T) {
	svc, c := newTable(t, nil)
	ctx := t.Context()
	svc.ResetCounts()
	svc.FailNext(fake.OpInsertEntity, 2, http.StatusConflict, "EntityAlreadyExists")
	for i := 0; i < 2; i++ {
		if _, err := c.AddEntity(ctx, entity("p", "r", ""), nil); err == nil {
			t.Fatal("fault not injected")
		}
	}
	if _, err := c.AddEntity(ctx, entity("p", "r", ""), nil); err != nil {
		t.Fatalf("third add: %v", err)
	}
	// 503 is retried by the SDK's policy: the fake sees every try.
	svc.FailNext(fake.OpGetEntity, 2, http.StatusServiceUnavailable, "ServerBusy")
	if _, err := c.GetEntity(ctx, "p", "r", nil); err != nil {
		t.Fatalf("get after two 503s: %v", err)
	}
	if svc.Count(fake.OpInsertEntity) != 3 || svc.Count(fake.OpGetEntity) != 3 || svc.Total() != 6 {
		t.Fatalf("counts = %v", svc.Counts())
	}
	if svc.Len("tbl") != 1 || svc.Len("missing") != 0 {
		t.Fatal("Len")
	}
}

func TestFailNextAfter(t *testing.T) {
	svc, c := newTable(t, nil)
	svc.FailNextAfter(fake.OpInsertEntity, 2, 1, http.StatusConflict, "EntityAlreadyExists")
	var errs []bool
	for i := 0; i < 4; i++ {
		_, err := c.AddEntity(t.Context(), entity("p", fmt.Sprint(i), ""), nil)
		errs = append(errs, err != nil)
	}
	if fmt.Sprint(errs) != "[false false true false]" {
		t.Fatalf("failures = %v", errs)
	}
}

// fill adds n entities per partition in pks, 100 per transaction.
func fill(t *testing.T, c *aztables.Client, pks []string, n int, extra func(i int) string) {
	t.Helper()
	for _, pk := range pks {
		for from := 0; from < n; from += 100 {
			var actions []aztables.TransactionAction
			for i := from; i < min(from+100, n); i++ {
				actions = append(actions, aztables.TransactionAction{ActionType: aztables.TransactionTypeAdd, Entity: entity(pk, fmt.Sprintf("%06d", i), extra(i))})
			}
			if _, err := c.SubmitTransaction(t.Context(), actions, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// pageSizes queries c with filter to the end and returns each page's size
// and whether it carried a continuation token.
func pageSizes(t *testing.T, c *aztables.Client, filter string) (sizes []int, tokens []bool) {
	t.Helper()
	var opts *aztables.ListEntitiesOptions
	if filter != "" {
		opts = &aztables.ListEntitiesOptions{Filter: &filter}
	}
	pager := c.NewListEntitiesPager(opts)
	for pager.More() {
		page, err := pager.NextPage(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, len(page.Entities))
		tokens = append(tokens, page.NextPartitionKey != nil)
		if len(sizes) > 50 {
			t.Fatal("paging does not end")
		}
	}
	return sizes, tokens
}

func noExtra(int) string { return "" }

// The default pages as the service does: a page ends after 1,000
// entities and where a partition ends in a query that spans partitions,
// and nothing else cuts it.
func TestServicePagingIsTheDefault(t *testing.T) {
	svc, c := newTable(t, nil)
	fill(t, c, []string{"a", "b"}, 1200, noExtra)
	sizes, tokens := pageSizes(t, c, "")
	if want := []int{1000, 200, 1000, 200}; !slices.Equal(sizes, want) {
		t.Fatalf("pages %v, want %v", sizes, want)
	}
	if want := []bool{true, true, true, false}; !slices.Equal(tokens, want) {
		t.Fatalf("tokens %v, want %v", tokens, want)
	}
	// The adversarial mode, for one table at run time: every third
	// response of the table (the 6th and the 9th here) is empty but
	// carries a token.
	svc.SetPaging("TBL", fake.Paging{EmptyPageEvery: 3})
	sizes, tokens = pageSizes(t, c, "")
	if want := []int{1000, 0, 200, 1000, 0, 200}; !slices.Equal(sizes, want) {
		t.Fatalf("adversarial pages %v, want %v", sizes, want)
	}
	if want := []bool{true, true, true, true, true, false}; !slices.Equal(tokens, want) {
		t.Fatalf("adversarial tokens %v, want %v", tokens, want)
	}
	// The friendly mode: pages of 1,000.
	svc.SetPaging("TBL", fake.Paging{AcrossPartitions: true})
	if sizes, _ := pageSizes(t, c, ""); !slices.Equal(sizes, []int{1000, 1000, 400}) {
		t.Fatalf("friendly pages %v", sizes)
	}
	// A table the choice does not name keeps the service's default.
	other := svc.NewClient("other", nil)
	if _, err := other.CreateTable(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	fill(t, other, []string{"a", "b"}, 3, noExtra)
	if sizes, _ := pageSizes(t, other, ""); !slices.Equal(sizes, []int{3, 3}) {
		t.Fatalf("other table's pages %v, want one per partition", sizes)
	}
}

// A point query and a query of one partition are one request each on the
// service's paging, however large the table and however many queries
// came before: the service seeks the key range by its index and reads
// nothing else, so no scan budget is spent on other partitions.
func TestPointAndPartitionQueriesAreOneRequest(t *testing.T) {
	svc, c := newTable(t, nil)
	fill(t, c, []string{"a", "b", "c", "d", "e", "f", "g"}, 1000, noExtra)
	for range 5 {
		for _, q := range []struct {
			filter string
			n      int
		}{
			{"PartitionKey eq 'g' and RowKey eq '000007'", 1},
			{"RowKey eq '000007' and PartitionKey eq 'a'", 1},
			{"PartitionKey eq 'g' and RowKey ge '000990'", 10},
			{"PartitionKey eq 'd'", 1000},
		} {
			before := svc.Count(fake.OpQueryEntities)
			sizes, tokens := pageSizes(t, c, q.filter)
			if !slices.Equal(sizes, []int{q.n}) || tokens[0] {
				t.Fatalf("%s: pages %v tokens %v, want one page of %d without a token", q.filter, sizes, tokens, q.n)
			}
			if got := svc.Count(fake.OpQueryEntities) - before; got != 1 {
				t.Fatalf("%s: %d requests, want 1", q.filter, got)
			}
		}
		// The guide's log tail: $top=10 in one partition, one request
		// holding ten entities.
		top := int32(10)
		f := "PartitionKey eq 'c'"
		page, err := c.NewListEntitiesPager(&aztables.ListEntitiesOptions{Filter: &f, Top: &top}).NextPage(t.Context())
		if err != nil || len(page.Entities) != 10 {
			t.Fatalf("$top=10 in one partition: %d entities, %v; want 10", len(page.Entities), err)
		}
	}
	// Under the adversarial mode the same point query may take two.
	svc.SetPaging("tbl", fake.Paging{EmptyPageEvery: 3})
	total := 0
	for range 3 {
		before := svc.Count(fake.OpQueryEntities)
		sizes, _ := pageSizes(t, c, "PartitionKey eq 'g' and RowKey eq '000007'")
		total += svc.Count(fake.OpQueryEntities) - before
		if n := sizes[len(sizes)-1]; n != 1 {
			t.Fatalf("adversarial point query: pages %v", sizes)
		}
	}
	if total != 4 {
		t.Fatalf("three adversarial point queries took %d requests, want 4 (one empty page with a token)", total)
	}
}

// The 5-second budget of one response: examining an entity costs
// Paging.ScanCost, and the fake's clock counts too; a page that runs out
// ends, empty if nothing matched yet, with a token where it stopped.
func TestPagingScanBudget(t *testing.T) {
	t.Run("examined entities cost ScanCost", func(t *testing.T) {
		_, c := newTable(t, &fake.TableServiceOptions{Paging: &fake.Paging{AcrossPartitions: true, ScanCost: 5 * time.Millisecond}})
		fill(t, c, []string{"a"}, 1200, func(i int) string { return fmt.Sprintf(`"N":%d`, i) })
		// 5 s at 5 ms an entity: 1,000 examined; the one match is after.
		sizes, tokens := pageSizes(t, c, "N eq 1199")
		if !slices.Equal(sizes, []int{0, 1}) || !slices.Equal(tokens, []bool{true, false}) {
			t.Fatalf("pages %v tokens %v, want an empty page with a token, then the match", sizes, tokens)
		}
		// Every entity matches: the page of 1,000 is full as its budget ends.
		if sizes, _ := pageSizes(t, c, ""); !slices.Equal(sizes, []int{1000, 200}) {
			t.Fatalf("pages %v", sizes)
		}
	})
	t.Run("a key range examines only its keys", func(t *testing.T) {
		// Three partitions of 1,200; 5 s at 5 ms an entity is 1,000
		// examined. The service reads a query's PartitionKey and RowKey
		// bounds from its chain of ands and scans only between them, so
		// no page below runs out of budget before its first match or
		// after its last.
		_, c := newTable(t, &fake.TableServiceOptions{Paging: &fake.Paging{AcrossPartitions: true, ScanCost: 5 * time.Millisecond}})
		fill(t, c, []string{"a", "b", "c"}, 1200, noExtra)
		for _, q := range []struct {
			filter string
			sizes  []int
			tokens []bool
		}{
			{"PartitionKey eq 'b' and RowKey ge '001100'", []int{100}, []bool{false}},
			{"PartitionKey eq 'b' and RowKey gt '001100'", []int{99}, []bool{false}},
			{"PartitionKey eq 'b' and RowKey lt '000100'", []int{100}, []bool{false}},
			{"PartitionKey eq 'b' and RowKey le '000100' and RowKey ge '000050'", []int{51}, []bool{false}},
			{"PartitionKey gt 'a' and PartitionKey lt 'c'", []int{1000, 200}, []bool{true, false}},
			{"PartitionKey ge 'b' and PartitionKey le 'b' and RowKey ge '001150'", []int{50}, []bool{false}},
			{"PartitionKey lt 'b'", []int{1000, 200}, []bool{true, false}},
			{"PartitionKey gt 'b'", []int{1000, 200}, []bool{true, false}},
			{"(PartitionKey eq 'b' and RowKey gt '001150') or PartitionKey eq 'c'", nil, nil}, // no bounds: a scan
		} {
			sizes, tokens := pageSizes(t, c, q.filter)
			if q.sizes == nil {
				total := 0
				for _, n := range sizes {
					total += n
				}
				if total != 49+1200 {
					t.Errorf("%s: %d entities in pages %v, want %d", q.filter, total, sizes, 49+1200)
				}
				continue
			}
			if !slices.Equal(sizes, q.sizes) || !slices.Equal(tokens, q.tokens) {
				t.Errorf("%s: pages %v tokens %v, want %v %v", q.filter, sizes, tokens, q.sizes, q.tokens)
			}
		}
	})
	t.Run("the clock", func(t *testing.T) {
		// A clock that moves 1 s whenever it is read: the budget is gone
		// after a few entities, yet the query still ends with them all.
		var mu sync.Mutex
		now := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
		clock := func() time.Time {
			mu.Lock()
			defer mu.Unlock()
			now = now.Add(time.Second)
			return now
		}
		_, c := newTable(t, &fake.TableServiceOptions{Now: clock, Paging: &fake.Paging{}})
		fill(t, c, []string{"a"}, 12, noExtra)
		sizes, _ := pageSizes(t, c, "")
		total := 0
		for _, n := range sizes {
			total += n
			if n > 5 {
				t.Fatalf("a page of %d entities took over 5 s on the clock: %v", n, sizes)
			}
		}
		if total != 12 || len(sizes) < 3 {
			t.Fatalf("pages %v", sizes)
		}
	})
}

// SetPaging while queries run: the race detector checks the locking.
func TestSetPagingConcurrently(t *testing.T) {
	svc, c := newTable(t, nil)
	fill(t, c, []string{"a", "b", "c"}, 10, noExtra)
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				if i%2 == g%2 {
					svc.SetPaging("tbl", fake.Paging{AcrossPartitions: true})
				} else {
					svc.SetPaging("tbl", fake.Paging{EmptyPageEvery: 3})
				}
				n := 0
				pager := c.NewListEntitiesPager(nil)
				for pager.More() {
					page, err := pager.NextPage(t.Context())
					if err != nil {
						t.Error(err)
						return
					}
					n += len(page.Entities)
				}
				if n != 30 {
					t.Errorf("read %d entities, want 30", n)
				}
			}
		}()
	}
	wg.Wait()
}

// A query's key bounds only narrow the scan: over random chains of key
// comparisons, the answer equals the one the same filter gets when an or
// at its top leaves it no bounds (a scan of the whole table).
func TestKeyBoundsAnswerAsAScan(t *testing.T) {
	_, c := newTable(t, &fake.TableServiceOptions{Paging: &fake.Paging{PageSize: 7}})
	pks := []string{"", "a", "a!", "ab", "b", "b~"}
	fill(t, c, pks, 12, noExtra)
	rng := rand.New(rand.NewPCG(1, 2))
	keys := func(prop string) string {
		if prop == "PartitionKey" {
			return pks[rng.IntN(len(pks))] + []string{"", "", "a", " "}[rng.IntN(4)]
		}
		return fmt.Sprintf("%06d", rng.IntN(14)) + []string{"", "", "5"}[rng.IntN(3)]
	}
	ops := []string{"eq", "ne", "gt", "ge", "lt", "le"}
	for i := 0; i < 300; i++ {
		var cmps []string
		for range 1 + rng.IntN(4) {
			prop := []string{"PartitionKey", "RowKey"}[rng.IntN(2)]
			cmps = append(cmps, fmt.Sprintf("%s %s '%s'", prop, ops[rng.IntN(len(ops))], keys(prop)))
		}
		filter := strings.Join(cmps, " and ")
		got, want := allKeys(t, c, filter), allKeys(t, c, "("+filter+") or PartitionKey eq 'none'")
		if !slices.Equal(got, want) {
			t.Fatalf("%s:\n got %v\nwant %v", filter, got, want)
		}
	}
}

// allKeys queries c with filter to the end and lists the keys it returns.
func allKeys(t *testing.T, c *aztables.Client, filter string) []string {
	t.Helper()
	var out []string
	pager := c.NewListEntitiesPager(&aztables.ListEntitiesOptions{Filter: &filter})
	for pager.More() {
		page, err := pager.NextPage(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range page.Entities {
			var e struct{ PartitionKey, RowKey string }
			if err := json.Unmarshal(b, &e); err != nil {
				t.Fatal(err)
			}
			out = append(out, e.PartitionKey+"/"+e.RowKey)
		}
	}
	return out
}
