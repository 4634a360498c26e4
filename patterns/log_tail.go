package patterns

import (
	"context"
	"fmt"
	"iter"
	"time"

	"github.com/tablekit/tablekit/internal/keyrules"
	"github.com/tablekit/tablekit/internal/rowkind"
	"github.com/tablekit/tablekit/internal/tableio"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/table"
)

// LogTail stores entries under inverted-tick RowKeys, so a partition reads
// newest first and the n most recent entries are one request ($top=n): the
// guide's "Log tail pattern" (the ten most recent expense claims of an
// employee). Keys are .NET-compatible (keys.InvertedTicks) with a suffix that
// keeps entries of the same tick unique and in order (a descending sequence); a key
// records the instant given, so entries may be appended in any order. The
// log may share its partition and table with other rows (an entity
// model's primaries and indexes, other patterns' rows): every entry
// carries the mark of a log entry, its reads take the marked rows alone,
// and the other handles of the table (a model's, a table.New of any type)
// leave the entries out. Every
// append to a partition lands at its start, so a partition written by many
// clients is a hot spot: keep a log's partition to one writer's worth of
// load (2,000 entities/s), or shard it (Sharded).
type LogTail[T any] struct {
	tbl  *table.Table[T]
	keys *keyrules.LogKeys
	now  func() time.Time
}

// LogTailOptions configure a LogTail. nil means the defaults.
type LogTailOptions struct {
	// Writer tells this process's keys from other writers' in the same
	// tick; it must be valid in a key and must not contain "_". Default: "".
	Writer string
	// Now is the clock of Append. Default: time.Now.
	Now func() time.Time
}

// NewLogTail returns a log in tbl, which becomes the log's: from then on
// its reads take the log's entries alone, and another pattern's or an
// entity model's handle is refused (ErrBadDefinition). No request is
// sent.
func NewLogTail[T any](tbl *table.Table[T], opts *LogTailOptions) (*LogTail[T], error) {
	if tbl == nil {
		return nil, fmt.Errorf("%w: LogTail needs a table", ErrBadDefinition)
	}
	if err := tableio.For(tbl).OnlyKind(string(rowkind.Log)); err != nil {
		return nil, fmt.Errorf("%w: LogTail: %w", ErrBadDefinition, err)
	}
	l := &LogTail[T]{tbl: tbl, keys: &keyrules.LogKeys{}, now: time.Now}
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
func (l *LogTail[T]) Append(ctx context.Context, partitionKey string, v *T, options *WriteOptions) error {
	return l.AppendAt(ctx, partitionKey, l.now(), v, nil)
}

// AppendAt adds v as written at instant at.
func (l *LogTail[T]) AppendAt(ctx context.Context, partitionKey string, at time.Time, v *T, options *WriteOptions) error {
	if v == nil {
		return &table.InputError{Op: opLogTailAppend, Rule: table.ErrNilValue}
	}
	rk, err := l.keys.Next(at)
	if err != nil {
		return &table.InputError{Op: opLogTailAppend, Field: "time", Rule: err}
	}
	m := l.tbl.Meta(v)
	m.PartitionKey, m.RowKey = partitionKey, rk
	// The key is new, so a 409 is this Add's own earlier attempt whose
	// response was lost (the SDK retried it): settled by content.
	return l.tbl.Add(ctx, v, &table.AddOptions{Idempotent: true})
}

// Latest returns the n most recent entries of a partition, newest first:
// one request, when the partition holds nothing else in the range of log
// keys. n is 1 to 1,000. Only the log's own entries count: the other rows
// of a shared partition (a profile, a summary, another pattern's) are
// left out by the log's handle, and a page they shortened is followed by
// the next.
func (l *LogTail[T]) Latest(ctx context.Context, partitionKey string, n int, options *ReadOptions) ([]*T, error) {
	if n < 1 || n > table.MaxPageSize {
		return nil, &table.InputError{Op: opLogTailLatest, Field: "n", Rule: table.ErrBadOption, Detail: "n is 1 to 1000"}
	}
	opts := &table.QueryOptions{Filter: table.RowRange(partitionKey, logKeysFrom, logKeysTo), Top: n}
	var out []*T
	for token := ""; ; {
		page, err := l.tbl.QueryPage(ctx, token, opts)
		if err != nil {
			return nil, err
		}
		for _, v := range page.Items {
			out = append(out, v)
			if len(out) == n {
				return out, nil
			}
		}
		if token = page.Next; token == "" {
			return out, nil
		}
	}
}

// Every log key lies in [logKeysFrom, logKeysTo): inverted ticks, from
// DateTime's maximum's all zeros to its minimum's, then "_" ('`' follows '_').
const (
	logKeysFrom = "0000000000000000000_"
	logKeysTo   = "3155378975999999999`"
)

// Between returns the entries written in [from, to), newest first, at the
// 100 ns resolution of the keys: one range query per page.
func (l *LogTail[T]) Between(ctx context.Context, partitionKey string, from, to time.Time, options *ReadOptions) iter.Seq2[*T, error] {
	// Newer entries have smaller keys: t < to is RowKey >= inv(to - 1 tick),
	// t >= from is RowKey below every key that starts with inv(from).
	lo := keys.InvertedTicks(to.Add(-tick))
	_, hi := keyrules.PrefixRange(keys.InvertedTicks(from))
	if to.Before(from) {
		return func(yield func(*T, error) bool) {
			yield(nil, &table.InputError{Op: opLogTailBetween, Field: "to", Rule: table.ErrInvalidValue, Detail: fmt.Sprintf("to %s is before from %s", to.Format(time.RFC3339Nano), from.Format(time.RFC3339Nano))})
		}
	}
	if !to.After(from) {
		return func(func(*T, error) bool) {} // [from, from) is empty
	}
	return l.tbl.Query(ctx, &table.QueryOptions{Filter: table.RowRange(partitionKey, lo, hi)})
}

// Since returns the entries written at or after since, newest first.
func (l *LogTail[T]) Since(ctx context.Context, partitionKey string, since time.Time, options *ReadOptions) iter.Seq2[*T, error] {
	_, hi := keyrules.PrefixRange(keys.InvertedTicks(since))
	return l.tbl.Query(ctx, &table.QueryOptions{Filter: table.RowRange(partitionKey, logKeysFrom, hi)})
}

// tick is the resolution of the keys: .NET's DateTime counts 100 ns ticks.
const tick = 100 * time.Nanosecond
