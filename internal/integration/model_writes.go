package integration

import (
	"errors"
	"slices"
	"testing"

	"github.com/tablekit/tablekit/internal/reqcount"
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
	m, err := patterns.NewModel(employees, &patterns.ModelOptions[DirEmp]{Name: "staff", Primary: "empid_",
		Copies: []patterns.IndexDef[DirEmp]{{Name: "email", Prefix: "email_", Unique: true, Value: func(e *DirEmp) string { return e.Email }}}})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// RunModelWrites covers what the entity model's writes promise about the
// entities handed to them: a bulk load accounts for each one, and two
// entities of one load that share a unique value end as two Adds would.
func RunModelWrites(t *testing.T, env Env) {
	ctx := t.Context()

	t.Run("a load stopped by a bad entity names the entities it did not send", func(t *testing.T) {
		c := &reqcount.Counter{}
		m := emailModel(t, env, c)
		ok1, ok2 := workerOf("Sales", 1), workerOf("Sales", 2)
		bad := workerOf("Sales", 3)
		bad.RowKey = "empid_3/x" // '/' is no key character
		c.Reset()
		sum, err := m.Load(ctx, slices.Values([]*DirEmp{ok1, ok2, bad}), nil)
		var ie *table.InputError
		if !errors.As(err, &ie) {
			t.Fatalf("Load of [ok, ok, bad]: %v; want the bad entity's *table.InputError", err)
		}
		if n := sum.Entities + len(sum.Failures) + len(sum.NotSent); n != 3 {
			t.Fatalf("Load of 3 entities accounts for %d: %d written, failures %+v, not sent %+v", n, sum.Entities, sum.Failures, sum.NotSent)
		}
		if len(sum.Failures) != 1 || sum.Failures[0].RowKey != bad.RowKey || !errors.As(sum.Failures[0].Err, &ie) {
			t.Fatalf("failures %+v; want the bad entity with its *table.InputError", sum.Failures)
		}
		var notSent []string
		for _, f := range sum.NotSent {
			notSent = append(notSent, f.RowKey)
			if f.Err == nil {
				t.Fatalf("%s not sent without a reason", f.RowKey)
			}
		}
		if !slices.Equal(notSent, []string{ok1.RowKey, ok2.RowKey}) {
			t.Fatalf("not sent %v; want the two valid entities buffered before the bad one", notSent)
		}
		if c.N() != 0 {
			t.Fatalf("the stopped load sent %d requests; the valid entities were still buffered", c.N())
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
}
