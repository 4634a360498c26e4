package integration

import (
	"cmp"
	"context"
	"encoding/hex"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/internal/reqcount"
	"github.com/tablekit/tablekit/internal/tableio"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/ledger"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/table"
)

// emailModel is the employee directory with its same-partition email
// index on a fresh table whose requests c counts.
func emailModel(t *testing.T, env Env, c *reqcount.Counter) *patterns.Model[DirEmp] {
	t.Helper()
	employees, err := table.New[DirEmp](env.NewTable(t, c), nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := patterns.OpenModel(context.Background(), employees, &patterns.ModelOptions[DirEmp]{Name: "staff", Primary: "empid_",
		Copies: []patterns.IndexDef[DirEmp]{{Name: "email", Prefix: "email_", Unique: true, Value: func(e *DirEmp) string { return e.Email }}}})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// refusedQuote checks err is the refusal of a key only tablekit's own
// $batch body can send in an update: batch.ErrQuoteInKey in a
// *table.InputError whose text names table.ClientOptions, with nothing
// sent to the backend (the only try a ledger may count is tablekit's
// probe of the client's pipeline, which never leaves the process).
func refusedQuote(t *testing.T, env Env, what string, err error, c *reqcount.Counter, batchesBefore int) {
	t.Helper()
	var ie *table.InputError
	if !errors.Is(err, batch.ErrQuoteInKey) || !errors.As(err, &ie) || !strings.Contains(err.Error(), "table.ClientOptions") {
		t.Errorf("%s on a client without tablekit's policy: %v; want a *table.InputError with batch.ErrQuoteInKey naming table.ClientOptions", what, err)
		return
	}
	if n := c.N() - c.Ledger().Operation(ledger.Table, "GetEntity"); n != 0 {
		t.Errorf("%s was refused after %d requests; want none:\n%v", what, n, c.Ledger())
	}
	if env.Fake != nil && env.Fake.Count(fake.OpBatch) != batchesBefore {
		t.Errorf("%s: a transaction reached the fake", what)
	}
}

// crossKey is the RowKey of the cross copy of value that the primary
// (pk, rk) has.
func crossKey(t *testing.T, value, pk, rk string) string {
	t.Helper()
	k, err := crossCopyRowKey(value, pk, rk)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// crossValue is the value a cross copy's RowKey encodes (the tuple of the
// value and a 24-digit digest of its owner), or rk itself for any other
// RowKey.
func crossValue(rk string) string {
	parts, err := keys.DecodeTuple(rk)
	if err != nil || len(parts) != 2 || len(parts[1]) != 24 {
		return rk
	}
	if _, err := hex.DecodeString(parts[1]); err != nil {
		return rk
	}
	return parts[0]
}

// RunModelWrites covers what the entity model's writes promise about the
// entities handed to them: a bulk load accounts for each one, two
// entities of one load that share a unique value end as two Adds would,
// and a key that every later change could not send is refused at the
// first write.
func RunModelWrites(t *testing.T, env Env) {
	ctx := t.Context()

	t.Run("a key no batch update can send on the client is refused at the first write", func(t *testing.T) {
		if env.NewServiceClient == nil {
			t.Skip("the backend gives no service client")
		}
		c := &reqcount.Counter{}
		plain, _ := newTableOf(t, env, c, false)
		customers, err := table.New[DirEmp](plain, nil)
		if err != nil {
			t.Fatal(err)
		}
		email := []patterns.IndexDef[DirEmp]{{Name: "email", Prefix: "email_", Unique: true, Value: func(e *DirEmp) string { return e.Email }}}
		m, err := patterns.OpenModel(ctx, customers, &patterns.ModelOptions[DirEmp]{Name: "customers", Primary: "cust_", Copies: email})
		if err != nil {
			t.Fatal(err)
		}
		obrien := func() *DirEmp {
			return &DirEmp{Meta: table.Meta{PartitionKey: "O'Brien & Sons", RowKey: "cust_O'Brien"}, LastName: "O'Brien", Email: "sean@obrien.example"}
		}
		batches := func() int {
			if env.Fake == nil {
				return 0
			}
			return env.Fake.Count(fake.OpBatch)
		}
		for _, w := range []struct {
			what  string
			write func() error
		}{
			{"Model.Add", func() error { return m.Add(ctx, obrien(), nil) }},
			{"Model.Upsert", func() error { return m.Upsert(ctx, obrien(), nil) }},
			{"Model.Load", func() error {
				sum, err := m.Load(ctx, slices.Values([]*DirEmp{obrien()}), nil)
				if err != nil && (sum.Entities != 0 || len(sum.Failures) != 1 || len(sum.NotSent) != 0) {
					t.Errorf("Model.Load: %+v; want the quoted entity failed", sum)
				}
				return err
			}},
			{"a unique value with a quote", func() error {
				v := workerOf("Sales", 2)
				v.RowKey, v.Email = "cust_2", "o'brien@example.com"
				return m.Add(ctx, v, nil)
			}},
		} {
			c.Reset()
			before := batches()
			refusedQuote(t, env, w.what, w.write(), c, before)
		}
		if _, err := customers.Get(ctx, "O'Brien & Sons", "cust_O'Brien", nil); !table.Is(err, table.ErrNotFound) {
			t.Errorf("after the refused writes the entity is stored (%v)", err)
		}
		// Keys without a quote keep every write on the same client.
		v := &DirEmp{Meta: table.Meta{PartitionKey: "Smith & Sons", RowKey: "cust_Smith"}, Email: "a@smith.example"}
		if err := m.Add(ctx, v, nil); err != nil {
			t.Fatal(err)
		}
		v.Email = "b@smith.example"
		if err := m.Update(ctx, v, &table.UpdateOptions{Mode: aztables.UpdateModeReplace}); err != nil {
			t.Fatalf("Update of keys without a quote on the plain client: %v", err)
		}
	})

	t.Run("on a client built with table.ClientOptions a key with a quote is written and changed", func(t *testing.T) {
		if env.NewServiceClient == nil {
			t.Skip("the backend gives no service client")
		}
		wired, _ := newTableOf(t, env, &reqcount.Counter{}, true)
		customers, err := table.New[DirEmp](wired, nil)
		if err != nil {
			t.Fatal(err)
		}
		m, err := patterns.OpenModel(ctx, customers, &patterns.ModelOptions[DirEmp]{Name: "customers", Primary: "cust_",
			Copies: []patterns.IndexDef[DirEmp]{{Name: "email", Prefix: "email_", Unique: true, Value: func(e *DirEmp) string { return e.Email }}}})
		if err != nil {
			t.Fatal(err)
		}
		v := &DirEmp{Meta: table.Meta{PartitionKey: "O'Brien & Sons", RowKey: "cust_O'Brien"}, Email: "o'brien@example.com"}
		if err := m.Add(ctx, v, nil); err != nil {
			t.Fatal(err)
		}
		v.Email = "sean@obrien.example"
		if err := m.Update(ctx, v, nil); err != nil {
			t.Fatalf("Update of the quoted keys on a client with tablekit's policy: %v", err)
		}
		if got, err := m.Lookup(ctx, "email", v.PartitionKey, v.Email, nil); err != nil || got.RowKey != v.RowKey {
			t.Fatalf("Lookup: %+v %v", got, err)
		}
	})

	t.Run("a bad entity in a load is a failure and the load goes on", func(t *testing.T) {
		c := &reqcount.Counter{}
		m := emailModel(t, env, c)
		ok1, ok2, ok4 := workerOf("Sales", 1), workerOf("Sales", 2), workerOf("Sales", 4)
		bad := workerOf("Sales", 3)
		bad.RowKey = "empid_3/x" // '/' is no key character
		sum, err := m.Load(ctx, slices.Values([]*DirEmp{ok1, ok2, bad, ok4}), nil)
		var ie *table.InputError
		if !errors.As(err, &ie) {
			t.Fatalf("Load of [ok, ok, bad, ok]: %v; want the bad entity's *table.InputError", err)
		}
		if sum.Entities != 3 || len(sum.NotSent) != 0 {
			t.Fatalf("Load of [ok, ok, bad, ok]: %d written, failures %+v, not sent %+v; want the three good ones written", sum.Entities, sum.Failures, sum.NotSent)
		}
		if len(sum.Failures) != 1 || sum.Failures[0].RowKey != bad.RowKey || !errors.As(sum.Failures[0].Err, &ie) {
			t.Fatalf("failures %+v; want the bad entity with its *table.InputError", sum.Failures)
		}
		for _, v := range []*DirEmp{ok1, ok2, ok4} {
			if _, err := m.Get(ctx, v.PartitionKey, v.RowKey, nil); err != nil {
				t.Errorf("%s: %v; want it written", v.RowKey, err)
			}
		}
	})

	t.Run("two entities of one load sharing a unique value end as two Adds would", func(t *testing.T) {
		m := emailModel(t, env, &reqcount.Counter{})
		var all []*DirEmp
		for i := range 6 {
			first, second := workerOf("Dept", 2*i), workerOf("Dept", 2*i+1)
			second.Email = first.Email
			all = append(all, first, second)
		}
		sum, err := m.Load(ctx, slices.Values(all), nil)
		if err != nil || sum.Entities != 6 || len(sum.Failures) != 6 {
			t.Fatalf("Load: %d written, failures %+v, %v; want 6 written, 6 failures", sum.Entities, sum.Failures, err)
		}
		for _, f := range sum.Failures {
			var vt *patterns.ValueTakenError
			if !errors.As(f.Err, &vt) {
				t.Fatalf("failure %+v: want *ValueTakenError", f)
			}
		}
		for i := 0; i < len(all); i += 2 {
			first, second := all[i], all[i+1]
			if got, err := m.Lookup(ctx, "email", first.PartitionKey, first.Email, nil); err != nil || got.RowKey != first.RowKey {
				t.Fatalf("the email %s belongs to %+v (%v); want %s, the first of the load to claim it, as two sequential Adds leave it", first.Email, got, err, first.RowKey)
			}
			if !slices.ContainsFunc(sum.Failures, func(f patterns.LoadFailure) bool { return f.RowKey == second.RowKey }) {
				t.Fatalf("failures %+v; want %s, the second to claim %s", sum.Failures, second.RowKey, first.Email)
			}
		}
	})

	t.Run("cross-partition copies of one value keep a row per owner", func(t *testing.T) {
		c := &reqcount.Counter{}
		employees, err := table.New[DirEmp](env.NewTable(t, c), nil)
		if err != nil {
			t.Fatal(err)
		}
		q, poison := env.NewQueue(t, nil), env.NewQueue(t, nil)
		// The directory's cross-department email index: every copy in
		// one partition, keyed by the email.
		m, err := patterns.OpenModel(ctx, employees, &patterns.ModelOptions[DirEmp]{Name: "staff", Primary: "empid_", Queue: q, PublishDelay: 2 * time.Second,
			CrossCopies: []patterns.IndexDef[DirEmp]{{Name: "email", PartitionKey: func(*DirEmp) string { return "email" }, Value: func(e *DirEmp) string { return e.Email }}}})
		if err != nil {
			t.Fatal(err)
		}
		w := consistency.NewWorker(q, poison, quick(nil))
		if err := w.Handle(m.MessageType(), m.Process); err != nil {
			t.Fatal(err)
		}
		alice, bob := workerOf("Sales", 1), workerOf("HR", 2)
		bob.Email = alice.Email
		for _, e := range []*DirEmp{alice, bob} {
			if err := m.Add(ctx, e, nil); err != nil {
				t.Fatal(err)
			}
		}
		drainAll(t, q, w)
		owners := func() []patterns.Owner {
			t.Helper()
			got, err := m.Lookup(ctx, "email", "email", alice.Email, nil)
			if !errors.Is(err, patterns.ErrNotUnique) || !strings.Contains(err.Error(), alice.RowKey) || !strings.Contains(err.Error(), bob.RowKey) {
				t.Fatalf("Lookup of an email two employees hold: %+v, %v; want ErrNotUnique naming both", got, err)
			}
			// Find names every owner of the value.
			var all []patterns.Owner
			for e, err := range m.Find(ctx, "email", "email", alice.Email, nil) {
				if err != nil {
					t.Fatal(err)
				}
				all = append(all, patterns.Owner{PartitionKey: e.PartitionKey, RowKey: e.RowKey})
			}
			slices.SortFunc(all, func(a, b patterns.Owner) int {
				return cmp.Or(strings.Compare(a.PartitionKey, b.PartitionKey), strings.Compare(a.RowKey, b.RowKey))
			})
			return all
		}
		want := []patterns.Owner{{PartitionKey: "HR", RowKey: bob.RowKey}, {PartitionKey: "Sales", RowKey: alice.RowKey}}
		if got := owners(); !slices.Equal(got, want) {
			t.Fatalf("owners %+v, want %+v", got, want)
		}
		r, err := verifyOf(ctx, m, nil)
		if err != nil || !r.OK() || r.Primaries != 2 || r.IndexRows != 2 {
			t.Fatalf("Verify: %+v %v; want 2 primaries, 2 copies, nothing to repair", r, err)
		}
		// An employee written around the model: Verify names its keys.
		carol := workerOf("Ops", 3)
		carol.Email = alice.Email
		if err := employees.Add(ctx, carol, nil); err != nil {
			t.Fatal(err)
		}
		r, err = verifyOf(ctx, m, nil)
		if err != nil || len(r.Missing) != 1 || len(r.Stale)+len(r.Orphans) != 0 {
			t.Fatalf("Verify: %+v %v; want Carol's copy missing, nothing else", r, err)
		}
		if is := r.Missing[0]; is.PrimaryPartitionKey != "Ops" || is.Primary != carol.RowKey || is.PartitionKey != "email" {
			t.Fatalf("missing %+v; want the owner's keys (Ops, %s) and the copy's partition", is, carol.RowKey)
		}
		if _, err := m.Repair(ctx, repairOpts(r, nil)); err != nil {
			t.Fatal(err)
		}
		if r, err := verifyOf(ctx, m, nil); err != nil || !r.OK() || r.IndexRows != 3 {
			t.Fatalf("Verify after Repair: %+v %v; want 3 copies and nothing to repair", r, err)
		}
		if got := owners(); len(got) != 3 {
			t.Fatalf("owners after Repair %+v, want all three", got)
		}
	})

	t.Run("a cross copy of the layout keyed by the value alone is read, reported and rewritten", func(t *testing.T) {
		employees, err := table.New[DirEmp](env.NewTable(t, &reqcount.Counter{}), nil)
		if err != nil {
			t.Fatal(err)
		}
		q := env.NewQueue(t, nil)
		m, err := patterns.OpenModel(ctx, employees, &patterns.ModelOptions[DirEmp]{Name: "staff", Primary: "empid_", Queue: q,
			CrossCopies: []patterns.IndexDef[DirEmp]{{Name: "email", PartitionKey: func(*DirEmp) string { return "email" }, Value: func(e *DirEmp) string { return e.Email }}}})
		if err != nil {
			t.Fatal(err)
		}
		dan := workerOf("Sales", 4)
		if err := employees.Add(ctx, dan, nil); err != nil {
			t.Fatal(err)
		}
		old, err := tableio.For(employees).ClearEntity(dan)
		if err != nil {
			t.Fatal(err)
		}
		old.Meta = table.Meta{PartitionKey: "email", RowKey: dan.Email}
		old.Set("TkIndexOf", table.ValueOf(listID(dan.PartitionKey, dan.RowKey)))
		if err := employees.Entities().Add(ctx, old, nil); err != nil {
			t.Fatal(err)
		}
		if got, err := m.Lookup(ctx, "email", "email", dan.Email, nil); err != nil || got.RowKey != dan.RowKey {
			t.Fatalf("Lookup through the old layout: %+v %v", got, err)
		}
		r, err := verifyOf(ctx, m, nil)
		if err != nil || len(r.Orphans) != 1 || len(r.Missing) != 1 {
			t.Fatalf("Verify: %+v %v; want the old row an orphan and the new one missing", r, err)
		}
		if is := r.Orphans[0]; is.PrimaryPartitionKey != dan.PartitionKey || is.Primary != dan.RowKey || is.Copy != dan.Email {
			t.Fatalf("orphan %+v; want the old row naming its owner", is)
		}
		if _, err := m.Repair(ctx, repairOpts(r, nil)); err != nil {
			t.Fatal(err)
		}
		if r, err := verifyOf(ctx, m, nil); err != nil || !r.OK() || r.IndexRows != 1 {
			t.Fatalf("Verify after Repair: %+v %v", r, err)
		}
		if _, err := employees.Entities().Get(ctx, "email", dan.Email, nil); !table.Is(err, table.ErrNotFound) {
			t.Fatalf("the old row after Repair: %v; want it gone", err)
		}
		if got, err := m.Lookup(ctx, "email", "email", dan.Email, nil); err != nil || got.RowKey != dan.RowKey {
			t.Fatalf("Lookup after Repair: %+v %v", got, err)
		}
	})
}
