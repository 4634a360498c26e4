package redact_test

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/table"
)

// The entity model's callers, and the table methods an index uses.

func modelOpts(copies *aztables.Client, q consistency.Queue) *patterns.ModelOptions[Emp] {
	return &patterns.ModelOptions[Emp]{Name: "emp", Primary: "empid_", Copies: emailDefs(),
		Lists:       []patterns.ListDef[Emp]{{Name: "name", Prefix: "name_", Value: func(v *Emp) string { return v.Name }}},
		CrossCopies: []patterns.IndexDef[Emp]{{Name: "byemail", Table: tableOf(table.New[table.Entity](copies, nil)), PartitionKey: func(*Emp) string { return "email" }, Value: func(v *Emp) string { return v.Email }}},
		Queue:       q, PublishDelay: time.Second}
}

// model opens the model over e's storage: its state read is the first
// request that can fail.
func model(ctx context.Context, e *env) (*patterns.Model[Emp], error) {
	o := modelOpts(e.tbl2, e.q)
	o.Logger = e.log
	return patterns.OpenModel[Emp](ctx, tbl(e), o)
}

// addMessage is the message an Add sends, from a model over working
// (fake) storage in tables named from name, for the model over the failing
// one to handle.
func addMessage(ctx context.Context, e *env, name string) (*consistency.Message, error) {
	q := fakeQueue(ctx)
	t, _ := table.New[Emp](fakeTable(ctx, e, name), nil)
	good, err := patterns.OpenModel[Emp](ctx, t, modelOpts(fakeTable(ctx, e, name+"copies"), q))
	if err != nil {
		return nil, err
	}
	if err := good.Add(ctx, emp(), nil); err != nil {
		return nil, err
	}
	return dequeue(ctx, q)
}

func init() {
	register(map[string]caller{
		"patterns.OpenModel": func(ctx context.Context, e *env) error { _, err := model(ctx, e); return err },
		"patterns.Model.Build": func(ctx context.Context, e *env) error {
			m, err := model(ctx, e)
			if err != nil {
				return err
			}
			return m.Build(ctx, "email", nil)
		},
		"patterns.Model.Drop": func(ctx context.Context, e *env) error {
			m, err := model(ctx, e)
			if err != nil {
				return err
			}
			return m.Drop(ctx, "email", nil)
		},
		"patterns.Model.Pause": func(ctx context.Context, e *env) error {
			m, err := model(ctx, e)
			if err != nil {
				return err
			}
			return m.Pause(ctx, "email", nil)
		},
		"patterns.Model.Resume": func(ctx context.Context, e *env) error {
			m, err := model(ctx, e)
			if err != nil {
				return err
			}
			return m.Resume(ctx, "email", nil)
		},
		"patterns.Model.IndexStatus": func(ctx context.Context, e *env) error {
			m, err := model(ctx, e)
			if err != nil {
				return err
			}
			_, err = m.IndexStatus(ctx, "email", nil)
			return err
		},
		"patterns.Model.Add": func(ctx context.Context, e *env) error {
			m, merr := model(ctx, e)
			if merr != nil {
				return merr
			}
			return m.Add(ctx, emp(), nil)
		},
		"patterns.Model.Update": func(ctx context.Context, e *env) error {
			m, merr := model(ctx, e)
			if merr != nil {
				return merr
			}
			v := emp()
			v.ETag = "W/\"1\""
			return m.Update(ctx, v, nil)
		},
		"patterns.Model.Upsert": func(ctx context.Context, e *env) error {
			m, merr := model(ctx, e)
			if merr != nil {
				return merr
			}
			return m.Upsert(ctx, emp(), nil)
		},
		"patterns.Model.Modify": func(ctx context.Context, e *env) error {
			m, merr := model(ctx, e)
			if merr != nil {
				return merr
			}
			_, err := m.Modify(ctx, "Sales", "empid_000001", func(*Emp) error { return nil }, nil)
			return err
		},
		"patterns.Model.Delete": func(ctx context.Context, e *env) error {
			m, merr := model(ctx, e)
			if merr != nil {
				return merr
			}
			return m.Delete(ctx, "Sales", "empid_000001", nil)
		},
		"patterns.Model.Get": func(ctx context.Context, e *env) error {
			m, merr := model(ctx, e)
			if merr != nil {
				return merr
			}
			_, err := m.Get(ctx, "Sales", "empid_000001", nil)
			return err
		},
		"patterns.Model.Query": func(ctx context.Context, e *env) error {
			m, merr := model(ctx, e)
			if merr != nil {
				return merr
			}
			return first(m.Query(ctx, nil))
		},
		"patterns.Model.Lookup": func(ctx context.Context, e *env) error {
			m, merr := model(ctx, e)
			if merr != nil {
				return merr
			}
			_, err := m.Lookup(ctx, "email", "Sales", "a@b", nil)
			return err
		},
		"patterns.Model.LookupEntities": func(ctx context.Context, e *env) error {
			m, merr := model(ctx, e)
			if merr != nil {
				return merr
			}
			_, err := m.LookupEntities(ctx, "name", "Sales", "Ana", nil)
			return err
		},
		"patterns.Model.Find": func(ctx context.Context, e *env) error {
			m, merr := model(ctx, e)
			if merr != nil {
				return merr
			}
			return first(m.Find(ctx, "email", "Sales", "a@b", nil))
		},
		"patterns.Model.Range": func(ctx context.Context, e *env) error {
			m, merr := model(ctx, e)
			if merr != nil {
				return merr
			}
			return first(m.Range(ctx, "byemail", "email", "a", "b", nil))
		},
		"patterns.Model.Prefix": func(ctx context.Context, e *env) error {
			m, merr := model(ctx, e)
			if merr != nil {
				return merr
			}
			return first(m.Prefix(ctx, "email", "Sales", "a", nil))
		},
		"patterns.Model.IDs": func(ctx context.Context, e *env) error {
			m, merr := model(ctx, e)
			if merr != nil {
				return merr
			}
			// A list in the partition, and one in blobs.
			_, err := m.IDs(ctx, "name", "Sales", "Ana", nil)
			blobs, berr := patterns.OpenModel[Emp](ctx, tbl(e), &patterns.ModelOptions[Emp]{Name: "blobs", Queue: e.q,
				RemoteLists: []patterns.ListDef[Emp]{{Name: "name", Value: func(v *Emp) string { return v.Name }, Blobs: e.blobs, Container: "proof", Prefix: "names/"}}})
			if berr == nil {
				_, berr = blobs.IDs(ctx, "name", "", "Ana", nil)
			}
			return errors.Join(err, berr)
		},
		"patterns.Model.Load": func(ctx context.Context, e *env) error {
			m, merr := model(ctx, e)
			if merr != nil {
				return merr
			}
			_, err := m.Load(ctx, slices.Values([]*Emp{emp()}), nil)
			return err
		},
		"patterns.Model.Verify": func(ctx context.Context, e *env) error {
			m, merr := model(ctx, e)
			if merr != nil {
				return merr
			}
			_, err := m.Verify(ctx, nil)
			return err
		},
		"patterns.Model.Repair": func(ctx context.Context, e *env) error {
			m, merr := model(ctx, e)
			if merr != nil {
				return merr
			}
			_, err := m.Repair(ctx, nil)
			return err
		},
		"patterns.Model.Process": func(ctx context.Context, e *env) error {
			m, merr := model(ctx, e)
			if merr != nil {
				return merr
			}
			msg, err := addMessage(ctx, e, "proofmodel")
			if err != nil {
				return err
			}
			return m.Process(ctx, msg)
		},
		"patterns.Model.ProcessBatch": func(ctx context.Context, e *env) error {
			m, merr := model(ctx, e)
			if merr != nil {
				return merr
			}
			msg, err := addMessage(ctx, e, "proofmodelb")
			if err != nil {
				return err
			}
			return errors.Join(m.ProcessBatch(ctx, []*consistency.Message{msg})...)
		},
	})
}
