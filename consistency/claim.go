package consistency

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/internal/redact"
)

// ErrClaimLost is the cause of a handler's context when the worker lost
// its claim on the message: the queue refused the message's pop receipt to
// a renewal, a delete or a retry (another consumer dequeued it after its
// visibility lapsed, or it is gone). The message may be handled again, by
// another worker or this one; the handler should stop, since its writes
// race with that handling. context.Cause(ctx) returns it, wrapped with the
// message ID and the service's *azcore.ResponseError.
var ErrClaimLost = errors.New("consistency: claim on the message lost")

// slowRenewalShare: the worker warns once when a renewal's round trip
// takes more than Visibility/slowRenewalShare. A renewal starts a third of
// the visibility after the previous one's answer and must reach the
// service before the visibility that answer set lapses, so a round trip
// of two thirds leaves no margin at all; past a quarter, latency that
// varies by half again is enough to lose messages.
const slowRenewalShare = 4

// claim is a worker's hold on one dequeued message: its newest pop
// receipt, the renewals that keep it hidden while it is held, the context
// its handler gets, and whether the hold was lost. At most one renewal is
// in flight, the next starts a third of the visibility after the previous
// one's answer, and none starts once the claim is settling.
type claim struct {
	w    *Worker
	id   string
	text string
	// ctx is the handler's context; cancel ends it with the loss.
	ctx    context.Context
	cancel context.CancelCauseFunc

	mu       sync.Mutex // guards receipt, settling, lost and timer
	receipt  string
	settling bool  // no renewal starts any more
	lost     error // why the claim was lost, once it was

	// timer fires the next renewal (a goroutine only while one runs, not
	// one per held message); nil until renew is called.
	timer     *time.Timer
	rctx      context.Context    // the renewals' context
	stopRenew context.CancelFunc // cancels a renewal in flight
	inflight  sync.WaitGroup     // a renewal running
}

// newClaim takes hold of dm; ctx is the worker's context for handlers.
func (w *Worker) newClaim(ctx context.Context, dm *azqueue.DequeuedMessage) *claim {
	c := &claim{w: w, id: deref(dm.MessageID), text: deref(dm.MessageText), receipt: deref(dm.PopReceipt)}
	c.ctx, c.cancel = context.WithCancelCause(ctx)
	return c
}

// get returns the newest pop receipt.
func (c *claim) get() string { c.mu.Lock(); defer c.mu.Unlock(); return c.receipt }

// lostErr is why the claim was lost, or nil.
func (c *claim) lostErr() error { c.mu.Lock(); defer c.mu.Unlock(); return c.lost }

// renew starts keeping the message hidden: the first renewal a third of
// the visibility after dequeued (when the dequeue was sent), each next one
// a third of it after the previous answer.
func (c *claim) renew(ctx context.Context, dequeued time.Time) {
	c.rctx, c.stopRenew = context.WithCancel(ctx)
	c.mu.Lock()
	c.timer = time.AfterFunc(time.Until(dequeued.Add(c.w.opts.Visibility/3)), c.tick)
	c.mu.Unlock()
}

// tick is the timer's renewal: unless the claim settles or is lost, it
// sends one and sets the timer for the next.
func (c *claim) tick() {
	c.mu.Lock()
	// The timer may fire as settling starts: settling wins, so no renewal
	// starts after the handler returned.
	if c.settling || c.lost != nil || c.rctx.Err() != nil {
		c.mu.Unlock()
		return
	}
	c.inflight.Add(1)
	receipt := c.receipt
	c.mu.Unlock()
	defer c.inflight.Done()
	if !c.renewOnce(c.rctx, receipt) {
		return
	}
	c.mu.Lock()
	if !c.settling {
		c.timer.Reset(c.w.opts.Visibility / 3)
	}
	c.mu.Unlock()
}

// renewOnce sends one renewal with receipt and reports whether to go on.
func (c *claim) renewOnce(ctx context.Context, receipt string) bool {
	start := time.Now()
	resp, err := c.w.queue.UpdateMessage(ctx, c.id, receipt, c.text, &azqueue.UpdateMessageOptions{VisibilityTimeout: to.Ptr(int32(c.w.opts.Visibility / time.Second))})
	var re *azcore.ResponseError
	if err == nil || errors.As(err, &re) {
		c.w.renewalTook(ctx, time.Since(start))
	}
	switch {
	case err == nil:
		c.mu.Lock()
		c.receipt = deref(resp.PopReceipt)
		c.mu.Unlock()
		c.w.count(func(s *Stats) { s.Renewed++ })
		return true
	case receiptRefused(err):
		// Refused while settling, it may only mean the delete got there
		// first: settle decides.
		c.lose(ctx, err, false)
		return false
	case ctx.Err() != nil:
		return false
	default:
		// The receipt may still hold: try again at the next tick, and say so.
		c.w.log.WarnContext(ctx, "tablekit: visibility renewal failed; the next is a third of the visibility later", "id", c.id, "err", redact.Error(err))
		return true
	}
}

// lose records, once, that the claim is lost: it cancels the handler's
// context with ErrClaimLost, counts the loss in Stats and logs it at Warn
// with the message ID. A renewal refused while the claim settles is not a
// loss yet (settle decides), unless settling is false.
func (c *claim) lose(ctx context.Context, err error, settling bool) {
	c.mu.Lock()
	if c.lost != nil || (c.settling && !settling) {
		c.mu.Unlock()
		return
	}
	c.lost = fmt.Errorf("%w: message %s: %w", ErrClaimLost, c.id, err)
	lost := c.lost
	c.mu.Unlock()
	c.cancel(lost)
	c.w.count(func(s *Stats) { s.ClaimsLost++ })
	c.w.log.WarnContext(ctx, "tablekit: claim on a message lost; it may be handled again", "id", c.id, "err", redact.Error(err))
}

// settle ends the claim with op (the delete, or the update that retries),
// given the newest receipt. No renewal starts once it is called, and op
// does not wait for one in flight: a renewal still short of the service
// then finds the message settled. When op is refused while a renewal was
// in flight, that renewal may have reached the service first and carry the
// newest receipt: settle waits for its answer and tries op once more with
// it. A refusal that stands loses the claim. It returns op's error, or the
// loss when the claim was already lost.
func (c *claim) settle(ctx context.Context, op func(receipt string) error) error {
	c.mu.Lock()
	c.settling = true
	receipt, lost, renewing := c.receipt, c.lost, c.timer != nil
	c.mu.Unlock()
	if lost != nil {
		return lost
	}
	err := op(receipt)
	if err != nil && receiptRefused(err) && renewing {
		c.inflight.Wait()
		if newer := c.get(); newer != receipt {
			err = op(newer)
		}
	}
	c.release()
	if err != nil && receiptRefused(err) {
		c.lose(ctx, err, true)
	}
	return err
}

// release stops the renewals, cancelling one in flight, and waits for the
// renewal running to return. Calling it again does nothing more.
func (c *claim) release() {
	c.mu.Lock()
	c.settling = true
	t := c.timer
	c.mu.Unlock()
	if t != nil {
		t.Stop()
		c.stopRenew()
		c.inflight.Wait()
	}
}

// end releases the claim and ends the handler's context, once the handler
// has returned and the message is settled: the context's resources go
// with it rather than wait for the worker's own context to end.
func (c *claim) end() {
	c.release()
	c.cancel(context.Canceled)
}

// receiptRefused reports whether the queue refused a message's pop
// receipt: 404 MessageNotFound, the service's answer to a receipt that is
// no longer the newest or to a message that is gone, or 400
// PopReceiptMismatch, Azurite's.
func receiptRefused(err error) bool {
	var re *azcore.ResponseError
	return errors.As(err, &re) && (re.StatusCode == http.StatusNotFound || re.ErrorCode == "PopReceiptMismatch")
}

// renewalTook records a renewal's round trip in Stats.SlowestRenewal and
// warns, once per worker, when it takes over Visibility/slowRenewalShare.
func (w *Worker) renewalTook(ctx context.Context, d time.Duration) {
	w.count(func(s *Stats) { s.SlowestRenewal = max(s.SlowestRenewal, d) })
	if d > w.opts.Visibility/slowRenewalShare && w.warnedSlow.CompareAndSwap(false, true) {
		w.log.WarnContext(ctx, "tablekit: queue latency nears a third of the visibility; messages may be handled twice: raise WorkerOptions.Visibility",
			"renewal", d, "visibility", w.opts.Visibility)
	}
}
