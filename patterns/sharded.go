package patterns

import (
	"container/heap"
	"context"
	"fmt"
	"iter"

	"github.com/tablekit/tablekit/internal/keyrules"
	"github.com/tablekit/tablekit/internal/rowkind"
	"github.com/tablekit/tablekit/internal/tableio"
	"github.com/tablekit/tablekit/table"
)

// Sharded spreads appends over N partitions by a stable hash of a key, the
// fix of the guide's "Prepend/append anti-pattern": one partition that
// takes every new entity is a hot spot limited to 2,000 entities/s, N of
// them take N times that. Read merges the N partitions back into one stream
// in RowKey order, querying them in parallel.
type Sharded[T any] struct {
	tbl    *table.Table[T]
	prefix string
	n      int
	names  []string
}

// NewSharded spreads entities over n partitions named prefix_00 …, as
// many digits as n-1 has. tbl becomes the shards': every append carries
// the mark of a shard's entry, Read takes the marked rows alone (the
// shards' partitions may hold other rows), the other handles of the table
// leave the appends out, and another pattern's or an entity model's
// handle is refused (ErrBadDefinition). No request is sent.
func NewSharded[T any](tbl *table.Table[T], partitionPrefix string, n int) (*Sharded[T], error) {
	if tbl == nil {
		return nil, fmt.Errorf("%w: Sharded needs a table", ErrBadDefinition)
	}
	if n < 1 {
		return nil, fmt.Errorf("%w: shard count %d; at least 1", ErrBadDefinition, n)
	}
	names := make([]string, n)
	for b := range names {
		var err error
		if names[b], err = keyrules.ShardName(partitionPrefix, b, n); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrBadDefinition, err)
		}
	}
	if err := tableio.For(tbl).OnlyKind(string(rowkind.Shard)); err != nil {
		return nil, fmt.Errorf("%w: Sharded: %w", ErrBadDefinition, err)
	}
	return &Sharded[T]{tbl: tbl, prefix: partitionPrefix, n: n, names: names}, nil
}

// Partitions lists the shards' PartitionKeys.
func (s *Sharded[T]) Partitions() []string { return append([]string(nil), s.names...) }

// Append adds v to the shard of shardKey (its PartitionKey is set; its
// RowKey must be set and should order entries across shards, such as a
// time): one request. opts are table.Add's (nil means the defaults);
// Idempotent makes a retry after a lost response succeed.
func (s *Sharded[T]) Append(ctx context.Context, shardKey string, v *T, opts *table.AddOptions) error {
	if v == nil {
		return &table.InputError{Op: opShardedAppend, Rule: table.ErrNilValue}
	}
	s.tbl.Meta(v).PartitionKey = s.names[keyrules.ShardBucket(shardKey, s.n)]
	return s.tbl.Add(ctx, v, opts)
}

// ShardedReadOptions configure Read. nil means the defaults.
type ShardedReadOptions struct {
	// From and To bound the RowKeys: From <= RowKey < To ("" for no bound).
	From, To string
	// Top caps the merged stream. Default: 0, no cap.
	Top int
	// Parallelism bounds the shards queried at once. Default (0): all of
	// them; a negative value is refused before any request.
	Parallelism int
}

type shardCursor[T any] struct {
	head *T
	rk   string
	next func() (*T, error, bool)
	stop func()
}

type cursorHeap[T any] []*shardCursor[T]

func (h cursorHeap[T]) Len() int           { return len(h) }
func (h cursorHeap[T]) Less(i, j int) bool { return keyrules.Compare(h[i].rk, h[j].rk) < 0 }
func (h cursorHeap[T]) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *cursorHeap[T]) Push(x any)        { *h = append(*h, x.(*shardCursor[T])) }
func (h *cursorHeap[T]) Pop() any {
	old := *h
	c := old[len(old)-1]
	*h = old[:len(old)-1]
	return c
}

// Read merges the shards in RowKey order (a k-way merge): each shard is a
// range query read page by page, the shards' first pages fetched in
// parallel, and the stream honours Top (each shard asks for at most Top).
func (s *Sharded[T]) Read(ctx context.Context, opts *ShardedReadOptions) iter.Seq2[*T, error] {
	var o ShardedReadOptions
	if opts != nil {
		o = *opts
	}
	if o.Parallelism <= 0 || o.Parallelism > s.n {
		o.Parallelism = s.n
	}
	return func(yield func(*T, error) bool) {
		if opts != nil && opts.Parallelism < 0 {
			yield(nil, &table.InputError{Op: opShardedRead, Field: "Parallelism", Rule: table.ErrBadOption, Detail: fmt.Sprintf("%d is negative; 0 means all shards", opts.Parallelism)})
			return
		}
		if o.Top < 0 {
			yield(nil, &table.InputError{Op: opShardedRead, Field: "Top", Rule: table.ErrBadOption})
			return
		}
		cursors := make([]*shardCursor[T], s.n)
		errs := make([]error, s.n)
		sem := make(chan struct{}, o.Parallelism)
		done := make(chan int, s.n)
		for i, pk := range s.names {
			go func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				f := table.And(table.Prop("PartitionKey").Eq(pk))
				if o.From != "" {
					f = f.And(table.Prop("RowKey").Ge(o.From))
				}
				if o.To != "" {
					f = f.And(table.Prop("RowKey").Lt(o.To))
				}
				next, stop := iter.Pull2(s.tbl.Query(ctx, &table.QueryOptions{Filter: f, Top: o.Top}))
				c := &shardCursor[T]{next: next, stop: stop}
				v, err, ok := next()
				if ok && err == nil {
					c.head, c.rk = v, s.tbl.Meta(v).RowKey
				}
				errs[i] = err
				cursors[i] = c
				done <- i
			}()
		}
		for range s.n {
			<-done
		}
		defer func() {
			for _, c := range cursors {
				c.stop()
			}
		}()
		h := &cursorHeap[T]{}
		for i, c := range cursors {
			if errs[i] != nil {
				yield(nil, errs[i])
				return
			}
			if c.head != nil {
				*h = append(*h, c)
			}
		}
		heap.Init(h)
		sent := 0
		for h.Len() > 0 {
			c := (*h)[0]
			if !yield(c.head, nil) {
				return
			}
			if sent++; o.Top > 0 && sent >= o.Top {
				return
			}
			v, err, ok := c.next()
			if err != nil {
				yield(nil, err)
				return
			}
			if !ok {
				heap.Pop(h)
				continue
			}
			c.head, c.rk = v, s.tbl.Meta(v).RowKey
			heap.Fix(h, 0)
		}
	}
}
