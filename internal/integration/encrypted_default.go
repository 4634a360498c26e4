package integration

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/internal/reqcount"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/table"
)

// sealedEmp is the guide's employee with an encrypted Salary; Other keeps
// the properties another program writes beside the struct's.
type sealedEmp struct {
	table.Meta
	FirstName string
	LastName  string
	Email     string
	Salary    int64 `table:",encrypt"`
	Other     table.Extra
}

// sealedWrites are the writes of one front door (a table handle, a model).
type sealedWrites struct {
	name                     string
	add                      func(*sealedEmp) error
	get                      func(rk string) (*sealedEmp, error)
	update, upsert           func(*sealedEmp) error
	updateMerge, upsertMerge func(*sealedEmp) error
}

// RunEncryptedDefaultMode writes the guide's employee with an encrypted
// Salary through a table handle and through an entity model with nil
// options: Update and Upsert write the whole value (Replace, the one mode
// such a type allows), so they succeed and a later Get returns every
// field, the Salary included; a property another program wrote, which the
// type keeps in an Extra field, survives. An explicit Merge is refused with
// table.ErrMergeEncrypted before any request.
func RunEncryptedDefaultMode(t *testing.T, env Env) {
	ctx := t.Context()
	keys := table.LocalKeys{"k1": bytes.Repeat([]byte{7}, 32)}
	c := &reqcount.Counter{}
	client := env.NewTable(t, c)
	open := func() *table.Table[sealedEmp] {
		return tableOf(table.New[sealedEmp](client, &table.Options{Name: "Employees", Encryption: &table.Encryption{KeyID: "k1", Keys: keys}}))
	}
	emp := func(rk string) *sealedEmp {
		return &sealedEmp{Meta: table.Meta{PartitionKey: "Sales", RowKey: rk}, FirstName: "Don", LastName: "Hall", Email: rk + "@contoso.com", Salary: 50000}
	}
	// another program merges a property the type does not declare
	managerBy := func(t *testing.T, rk string) {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"PartitionKey": "Sales", "RowKey": rk, "Manager": "Ann"})
		if _, err := client.UpdateEntity(ctx, body, nil); err != nil {
			t.Fatal(err)
		}
	}
	same := func(t *testing.T, got, want *sealedEmp) {
		t.Helper()
		if got.FirstName != want.FirstName || got.LastName != want.LastName || got.Email != want.Email || got.Salary != want.Salary {
			t.Fatalf("Get: %+v, want every field of %+v", got, want)
		}
		if p, ok := got.Other["Manager"]; !ok || string(p.Value) != `"Ann"` {
			t.Fatalf("Get: the property another program wrote is gone or changed: %v", got.Other)
		}
	}
	refused := func(t *testing.T, what string, err error) {
		t.Helper()
		if !table.Is(err, table.ErrMergeEncrypted) {
			t.Fatalf("%s with an explicit Merge: %v, want table.ErrMergeEncrypted", what, err)
		}
		if c.N() != 0 {
			t.Fatalf("%s with an explicit Merge sent %d requests, want none", what, c.N())
		}
	}
	var writes []sealedWrites
	tb := open()
	writes = append(writes, sealedWrites{"table.Table",
		func(v *sealedEmp) error { return tb.Add(ctx, v, nil) },
		func(rk string) (*sealedEmp, error) { return tb.Get(ctx, "Sales", rk, nil) },
		func(v *sealedEmp) error { return tb.Update(ctx, v, nil) },
		func(v *sealedEmp) error { return tb.Upsert(ctx, v, nil) },
		func(v *sealedEmp) error {
			return tb.Update(ctx, v, &table.UpdateOptions{Mode: aztables.UpdateModeMerge})
		},
		func(v *sealedEmp) error {
			return tb.Upsert(ctx, v, &table.UpsertOptions{Mode: aztables.UpdateModeMerge})
		},
	})
	m, err := patterns.OpenModel(ctx, open(), &patterns.ModelOptions[sealedEmp]{Name: "staff", Primary: "empid_",
		Copies: []patterns.IndexDef[sealedEmp]{{Name: "email", Prefix: "email_", Unique: true, Value: func(e *sealedEmp) string { return e.Email }}}})
	if err != nil {
		t.Fatal(err)
	}
	writes = append(writes, sealedWrites{"patterns.Model",
		func(v *sealedEmp) error { return m.Add(ctx, v, nil) },
		func(rk string) (*sealedEmp, error) { return m.Get(ctx, "Sales", rk, nil) },
		func(v *sealedEmp) error { return m.Update(ctx, v, nil) },
		func(v *sealedEmp) error { return m.Upsert(ctx, v, nil) },
		func(v *sealedEmp) error {
			return m.Update(ctx, v, &table.UpdateOptions{Mode: aztables.UpdateModeMerge})
		},
		func(v *sealedEmp) error {
			return m.Upsert(ctx, v, &table.UpsertOptions{Mode: aztables.UpdateModeMerge})
		},
	})
	for i, w := range writes {
		t.Run(w.name, func(t *testing.T) {
			rk := "empid_00000" + string(rune('1'+i))
			v := emp(rk)
			if err := w.add(v); err != nil {
				t.Fatal(err)
			}
			managerBy(t, rk)
			got, err := w.get(rk)
			if err != nil {
				t.Fatal(err)
			}
			got.Salary, got.LastName = 60000, "Hall-Jones"
			if err := w.update(got); err != nil {
				t.Fatalf("Update with nil options: %v", err)
			}
			after, err := w.get(rk)
			if err != nil {
				t.Fatal(err)
			}
			same(t, after, got)
			after.Salary = 70000
			if err := w.upsert(after); err != nil {
				t.Fatalf("Upsert with nil options over a stored entity: %v", err)
			}
			again, err := w.get(rk)
			if err != nil {
				t.Fatal(err)
			}
			same(t, again, after)
			fresh := emp(rk + "0")
			if err := w.upsert(fresh); err != nil {
				t.Fatalf("Upsert with nil options of a new entity: %v", err)
			}
			if got, err := w.get(rk + "0"); err != nil || got.Salary != fresh.Salary || got.Email != fresh.Email {
				t.Fatalf("Get after an Upsert of a new entity: %+v %v", got, err)
			}
			c.Reset()
			refused(t, "Update", w.updateMerge(again))
			refused(t, "Upsert", w.upsertMerge(again))
		})
	}
}
