package integration

import (
	"errors"
	"testing"

	"github.com/tablekit/tablekit/internal/reqcount"
	"github.com/tablekit/tablekit/ledger"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/table"
)

// RunDeleteOptions runs the shared options of the patterns' Delete
// (patterns.DeleteOptions: IfExists, Current) and Put (patterns.PutOptions:
// Current) on every pattern that takes them, each request counted by the
// ledger: Current saves the read its method would send, a missing entity
// is what IfExists and each pattern's default say, a Current that is not
// the stored version of the entity named is refused before any request.
func RunDeleteOptions(t *testing.T, env Env) {
	ctx := t.Context()

	t.Run("intra-partition index: a Current of another entity or without an ETag is refused before any request", func(t *testing.T) {
		c := &reqcount.Counter{}
		idx, err := patterns.NewIntraPartitionIndex[Staff](tableOf(table.New[Staff](env.NewTable(t, c), nil)), "empid_", staffIndexes(), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []*Staff{staff("000123", "Don", "Hall", "donh@contoso.com", 34), staff("000223", "Ben", "Jones", "jonesj@contoso.com", 65)} {
			if err := idx.Add(ctx, s, nil); err != nil {
				t.Fatal(err)
			}
		}
		ben, err := idx.Get(ctx, "Sales", "empid_000223", nil)
		if err != nil {
			t.Fatal(err)
		}
		noETag := *ben
		noETag.ETag = ""
		c.Reset()
		for _, tc := range []struct {
			name  string
			rk    string
			cur   *Staff
			field string
			rule  error
		}{
			{"another entity's Current", "empid_000123", ben, "Current", table.ErrInvalidValue},
			{"a Current without an ETag", "empid_000223", &noETag, "Current.ETag", table.ErrNoETag},
		} {
			err := idx.Delete(ctx, "Sales", tc.rk, &patterns.DeleteOptions[Staff]{Current: tc.cur})
			wantInputError(t, err, "IntraPartitionIndex.Delete", tc.field, tc.rule, tc.name)
			wantRequests(t, c, 0, "Delete with "+tc.name)
		}
		for _, rk := range []string{"empid_000123", "empid_000223"} {
			if _, err := idx.Get(ctx, "Sales", rk, nil); err != nil {
				t.Fatalf("%s after the refused Deletes: %v", rk, err)
			}
		}
		if rep, err := idx.Verify(ctx, nil); err != nil || !rep.OK() || rep.Primaries != 2 {
			t.Fatalf("Verify after the refused Deletes: %+v %v", rep, err)
		}
	})
}

// wantInputError checks that err is a *table.InputError of operation op
// about field, matching rule.
func wantInputError(t *testing.T, err error, op, field string, rule error, what string) {
	t.Helper()
	var ie *table.InputError
	if !errors.As(err, &ie) || ie.Op != op || ie.Field != field || !errors.Is(err, rule) {
		t.Errorf("%s: %v, want a *table.InputError of %s on %s (%v)", what, err, op, field, rule)
	}
}

// wantOps checks the ledger's count of each operation of service s, then
// resets the counter.
func wantOps(t *testing.T, c *reqcount.Counter, s ledger.Service, want map[string]int, what string) {
	t.Helper()
	l := c.Ledger()
	total := 0
	for op, n := range want {
		total += n
		if got := l.Operation(s, op); got != n {
			t.Errorf("%s: %d %s %s requests, want %d (ledger:\n%s)", what, got, s, op, n, l)
		}
	}
	if got := c.N(); got != total {
		t.Errorf("%s: %d requests in all, want %d (ledger:\n%s)", what, got, total, l)
	}
	c.Reset()
}
