package patterns_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/internal/envelope"
	"github.com/tablekit/tablekit/internal/seqs"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/table"
)

// Model.ProcessBatch on a consistency.Worker: the model's own queue drained
// in batches, on the
// fake and on Azurite, with every kind of index declared at once (a copy
// in the partition, a copy in another table, a list in another table),
// keys that hold apostrophes, and clients built as the README builds them.

// batchModel is the model of these tests and the tables behind it.
type batchModel struct {
	m      *patterns.Model[batchEmp]
	people *table.Table[batchEmp]
	copies *table.Table[table.Entity]
	q      consistency.Queue
	poison consistency.Queue
}

func newBatchModel(t *testing.T, e batchEnv) batchModel {
	t.Helper()
	people, err := table.New[batchEmp](e.table(t, "bmpeople"), nil)
	if err != nil {
		t.Fatal(err)
	}
	copies, err := table.New[table.Entity](e.table(t, "bmcopies"), nil)
	if err != nil {
		t.Fatal(err)
	}
	listTable, err := table.New[table.Entity](e.table(t, "bmlists"), nil)
	if err != nil {
		t.Fatal(err)
	}
	q, poison := e.queue(t, "bmq"), e.queue(t, "bmpoison")
	m, err := patterns.OpenModel(context.Background(), people, &patterns.ModelOptions[batchEmp]{
		Name:    "staff",
		Primary: "emp'",
		Copies:  []patterns.IndexDef[batchEmp]{{Name: "email", Prefix: "email_", Unique: true, Value: func(v *batchEmp) string { return v.Email }}},
		CrossCopies: []patterns.IndexDef[batchEmp]{{
			Name: "byname", Table: copies,
			PartitionKey: func(v *batchEmp) string { return "name_" + v.Department },
			Value:        func(v *batchEmp) string { return v.Name },
		}},
		RemoteLists:  []patterns.ListDef[batchEmp]{{Name: "lastname", Value: func(v *batchEmp) string { return v.LastName }, Table: listTable, Partition: "lname", Prefix: "lname_"}},
		Queue:        q,
		PublishDelay: 30 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	return batchModel{m, people, copies, q, poison}
}

// check: the model's indexes hold exactly live — one cross copy per live
// entity under its name, each last name's list exactly the live entities
// with it, each email found in the partition — and Verify is clean.
func (b batchModel) check(t *testing.T, live []*batchEmp, lastNames []string) {
	t.Helper()
	ctx := t.Context()
	all, err := seqs.Collect(b.copies.Query(ctx, nil))
	if err != nil {
		t.Fatal(err)
	}
	var got, want []string
	for _, c := range all {
		got = append(got, c.PartitionKey+"/"+copyValue(c.RowKey))
	}
	byLast := map[string][]string{}
	for _, v := range live {
		want = append(want, "name_"+v.Department+"/"+v.Name)
		byLast[v.LastName] = append(byLast[v.LastName], patterns.ID(v.PartitionKey, v.RowKey))
		found, err := b.m.Lookup(ctx, "email", v.PartitionKey, v.Email, nil)
		if err != nil || found.RowKey != v.RowKey {
			t.Fatalf("Lookup email %s: %+v %v, want %s", v.Email, found, err, v.RowKey)
		}
		found, err = b.m.Lookup(ctx, "byname", "name_"+v.Department, v.Name, nil)
		if err != nil || found.RowKey != v.RowKey || found.Email != v.Email {
			t.Fatalf("Lookup name %s: %+v %v, want %s with %s", v.Name, found, err, v.RowKey, v.Email)
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("cross copies %q, want %q", got, want)
	}
	for _, name := range lastNames {
		owners, err := b.m.IDs(ctx, "lastname", "", name, nil)
		if err != nil && !table.Is(err, table.ErrNotFound) {
			t.Fatal(err)
		}
		var ids []string
		for _, o := range owners {
			ids = append(ids, patterns.ID(o.PartitionKey, o.RowKey))
		}
		slices.Sort(ids)
		w := byLast[name]
		slices.Sort(w)
		if !slices.Equal(ids, w) {
			t.Fatalf("list %s holds %d IDs %q, want %d %q", name, len(ids), ids, len(w), w)
		}
	}
	r, err := b.m.Verify(ctx, nil)
	if err != nil || !r.OK() || r.Primaries != len(live) {
		t.Fatalf("Verify: %+v %v", r, err)
	}
}

func TestModelProcessBatch(t *testing.T) {
	batchBackends(t, func(t *testing.T, e batchEnv) {
		ctx := t.Context()
		b := newBatchModel(t, e)
		const n = 96
		dept := "O'Brien & Sons"
		lastNames := []string{"O'Brien", "D'Arcy", "Jones"}
		emps := make([]*batchEmp, n)
		for i := range n {
			emps[i] = &batchEmp{
				Meta:     table.Meta{PartitionKey: dept, RowKey: fmt.Sprintf("emp'%03d", i)},
				Name:     fmt.Sprintf("Don O'Brien %03d", i),
				Email:    fmt.Sprintf("don'%03d@contoso.com", i),
				LastName: lastNames[i%3], Department: dept,
			}
			if err := b.m.Add(ctx, emps[i], nil); err != nil {
				t.Fatal(err)
			}
		}
		reqs := drainBatches(t, e, func() (consistency.Stats, error) { return drainModel(ctx, b.m, b.q, b.poison, batchOpts) }, n, false)
		perMsg := float64(reqs) / n
		t.Logf("new entities: %d requests for %d messages, %.3f a message", reqs, n, perMsg)
		// Per 32 messages: the dequeue, one read of their primaries, one
		// transaction of cross copies, one read and one transaction of
		// the three lists, and the 32 deletes; then the empty dequeue.
		if perMsg > 1.25 {
			t.Fatalf("%.3f requests a message, want at most 1.25", perMsg)
		}
		b.check(t, emps, append(lastNames, "Hall"))

		// Changes: a third take a new last name and name, a sixth are
		// deleted, and one takes another's old name.
		var live []*batchEmp
		changes := int64(0)
		for i, v := range emps {
			switch {
			case i%6 == 5:
				changes++
				if err := b.m.Delete(ctx, v.PartitionKey, v.RowKey, nil); err != nil {
					t.Fatal(err)
				}
				continue
			case i%3 == 0:
				changes++
				next, err := b.m.Modify(ctx, v.PartitionKey, v.RowKey, func(v *batchEmp) error {
					v.Name = fmt.Sprintf("Don O'Brien-Hall %03d", i)
					v.LastName = lastNames[(i/3)%2+1]
					if i%4 == 0 {
						v.LastName = "Hall"
					}
					return nil
				}, nil)
				if err != nil {
					t.Fatal(err)
				}
				v = next
			}
			live = append(live, v)
		}
		// y takes a new name and x takes y's old one: the cross copy y
		// leaves stale is the one x now calls for.
		x, y := live[1], live[2]
		for _, p := range []struct {
			v    *batchEmp
			name string
		}{{y, y.Name + " Jr"}, {x, y.Name}} {
			next, err := b.m.Modify(ctx, p.v.PartitionKey, p.v.RowKey, func(v *batchEmp) error { v.Name = p.name; return nil }, nil)
			if err != nil {
				t.Fatal(err)
			}
			changes++
			*p.v = *next
		}
		reqs = drainBatches(t, e, func() (consistency.Stats, error) {
			return drainModel(ctx, b.m, keepMessages{b.q}, b.poison, keepOpts) // handled, then delivered again below
		}, changes, true)
		t.Logf("changes: %d requests for %d messages, %.3f a message (the message deletes, which keepMessages drops, not counted)", reqs, changes, float64(reqs)/float64(changes))
		b.check(t, live, append(lastNames, "Hall"))
		time.Sleep(2100 * time.Millisecond) // the visibility timeout ends: every message is delivered again
		reqs = drainBatches(t, e, func() (consistency.Stats, error) { return drainModel(ctx, b.m, b.q, b.poison, batchOpts) }, changes, false)
		t.Logf("the changes delivered again: %d requests for %d messages, %.3f a message", reqs, changes, float64(reqs)/float64(changes))
		b.check(t, live, append(lastNames, "Hall"))
	})
}

// A batch's failures are its failing messages' alone: a message of
// another type and one whose payload is no model message fail, and the
// others in the same batch are applied; drained from the queue, the
// garbled one goes to poison at once (permanent) beside the applied ones.
func TestModelProcessBatchKeepsFailuresToTheirMessages(t *testing.T) {
	batchBackends(t, func(t *testing.T, e batchEnv) {
		ctx := t.Context()
		b := newBatchModel(t, e)
		cy := &batchEmp{Meta: table.Meta{PartitionKey: "Ops", RowKey: "emp'001"}, Name: "Cy", Email: "cy@contoso.com", LastName: "Ng", Department: "Ops"}
		if err := b.m.Add(ctx, cy, nil); err != nil {
			t.Fatal(err)
		}
		// The Add's own message, as the queue holds it.
		dm, err := b.q.DequeueMessages(ctx, nil)
		if err != nil || len(dm.Messages) != 1 {
			t.Fatalf("dequeue: %v (%d messages)", err, len(dm.Messages))
		}
		var env envelope.Envelope
		if err := json.Unmarshal([]byte(*dm.Messages[0].MessageText), &env); err != nil {
			t.Fatal(err)
		}
		good := consistency.Message{Type: env.Type, Key: env.Key, Enqueued: env.Enqueued, Payload: env.Payload}
		other := consistency.Message{Type: "archive.v1", Key: "k", Payload: good.Payload}
		garbled := consistency.Message{Type: b.m.MessageType(), Key: "k", Payload: json.RawMessage(`{"rows": 7}`)}
		errs := b.m.ProcessBatch(ctx, []*consistency.Message{&other, &good, &garbled})
		if len(errs) != 3 || errs[0] == nil || errs[1] != nil || errs[2] == nil {
			t.Fatalf("errors %v: want the foreign and the garbled message refused and the model's own applied", errs)
		}
		b.check(t, []*batchEmp{cy}, []string{"Ng"})

		// Through the queue: the garbled message is poisoned on its first
		// delivery, the next Add's message is applied beside it.
		text, err := json.Marshal(envelope.Envelope{Type: garbled.Type, Key: garbled.Key, Payload: garbled.Payload})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.q.EnqueueMessage(ctx, string(text), nil); err != nil {
			t.Fatal(err)
		}
		di := &batchEmp{Meta: table.Meta{PartitionKey: "Ops", RowKey: "emp'002"}, Name: "Di", Email: "di@contoso.com", LastName: "Ng", Department: "Ops"}
		if err := b.m.Add(ctx, di, nil); err != nil {
			t.Fatal(err)
		}
		st, err := drainModel(ctx, b.m, b.q, b.poison, batchOpts)
		if rep := (*consistency.FailureReport)(nil); !errors.As(err, &rep) || rep.Poisoned != 1 || st.Processed != 1 || st.Poisoned != 1 || st.Retried != 0 {
			t.Fatalf("drain: %+v %v; want 1 handled, 1 poisoned (on its first delivery)", st, err)
		}
		b.check(t, []*batchEmp{cy, di}, []string{"Ng"})
	})
}
