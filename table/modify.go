package table

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// ErrNoChange, returned by a Modify function, ends Modify without writing.
var ErrNoChange = errors.New("table: no change")

// ModifyOptions configure Modify.
type ModifyOptions struct {
	// MaxAttempts bounds the read-change-write rounds. Default: 8.
	MaxAttempts int
	// BaseDelay is the first back-off after a lost race; it doubles each
	// round up to MaxDelay, and each wait is jittered to between half and
	// all of it. Defaults: 10 ms and 1 s.
	BaseDelay, MaxDelay time.Duration
	// Mode of the write: Replace (default), so the stored entity is exactly
	// the changed value, or Merge.
	Mode *UpdateMode
	// Create lets Modify start from a new value (keys set, everything else
	// zero) when the entity does not exist; it is then added, and a
	// concurrent add sends Modify round again. Default: false, and a missing
	// entity is ErrNotFound.
	Create bool
}

// ConflictError is returned when Modify lost the race MaxAttempts times.
type ConflictError struct {
	Attempts int
	Err      error // the last precondition or conflict failure
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("table: Modify gave up after %d attempts: %v", e.Attempts, e.Err)
}

func (e *ConflictError) Unwrap() error { return e.Err }

// Modify applies change to the current value of an entity with optimistic
// concurrency: it reads the entity, calls change, and writes the result
// guarded by the ETag it read. If another writer got there first (412, or
// 409 on a create), it waits a jittered, growing back-off and goes round
// again, at most MaxAttempts times. change must be safe to call more than
// once, and may return ErrNoChange to skip the write. Without contention it
// costs two requests: a read and a write.
func (t *Table[T]) Modify(ctx context.Context, partitionKey, rowKey string, change func(*T) error, opts *ModifyOptions) (*T, error) {
	if change == nil {
		return nil, inputErr("Modify", t.plan.typ.String(), "", ErrNilValue, "change func is nil")
	}
	if err := checkKeys("Modify", t.plan.typ.String(), partitionKey, rowKey); err != nil {
		return nil, err
	}
	o := ModifyOptions{MaxAttempts: 8, BaseDelay: 10 * time.Millisecond, MaxDelay: time.Second}
	mode := Replace
	if opts != nil {
		if opts.MaxAttempts > 0 {
			o.MaxAttempts = opts.MaxAttempts
		}
		if opts.BaseDelay > 0 {
			o.BaseDelay = opts.BaseDelay
		}
		if opts.MaxDelay > 0 {
			o.MaxDelay = opts.MaxDelay
		}
		if opts.Mode != nil {
			mode = *opts.Mode
		}
		o.Create = opts.Create
	}
	delay := o.BaseDelay
	var last error
	for attempt := 1; attempt <= o.MaxAttempts; attempt++ {
		if attempt > 1 {
			wait := delay/2 + rand.N(delay/2+1)
			if t.log != nil {
				t.log.DebugContext(ctx, "tablekit: Modify lost a race; retrying", "table", t.name,
					"pk", partitionKey, "rk", rowKey, "attempt", attempt, "wait", wait, "err", last)
			}
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(wait):
			}
			delay = min(delay*2, o.MaxDelay)
		}
		v, err := t.Get(ctx, partitionKey, rowKey, nil)
		create := false
		if err != nil {
			if !o.Create || !IsNotFound(err) {
				return nil, err
			}
			v, create = new(T), true
			m := t.Meta(v)
			m.PartitionKey, m.RowKey = partitionKey, rowKey
		}
		if err := change(v); err != nil {
			if errors.Is(err, ErrNoChange) {
				if create {
					return nil, nil
				}
				return v, nil
			}
			return nil, err
		}
		m := t.Meta(v)
		if m.PartitionKey != partitionKey || m.RowKey != rowKey {
			return nil, inputErr("Modify", t.plan.typ.String(), "Meta", ErrInvalidValue, "change must not alter the keys")
		}
		if create {
			err = t.Add(ctx, v, nil)
			if IsAlreadyExists(err) {
				last = err
				continue
			}
		} else {
			err = t.Update(ctx, v, &UpdateOptions{Mode: mode})
			if IsPreconditionFailed(err) || IsNotFound(err) && o.Create {
				last = err
				continue
			}
		}
		if err != nil {
			return nil, err
		}
		return v, nil
	}
	return nil, &ConflictError{Attempts: o.MaxAttempts, Err: last}
}
