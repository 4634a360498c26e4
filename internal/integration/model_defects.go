package integration

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/internal/reqcount"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/table"
)

// RunModelDefects reproduces the joints between patterns that leaked when
// several indexes shared one entity type and one table, each as
// the user met it.
func RunModelDefects(t *testing.T, env Env) {
	ctx := t.Context()
	t.Run("a remote list's Verify does not take an intra-partition copy for a primary", func(t *testing.T) {
		primaries := env.NewTable(t, &reqcount.Counter{})
		lists := env.NewTable(t, &reqcount.Counter{})
		q, poison := env.NewQueue(t, nil), env.NewQueue(t, nil)
		m, err := patterns.OpenModel(ctx, tableOf(table.New[Emp](primaries, nil)), &patterns.ModelOptions[Emp]{Name: "staff", Primary: "empid_", Queue: q, PublishDelay: time.Second,
			Copies:      []patterns.IndexDef[Emp]{{Name: "email", Prefix: "email_", Unique: true, Value: func(e *Emp) string { return e.Email }}},
			RemoteLists: []patterns.ListDef[Emp]{{Name: "lastname", Value: func(e *Emp) string { return e.LastName }, Table: tableOf(table.New[table.Entity](lists, nil)), Partition: "lastname", Prefix: "lastname_"}},
		})
		if err != nil {
			t.Fatal(err)
		}
		w := consistency.NewWorker(q, poison, quick(nil))
		if err := w.Handle(m.MessageType(), m.Process); err != nil {
			t.Fatal(err)
		}
		for _, e := range []*Emp{
			{Meta: table.Meta{PartitionKey: "Sales", RowKey: "empid_000123"}, LastName: "Hall", Email: "donh@contoso.com"},
			{Meta: table.Meta{PartitionKey: "Sales", RowKey: "empid_000223"}, LastName: "Jones", Email: "jonesj@contoso.com"},
		} {
			if err := m.Add(ctx, e, nil); err != nil {
				t.Fatal(err)
			}
		}
		drainAll(t, q, w)
		r, err := verifyOf(ctx, m, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !r.OK() || r.Primaries != 2 {
			t.Fatalf("verify of the last-name lists over a table that also holds email copies: %d primaries, missing %v, orphans %v, stale %v; want 2 primaries and nothing to repair (the email_ rows are copies, not primaries)", r.Primaries, r.Missing, r.Orphans, r.Stale)
		}
	})

	t.Run("an employee whose keys are long keeps every index", func(t *testing.T) {
		// Each key valid, together past one key's length (405 and 406
		// characters), or each at the service's 512 UTF-16 units of
		// two-byte characters, whose reference passes a message key's
		// 1 KiB: the reference copies and lists hold, and the message
		// key, are not keys themselves.
		for _, e := range []*DirEmp{
			{Meta: table.Meta{PartitionKey: "Dept-" + strings.Repeat("d", 400), RowKey: "empid_" + strings.Repeat("7", 400)},
				FirstName: "Long", LastName: "Keys", Email: "long@contoso.com", Salary: 1},
			{Meta: table.Meta{PartitionKey: strings.Repeat("é", 512), RowKey: "empid_" + strings.Repeat("ü", 506)},
				FirstName: "Longest", LastName: "Keys", Email: "longest@contoso.com", Salary: 2},
		} {
			m, _, drain := workerModel(t, env, &reqcount.Counter{}, true)
			if err := m.Add(ctx, e, nil); err != nil {
				t.Fatalf("Add of an employee with keys of %d and %d characters: %v", len([]rune(e.PartitionKey)), len([]rune(e.RowKey)), err)
			}
			drain()
			if got, err := m.Lookup(ctx, "email", e.PartitionKey, e.Email, nil); err != nil || got.RowKey != e.RowKey {
				t.Fatalf("Lookup by email: %+v %v", got, err)
			}
			if got, err := m.LookupEntities(ctx, "lastname", "", "Keys", nil); err != nil || len(got) != 1 || got[0].RowKey != e.RowKey {
				t.Fatalf("LookupEntities by last name: %d %v", len(got), err)
			}
			if r, err := verifyOf(ctx, m, nil); err != nil || !r.OK() || r.Primaries != 1 {
				t.Fatalf("Verify: %+v %v; want one primary and nothing to repair", r, err)
			}
			if err := m.Delete(ctx, e.PartitionKey, e.RowKey, nil); err != nil {
				t.Fatalf("Delete: %v", err)
			}
			drain()
			if r, err := verifyOf(ctx, m, nil); err != nil || !r.OK() || r.Primaries != 0 {
				t.Fatalf("Verify after Delete: %+v %v; want nothing left", r, err)
			}
		}
	})

	t.Run("a load into a missing table fails once, not once an entity", func(t *testing.T) {
		if env.NewServiceClient == nil {
			t.Skip("the backend gives no service client")
		}
		c := &reqcount.Counter{}
		missing := env.NewServiceClient(t, c.TableOptions()).NewClient(fmt.Sprintf("Missing%d", time.Now().UnixNano()%1e9))
		employees, err := table.New[DirEmp](missing, nil)
		if err != nil {
			t.Fatal(err)
		}
		m, err := patterns.OpenModel(ctx, employees, &patterns.ModelOptions[DirEmp]{Name: "staff", Primary: "empid_",
			Copies: []patterns.IndexDef[DirEmp]{{Name: "email", Prefix: "email_", Unique: true, Value: func(e *DirEmp) string { return e.Email }}}})
		if err != nil {
			t.Fatal(err)
		}
		if c.N() != 1 {
			t.Fatalf("OpenModel sent %d requests; want 1, the read of the indexes' state", c.N())
		}
		c.Reset()
		var all []*DirEmp
		for i := range 5 {
			all = append(all, workerOf("Sales", i))
		}
		sum, err := m.Load(ctx, slices.Values(all), nil)
		if !table.Is(err, table.ErrTableNotFound) || len(sum.Failures) != 5 || sum.Entities != 0 {
			t.Fatalf("Load into a missing table: %d failures, %v; want all 5 entities failed with TableNotFound", len(sum.Failures), err)
		}
		if c.N() != 1 {
			t.Fatalf("Load into a missing table sent %d requests; want 1: the table's absence is no one entity's fault", c.N())
		}
	})

	t.Run("Verify and Repair refuse an index the model does not declare, before any request", func(t *testing.T) {
		c := &reqcount.Counter{}
		client := env.NewTable(t, c)
		byEmail, err := patterns.OpenModel(ctx, tableOf(table.New[Emp](client, nil)), &patterns.ModelOptions[Emp]{Name: "idx", Primary: "empid_", Copies: []patterns.IndexDef[Emp]{
			{Name: "email", Prefix: "email_", Unique: true, Value: func(e *Emp) string { return e.Email }},
		}})
		if err != nil {
			t.Fatal(err)
		}
		byLast, err := patterns.OpenModel(ctx, tableOf(table.New[Emp](client, nil)), &patterns.ModelOptions[Emp]{Name: "bylast", Primary: "empid_",
			Lists: []patterns.ListDef[Emp]{{Name: "lastname", Prefix: "lastname_", Value: func(e *Emp) string { return e.LastName }}}})
		if err != nil {
			t.Fatal(err)
		}
		e := &Emp{Meta: table.Meta{PartitionKey: "Sales", RowKey: "empid_000123"}, LastName: "Hall", Email: "donh@contoso.com"}
		if err := byLast.Add(ctx, e, nil); err != nil { // an entity the email index has not seen
			t.Fatal(err)
		}
		r, err := verifyOf(ctx, byLast, &patterns.VerifyOptions{Partition: "Sales", Indexes: []string{"lastname"}})
		if err != nil || !r.OK() || r.Primaries != 1 {
			t.Fatalf("the last-name model's Verify of its index: %+v %v; want its one entity, listed", r, err)
		}
		before := c.N()
		_, err = byEmail.Repair(ctx, &patterns.RepairOptions{VerifyOptions: patterns.VerifyOptions{Partition: "Sales", Indexes: []string{"lastname"}}})
		if !unknownIndex(err) {
			t.Fatalf("the email model's Repair of the last-name index: %v; want an InputError on Indexes", err)
		}
		if _, err := byEmail.Verify(ctx, &patterns.VerifyOptions{Indexes: []string{"email", "lastname"}}); !unknownIndex(err) {
			t.Fatalf("the email model's Verify of the last-name index: %v; want an InputError on Indexes", err)
		}
		if n := c.N() - before; n != 0 {
			t.Fatalf("the refused Verify and Repair sent %d requests; want 0", n)
		}
	})
	t.Run("a Delete of any version goes round again when another writer changes the entity first", func(t *testing.T) {
		// The other writer changes the entity (and its email copy) between
		// Delete's read and its transaction, whose If-Match then fails. The
		// caller asked for no version: the Delete must read again and
		// delete the new version with its rows, as Upsert and Modify go
		// round again, not fail with 412.
		other := &beforeFirstBatch{}
		c := &reqcount.Counter{Faults: other}
		client := env.NewTable(t, c)
		m, err := patterns.OpenModel(ctx, tableOf(table.New[Emp](client, nil)), &patterns.ModelOptions[Emp]{Name: "staff", Primary: "empid_",
			Copies: []patterns.IndexDef[Emp]{{Name: "email", Prefix: "email_", Unique: true, Value: func(e *Emp) string { return e.Email }}}})
		if err != nil {
			t.Fatal(err)
		}
		don := &Emp{Meta: table.Meta{PartitionKey: "Sales", RowKey: "empid_000123"}, LastName: "Hall", Email: "donh@contoso.com"}
		if err := m.Add(ctx, don, nil); err != nil {
			t.Fatal(err)
		}
		other.arm(func() error {
			_, err := m.Modify(ctx, "Sales", don.RowKey, func(e *Emp) error { e.Email = "don@contoso.com"; return nil }, nil)
			return err
		})
		if err := m.Delete(ctx, "Sales", don.RowKey, nil); err != nil {
			t.Fatalf("Delete after another writer changed the entity: %v; want the newer version deleted", err)
		}
		if !other.fired.Load() || other.err != nil {
			t.Fatalf("the other writer did not change the entity in between: fired %v, %v", other.fired.Load(), other.err)
		}
		var left []string
		for e, err := range tableOf(table.New[table.Entity](client, nil)).Query(ctx, nil) {
			if err != nil {
				t.Fatal(err)
			}
			left = append(left, e.RowKey)
		}
		if len(left) != 0 {
			t.Fatalf("rows left after the Delete: %v; want none (the primary and its newer email copy)", left)
		}
	})
}

// beforeFirstBatch, once armed, runs f before the next $batch request
// goes out: another writer acting between a write's read and its
// transaction. f's own requests pass through it unhindered.
type beforeFirstBatch struct {
	armed, fired atomic.Bool
	f            func() error
	err          error
}

func (b *beforeFirstBatch) arm(f func() error) {
	b.f = f
	b.armed.Store(true)
}

func (b *beforeFirstBatch) Do(req *policy.Request) (*http.Response, error) {
	if req.Raw().Method == http.MethodPost && strings.HasSuffix(req.Raw().URL.Path, "$batch") && b.armed.CompareAndSwap(true, false) {
		b.err = b.f()
		b.fired.Store(true)
	}
	return req.Next()
}

// unknownIndex tells the refusal of an index the model does not declare:
// a *table.InputError on Indexes, patterns.ErrUnknownIndex.
func unknownIndex(err error) bool {
	var ie *table.InputError
	return errors.As(err, &ie) && ie.Field == "Indexes" && errors.Is(err, patterns.ErrUnknownIndex)
}
