package patterns

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/internal/reqcount"
	"github.com/tablekit/tablekit/internal/rowkind"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/table"
)

// The shared mechanics every index's Verify and Repair run: the partition
// scan, the report's ownership and options, what counts as an index row,
// the order of issues, and the packing of repair groups into transactions.

// coreTable is a fresh table on the fake, counted by c when it is not nil.
func coreTable(t *testing.T, c *reqcount.Counter) *aztables.Client {
	_, client := coreService(t, c)
	return client
}

func coreService(t *testing.T, c *reqcount.Counter) (*fake.TableService, *aztables.Client) {
	t.Helper()
	var opts *aztables.ClientOptions
	if c != nil {
		opts = c.TableOptions()
	}
	svc := fake.NewTableService(nil)
	client := svc.NewClient("core", opts)
	if _, err := client.CreateTable(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	return svc, client
}

func putRows(t *testing.T, raw *table.Table[table.Entity], pk string, n int) {
	t.Helper()
	var ops []batch.Op
	for i := range n {
		e := &table.Entity{Meta: table.Meta{PartitionKey: pk, RowKey: fmt.Sprintf("r%05d", i)}}
		e.Set("N", table.ValueOf(int64(int64(i))))
		ops = append(ops, batch.Upsert(e, aztables.UpdateModeReplace))
	}
	if _, err := batch.NewWriter(raw.Client(), nil).Write(t.Context(), slices.Values(ops), nil); err != nil {
		t.Fatal(err)
	}
}

type scanned struct {
	pk   string
	rows []string
}

func scanAll(t *testing.T, raw *table.Table[table.Entity], opts *VerifyOptions) ([]scanned, error) {
	t.Helper()
	var got []scanned
	err := scanPartitions(t.Context(), raw, opts, func(pk string, rows []*table.Entity) error {
		s := scanned{pk: pk}
		for _, e := range rows {
			if e.PartitionKey != pk {
				t.Errorf("partition %q handed a row of %q", pk, e.PartitionKey)
			}
			s.rows = append(s.rows, e.RowKey)
		}
		got = append(got, s)
		return nil
	})
	return got, err
}

// Each partition reaches the callback once, whole, in PartitionKey order,
// a partition of one row included; a Partition option scans that one only.
func TestScanPartitionsHandsEachPartitionOnceInOrder(t *testing.T) {
	raw := tableOf(table.New[table.Entity](coreTable(t, nil), nil))
	if got, err := scanAll(t, raw, nil); err != nil || len(got) != 0 {
		t.Fatalf("empty table: %v, %v; want no call", got, err)
	}
	putRows(t, raw, "a", 3)
	putRows(t, raw, "b", 1)
	putRows(t, raw, "c", 2)
	want := []scanned{{"a", []string{"r00000", "r00001", "r00002"}}, {"b", []string{"r00000"}}, {"c", []string{"r00000", "r00001"}}}
	for _, opts := range []*VerifyOptions{nil, {}, {Progress: func(int) {}}} {
		got, err := scanAll(t, raw, opts)
		if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("options %+v: %v, %v; want %v", opts, got, err, want)
		}
	}
	got, err := scanAll(t, raw, &VerifyOptions{Partition: "b"})
	if err != nil || fmt.Sprint(got) != fmt.Sprint(want[1:2]) {
		t.Fatalf("Partition b: %v, %v", got, err)
	}
}

// The callback's error ends the scan at once, and a failed read is the
// scan's error.
func TestScanPartitionsStopsAtTheFirstError(t *testing.T) {
	client := coreTable(t, nil)
	raw := tableOf(table.New[table.Entity](client, nil))
	putRows(t, raw, "a", 1)
	putRows(t, raw, "b", 1)
	putRows(t, raw, "c", 1)
	stop := errors.New("stop")
	var calls []string
	err := scanPartitions(t.Context(), raw, nil, func(pk string, _ []*table.Entity) error {
		calls = append(calls, pk)
		if pk == "a" {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || !slices.Equal(calls, []string{"a"}) {
		t.Fatalf("error in the first partition: %v after %v; want stop after [a]", err, calls)
	}
	if _, err := client.Delete(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	calls = nil
	err = scanPartitions(t.Context(), raw, nil, func(pk string, _ []*table.Entity) error {
		calls = append(calls, pk)
		return nil
	})
	if !table.Is(err, table.ErrTableNotFound) || len(calls) != 0 {
		t.Fatalf("scan of a deleted table: %v, calls %v; want the service's 404", err, calls)
	}
}

// Progress hears the rows read every 1,000 and once at the end.
func TestScanPartitionsReportsProgressEveryThousandRows(t *testing.T) {
	raw := tableOf(table.New[table.Entity](coreTable(t, nil), nil))
	var heard []int
	opts := &VerifyOptions{Progress: func(n int) { heard = append(heard, n) }}
	if _, err := scanAll(t, raw, opts); err != nil || !slices.Equal(heard, []int{0}) {
		t.Fatalf("empty table: progress %v, %v; want [0]", heard, err)
	}
	putRows(t, raw, "a", 1500)
	putRows(t, raw, "b", 501)
	heard = nil
	if _, err := scanAll(t, raw, opts); err != nil || !slices.Equal(heard, []int{1000, 2000, 2001}) {
		t.Fatalf("2,001 rows: progress %v, %v; want [1000 2000 2001]", heard, err)
	}
}

// Issues sort by partition, then primary, then copy.
func TestIssuesSortByPartitionPrimaryThenCopy(t *testing.T) {
	issues := []IndexIssue{
		{PartitionKey: "b", Primary: "a", Copy: "a"},
		{PartitionKey: "a", Primary: "b", Copy: "a"},
		{PartitionKey: "a", Primary: "a", Copy: "b"},
		{PartitionKey: "a", Primary: "a", Copy: "a"},
	}
	for i, a := range issues {
		for j, b := range issues {
			if got, want := compareIssues(a, b), j-i; sign(got) != sign(want) {
				t.Errorf("compareIssues(%+v, %+v) = %d, want the sign of %d", a, b, got, want)
			}
		}
	}
}

func sign(n int) int {
	switch {
	case n < 0:
		return -1
	case n > 0:
		return 1
	}
	return 0
}

// verifyAll runs v's verify and gathers its ranges into one, which v's
// repair takes: the whole scope's findings, for the tests of a kind.
func verifyAll(ctx context.Context, v verifier, opts *VerifyOptions) (*verifyRange, error) {
	var all *verifyRange
	err := v.verify(ctx, opts, func(r *verifyRange) error {
		if all == nil {
			all = r
			return nil
		}
		all.Primaries += r.Primaries
		all.Copies += r.Copies
		all.Missing = append(all.Missing, r.Missing...)
		all.Orphans = append(all.Orphans, r.Orphans...)
		all.Stale = append(all.Stale, r.Stale...)
		all.orphans = append(all.orphans, r.orphans...)
		for _, m := range []struct{ to, from map[[2]string]bool }{{all.toFix, r.toFix}} {
			for k, v := range m.from {
				m.to[k] = v
			}
		}
		for k, e := range r.primaries {
			all.primaries[k] = e
		}
		for k, l := range r.lists {
			all.lists[k] = l
		}
		return nil
	})
	if err == nil && all == nil {
		all = newRange(v, "", opts)
	}
	return all, err
}

// A range starts with the index's name and the verify's partition.
func TestRangeNamesItsIndexAndPartition(t *testing.T) {
	a := new(int)
	if r := newRange(a, "A", &VerifyOptions{Partition: "p"}); r.Partition != "p" || r.Index != "A" || r.owner != a || !r.OK() {
		t.Errorf("range of a partition's verify: %+v", r)
	}
}

// Verify's Partition is checked as a PartitionKey before any request.
func TestVerifyPartitionIsCheckedAsAPartitionKey(t *testing.T) {
	for _, opts := range []*VerifyOptions{nil, {}, {Partition: "Sales"}} {
		if err := checkVerifyOptions("Verify", opts); err != nil {
			t.Errorf("%+v: %v", opts, err)
		}
	}
	err := checkVerifyOptions("Verify", &VerifyOptions{Partition: "a/b"})
	var ie *table.InputError
	if !errors.Is(err, keys.ErrForbiddenChar) || !errors.As(err, &ie) || ie.Field != "Partition" {
		t.Errorf("Partition a/b: %v, want ErrForbiddenChar on Partition", err)
	}
}

// A marked row is a copy (it names its owner), an index entity (it has
// the first ID list property) or a row marked with its kind (a pattern's,
// a model's control row); anything else may be a primary.
func TestMarkedRowsAreCopiesIDListsAndKinds(t *testing.T) {
	row := func(props ...string) *table.Entity {
		e := &table.Entity{Meta: table.Meta{PartitionKey: "p", RowKey: "r"}}
		for _, name := range props {
			e.Set(name, table.ValueOf("x"))
		}
		return e
	}
	for name, tc := range map[string]struct {
		e    *table.Entity
		want bool
	}{
		"copy":         {row(indexOfProperty, "Name"), true},
		"index entity": {row(idsProperty(0)), true},
		"primary":      {row("Name"), false},
		"second list":  {row(idsProperty(1)), false},
		"log entry":    {row(rowkind.Property, "Who"), true},
	} {
		if got := isMarkedRow(tc.e); got != tc.want {
			t.Errorf("%s: isMarkedRow = %v, want %v", name, got, tc.want)
		}
	}
}

// A copy of a value the codec refuses is an error, not a copy; a stored
// copy that no longer decodes into T is an error too.
func TestCopyOfAValueTheCodecRefusesIsAnError(t *testing.T) {
	people := tableOf(table.New[person](coreTable(t, nil), nil))
	long := &person{Meta: table.Meta{PartitionKey: "p", RowKey: "r"}, LastName: strings.Repeat("x", 40000)}
	if c, err := copyEntity(people, long, nil, "p", "c", ownerRef("p", "r")); !errors.Is(err, table.ErrStringTooLong) || c != nil {
		t.Errorf("copy of a 40,000-character string: %v, %v", c, err)
	}
	ages := tableOf(table.New[aged](coreTable(t, nil), nil))
	bad := &table.Entity{Meta: table.Meta{PartitionKey: "p", RowKey: "c"}}
	bad.Set("Age", table.ValueOf("seven"))
	if v, err := fromCopy(ages, bad, "p", "r"); err == nil || v != nil {
		t.Errorf("a copy whose Age is a String: %+v, %v", v, err)
	}
}

type aged struct {
	table.Meta
	Age int
}

// removeIfOwned passes on a failed read, other than not found, as its
// error, and removes nothing.
func TestGuardedRemovalReportsAFailedRead(t *testing.T) {
	copies := tableOf(table.New[table.Entity](coreTable(t, nil), nil))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	removed, err := removeIfOwned(ctx, copies, "p", "c", ownerRef("p", "r"))
	if removed || !errors.Is(err, context.Canceled) {
		t.Fatalf("a read that failed: %v, %v; want context.Canceled", removed, err)
	}
}

// group is a repair group of n operations in partition pk: a guard (a
// merge of no property, under etag) and n-1 copies written.
func group(pk, rk string, etag string, n int) repairGroup {
	g := repairGroup{ops: []batch.Op{batch.Update(&table.Entity{Meta: table.Meta{PartitionKey: pk, RowKey: rk, ETag: azcore.ETag(etag)}}, aztables.UpdateModeMerge)}}
	for i := 1; i < n; i++ {
		c := &table.Entity{Meta: table.Meta{PartitionKey: pk, RowKey: fmt.Sprintf("%s-copy%d", rk, i)}}
		g.ops = append(g.ops, batch.Upsert(c, aztables.UpdateModeReplace))
		g.written++
	}
	return g
}

// primaries stores one row per RowKey in partition pk and returns their
// ETags by RowKey.
func primaries(t *testing.T, raw *table.Table[table.Entity], pk string, rks ...string) map[string]string {
	t.Helper()
	etags := map[string]string{}
	for _, rk := range rks {
		e := &table.Entity{Meta: table.Meta{PartitionKey: pk, RowKey: rk}}
		if err := raw.Upsert(t.Context(), e, nil); err != nil {
			t.Fatal(err)
		}
		etags[rk] = string(e.ETag)
	}
	return etags
}

// repairWithin runs repairPacked under a deadline of its own, so a packing
// loop that never advances fails here, naming this test.
func repairWithin(t *testing.T, client *aztables.Client, groups []repairGroup, opts *RepairOptions) (RepairSummary, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	type result struct {
		sum RepairSummary
		err error
	}
	done := make(chan result, 1)
	go func() {
		sum, err := repairPacked(ctx, client, groups, opts)
		done <- result{sum, err}
	}()
	select {
	case r := <-done:
		return r.sum, r.err
	case <-ctx.Done():
		t.Fatal("repairPacked did not return within 20 s")
		return RepairSummary{}, nil
	}
}

// Groups of one partition share a transaction up to PerTransaction
// operations (a group is never split, so a larger one goes alone); groups
// of different partitions never share one.
func TestRepairPacksGroupsUpToPerTransaction(t *testing.T) {
	var c reqcount.Counter
	client := coreTable(t, &c)
	raw := tableOf(table.New[table.Entity](client, nil))
	et := primaries(t, raw, "a", "1", "2", "3", "4", "5")
	maps := primaries(t, raw, "b", "1")
	for k, v := range maps {
		et["b"+k] = v
	}
	groups := []repairGroup{
		group("a", "1", et["1"], 2), group("a", "2", et["2"], 2), group("a", "3", et["3"], 1),
		group("a", "4", et["4"], 5), group("a", "5", et["5"], 1), group("b", "1", et["b1"], 1),
	}
	c.Reset()
	sum, err := repairWithin(t, client, groups, &RepairOptions{PerTransaction: 4})
	if err != nil {
		t.Fatal(err)
	}
	// [2 2] [1] [5] [1] | [1]: a's 4+1 would be 5 > 4, the 5-operation
	// group goes alone, and b starts its own.
	if sum.Transactions != 5 || c.N() != 5 {
		t.Fatalf("%d transactions, %d requests; want 5 and 5", sum.Transactions, c.N())
	}
	if sum.Written != 1+1+4 || sum.Deleted != 0 {
		t.Fatalf("summary %+v", sum)
	}
	if _, err := raw.Get(t.Context(), "a", "4-copy4", nil); err != nil {
		t.Fatalf("the large group's last copy: %v", err)
	}

	// The default (nil options, or PerTransaction 0) packs a partition's
	// groups into one transaction of up to 100 operations.
	for _, opts := range []*RepairOptions{nil, {}} {
		et = primaries(t, raw, "a", "1", "2", "3")
		groups = []repairGroup{group("a", "1", et["1"], 2), group("a", "2", et["2"], 2), group("a", "3", et["3"], 1)}
		c.Reset()
		sum, err := repairWithin(t, client, groups, opts)
		if err != nil || sum.Transactions != 1 || c.N() != 1 || sum.Written != 2 {
			t.Fatalf("options %+v: %+v, %v, %d requests; want one transaction", opts, sum, err, c.N())
		}
	}
	// PerTransaction 2, the smallest, is kept.
	et = primaries(t, raw, "a", "1", "2")
	groups = []repairGroup{group("a", "1", et["1"], 2), group("a", "2", et["2"], 2)}
	c.Reset()
	sum, err = repairWithin(t, client, groups, &RepairOptions{PerTransaction: 2})
	if err != nil || sum.Transactions != 2 || c.N() != 2 {
		t.Fatalf("PerTransaction 2: %+v, %v, %d requests; want two transactions", sum, err, c.N())
	}
}

// When one entity of a packed transaction changed since Verify (412 on its
// guard, 404 when it is gone, 409 when an Add finds it created), the
// transaction's groups are sent one by one, so the others are repaired;
// the changed one's error is returned. A lone group that fails is not sent
// again.
func TestRepairSendsAPackedTransactionsGroupsAloneWhenOneChanged(t *testing.T) {
	for _, change := range []string{"412", "404", "409"} {
		t.Run(change, func(t *testing.T) {
			var c reqcount.Counter
			client := coreTable(t, &c)
			raw := tableOf(table.New[table.Entity](client, nil))
			et := primaries(t, raw, "a", "1", "2", "3", "x")
			bad := group("a", "2", et["2"], 2)
			switch change {
			case "412":
				bad = group("a", "2", `W/"datetime'2000-01-01T00%3A00%3A00Z'"`, 2)
			case "404":
				bad = group("a", "gone", "*", 2)
			case "409":
				bad.ops = append(bad.ops, batch.Add(&table.Entity{Meta: table.Meta{PartitionKey: "a", RowKey: "x"}}))
			}
			groups := []repairGroup{group("a", "1", et["1"], 2), bad, group("a", "3", et["3"], 2)}
			c.Reset()
			sum, err := repairWithin(t, client, groups, nil)
			if err == nil {
				t.Fatal("no error for the changed entity")
			}
			t.Logf("the changed entity's error: %v", err)
			// 1 packed, then 3 alone; 2 of them committed.
			if sum.Transactions != 2 || sum.Written != 2 || c.N() != 4 {
				t.Fatalf("%+v after %d requests; want 2 transactions, 2 copies written, 4 requests", sum, c.N())
			}
			for _, rk := range []string{"1-copy1", "3-copy1"} {
				if _, err := raw.Get(t.Context(), "a", rk, nil); err != nil {
					t.Errorf("copy %s of an unchanged entity: %v", rk, err)
				}
			}
			c.Reset()
			if _, err := repairWithin(t, client, []repairGroup{bad}, nil); err == nil || c.N() != 1 {
				t.Fatalf("a lone changed group: %v after %d requests; want its error after 1", err, c.N())
			}
		})
	}
}

// A service failure that is no change of an entity is returned without
// sending the transaction's groups again; nor is a group that cannot be a
// transaction (two partitions) sent at all.
func TestRepairDoesNotResendAFailedTransaction(t *testing.T) {
	var c reqcount.Counter
	svc, client := coreService(t, &c)
	raw := tableOf(table.New[table.Entity](client, nil))
	et := primaries(t, raw, "a", "1", "2")
	svc.FailTransactionOperation(1, 1, http.StatusInternalServerError, "InternalError")
	c.Reset()
	sum, err := repairWithin(t, client, []repairGroup{group("a", "1", et["1"], 2), group("a", "2", et["2"], 2)}, nil)
	if !table.IsRetryable(err) || sum.Transactions != 0 || c.N() != 1 {
		t.Fatalf("an operation the service failed with 500: %+v, %v after %d requests; want its error after 1", sum, err, c.N())
	}
	mixed := group("a", "1", et["1"], 1)
	mixed.ops = append(mixed.ops, batch.Upsert(&table.Entity{Meta: table.Meta{PartitionKey: "b", RowKey: "x"}}, aztables.UpdateModeReplace))
	c.Reset()
	sum, err = repairWithin(t, client, []repairGroup{mixed}, nil)
	if err == nil || sum.Transactions != 0 || c.N() != 0 {
		t.Fatalf("a group of two partitions: %+v, %v after %d requests; want an error before any", sum, err, c.N())
	}
}
