package patterns

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/tablekit/tablekit/internal/seqs"
	"github.com/tablekit/tablekit/table"
)

// ReferenceCacheOptions configure a ReferenceCache. nil means the defaults.
type ReferenceCacheOptions struct {
	// Query selects the entities to keep. Default: the whole table.
	Query *table.QueryOptions
	// TTL is how long a load serves lookups before the next lookup
	// reloads it. Default (0): 5 minutes; a negative TTL makes every
	// lookup fail with ErrBadOption, before any request.
	TTL time.Duration
	// Now is the clock. Default: time.Now.
	Now func() time.Time
}

// ReferenceCache is the guide's "join in the client": a small, rarely
// changing table (the departments) read whole into memory, so lookups that
// join it to other data cost no requests. After TTL the next lookup
// reloads it (one query); concurrent lookups share that one reload. Safe
// for concurrent use.
type ReferenceCache[T any] struct {
	tbl   *table.Table[T]
	query *table.QueryOptions
	ttl   time.Duration
	now   func() time.Time
	bad   error // an option out of range, returned by every lookup

	mu       sync.Mutex
	byKey    map[[2]string]*T
	all      []*T
	loadedAt time.Time
	loading  chan struct{} // closed when the load in flight ends
	loadErr  error
	loads    int
}

// NewReferenceCache returns an empty cache; the first lookup loads it.
func NewReferenceCache[T any](tbl *table.Table[T], opts *ReferenceCacheOptions) *ReferenceCache[T] {
	c := &ReferenceCache[T]{tbl: tbl, ttl: 5 * time.Minute, now: time.Now}
	if opts != nil {
		c.query = opts.Query
		if opts.TTL > 0 {
			c.ttl = opts.TTL
		}
		if opts.TTL < 0 {
			// NewReferenceCache returns no error, so the first lookup does.
			c.bad = &table.InputError{Op: "NewReferenceCache", Field: "TTL", Rule: table.ErrBadOption, Detail: fmt.Sprintf("%s is negative; 0 means the default", opts.TTL)}
		}
		if opts.Now != nil {
			c.now = opts.Now
		}
	}
	return c
}

// fresh returns the loaded data, loading it when absent or expired.
func (c *ReferenceCache[T]) fresh(ctx context.Context) (map[[2]string]*T, []*T, error) {
	if c.bad != nil {
		return nil, nil, c.bad
	}
	for {
		c.mu.Lock()
		if c.byKey != nil && c.now().Sub(c.loadedAt) < c.ttl {
			byKey, all := c.byKey, c.all
			c.mu.Unlock()
			return byKey, all, nil
		}
		if c.loading != nil {
			wait := c.loading
			c.mu.Unlock()
			select {
			case <-wait:
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
			c.mu.Lock()
			err := c.loadErr
			c.mu.Unlock()
			if err != nil {
				return nil, nil, err
			}
			continue
		}
		c.loading = make(chan struct{})
		c.mu.Unlock()

		all, err := seqs.Collect(c.tbl.Query(ctx, c.query))
		c.mu.Lock()
		c.loads++
		c.loadErr = err
		if err == nil {
			c.byKey = make(map[[2]string]*T, len(all))
			for _, v := range all {
				m := c.tbl.Meta(v)
				c.byKey[[2]string{m.PartitionKey, m.RowKey}] = v
			}
			c.all, c.loadedAt = all, c.now()
		}
		close(c.loading)
		c.loading = nil
		c.mu.Unlock()
		if err != nil {
			return nil, nil, err
		}
	}
}

// Get returns the cached entity with these keys; ok is false when the table
// has none. Values are shared: do not modify them.
func (c *ReferenceCache[T]) Get(ctx context.Context, partitionKey, rowKey string, options *ReadOptions) (v *T, ok bool, err error) {
	byKey, _, err := c.fresh(ctx)
	if err != nil {
		return nil, false, err
	}
	v, ok = byKey[[2]string{partitionKey, rowKey}]
	return v, ok, nil
}

// All returns every cached entity, in the table's order.
func (c *ReferenceCache[T]) All(ctx context.Context, options *ReadOptions) ([]*T, error) {
	_, all, err := c.fresh(ctx)
	return all, err
}

// Invalidate makes the next lookup reload.
func (c *ReferenceCache[T]) Invalidate() {
	c.mu.Lock()
	c.byKey = nil
	c.mu.Unlock()
}

// Loads is how many times the table was read.
func (c *ReferenceCache[T]) Loads() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.loads
}
