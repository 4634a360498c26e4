package table

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/internal/redact"
)

// ErrNoChange, returned by a Modify function, ends Modify without writing.
var ErrNoChange = errors.New("table: no change")

// ModifyOptions configure Modify.
type ModifyOptions struct {
	// MaxAttempts, BaseDelay and MaxDelay are as in RetryOptions.
	MaxAttempts         int
	BaseDelay, MaxDelay time.Duration
	// Mode of the write: aztables.UpdateModeReplace (the default, ""), so
	// the stored entity is exactly the changed value, or
	// aztables.UpdateModeMerge.
	Mode aztables.UpdateMode
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

// Error says how many attempts were made and the last failure, with any
// credential in it redacted.
func (e *ConflictError) Error() string {
	return fmt.Sprintf("table: Modify gave up after %d attempts: %s", e.Attempts, redact.Line(e.Err))
}

// Unwrap returns the last lost race.
func (e *ConflictError) Unwrap() error { return e.Err }

// RetryOptions bound an optimistic-concurrency retry loop.
type RetryOptions struct {
	// MaxAttempts bounds the rounds. Default: 8.
	MaxAttempts int
	// BaseDelay is the first back-off after a lost race; it doubles each
	// round up to MaxDelay, and each wait is jittered to between half and
	// all of it. Defaults: 10 ms and 1 s.
	BaseDelay, MaxDelay time.Duration
}

// ErrLostRace is the one error of a lost optimistic-concurrency race, from
// any package: errors.Is(err, ErrLostRace) holds for tablekit's errors
// that carry a 412 (the ETag moved on) or a 409 EntityAlreadyExists
// (someone created it first), for a *ConflictError whose last round lost
// one, and for errors marked with it where the service reports the race
// some other way: an entity deleted between a read and a guarded write
// (404), a blob changed or created first (412, 409 BlobAlreadyExists).
// Such an error keeps the service's *azcore.ResponseError in its chain.
var ErrLostRace = errors.New("lost a race with another writer")

// WithDefaults is o with every unset field at its documented default (a
// nil o: all defaults), for loops of their own that follow the same rule.
func (o *RetryOptions) WithDefaults() RetryOptions {
	r := RetryOptions{MaxAttempts: 8, BaseDelay: 10 * time.Millisecond, MaxDelay: time.Second}
	if o != nil {
		if o.MaxAttempts > 0 {
			r.MaxAttempts = o.MaxAttempts
		}
		if o.BaseDelay > 0 {
			r.BaseDelay = o.BaseDelay
		}
		if o.MaxDelay > 0 {
			r.MaxDelay = o.MaxDelay
		}
	}
	return r
}

// RetryOnConflict runs round until it returns an error that is not a lost
// race (Is(err, ErrLostRace)), waiting a jittered, growing back-off between rounds.
// round must read what it needs afresh each time. It returns how many
// rounds ran; after MaxAttempts lost races the error is a *ConflictError.
// This is the loop behind Modify, exported for patterns whose write is a
// transaction rather than a single update.
func RetryOnConflict(ctx context.Context, round func(attempt int) error, opts *RetryOptions) (int, error) {
	o := opts.WithDefaults()
	delay := o.BaseDelay
	var last error
	for attempt := 1; attempt <= o.MaxAttempts; attempt++ {
		if attempt > 1 {
			wait := delay/2 + rand.N(delay/2+1)
			select {
			case <-ctx.Done():
				return attempt - 1, ctx.Err()
			case <-time.After(wait):
			}
			delay = min(delay*2, o.MaxDelay)
		}
		err := round(attempt)
		if err == nil || !Is(err, ErrLostRace) {
			return attempt, err
		}
		last = err
	}
	return o.MaxAttempts, &ConflictError{Attempts: o.MaxAttempts, Err: last}
}

// Modify applies change to the current value of an entity with optimistic
// concurrency: it reads the entity, calls change, and writes the result
// guarded by the ETag it read. If another writer got there first (412, or
// 409 on a create), it waits a jittered, growing back-off and goes round
// again, at most MaxAttempts times. change must be safe to call more than
// once, and may return ErrNoChange to skip the write. Without contention it
// costs two requests: a read and a write.
//
// A write whose response was lost is retried by the SDK and meets 412
// although it happened; Modify then reads the changed entity and calls
// change on it again. So change should set values (email = x) rather than
// add to them: an increment can count twice. For counters, keep the
// operation's own ID in the entity (a property naming the last change
// applied) and return ErrNoChange when it is already there.
func (t *Table[T]) Modify(ctx context.Context, partitionKey, rowKey string, change func(*T) error, opts *ModifyOptions) (*T, error) {
	ctx, end := t.span(ctx, "Modify", partitionKey)
	v, err := t.modify(ctx, partitionKey, rowKey, change, opts)
	end(err)
	return v, err
}

func (t *Table[T]) modify(ctx context.Context, partitionKey, rowKey string, change func(*T) error, opts *ModifyOptions) (*T, error) {
	if change == nil {
		return nil, inputErr("Modify", t.plan.typ.String(), "", ErrNilValue, "change func is nil")
	}
	if err := checkKeys("Modify", t.plan.typ.String(), partitionKey, rowKey); err != nil {
		return nil, err
	}
	var ro RetryOptions
	var mode aztables.UpdateMode
	create := false
	if opts != nil {
		ro = RetryOptions{MaxAttempts: opts.MaxAttempts, BaseDelay: opts.BaseDelay, MaxDelay: opts.MaxDelay}
		mode = opts.Mode
		create = opts.Create
	}
	mode, err := t.writeMode("Modify", mode, aztables.UpdateModeReplace)
	if err != nil {
		return nil, err
	}
	var result *T
	_, err = RetryOnConflict(ctx, func(attempt int) error {
		if attempt > 1 && t.log != nil {
			t.log.DebugContext(ctx, "tablekit: Modify lost a race; retrying", "table", t.name, "pk", partitionKey, "rk", rowKey, "attempt", attempt)
		}
		v, err := t.Get(ctx, partitionKey, rowKey, nil)
		isNew := false
		if err != nil {
			if !create || !Is(err, ErrNotFound) {
				return err
			}
			v, isNew = new(T), true
			m := t.Meta(v)
			m.PartitionKey, m.RowKey = partitionKey, rowKey
			// A type that declares its keys sees its key fields, as on a read.
			if t.plan.hasKeyLayout() {
				if err := t.plan.fillKeyFields(reflect.ValueOf(v).Elem(), m); err != nil {
					return err
				}
			}
		}
		if err := change(v); err != nil {
			if errors.Is(err, ErrNoChange) {
				if !isNew {
					result = v
				}
				return nil
			}
			return err
		}
		m := t.Meta(v)
		if m.PartitionKey != partitionKey || m.RowKey != rowKey {
			return inputErr("Modify", t.plan.typ.String(), "Meta", ErrInvalidValue, "change must not alter the keys")
		}
		if isNew {
			err = t.Add(ctx, v, nil)
		} else {
			err = t.Update(ctx, v, &UpdateOptions{Mode: mode})
			if create && Is(err, ErrNotFound) {
				// Deleted between our read and write: go round and create
				// it, keeping the service's 404 in the chain.
				err = fmt.Errorf("%w (deleted after it was read): %w", ErrLostRace, err)
			}
		}
		if err != nil {
			return err
		}
		result = v
		return nil
	}, &ro)
	if err != nil {
		return nil, err
	}
	return result, nil
}
