package conformance

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/faults"
	"github.com/tablekit/tablekit/internal/keyrules"
	"github.com/tablekit/tablekit/internal/reqcount"
	"github.com/tablekit/tablekit/internal/seqs"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/table"
)

// runBatch runs every behaviour package batch relies on.
func runBatch(t *testing.T, env backend) {
	ctx := t.Context()

	t.Run("success returns every operation's ETag", func(t *testing.T) {
		tb, c, client := newEmployees(t, env)
		var emps []*employee
		tx := batch.NewTransaction(nil)
		for i := 0; i < 100; i++ {
			e := &employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: keyrules.Uint64(uint64(i))}, Age: i}
			emps = append(emps, e)
			if err := tx.Append(batch.Add(e)); err != nil {
				t.Fatal(err)
			}
		}
		res, err := tx.Submit(ctx, client, nil)
		if err != nil {
			t.Fatal(err)
		}
		wantRequests(t, c, 1, "transaction of 100")
		for i, e := range emps {
			got, err := tb.Get(ctx, "Sales", e.RowKey, nil)
			if err != nil {
				t.Fatal(err)
			}
			if e.ETag == "" || e.ETag != got.ETag || res.ETags[i] != got.ETag || !e.Timestamp.Equal(got.Timestamp) {
				t.Fatalf("op %d: Meta %q / result %q, stored %q", i, e.ETag, res.ETags[i], got.ETag)
			}
		}
		// A second transaction updates with the recovered ETags: they are real.
		emps[3].Age = 300
		emps[7].Age = 700
		if _, err := batch.Submit(ctx, client, []batch.Op{batch.Update(emps[3], aztables.UpdateModeReplace), batch.Update(emps[7], aztables.UpdateModeMerge), batch.DeleteValue(emps[9])}, nil); err != nil {
			t.Fatalf("updates guarded by recovered ETags: %v", err)
		}
		got, _ := tb.Get(ctx, "Sales", emps[7].RowKey, nil)
		if got.Age != 700 || got.ETag != emps[7].ETag {
			t.Fatalf("after update: %+v, Meta %q", got, emps[7].ETag)
		}
		if _, err := tb.Get(ctx, "Sales", emps[9].RowKey, nil); !table.Is(err, table.ErrNotFound) {
			t.Fatalf("deleted entity: %v", err)
		}
	})

	failures := []struct {
		name   string
		index  int
		status int
		code   string
		class  error
	}{
		{"409 at index 0", 0, http.StatusConflict, "EntityAlreadyExists", table.ErrAlreadyExists},
		{"404 at index 50", 50, http.StatusNotFound, "ResourceNotFound", table.ErrNotFound},
		{"412 at index 99", 99, http.StatusPreconditionFailed, "UpdateConditionNotSatisfied", table.ErrPreconditionFailed},
	}
	for _, f := range failures {
		t.Run("failure names the operation: "+f.name, func(t *testing.T) {
			tb, c, client := newEmployees(t, env)
			existing := &employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: "existing"}}
			if err := tb.Add(ctx, existing, nil); err != nil {
				t.Fatal(err)
			}
			stale := *existing
			if err := tb.Update(ctx, existing, nil); err != nil { // moves the ETag on
				t.Fatal(err)
			}
			tx := batch.NewTransaction(nil)
			for i := 0; i < 100; i++ {
				var op batch.Op
				switch {
				case i != f.index:
					op = batch.Add(&employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: fmt.Sprintf("new%03d", i)}})
				case f.status == http.StatusConflict:
					op = batch.Add(&employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: "existing"}})
				case f.status == http.StatusNotFound:
					op = batch.Update(&employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: "missing"}}, aztables.UpdateModeMerge).IfMatch(azcore.ETagAny)
				default:
					op = batch.Update(&stale, aztables.UpdateModeReplace)
				}
				if err := tx.Append(op); err != nil {
					t.Fatal(err)
				}
			}
			c.Reset()
			_, err := tx.Submit(ctx, client, nil)
			wantRequests(t, c, 1, "failed transaction")
			var te *batch.TransactionError
			if !errors.As(err, &te) {
				t.Fatalf("want *TransactionError, got %v", err)
			}
			if te.Index != f.index || te.StatusCode != f.status || te.ErrorCode != f.code || !errors.Is(err, f.class) {
				t.Fatalf("got index %d, %d %s (%v); want %d, %d %s", te.Index, te.StatusCode, te.ErrorCode, err, f.index, f.status, f.code)
			}
			var re *azcore.ResponseError
			if !errors.As(err, &re) || re.StatusCode != http.StatusAccepted {
				t.Fatalf("the SDK's ResponseError must stay in the chain: %v", err)
			}
			if te.Op.RowKey() == "" || te.Message == "" {
				t.Fatalf("the error lacks the operation or message: %+v", te)
			}
			// Nothing of the failed transaction persists.
			all, err := seqs.Collect(tb.Query(ctx, nil))
			if err != nil || len(all) != 1 || all[0].RowKey != "existing" {
				t.Fatalf("after a failed transaction the table holds %d entities (%v)", len(all), err)
			}
		})
	}

	// The service answers a transaction to a table that does not exist
	// with 202 and operation 0's failure: 404 TableNotFound, "0:The table
	// specified does not exist." (recorded: Azure/azure-sdk-for-js,
	// sdk/tables/data-tables/recordings/node/batch_operations/
	// recording_should_handle_sub_request_error.js, a $batch of three
	// inserts into noExistingTable). Model.Load relies
	// on it to fail a transaction's entities together, not blame the first.
	t.Run("a transaction to a missing table fails at operation 0 with TableNotFound", func(t *testing.T) {
		c := &reqcount.Counter{}
		missing := env.NewServiceClient(t, c.TableOptions()).NewClient(fmt.Sprintf("Missing%d", time.Now().UnixNano()%1e9))
		tx := batch.NewTransaction(nil)
		for i := range 3 {
			if err := tx.Append(batch.Add(&employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: fmt.Sprintf("%03d", i)}})); err != nil {
				t.Fatal(err)
			}
		}
		_, err := tx.Submit(ctx, missing, nil)
		wantRequests(t, c, 1, "a transaction to a missing table")
		var te *batch.TransactionError
		if !errors.As(err, &te) {
			t.Fatalf("want *TransactionError, got %v", err)
		}
		if te.Index != 0 || te.StatusCode != http.StatusNotFound || te.ErrorCode != "TableNotFound" || !strings.HasPrefix(te.Message, "The table specified does not exist.") {
			t.Fatalf("got operation %d, %d %s %q; want operation 0, 404 TableNotFound, \"The table specified does not exist.\"", te.Index, te.StatusCode, te.ErrorCode, te.Message)
		}
		if !table.Is(err, table.ErrTableNotFound) || table.Is(err, table.ErrNotFound) {
			t.Fatalf("%v: want table.ErrTableNotFound, not ErrNotFound (the table is missing, not an entity)", err)
		}
	})

	t.Run("bad transactions are refused before any request", func(t *testing.T) {
		c := &reqcount.Counter{}
		client := env.NewTable(t, c)
		e := func(pk, rk string) *employee { return &employee{Meta: table.Meta{PartitionKey: pk, RowKey: rk}} }
		// 420 KB of '<' per entity: under 1 MiB as the service counts it,
		// but the SDK's encoding/json sends each '<' as \u003c, six bytes.
		big := func(rk string) *keptEntity {
			x := table.Extra{}
			for i := 0; i < 14; i++ {
				x[fmt.Sprintf("S%02d", i)] = table.Property{Value: []byte(`"` + strings.Repeat("<", 30000) + `"`)}
			}
			return &keptEntity{Meta: table.Meta{PartitionKey: "p", RowKey: rk}, Other: x}
		}
		cases := []struct {
			name string
			ops  []batch.Op
			rule error
			at   int
		}{
			{"empty", nil, batch.ErrEmpty, 0},
			{"two PartitionKeys", []batch.Op{batch.Add(e("a", "1")), batch.Add(e("b", "2"))}, batch.ErrMixedPartitions, 1},
			{"duplicate RowKey", []batch.Op{batch.Add(e("a", "1")), batch.Delete("a", "2"), batch.Upsert(e("a", "1"), aztables.UpdateModeMerge)}, batch.ErrDuplicateRowKey, 2},
			{"invalid key", []batch.Op{batch.Add(e("a", "1")), batch.Delete("a", "x/y")}, keys.ErrForbiddenChar, 1},
			{"nil value", []batch.Op{batch.Add(nil)}, table.ErrNilValue, 0},
			{"update without ETag", []batch.Op{batch.Update(e("a", "1"), aztables.UpdateModeMerge)}, table.ErrNoETag, 0},
			{"entity over the limits", []batch.Op{batch.Add(&keptEntity{Meta: table.Meta{PartitionKey: "p", RowKey: "r"}, Other: table.Extra{"bad name": {Value: []byte("1")}}})}, keys.ErrInvalidName, 0},
			{"request over 4 MiB", []batch.Op{batch.Add(big("1")), batch.Add(big("2"))}, batch.ErrTooLarge, 1},
		}
		var hundredOne []batch.Op
		for i := 0; i < 101; i++ {
			hundredOne = append(hundredOne, batch.Add(e("a", fmt.Sprint(i))))
		}
		cases = append(cases, struct {
			name string
			ops  []batch.Op
			rule error
			at   int
		}{"101 operations", hundredOne, batch.ErrTooManyOperations, 100})
		for _, tc := range cases {
			_, err := batch.Submit(ctx, client, tc.ops, nil)
			var oe *batch.OpError
			if !errors.Is(err, tc.rule) || !errors.As(err, &oe) || oe.Index != tc.at {
				t.Errorf("%s: %v, want %v at operation %d", tc.name, err, tc.rule, tc.at)
			}
		}
		wantRequests(t, c, 0, "bad transactions")
	})

	t.Run("update-only never upserts", func(t *testing.T) {
		tb, _, client := newEmployees(t, env)
		_, err := batch.Submit(ctx, client, []batch.Op{batch.Update(&employee{Meta: table.Meta{PartitionKey: "p", RowKey: "ghost"}}, aztables.UpdateModeReplace).IfMatch(azcore.ETagAny)}, nil)
		if !errors.Is(err, table.ErrNotFound) {
			t.Fatalf("UpdateAny of a missing entity: %v", err)
		}
		if _, err := tb.Get(ctx, "p", "ghost", nil); !table.Is(err, table.ErrNotFound) {
			t.Fatal("an update-only operation created the entity")
		}
	})

	t.Run("bulk writer: ceil(n/100) requests per partition, order kept", func(t *testing.T) {
		tb, c, client := newEmployees(t, env)
		var ops []batch.Op
		perPartition := map[string]int{"Sales": 250, "Marketing": 100, "HR": 1}
		for _, pk := range []string{"Sales", "Marketing", "HR"} {
			for i := 0; i < perPartition[pk]; i++ {
				ops = append(ops, batch.Add(&employee{Meta: table.Meta{PartitionKey: pk, RowKey: keyrules.Uint64(uint64(i))}, Age: 1}))
			}
		}
		// Later operations on the same entities: they must apply after the adds.
		for i := 0; i < 5; i++ {
			ops = append(ops, batch.Update(&employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: keyrules.Uint64(uint64(i))}, Age: 2}, aztables.UpdateModeMerge).IfMatch(azcore.ETagAny))
		}
		ops = append(ops, batch.Delete("HR", keyrules.Uint64(0)))
		sum, err := batch.NewWriter(client, &batch.WriterOptions{Parallelism: 4}).Write(ctx, slices.Values(ops), nil)
		if err != nil {
			t.Fatal(err)
		}
		// Sales: 250 adds in 3 transactions; the 5 updates join the third
		// (their RowKeys are not in it) and apply after the first, which
		// holds their adds. Marketing: 1. HR: the delete of the entity just
		// added must follow it, so 2.
		want := 3 + 1 + 2
		if sum.Transactions != want || sum.Operations != len(ops) || sum.Requests != want || sum.Retries != 0 {
			t.Fatalf("summary %+v, want %d transactions", sum, want)
		}
		wantRequests(t, c, want, "bulk write")
		all, _ := seqs.Collect(tb.Query(ctx, nil))
		if len(all) != 350 {
			t.Fatalf("%d entities, want 350", len(all))
		}
		ages := map[string]int{}
		for _, e := range all {
			ages[e.PartitionKey+"/"+e.RowKey] = e.Age
		}
		for i := 0; i < 5; i++ {
			if ages["Sales/"+keyrules.Uint64(uint64(i))] != 2 {
				t.Fatalf("update %d applied before its add", i)
			}
		}
		if ages["Sales/"+keyrules.Uint64(5)] != 1 {
			t.Fatal("an unrelated entity changed")
		}
	})

	t.Run("under 10% faults, idempotent Adds converge to the fault-free state", func(t *testing.T) {
		load := func(faulty bool) (map[string]employee, batch.Summary, faults.Stats, int) {
			inj := faults.New(11, &faults.Options{Fraction: 0.1})
			gate := &gatedPolicy{p: inj}
			c := &reqcount.Counter{Faults: gate}
			client := env.NewTable(t, c) // created with the gate shut
			gate.on.Store(faulty)
			var ops []batch.Op
			for p := 0; p < 10; p++ {
				for i := 0; i < 150; i++ {
					ops = append(ops, batch.Add(&employee{Meta: table.Meta{PartitionKey: fmt.Sprintf("dept%02d", p), RowKey: keyrules.Uint64(uint64(i))},
						FirstName: "E", LastName: fmt.Sprint(p*1000 + i), Age: i}))
				}
			}
			sum, err := batch.NewWriter(client, &batch.WriterOptions{IdempotentAdds: true, MaxAttempts: 10, BaseDelay: time.Millisecond}).Write(ctx, slices.Values(ops), nil)
			if err != nil {
				t.Fatalf("faulty=%v: %v (%+v)", faulty, err, sum)
			}
			// Single Adds too: each must end stored and acknowledged.
			tb, _ := table.New[employee](client, nil)
			singles := 0
			for i := 0; i < 60; i++ {
				e := &employee{Meta: table.Meta{PartitionKey: "singles", RowKey: keyrules.Uint64(uint64(i))}, FirstName: "S", Age: i}
				if err := tb.Add(ctx, e, &table.AddOptions{Idempotent: true}); err != nil {
					t.Fatalf("faulty=%v: Add %d: %v", faulty, i, err)
				}
				if e.ETag == "" {
					t.Fatalf("Add %d acknowledged without an ETag", i)
				}
				singles++
			}
			gate.on.Store(false)
			state := map[string]employee{}
			for e, err := range tb.Query(ctx, nil) {
				if err != nil {
					t.Fatal(err)
				}
				k := e.PartitionKey + "/" + e.RowKey
				e.Meta = table.Meta{}
				state[k] = *e
			}
			return state, sum, inj.Stats(), singles
		}
		clean, _, _, _ := load(false)
		got, sum, st, singles := load(true)
		if len(clean) != 1560 || !maps.Equal(clean, got) {
			t.Fatalf("final state differs from the fault-free run: %d vs %d entities", len(got), len(clean))
		}
		if sum.Operations != 1500 || sum.Failed != 0 || singles != 60 {
			t.Fatalf("acknowledged %d of 1500 batched and %d of 60 single adds (%+v)", sum.Operations, singles, sum)
		}
		t.Logf("%s: %d requests drawn, faults: %d before, %d lost responses, %d statuses; %d transactions resolved as already stored with %d reads, %d retries",
			env.Name, st.Requests, st.Before, st.After, st.Status, sum.Resolved, sum.Reads, sum.Retries)
		if st.Before+st.After+st.Status == 0 {
			t.Fatal("no faults were injected")
		}
	})
}

// gatedPolicy passes requests to p only while on, so a test can create its
// table fault-free and then turn faults on.
type gatedPolicy struct {
	on atomic.Bool
	p  policy.Policy
}

func (g *gatedPolicy) Do(req *policy.Request) (*http.Response, error) {
	if g.on.Load() {
		return g.p.Do(req)
	}
	return req.Next()
}
