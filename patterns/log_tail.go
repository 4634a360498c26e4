package patterns

import (
	"context"
	"iter"
	"time"

	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/table"
)

// LogTail stores entries under inverted-tick RowKeys, so a partition reads
// newest first and the n most recent entries are one request ($top=n): the
// guide's "Log tail pattern" (the ten most recent expense claims of an
// employee). Keys are .NET-compatible (keys.InvertedTicks) with a suffix that
// keeps entries of the same tick unique and in order (keys.LogKeys). Every
// append to a partition lands at its start, so a partition written by many
// clients is a hot spot: keep a log's partition to one writer's worth of
// load (2,000 entities/s), or shard it (Sharded).
type LogTail[T any] struct {
	tbl  *table.Table[T]
	keys *keys.LogKeys
	now  func() time.Time
}

// LogTailOptions configure a LogTail. nil means the defaults.
type LogTailOptions struct {
	// Writer tells this process's keys from other writers' in the same
	// tick (see keys.LogKeys). Default: "".
	Writer string
	// Now is the clock of Append. Default: time.Now.
	Now func() time.Time
}

// NewLogTail returns a log over client. No request is sent.
func NewLogTail[T any](client table.Client, opts *LogTailOptions) (*LogTail[T], error) {
	tbl, err := table.New[T](client, nil)
	if err != nil {
		return nil, err
	}
	l := &LogTail[T]{tbl: tbl, keys: &keys.LogKeys{}, now: time.Now}
	if opts != nil {
		l.keys.Writer = opts.Writer
		if opts.Now != nil {
			l.now = opts.Now
		}
	}
	return l, nil
}

// Table is the typed table of the entries.
func (l *LogTail[T]) Table() *table.Table[T] { return l.tbl }

// Append adds v to partition at the current time: one request. v's RowKey
// is set to the entry's key. A retry after a lost response is settled by
// content (one read), so an entry is never written twice.
func (l *LogTail[T]) Append(ctx context.Context, partitionKey string, v *T) error {
	return l.AppendAt(ctx, partitionKey, l.now(), v)
}

// AppendAt adds v as written at instant at.
func (l *LogTail[T]) AppendAt(ctx context.Context, partitionKey string, at time.Time, v *T) error {
	if v == nil {
		return &table.InputError{Op: "LogTail.Append", Rule: table.ErrNilValue}
	}
	rk, err := l.keys.Next(at)
	if err != nil {
		return &table.InputError{Op: "LogTail.Append", Field: "time", Rule: err}
	}
	m := l.tbl.Meta(v)
	m.PartitionKey, m.RowKey = partitionKey, rk
	// The key is new, so a 409 is this Add's own earlier attempt whose
	// response was lost (the SDK retried it): settled by content.
	return l.tbl.Add(ctx, v, &table.AddOptions{Idempotent: true})
}

// Latest returns the n most recent entries of a partition, newest first:
// one request. n is 1 to 1,000.
func (l *LogTail[T]) Latest(ctx context.Context, partitionKey string, n int) ([]*T, error) {
	if n < 1 || n > table.MaxPageSize {
		return nil, &table.InputError{Op: "LogTail.Latest", Field: "n", Rule: table.ErrBadOption, Detail: "n is 1 to 1000"}
	}
	return table.Collect(l.tbl.Query(ctx, &table.QueryOptions{Filter: table.Partition(partitionKey), Top: n}))
}

// Between returns the entries written in [from, to), newest first, at the
// 100 ns resolution of the keys: one range query per page.
func (l *LogTail[T]) Between(ctx context.Context, partitionKey string, from, to time.Time) iter.Seq2[*T, error] {
	// Newer entries have smaller keys: t < to is RowKey >= inv(to - 1 tick),
	// t >= from is RowKey below every key that starts with inv(from).
	lo := keys.InvertedTicks(keys.TimeOfTicks(keys.TicksOf(to) - 1))
	_, hi := keys.PrefixRange(keys.InvertedTicks(from))
	if !to.After(from) {
		return func(func(*T, error) bool) {}
	}
	return l.tbl.Query(ctx, &table.QueryOptions{Filter: table.RowRange(partitionKey, lo, hi)})
}

// Since returns the entries written at or after since, newest first.
func (l *LogTail[T]) Since(ctx context.Context, partitionKey string, since time.Time) iter.Seq2[*T, error] {
	_, hi := keys.PrefixRange(keys.InvertedTicks(since))
	return l.tbl.Query(ctx, &table.QueryOptions{Filter: table.RowRange(partitionKey, "", hi)})
}

// EntryTime is the instant an entry's RowKey records.
func EntryTime(rowKey string) (time.Time, error) { return keys.ParseInvertedTicks(rowKey) }
