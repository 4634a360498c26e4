package integration

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/internal/reqcount"
	"github.com/tablekit/tablekit/internal/seqs"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/table"
)

// recordingQueue keeps the text of every message sent through it, so a
// test can deliver one again: what a lost delete of a processed message
// does.
type recordingQueue struct {
	consistency.Queue
	mu   sync.Mutex
	sent []string
}

func (r *recordingQueue) EnqueueMessage(ctx context.Context, text string, o *azqueue.EnqueueMessageOptions) (azqueue.EnqueueMessagesResponse, error) {
	r.mu.Lock()
	r.sent = append(r.sent, text)
	r.mu.Unlock()
	return r.Queue.EnqueueMessage(ctx, text, o)
}

func getStaff(t *testing.T, tb *table.Table[Staff], rk string) *Staff {
	t.Helper()
	v, err := tb.Get(t.Context(), "Sales", rk, nil)
	if table.Is(err, table.ErrNotFound) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// RunMoverVersions checks that a move message moves the version it was
// sent for and nothing later under the same key.
func RunMoverVersions(t *testing.T, env Env) {
	ctx := t.Context()

	t.Run("a duplicate move message after the key is reused moves nothing", func(t *testing.T) {
		current, _ := table.New[Staff](env.NewTable(t, &reqcount.Counter{}), nil)
		archive, _ := table.New[Staff](env.NewTable(t, &reqcount.Counter{}), nil)
		q, poison := env.NewQueue(t, nil), env.NewQueue(t, nil)
		rq := &recordingQueue{Queue: q}
		mover := consistency.NewMover[Staff](current, archive, consistency.NewSender(rq, nil), nil)
		w := consistency.NewWorker(q, poison, quick(nil))
		_ = w.Handle(mover.MessageType(), mover.Process)

		if err := current.Add(ctx, staff("000001", "Old", "Hire", "old@contoso.com", 60), nil); err != nil {
			t.Fatal(err)
		}
		if err := mover.Request(ctx, "Sales", "empid_000001", nil); err != nil {
			t.Fatal(err)
		}
		drainAll(t, q, w)
		// The key is reused for a new employee; then the first message is
		// delivered again, as after a lost delete.
		if err := current.Add(ctx, staff("000001", "New", "Hire", "new@contoso.com", 20), nil); err != nil {
			t.Fatal(err)
		}
		if _, err := q.EnqueueMessage(ctx, rq.sent[0], nil); err != nil {
			t.Fatal(err)
		}
		drainAll(t, q, w)
		if got := getStaff(t, current, "empid_000001"); got == nil || got.FirstName != "New" {
			t.Fatalf("the new employee left Current: %+v", got)
		}
		if got := getStaff(t, archive, "empid_000001"); got == nil || got.FirstName != "Old" {
			t.Fatalf("the archived employee was overwritten: %+v", got)
		}
	})

	t.Run("an entity changed after the request stays, and the message is poisoned", func(t *testing.T) {
		current, _ := table.New[Staff](env.NewTable(t, &reqcount.Counter{}), nil)
		archive, _ := table.New[Staff](env.NewTable(t, &reqcount.Counter{}), nil)
		q, poison := env.NewQueue(t, nil), env.NewQueue(t, nil)
		mover := consistency.NewMover[Staff](current, archive, consistency.NewSender(q, nil), nil)
		w := consistency.NewWorker(q, poison, quick(nil))
		_ = w.Handle(mover.MessageType(), mover.Process)
		v := staff("000002", "Ann", "Lee", "ann@contoso.com", 30)
		if err := current.Add(ctx, v, nil); err != nil {
			t.Fatal(err)
		}
		if err := mover.RequestValue(ctx, v, nil); err != nil {
			t.Fatal(err)
		}
		v.Age = 31
		if err := current.Update(ctx, v, nil); err != nil {
			t.Fatal(err)
		}
		drainAll(t, q, w)
		if got := getStaff(t, current, "empid_000002"); got == nil || got.Age != 31 {
			t.Fatalf("the changed entity left Current: %+v", got)
		}
		if got := getStaff(t, archive, "empid_000002"); got != nil {
			t.Fatalf("a version that was not requested was archived: %+v", got)
		}
		if n := queueLen(t, poison); n != 1 {
			t.Fatalf("poison queue holds %d, want the refused move", n)
		}
	})

	t.Run("bad requests send nothing", func(t *testing.T) {
		current, _ := table.New[Staff](env.NewTable(t, &reqcount.Counter{}), nil)
		qc := &reqcount.Counter{}
		q := env.NewQueue(t, qc)
		mover := consistency.NewMover[Staff](current, current, consistency.NewSender(q, nil), nil)
		qc.Reset()
		if err := mover.RequestValue(ctx, staff("000003", "No", "Tag", "", 1), nil); !errors.Is(err, table.ErrNoETag) {
			t.Fatalf("RequestValue without an ETag: %v", err)
		}
		if err := mover.Request(ctx, "Sales", "bad/key", nil); !errors.Is(err, keys.ErrInvalidKey) {
			t.Fatalf("Request with a bad key: %v", err)
		}
		if err := mover.Request(ctx, "Sales", "empid_none", nil); !table.Is(err, table.ErrNotFound) {
			t.Fatalf("Request of a missing entity: %v", err)
		}
		if qc.N() != 0 {
			t.Fatalf("%d queue requests for refused moves", qc.N())
		}
	})

	t.Run("a Source that removes index copies moves them with the entity", func(t *testing.T) {
		current, _ := table.New[Staff](env.NewTable(t, &reqcount.Counter{}), nil)
		archive, _ := table.New[Staff](env.NewTable(t, &reqcount.Counter{}), nil)
		q, poison := env.NewQueue(t, nil), env.NewQueue(t, nil)
		v := staff("000004", "Bo", "Ng", "bo@contoso.com", 40)
		copyRow := staff("000004", "Bo", "Ng", "bo@contoso.com", 40)
		copyRow.RowKey = "email_bo@contoso.com"
		for _, e := range []*Staff{v, copyRow} {
			if err := current.Add(ctx, e, nil); err != nil {
				t.Fatal(err)
			}
		}
		plain := consistency.NewMover[Staff](current, archive, consistency.NewSender(q, nil), nil)
		indexed := consistency.NewMover[Staff](withCopies{current}, archive, consistency.NewSender(q, nil), nil)
		if err := indexed.Request(ctx, "Sales", "empid_000004", nil); err != nil {
			t.Fatal(err)
		}
		w := consistency.NewWorker(q, poison, quick(nil))
		_ = w.Handle(indexed.MessageType(), indexed.Process)
		drainAll(t, q, w)
		if got := keysIn(t, current); len(got) != 0 {
			t.Fatalf("left in Current: %q", got)
		}
		// A plain Mover moves the entity alone: its copy stays behind.
		if err := current.Add(ctx, &Staff{Meta: table.Meta{PartitionKey: "Sales", RowKey: "empid_000005"}}, nil); err != nil {
			t.Fatal(err)
		}
		orphan := &Staff{Meta: table.Meta{PartitionKey: "Sales", RowKey: "email_x@contoso.com"}, Email: "x@contoso.com"}
		if err := current.Add(ctx, orphan, nil); err != nil {
			t.Fatal(err)
		}
		if err := plain.Request(ctx, "Sales", "empid_000005", nil); err != nil {
			t.Fatal(err)
		}
		drainAll(t, q, w)
		if got := keysIn(t, current); len(got) != 1 || got[0] != "email_x@contoso.com" {
			t.Fatalf("a plain Mover should leave the copy alone: Current holds %q", got)
		}
	})

	t.Run("batched: 32 per dequeue, a transaction per partition, duplicates and changed sources handled", func(t *testing.T) {
		cc, ac, qc := &reqcount.Counter{}, &reqcount.Counter{}, &reqcount.Counter{}
		currentClient := env.NewTable(t, cc)
		current, _ := table.New[Staff](currentClient, nil)
		archive, _ := table.New[Staff](env.NewTable(t, ac), nil)
		env.friendlyPaging(t, currentClient, "the bound of 1.3 requests per message measures batching: one read per partition per batch; an empty page the service may send adds one (the fake's adversarial paging: 1.32)")
		q, poison := env.NewQueue(t, qc), env.NewQueue(t, nil)
		mover := consistency.NewMover[Staff](current, archive, consistency.NewSender(q, nil), nil)
		var all []*Staff
		for i := 0; i < 100; i++ {
			s := staff(fmt.Sprintf("%06d", i), "F", "L", fmt.Sprintf("e%d@contoso.com", i), i)
			if i%5 == 0 {
				s.PartitionKey = "Ops" // two partitions, interleaved in the queue
			}
			if err := current.Add(ctx, s, nil); err != nil {
				t.Fatal(err)
			}
			all = append(all, s)
		}
		for _, s := range all {
			if err := mover.RequestValue(ctx, s, nil); err != nil {
				t.Fatal(err)
			}
		}
		for _, s := range all[10:15] { // duplicates
			if err := mover.RequestValue(ctx, s, nil); err != nil {
				t.Fatal(err)
			}
		}
		changed := all[42]
		changed.Age = 99
		if err := current.Update(ctx, changed, nil); err != nil {
			t.Fatal(err)
		}
		if err := consistency.NewSender(q, nil).Send(ctx, "other.v1", "x", 1, nil); err != nil {
			t.Fatal(err)
		}
		cc.Reset()
		ac.Reset()
		qc.Reset()
		w := consistency.NewWorker(q, poison, &consistency.WorkerOptions{Concurrency: 1})
		if err := w.HandleBatch(mover.MessageType(), mover.ProcessBatch); err != nil {
			t.Fatal(err)
		}
		st, err := w.Drain(ctx, nil)
		if rep := (*consistency.FailureReport)(nil); err != nil && (!errors.As(err, &rep) || rep.Poisoned != 2 || rep.Retried != 0) {
			t.Fatal(err)
		}
		// The mover's own requests, before the checks below query.
		req := cc.N() + ac.N() + qc.N()
		msgs := int64(106)
		if st.Dequeued != msgs || st.Poisoned != 2 || st.Retried != 0 || st.Processed != msgs-2 {
			t.Fatalf("stats %+v", st)
		}
		if got := keysIn(t, current); !slices.Equal(got, []string{changed.RowKey}) {
			t.Fatalf("left in Current: %q", got)
		}
		got, err := seqs.Collect(archive.Query(ctx, nil))
		if err != nil || len(got) != 99 {
			t.Fatalf("%d in Archive (%v)", len(got), err)
		}
		for _, g := range got {
			if g.Email != fmt.Sprintf("e%d@contoso.com", g.Age) {
				t.Fatalf("archived %+v", g)
			}
		}
		if n := queueLen(t, poison); n != 2 {
			t.Fatalf("poison holds %d, want the changed source's and the foreign message", n)
		}
		perMsg := float64(req) / float64(msgs)
		t.Logf("%s: %d requests for %d messages: %.2f per message (%d batches)", env.Name, req, msgs, perMsg, st.Batches)
		if perMsg > 1.3 {
			t.Fatalf("%.2f requests per message, want at most 1.3", perMsg)
		}
	})
}

// withCopies is a Source whose entities have a copy under "email_<Email>"
// in the same table (an index, as a user might keep one): deleting the
// entity deletes the copy too.
type withCopies struct{ *table.Table[Staff] }

func (s withCopies) DeleteValue(ctx context.Context, v *Staff, _ *table.WriteOptions) error {
	if err := s.Table.DeleteValue(ctx, v, nil); err != nil {
		return err
	}
	return s.Table.Delete(ctx, v.PartitionKey, "email_"+v.Email, &table.DeleteOptions{IfExists: true})
}
