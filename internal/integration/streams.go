package integration

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/eventstream"
	"github.com/tablekit/tablekit/faults"
	"github.com/tablekit/tablekit/internal/reqcount"
	"github.com/tablekit/tablekit/table"
)

// Deposit is an event of an account's stream.
type Deposit struct {
	eventstream.Event
	Amount int64
	Note   string
	Memo   string
}

// AccountState is an account's snapshot.
type AccountState struct {
	eventstream.Snapshot
	Balance int64
}

// Balance is a projection written with the events that change it.
type Balance struct {
	table.Meta
	Amount int64
}

// crashClient is a table client whose transactions pass through before
// first: an error from it stands for a process that died before sending
// (nothing reaches the service), and a hook there forces an interleaving.
type crashClient struct {
	table.Client
	n      atomic.Int32
	before func(n int) error
}

func (c *crashClient) SubmitTransaction(ctx context0, actions []aztables.TransactionAction, opts *aztables.SubmitTransactionOptions) (aztables.TransactionResponse, error) {
	if c.before != nil {
		if err := c.before(int(c.n.Add(1))); err != nil {
			return aztables.TransactionResponse{}, err
		}
	}
	return c.Client.SubmitTransaction(ctx, actions, opts)
}

var errCrashed = errors.New("conformance: the process died here")

func deposits(prefix string, n int, amount int64) []*Deposit {
	out := make([]*Deposit, n)
	for i := range out {
		out[i] = &Deposit{Amount: amount, Note: fmt.Sprint(prefix, i)}
		if prefix != "" {
			out[i].ID = fmt.Sprint(prefix, i)
		}
	}
	return out
}

// readStream reads a whole stream forward and checks that its versions are
// 1..n in order.
func readStream(t *testing.T, s *eventstream.Store[Deposit], stream string) []*Deposit {
	t.Helper()
	var out []*Deposit
	for e, err := range s.Read(t.Context(), stream, 1, nil) {
		if err != nil {
			t.Fatal(err)
		}
		if e.Version != int64(len(out)+1) {
			t.Fatalf("event %d has version %d", len(out)+1, e.Version)
		}
		out = append(out, e)
	}
	return out
}

// RunEventStreams runs the event stream (eventstream.Store) cases.
func RunEventStreams(t *testing.T, env Env) {
	ctx := t.Context()

	t.Run("append and read: one request per append of up to 99 events (49 with IDs)", func(t *testing.T) {
		c := &reqcount.Counter{}
		s, err := eventstream.New[Deposit](env.NewTable(t, c), nil)
		if err != nil {
			t.Fatal(err)
		}
		head, err := s.Open(ctx, "acct-1", nil)
		if err != nil || head.Version() != 0 || head.ETag() != "" {
			t.Fatalf("Open of a new stream: %+v, %v", head, err)
		}
		wantRequests(t, c, 1, "Open")
		steps := []struct {
			events []*Deposit
			reqs   int
		}{
			{deposits("a", 3, 10), 1},
			{deposits("", 99, 1), 1},
			{deposits("b", 49, 1), 1},
			{deposits("c", 50, 1), 2},  // 101 operations with the header
			{deposits("", 250, 1), 3},  // 99 + 99 + 52
			{deposits("d", 120, 1), 3}, // 49 + 49 + 22
		}
		want := int64(0)
		for i, st := range steps {
			if head, err = s.Append(ctx, head, st.events, nil); err != nil {
				t.Fatalf("append %d: %v", i, err)
			}
			want += int64(len(st.events))
			if head.Version() != want || head.Pending() != 0 || head.ETag() == "" {
				t.Fatalf("append %d: head %+v, want version %d", i, head, want)
			}
			if last := st.events[len(st.events)-1]; last.Version != want || last.ETag == "" {
				t.Fatalf("append %d: last event version %d, ETag %q", i, last.Version, last.ETag)
			}
			wantRequests(t, c, st.reqs, fmt.Sprintf("append %d of %d events", i, len(st.events)))
		}
		all := readStream(t, s, "acct-1")
		if int64(len(all)) != want || all[0].Note != "a0" || all[0].Amount != 10 || all[0].ID != "a0" {
			t.Fatalf("read %d events, first %+v", len(all), all[0])
		}
		wantRequests(t, c, 2, "forward read of 571 events (header, one page)")

		var back []int64
		for e, err := range s.Read(ctx, "acct-1", math.MaxInt64, &eventstream.ReadOptions{Backward: true, PageSize: 200}) {
			if err != nil {
				t.Fatal(err)
			}
			back = append(back, e.Version)
		}
		if len(back) != int(want) || back[0] != want || back[len(back)-1] != 1 || !slices.IsSortedFunc(back, func(a, b int64) int { return int(b - a) }) {
			t.Fatalf("backward read: %d events from %d to %d", len(back), back[0], back[len(back)-1])
		}
		// Header and three pages; the service may add empty pages (the
		// adversarial fake: every third response).
		wantPagedRequests(t, env, c, 4, 4, 6, "backward read of 571 events in pages of 200")

		page, err := s.ReadPage(ctx, "acct-1", 100, "", &eventstream.ReadOptions{PageSize: 5})
		if err != nil || len(page.Items) != 5 || page.Items[0].Version != 100 || page.Next == "" {
			t.Fatalf("page from 100: %+v, %v", page, err)
		}
		page, err = s.ReadPage(ctx, "acct-1", 0, page.Next, &eventstream.ReadOptions{PageSize: 5})
		if err != nil || page.Items[0].Version != 105 {
			t.Fatalf("page after the token: %+v, %v", page, err)
		}
		wantPagedRequests(t, env, c, 3, 3, 4, "two pages (header, page, page), and an empty page the service may send")
		page, err = s.ReadPage(ctx, "acct-1", 3, "", &eventstream.ReadOptions{PageSize: 5, Backward: true})
		if err != nil || len(page.Items) != 3 || page.Items[0].Version != 3 || page.Next != "" {
			t.Fatalf("backward page from 3: %+v, %v", page, err)
		}
		c.Reset()
	})

	t.Run("appends split by size: 4 MiB per transaction", func(t *testing.T) {
		c := &reqcount.Counter{}
		s, _ := eventstream.New[Deposit](env.NewTable(t, c), nil)
		head := eventstream.NewHead("big")
		events := deposits("", 90, 1)
		for _, e := range events {
			// ASCII (Azurite's UTF-8 bug), 60 KB an event: 5.4 MB in all.
			e.Note, e.Memo = strings.Repeat("x", 30_000), strings.Repeat("y", 30_000)
		}
		head, err := s.Append(ctx, head, events, nil)
		if err != nil {
			t.Fatal(err)
		}
		if c.N() != 2 || head.Version() != 90 { // 4 MiB holds about 69 of them
			t.Fatalf("90 events of 60 KiB: %d requests, version %d", c.N(), head.Version())
		}
		c.Reset()
		if got := readStream(t, s, "big"); len(got) != 90 || got[89].Note != events[89].Note {
			t.Fatalf("read %d", len(got))
		}
	})

	t.Run("a stale head is ErrConflict and writes nothing", func(t *testing.T) {
		c := &reqcount.Counter{}
		s, _ := eventstream.New[Deposit](env.NewTable(t, c), nil)
		h0, _ := s.Open(ctx, "acct", nil)
		h1, err := s.Append(ctx, h0, deposits("a", 2, 1), nil)
		if err != nil {
			t.Fatal(err)
		}
		c.Reset()
		_, err = s.Append(ctx, h0, deposits("b", 3, 1), nil)
		var te *batch.TransactionError
		if !errors.Is(err, eventstream.ErrConflict) || !table.Is(err, table.ErrLostRace) || !errors.As(err, &te) ||
			!strings.Contains(err.Error(), `stream "acct" is no longer at version 0`) {
			t.Fatalf("stale head: %v", err)
		}
		// The header refused it, so Append read it (a lost answer looks the
		// same).
		wantRequests(t, c, 2, "a refused append and its header read")
		if h1.Version() != 2 {
			t.Fatalf("head after the first append: %d", h1.Version())
		}
		if got := readStream(t, s, "acct"); len(got) != 2 {
			t.Fatalf("%d events after refused appends", len(got))
		}
	})

	t.Run("a duplicate event ID fails the append whole and is not retried", func(t *testing.T) {
		c := &reqcount.Counter{}
		s, _ := eventstream.New[Deposit](env.NewTable(t, c), nil)
		head, err := s.Append(ctx, eventstream.NewHead("acct"), deposits("a", 3, 1), nil)
		if err != nil {
			t.Fatal(err)
		}
		c.Reset()
		again := append(deposits("b", 2, 1), &Deposit{Event: eventstream.Event{ID: "a1"}, Amount: 5})
		attempts, err := table.RetryOnConflict(ctx, func(int) error {
			_, err := s.Append(ctx, head, again, nil)
			return err
		}, nil)
		if !errors.Is(err, eventstream.ErrDuplicateEvent) || !strings.Contains(err.Error(), `event ID "a1" is already in stream "acct"`) || table.Is(err, table.ErrLostRace) || attempts != 1 {
			t.Fatalf("duplicate: %v after %d attempts", err, attempts)
		}
		wantRequests(t, c, 1, "the refused append")
		// The head is still current: nothing was written.
		if head, err = s.Append(ctx, head, deposits("b", 2, 1), nil); err != nil || head.Version() != 5 {
			t.Fatalf("append after the duplicate: %+v, %v", head, err)
		}
	})

	t.Run("32 concurrent appenders lose nothing and duplicate nothing", func(t *testing.T) {
		c := &reqcount.Counter{}
		s, _ := eventstream.New[Deposit](env.NewTable(t, c), nil)
		const writers, each = 32, 3
		var wg sync.WaitGroup
		var attempts, dups atomic.Int64
		errs := make(chan error, writers)
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for k := range each {
					ev := &Deposit{Event: eventstream.Event{ID: fmt.Sprintf("w%02d-%d", w, k)}, Amount: int64(w*100 + k)}
					n := 0
					_, err := s.AppendFunc(ctx, "hot", func(*eventstream.Head) ([]*Deposit, *eventstream.AppendOptions, error) {
						n++
						return []*Deposit{ev}, nil, nil
					}, &table.RetryOptions{MaxAttempts: 1000, BaseDelay: time.Millisecond, MaxDelay: 50 * time.Millisecond})
					attempts.Add(int64(n))
					if err != nil {
						errs <- fmt.Errorf("writer %d event %d: %w", w, k, err)
						return
					}
					// A redelivered event: the stream must refuse it.
					redo := &Deposit{Event: eventstream.Event{ID: ev.ID}, Amount: ev.Amount}
					for {
						head, err := s.Open(ctx, "hot", nil)
						if err == nil {
							_, err = s.Append(ctx, head, []*Deposit{redo}, nil)
						}
						if errors.Is(err, eventstream.ErrDuplicateEvent) {
							dups.Add(1)
							break
						}
						if !errors.Is(err, eventstream.ErrConflict) {
							errs <- fmt.Errorf("writer %d redelivery %d: %v", w, k, err)
							return
						}
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		all := readStream(t, s, "hot")
		seen := map[string]bool{}
		for _, e := range all {
			if seen[e.ID] {
				t.Errorf("event %s stored twice", e.ID)
			}
			seen[e.ID] = true
		}
		if len(all) != writers*each || len(seen) != writers*each || dups.Load() != writers*each {
			t.Fatalf("%d events stored, %d distinct, %d redeliveries refused; want %d", len(all), len(seen), dups.Load(), writers*each)
		}
		t.Logf("%d appends took %d attempts (%d requests in all)", writers*each, attempts.Load(), c.N())
	})

	t.Run("a crash between transactions: readers see the old version; the next append removes the tail", func(t *testing.T) {
		c := &reqcount.Counter{}
		client := env.NewTable(t, c)
		s, _ := eventstream.New[Deposit](client, nil)
		head, err := s.Append(ctx, eventstream.NewHead("acct"), deposits("a", 5, 1), nil)
		if err != nil {
			t.Fatal(err)
		}
		dying := &crashClient{Client: client, before: func(n int) error {
			if n > 2 {
				return errCrashed // two transactions went out, then the process died
			}
			return nil
		}}
		ds, _ := eventstream.New[Deposit](dying, nil)
		if _, err := ds.Append(ctx, head, deposits("x", 150, 1), nil); !errors.Is(err, errCrashed) {
			t.Fatalf("dying append: %v", err)
		}
		c.Reset()
		opened, err := s.Open(ctx, "acct", nil)
		if err != nil || opened.Version() != 5 || opened.Pending() != 155 {
			t.Fatalf("after the crash: %+v, %v", opened, err)
		}
		if got := readStream(t, s, "acct"); len(got) != 5 {
			t.Fatalf("a reader sees %d events after the crash, want the 5 committed", len(got))
		}
		c.Reset()
		// The next append, from a fresh Open, takes the 98 uncommitted events
		// and their ID rows away (a query, two transactions) and appends; the
		// IDs of the dead append are free again.
		head, err = s.Append(ctx, opened, deposits("x", 2, 7), nil)
		if err != nil || head.Version() != 7 || head.Pending() != 0 {
			t.Fatalf("append after the crash: %+v, %v", head, err)
		}
		wantPagedRequests(t, env, c, 4, 4, 5, "rollback (query, 2 transactions) and the append, and an empty page the service may send")
		got := readStream(t, s, "acct")
		if len(got) != 7 || got[5].ID != "x0" || got[5].Amount != 7 || got[6].ID != "x1" {
			t.Fatalf("after the next append: %d events", len(got))
		}
		// Nothing of the dead append is left: its rows past version 7 are gone.
		raw := 0
		rows, err := table.New[table.Entity](client, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, err := range rows.Query(ctx, &table.QueryOptions{Filter: table.Partition("acct")}) {
			if err != nil {
				t.Fatal(err)
			}
			raw++
		}
		if raw != 1+7+7 { // header, events, ID rows
			t.Fatalf("%d rows in the partition, want 15", raw)
		}
	})

	t.Run("bad input on a pending stream sends nothing, not even the rollback", func(t *testing.T) {
		c := &reqcount.Counter{}
		client := env.NewTable(t, c)
		dying := &crashClient{Client: client, before: func(n int) error {
			if n > 1 {
				return errCrashed
			}
			return nil
		}}
		ds, _ := eventstream.New[Deposit](dying, nil)
		if _, err := ds.Append(ctx, eventstream.NewHead("acct"), deposits("a", 60, 1), nil); !errors.Is(err, errCrashed) {
			t.Fatalf("dying append: %v", err)
		}
		s, _ := eventstream.New[Deposit](client, nil)
		head, err := s.Open(ctx, "acct", nil)
		if err != nil || head.Pending() != 60 {
			t.Fatalf("after the crash: %+v, %v", head, err)
		}
		c.Reset()
		huge := &Deposit{Note: strings.Repeat("x", table.MaxStringUTF16+1)}
		if _, err := s.Append(ctx, head, []*Deposit{huge}, nil); !errors.Is(err, table.ErrStringTooLong) {
			t.Fatalf("bad event: %v", err)
		}
		wantRequests(t, c, 0, "a bad append on a pending stream")
	})

	t.Run("a writer that loses its stream midway fails on its next transaction", func(t *testing.T) {
		c := &reqcount.Counter{}
		client := env.NewTable(t, c)
		s, _ := eventstream.New[Deposit](client, nil)
		var other *eventstream.Head
		var otherErr error
		slow := &crashClient{Client: client, before: func(n int) error {
			if n == 2 { // between A's first and second transaction, B opens and appends
				h, err := s.Open(ctx, "acct", nil)
				if err == nil {
					other, otherErr = s.Append(ctx, h, deposits("b", 2, 2), nil)
				} else {
					otherErr = err
				}
			}
			return nil
		}}
		a, _ := eventstream.New[Deposit](slow, nil)
		_, err := a.Append(ctx, eventstream.NewHead("acct"), deposits("a", 120, 1), nil)
		if otherErr != nil || other.Version() != 2 {
			t.Fatalf("B: %+v, %v", other, otherErr)
		}
		if !errors.Is(err, eventstream.ErrConflict) {
			t.Fatalf("A after losing its stream: %v", err)
		}
		got := readStream(t, s, "acct")
		if len(got) != 2 || got[0].ID != "b0" || got[1].ID != "b1" {
			t.Fatalf("stream after the race: %d events", len(got))
		}
		head, _ := s.Open(ctx, "acct", nil)
		if head.Pending() != 0 {
			t.Fatalf("head after the race: %+v", head)
		}
	})

	t.Run("includes and a snapshot commit with the append or not at all", func(t *testing.T) {
		c := &reqcount.Counter{}
		client := env.NewTable(t, c)
		s, _ := eventstream.New[Deposit](client, nil)
		head := eventstream.NewHead("acct")
		bal := &Balance{Meta: table.Meta{PartitionKey: "acct", RowKey: "balance"}, Amount: 30}
		head, err := s.Append(ctx, head, deposits("a", 3, 10), &eventstream.AppendOptions{
			Include:  []batch.Op{batch.Add(bal)},
			Snapshot: &AccountState{Balance: 30},
		})
		if err != nil {
			t.Fatal(err)
		}
		wantRequests(t, c, 1, "append with an include and a snapshot")
		var snap AccountState
		if err := s.LoadSnapshot(ctx, "acct", &snap, nil); err != nil || snap.Version != 3 || snap.Balance != 30 {
			t.Fatalf("snapshot: %+v, %v", snap, err)
		}
		// The include fails (the projection exists): neither the events, nor
		// the snapshot, nor the header moved.
		_, err = s.Append(ctx, head, deposits("b", 1, 5), &eventstream.AppendOptions{
			Include:  []batch.Op{batch.Add(&Balance{Meta: table.Meta{PartitionKey: "acct", RowKey: "balance"}, Amount: 35})},
			Snapshot: &AccountState{Balance: 35},
		})
		if !table.Is(err, table.ErrAlreadyExists) || errors.Is(err, eventstream.ErrConflict) {
			t.Fatalf("append with a failing include: %v", err)
		}
		if err := s.LoadSnapshot(ctx, "acct", &snap, nil); err != nil || snap.Version != 3 || len(readStream(t, s, "acct")) != 3 {
			t.Fatalf("a failed include left the snapshot at %d", snap.Version)
		}
		// Includes ride the last transaction of a split append.
		bal.Amount = 150
		head, err = s.Append(ctx, head, deposits("c", 100, 1), &eventstream.AppendOptions{
			Include:  []batch.Op{batch.Update(bal, aztables.UpdateModeReplace)},
			Snapshot: &AccountState{Balance: 130},
		})
		if err != nil || head.Version() != 103 {
			t.Fatalf("split append with includes: %+v, %v", head, err)
		}
		if err := s.LoadSnapshot(ctx, "acct", &snap, nil); err != nil {
			t.Fatal(err)
		}
		tb, _ := table.New[Balance](client, nil)
		stored, _ := tb.Get(ctx, "acct", "balance", nil)
		if snap.Version != 103 || snap.Balance != 130 || stored.Amount != 150 {
			t.Fatalf("after the split append: snapshot %+v, projection %+v", snap, stored)
		}
	})

	t.Run("under 10% faults every append succeeds at the first call, once", func(t *testing.T) {
		inj := faults.New(21, &faults.Options{Fraction: 0.1})
		gate := &gatedPolicy{p: inj}
		c := &reqcount.Counter{Faults: gate}
		s, _ := eventstream.New[Deposit](env.NewTable(t, c), nil)
		gate.on.Store(true)
		head := eventstream.NewHead("acct")
		var want []string
		sizes := []int{1, 3, 60, 1, 120, 2, 49, 50, 1, 7}
		for round := range 4 {
			for i, n := range sizes {
				evs := deposits(fmt.Sprintf("r%d-%d-", round, i), n, int64(n))
				next, err := s.Append(ctx, head, evs, nil)
				if err != nil {
					t.Fatalf("append %d of round %d (%d events) under faults: %v", i, round, n, err)
				}
				head = next
				for _, e := range evs {
					want = append(want, e.ID)
				}
			}
		}
		gate.on.Store(false)
		st := inj.Stats()
		t.Logf("%d events in %d appends; %d requests drawn, faults %d before / %d lost responses / %d statuses",
			len(want), 4*len(sizes), st.Requests, st.Before, st.After, st.Status)
		if st.After == 0 || st.Before+st.Status == 0 {
			t.Fatalf("too few faults to tell anything: %+v", st)
		}
		got := readStream(t, s, "acct")
		if len(got) != len(want) || head.Version() != int64(len(want)) {
			t.Fatalf("%d events stored, head at %d; want %d", len(got), head.Version(), len(want))
		}
		for i, e := range got {
			if e.ID != want[i] {
				t.Fatalf("event %d is %s, want %s", i+1, e.ID, want[i])
			}
		}
	})

	t.Run("a lost answer is settled by reading the header", func(t *testing.T) {
		gate := &gatedPolicy{p: faults.LoseResponse(1)}
		c := &reqcount.Counter{Faults: gate}
		s, _ := eventstream.New[Deposit](env.NewTable(t, c), nil)
		head, err := s.Append(ctx, eventstream.NewHead("acct"), deposits("a", 2, 1), nil)
		if err != nil {
			t.Fatal(err)
		}
		c.Reset()
		gate.on.Store(true)
		head, err = s.Append(ctx, head, deposits("b", 2, 1), nil)
		gate.on.Store(false)
		if err != nil || head.Version() != 4 {
			t.Fatalf("append whose answer was lost: %+v, %v", head, err)
		}
		// The transaction, the SDK's retry of it (412), the header read.
		wantRequests(t, c, 3, "append with a lost answer")
		if head, err = s.Append(ctx, head, deposits("c", 1, 1), nil); err != nil || head.Version() != 5 {
			t.Fatalf("next append from the settled head: %+v, %v", head, err)
		}
		if got := readStream(t, s, "acct"); len(got) != 5 {
			t.Fatalf("%d events", len(got))
		}
	})
}
