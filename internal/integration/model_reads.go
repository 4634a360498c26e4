package integration

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/internal/reqcount"
	"github.com/tablekit/tablekit/internal/seqs"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/table"
)

// SecretEmp is the guide's employee with its salary encrypted on the
// client: the copies of the model's indexes hold its clear fields only.
type SecretEmp struct {
	table.Meta
	FirstName string
	LastName  string
	Email     string
	Salary    int `table:",encrypt"`
}

// secretDirectory is the employee directory over SecretEmp: an email copy
// in the department's partition (same transaction), last-name index
// entities beside it, and a cross-department email index in the partition
// "email" of the same table, kept through the queue.
func secretDirectory(t *testing.T, env Env, c *reqcount.Counter) (*patterns.Model[SecretEmp], *table.Table[SecretEmp], func()) {
	t.Helper()
	enc := &table.Encryption{KeyID: "k1", Keys: table.LocalKeys{"k1": []byte("0123456789abcdef0123456789abcdef")}}
	employees, err := table.New[SecretEmp](env.NewTable(t, c), &table.Options{Name: "Employees", Encryption: enc})
	if err != nil {
		t.Fatal(err)
	}
	q, poison := env.NewQueue(t, c), env.NewQueue(t, nil)
	m, err := patterns.OpenModel(context.Background(), employees, &patterns.ModelOptions[SecretEmp]{
		Name:    "secretstaff",
		Primary: "empid_",
		Copies: []patterns.IndexDef[SecretEmp]{
			{Name: "email", Prefix: "email_", Unique: true, Value: func(e *SecretEmp) string { return e.Email }},
		},
		Lists: []patterns.ListDef[SecretEmp]{
			{Name: "lastname", Prefix: "lastname_", Value: func(e *SecretEmp) string { return e.LastName }},
		},
		CrossCopies: []patterns.IndexDef[SecretEmp]{
			{Name: "anyemail", PartitionKey: func(*SecretEmp) string { return "email" }, Value: func(e *SecretEmp) string { return e.Email }},
		},
		Queue:        q,
		PublishDelay: 2 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	w := consistency.NewWorker(q, poison, quick(nil))
	if err := w.Handle(m.MessageType(), m.Process); err != nil {
		t.Fatal(err)
	}
	return m, employees, func() { drainAll(t, q, w) }
}

func donHall() *SecretEmp {
	return &SecretEmp{Meta: table.Meta{PartitionKey: "Sales", RowKey: "empid_000123"},
		FirstName: "Don", LastName: "Hall", Email: "donh@contoso.com", Salary: 45000}
}

// RunModelReads checks that every read of the entity model returns a whole
// value or one that no write accepts, and that the handle a model is built
// on reads the model's primaries only, each as the employee directory's
// user met it.
func RunModelReads(t *testing.T, env Env) {
	ctx := t.Context()

	t.Run("a lookup through a copy that lacks fields returns the whole employee", func(t *testing.T) {
		c := &reqcount.Counter{}
		m, _, drain := secretDirectory(t, env, c)
		if err := m.Add(ctx, donHall(), nil); err != nil {
			t.Fatal(err)
		}
		drain()
		for _, by := range []struct{ index, pk string }{{"email", "Sales"}, {"anyemail", "email"}} {
			c.Reset()
			got, err := m.Lookup(ctx, by.index, by.pk, "donh@contoso.com", nil)
			if err != nil || got.RowKey != "empid_000123" || got.FirstName != "Don" || got.Salary != 45000 {
				t.Fatalf("Lookup by %s: %+v %v; want Don Hall with Salary 45000 (the copy lacks the encrypted Salary)", by.index, got, err)
			}
			if n := c.N(); n != 2 {
				t.Fatalf("Lookup by %s sent %d requests; want 2: the copy, then the primary it lacks fields of", by.index, n)
			}
		}
		joneses, err := m.LookupEntities(ctx, "lastname", "Sales", "Hall", nil)
		if err != nil || len(joneses) != 1 || joneses[0].Salary != 45000 {
			t.Fatalf("LookupEntities by last name: %v %v; want Don Hall with Salary 45000", joneses, err)
		}
	})

	t.Run("a lookup through a projected copy returns the whole employee", func(t *testing.T) {
		c := &reqcount.Counter{}
		employees, err := table.New[DirEmp](env.NewTable(t, c), nil)
		if err != nil {
			t.Fatal(err)
		}
		m, err := patterns.OpenModel(ctx, employees, &patterns.ModelOptions[DirEmp]{Name: "projected", Primary: "empid_",
			Copies: []patterns.IndexDef[DirEmp]{
				{Name: "email", Prefix: "email_", Unique: true, Value: func(e *DirEmp) string { return e.Email }, Project: []string{"FirstName", "Email"}},
				{Name: "whole", Prefix: "mail_", Unique: true, Value: func(e *DirEmp) string { return e.Email }},
			}})
		if err != nil {
			t.Fatal(err)
		}
		e := &DirEmp{Meta: table.Meta{PartitionKey: "Sales", RowKey: "empid_000123"}, FirstName: "Don", LastName: "Hall", Email: "donh@contoso.com", Salary: 45000}
		if err := m.Add(ctx, e, nil); err != nil {
			t.Fatal(err)
		}
		for _, by := range []struct {
			index string
			reads int
		}{{"email", 2}, {"whole", 1}} {
			c.Reset()
			got, err := m.Lookup(ctx, by.index, "Sales", "donh@contoso.com", nil)
			if err != nil || got.LastName != "Hall" || got.Salary != 45000 {
				t.Fatalf("Lookup by %s: %+v %v; want Don Hall, Salary 45000", by.index, got, err)
			}
			if n := c.N(); n != by.reads {
				t.Fatalf("Lookup by %s sent %d requests; want %d", by.index, n, by.reads)
			}
		}
	})

	t.Run("writing back a looked-up employee keeps the salary", func(t *testing.T) {
		m, employees, drain := secretDirectory(t, env, &reqcount.Counter{})
		if err := m.Add(ctx, donHall(), nil); err != nil {
			t.Fatal(err)
		}
		drain()
		e, err := m.Lookup(ctx, "email", "Sales", "donh@contoso.com", nil)
		if err != nil {
			t.Fatal(err)
		}
		e.FirstName = "Donald"
		if err := m.Upsert(ctx, e, &table.UpsertOptions{Mode: aztables.UpdateModeReplace}); err != nil {
			t.Fatal(err)
		}
		got, err := employees.Get(ctx, "Sales", "empid_000123", nil)
		if err != nil || got.FirstName != "Donald" || got.Salary != 45000 {
			t.Fatalf("stored after Lookup, change, Upsert: %+v %v; want Donald with Salary 45000", got, err)
		}
	})

	t.Run("a projected read is refused by every write before any request", func(t *testing.T) {
		c := &reqcount.Counter{}
		m, employees, drain := secretDirectory(t, env, c)
		if err := m.Add(ctx, donHall(), nil); err != nil {
			t.Fatal(err)
		}
		drain()
		read, err := seqs.Collect(m.Query(ctx, &table.QueryOptions{Filter: table.Partition("Sales"), Select: []string{"FirstName", "Email"}}))
		if err != nil || len(read) != 1 {
			t.Fatalf("projected Query: %v %v", read, err)
		}
		v := read[0]
		v.FirstName = "Donald"
		for _, w := range []struct {
			name  string
			write func() error
		}{
			{"Model.Upsert", func() error { return m.Upsert(ctx, v, &table.UpsertOptions{Mode: aztables.UpdateModeReplace}) }},
			{"Model.Update", func() error { return m.Update(ctx, v, &table.UpdateOptions{Mode: aztables.UpdateModeReplace}) }},
			{"Table.Upsert", func() error { return employees.Upsert(ctx, v, &table.UpsertOptions{Mode: aztables.UpdateModeReplace}) }},
			{"Table.Update", func() error { return employees.Update(ctx, v, &table.UpdateOptions{Mode: aztables.UpdateModeReplace}) }},
		} {
			c.Reset()
			err := w.write()
			if !errors.Is(err, table.ErrPartialValue) {
				t.Fatalf("%s of a value read with $select: %v; want ErrPartialValue", w.name, err)
			}
			if n := c.N(); n != 0 {
				t.Fatalf("%s of a value read with $select sent %d requests; want 0", w.name, n)
			}
		}
		got, err := employees.Get(ctx, "Sales", "empid_000123", nil)
		if err != nil || got.FirstName != "Don" || got.Salary != 45000 {
			t.Fatalf("stored: %+v %v; want Don with Salary 45000", got, err)
		}
	})

	t.Run("the handle a model is built on reads its primaries only", func(t *testing.T) {
		c := &reqcount.Counter{}
		m, employees, drain := secretDirectory(t, env, c)
		plainModel, _, _ := workerModel(t, env, c, false)
		plain := plainModel.Table()
		if err := m.Add(ctx, donHall(), nil); err != nil {
			t.Fatal(err)
		}
		if err := plainModel.Add(ctx, &DirEmp{Meta: table.Meta{PartitionKey: "Sales", RowKey: "empid_000123"}, LastName: "Hall", Email: "donh@contoso.com", Salary: 45000}, nil); err != nil {
			t.Fatal(err)
		}
		drain()
		if got, err := seqs.Collect(plain.Query(ctx, nil)); err != nil || len(got) != 1 {
			t.Fatalf("Query of a whole table of a plain type: %d rows, %v; want the one employee", len(got), err)
		}
		got, err := seqs.Collect(employees.Query(ctx, &table.QueryOptions{Filter: table.Partition("Sales")}))
		if err != nil || len(got) != 1 || got[0].RowKey != "empid_000123" {
			t.Fatalf("Query of Sales on the model's handle: %d rows, %v; want the one employee (not its email copy nor its last-name list)", len(got), err)
		}
		if got, err := seqs.Collect(employees.Query(ctx, &table.QueryOptions{Filter: table.Partition("email")})); err != nil || len(got) != 0 {
			t.Fatalf("Query of the cross-department email partition on the model's handle: %d rows, %v; want none", len(got), err)
		}
		page, err := plain.QueryPage(ctx, "", &table.QueryOptions{Filter: table.Partition("Sales")})
		if err != nil || len(page.Items) != 1 || page.Next != "" {
			t.Fatalf("QueryPage of Sales: %+v %v; want the one employee", page, err)
		}
		c.Reset()
		for _, rk := range []string{"email_donh@contoso.com", "lastname_Hall"} {
			if v, err := employees.Get(ctx, "Sales", rk, nil); !errors.Is(err, table.ErrOtherRowKind) {
				t.Fatalf("Get of the index row %s through the model's handle: %+v %v; want ErrOtherRowKind", rk, v, err)
			}
		}
		if v, err := plain.Get(ctx, "Sales", "email_donh@contoso.com", nil); !errors.Is(err, table.ErrOtherRowKind) {
			t.Fatalf("Get of the email copy through the plain model's handle: %+v %v; want ErrOtherRowKind", v, err)
		}
		if err := plain.Upsert(ctx, &DirEmp{Meta: table.Meta{PartitionKey: "Sales", RowKey: "email_donh@contoso.com"}}, nil); !errors.Is(err, table.ErrOtherRowKind) {
			t.Fatalf("Upsert over the email copy through the model's handle: %v; want ErrOtherRowKind", err)
		}
		if err := plain.Delete(ctx, "Sales", "email_donh@contoso.com", nil); !errors.Is(err, table.ErrOtherRowKind) {
			t.Fatalf("Delete of the email copy through the model's handle: %v; want ErrOtherRowKind", err)
		}
		if n := c.N(); n != 0 {
			t.Fatalf("the refused reads and writes sent %d requests; want 0", n)
		}
	})
}
