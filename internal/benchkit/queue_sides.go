package benchkit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/internal/keyrules"
	"github.com/tablekit/tablekit/table"
)

// mixedRound is one round of the mixed queue: n model messages (new
// employees) and n move requests (Current → Archive, one partition)
// interleaved on one queue, and the batched handlers of both.
type mixedRound struct {
	*indexRound
	batches map[string]consistency.BatchHandler
}

func (a *Account) mixedRound(ctx context.Context, n int) (*mixedRound, error) {
	r, m, err := a.modelIndex(ctx, 0)
	if err != nil {
		return nil, err
	}
	curName, cur, dropCur, err := a.newTable(ctx, "benchmcur")
	if err != nil {
		r.cleanup()
		return nil, err
	}
	arcName, _, dropArc, err := a.newTable(ctx, "benchmarc")
	if err != nil {
		dropCur()
		r.cleanup()
		return nil, err
	}
	prev := r.cleanup
	r.cleanup = func() { prev(); dropCur(); dropArc() }
	fail := func(err error) (*mixedRound, error) { r.cleanup(); return nil, err }
	if err := LoadWriter(ctx, cur, Rows(n, 1), 8); err != nil {
		return fail(err)
	}
	current, err := table.New[Row](a.KitClient(curName), nil)
	if err != nil {
		return fail(err)
	}
	archive, err := table.New[Row](a.KitClient(arcName), nil)
	if err != nil {
		return fail(err)
	}
	mover := consistency.NewMover[Row](current, archive, consistency.NewSender(r.q, nil), nil)
	for i := range n {
		v := indexEmployee(i)
		v.RowKey = "empid_" + v.RowKey
		if err := m.Add(ctx, v, nil); err != nil {
			return fail(err)
		}
		if err := mover.Request(ctx, "p00", keyrules.Uint64(uint64(i)), nil); err != nil {
			return fail(err)
		}
	}
	return &mixedRound{r, map[string]consistency.BatchHandler{m.MessageType(): m.ProcessBatch, mover.MessageType(): mover.ProcessBatch}}, nil
}

// MixedWorker drains the mixed queue (n model messages and n moves) with
// one Worker of concurrency conc carrying both batched handlers
// (HandleBatch).
func (a *Account) MixedWorker(n, conc int) Side {
	return Side{Name: fmt.Sprintf("Worker with Model and Mover ProcessBatch, concurrency %d", conc), Round: func(ctx context.Context) (func(context.Context) (int, error), func(), error) {
		r, err := a.mixedRound(ctx, n)
		if err != nil {
			return nil, nil, err
		}
		w := consistency.NewWorker(r.q, r.poison, &consistency.WorkerOptions{Concurrency: conc})
		for t, h := range r.batches {
			if err := w.HandleBatch(t, h); err != nil {
				r.cleanup()
				return nil, nil, err
			}
		}
		return batchesDrain(func(ctx context.Context) (consistency.Stats, error) { return w.Drain(ctx, nil) }), r.cleanup, nil
	}}
}

// MixedHand drains the mixed queue as a careful hand loop does: dequeue
// 32, apply each type's messages with its batched handler, delete the
// done ones conc at a time, until a dequeue finds none. No renewals, no
// poison queue, no back-off: the work the Worker adds those to.
func (a *Account) MixedHand(n, conc int) Side {
	return Side{Name: fmt.Sprintf("hand loop with Model and Mover ProcessBatch, concurrency %d", conc), Round: func(ctx context.Context) (func(context.Context) (int, error), func(), error) {
		r, err := a.mixedRound(ctx, n)
		if err != nil {
			return nil, nil, err
		}
		return func(ctx context.Context) (int, error) { return handLoop(ctx, r.q, r.batches, conc) }, r.cleanup, nil
	}}
}

// handLoop is MixedHand's timed work.
func handLoop(ctx context.Context, q *azqueue.QueueClient, batches map[string]consistency.BatchHandler, conc int) (int, error) {
	done := 0
	for {
		resp, err := q.DequeueMessages(ctx, &azqueue.DequeueMessagesOptions{NumberOfMessages: to.Ptr(int32(32)), VisibilityTimeout: to.Ptr(int32(30))})
		if err != nil {
			return done, err
		}
		if len(resp.Messages) == 0 {
			return done, nil
		}
		byType := map[string][]*consistency.Message{}
		receipts := map[*consistency.Message][2]string{}
		for _, dm := range resp.Messages {
			var msg consistency.Message
			if err := json.Unmarshal([]byte(*dm.MessageText), &msg); err != nil {
				return done, err
			}
			receipts[&msg] = [2]string{*dm.MessageID, *dm.PopReceipt}
			byType[msg.Type] = append(byType[msg.Type], &msg)
		}
		var dels [][2]string
		for t, msgs := range byType {
			h := batches[t]
			if h == nil {
				return done, fmt.Errorf("no handler for %s", t)
			}
			for i, err := range h(ctx, msgs) {
				if err != nil {
					return done, err
				}
				dels = append(dels, receipts[msgs[i]])
			}
		}
		sem := make(chan struct{}, conc)
		var wg sync.WaitGroup
		var mu sync.Mutex
		var delErr error
		for _, d := range dels {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				if _, err := q.DeleteMessage(ctx, d[0], d[1], nil); err != nil {
					mu.Lock()
					delErr = errors.Join(delErr, err)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if delErr != nil {
			return done, delErr
		}
		done += len(dels)
	}
}
