package integration

import (
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/internal/poisonq"
	"github.com/tablekit/tablekit/internal/reqcount"
)

// RunPoisonQueue checks what an operator does with a worker's poison queue
// (internal/poisonq, which the CLI's poison commands are built on):
// peek without changing anything, replay what matches as first sent while
// the rest stays, and purge. It relies on Peek Messages, Get Queue
// Properties, Update Message with a zero visibility, and Clear Messages.
func RunPoisonQueue(t *testing.T, env Env) {
	ctx := t.Context()
	c := &reqcount.Counter{}
	work, poison := env.NewQueue(t, nil), env.NewQueue(t, c)
	send := consistency.NewSender(work, nil)
	for _, m := range []struct{ typ, key string }{
		{"bill.v1", "b1"}, {"ship.v1", "s1"}, {"bill.v1", "b2"}, {"ship.v1", "s2"}, {"bill.v1", "b3"},
	} {
		if err := send.Send(ctx, m.typ, m.key, map[string]string{"key": m.key}, nil); err != nil {
			t.Fatal(err)
		}
	}
	fail := func(_ context0, m *consistency.Message) error {
		return consistency.Permanent(errors.New("downstream refused " + m.Key))
	}
	w := consistency.NewWorker(work, poison, quick(nil))
	for _, typ := range []string{"bill.v1", "ship.v1"} {
		if err := w.Handle(typ, fail); err != nil {
			t.Fatal(err)
		}
	}
	_, _ = w.Drain(ctx, nil) // every message fails on purpose; the poison queue says which
	if n := queueLen(t, work); n != 0 {
		t.Fatalf("work queue holds %d messages after the drain, want 0", n)
	}

	pq := poisonq.New(poison, work)
	c.Reset()
	peek, err := pq.Peek(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.N(); got != 2 {
		t.Errorf("Peek cost %d requests, want 2 (properties + peek)", got)
	}
	if peek.Approximate != 5 || len(peek.Messages) != 5 {
		t.Fatalf("peek: %d messages, approximately %d; want 5 and 5", len(peek.Messages), peek.Approximate)
	}
	var keys []string
	for _, p := range peek.Messages {
		if p.Record == nil || p.Record.Envelope == nil || p.Record.Error == "" {
			t.Fatalf("peeked message %q is not a worker's poison record with its envelope and error", p.Text)
		}
		keys = append(keys, p.Record.Envelope.Key)
	}
	slices.Sort(keys)
	if want := []string{"b1", "b2", "b3", "s1", "s2"}; !slices.Equal(keys, want) {
		t.Errorf("poisoned keys %v, want %v", keys, want)
	}
	if _, err := pq.Peek(ctx, &poisonq.Options{Max: 33}); !errors.Is(err, consistency.ErrBadOption) {
		t.Errorf("Peek with Max 33: %v, want ErrBadOption", err)
	}

	// Replay the bills: they go back to the work queue as first sent; the
	// shipments stay in the poison queue, visible at once with their text.
	sum, err := pq.Replay(ctx, &poisonq.Options{Match: func(p *poisonq.Poisoned) bool { return p.Type() == "bill.v1" }})
	if err != nil {
		t.Fatal(err)
	}
	if sum != (poisonq.Summary{Done: 3, Kept: 2}) {
		t.Errorf("replay: %+v, want 3 done, 2 kept", sum)
	}
	left, err := pq.Peek(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(left.Messages) != 2 {
		t.Fatalf("after replay the poison queue shows %d messages at once, want the 2 shipments", len(left.Messages))
	}
	for _, p := range left.Messages {
		if p.Type() != "ship.v1" {
			t.Errorf("kept message %q, want only ship.v1 records, text unchanged", p.Text)
		}
	}
	var (
		mu      sync.Mutex // handlers run concurrently
		handled []string
	)
	ok := consistency.NewWorker(work, poison, quick(nil))
	if err := ok.Handle("bill.v1", func(_ context0, m *consistency.Message) error {
		var p map[string]string
		if err := m.Decode(&p); err != nil {
			return err
		}
		mu.Lock()
		handled = append(handled, p["key"])
		mu.Unlock()
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := ok.Drain(ctx, nil); err != nil {
		t.Fatal(err)
	}
	slices.Sort(handled)
	if want := []string{"b1", "b2", "b3"}; !slices.Equal(handled, want) {
		t.Errorf("replayed bills handled %v, want %v with their payloads", handled, want)
	}

	// Purge with a filter deletes what matches; without one it clears.
	sum, err = pq.Purge(ctx, &poisonq.Options{Match: func(p *poisonq.Poisoned) bool { return p.Record.Envelope.Key == "s1" }})
	if err != nil || sum != (poisonq.Summary{Done: 1, Kept: 1}) {
		t.Errorf("purge s1: %+v, %v; want 1 done, 1 kept", sum, err)
	}
	if sum, err = pq.Purge(ctx, nil); err != nil || sum.Done != 1 {
		t.Errorf("purge all: %+v, %v; want 1 done", sum, err)
	}
	if n := queueLen(t, poison); n != 0 {
		t.Errorf("poison queue holds %d after purge, want 0", n)
	}
}
