package eventstream

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/tracing"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/internal/keyrules"
	"github.com/tablekit/tablekit/internal/redact"
	"github.com/tablekit/tablekit/internal/tableio"
	"github.com/tablekit/tablekit/internal/trace"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/table"
)

// The rows of a stream, all in the stream's partition (Streamstone's
// schema, with tablekit's names). Every RowKey a stream writes starts with
// rowPrefix ("ES-"), so the rows an append includes must not: Append
// refuses them with ErrReservedRowKey before any request.
const (
	// rowPrefix starts every RowKey the stream itself writes.
	rowPrefix = "ES-"
	// streamHeadKey is the header: the committed version, and the marker
	// of an append spread over several transactions.
	streamHeadKey = rowPrefix + "HEAD"
	// streamEventPrefix and a 19-digit version are an event's RowKey, so
	// RowKey order is version order and a range of versions is a range
	// of keys.
	streamEventPrefix = rowPrefix + "E-"
	// streamIDPrefix and an event's ID are its deduplication row.
	streamIDPrefix = rowPrefix + "ID-"
	// streamSnapshotKey holds the latest snapshot of the stream.
	streamSnapshotKey = rowPrefix + "SNAP"
	// versionDigits is the width of a version in a RowKey: every int64.
	versionDigits = 19
)

// Errors of event streams, matched with errors.Is.
var (
	// ErrConflict: the stream is not at the version the append
	// expected (another writer appended first), or an append in progress
	// lost its stream to another. Nothing of the failed transaction was
	// written. Open the stream again and decide again (AppendFunc does).
	// The error names the stream and the version expected, is also
	// table.ErrLostRace (so table.RetryOnConflict retries it), and keeps
	// the refused *batch.TransactionError and the service's
	// *azcore.ResponseError in its chain for errors.As.
	ErrConflict = errors.New("eventstream: stream changed")
	// ErrDuplicateEvent: an event's ID is already in the stream; nothing of
	// the append's transaction was written. The error names the stream and
	// the ID, is no lost race (retry loops stop on it), and keeps the
	// service's *azcore.ResponseError in its chain.
	ErrDuplicateEvent = errors.New("eventstream: duplicate event ID")
	// ErrReservedRowKey: an included operation uses a RowKey of the
	// stream's own rows, which all start with "ES-".
	ErrReservedRowKey = errors.New("eventstream: RowKey reserved for the stream")
	// ErrCorrupt: the stored events are not the dense sequence of
	// versions the stream's protocol writes (rows written around tablekit).
	ErrCorrupt = errors.New("eventstream: stream rows out of sequence")
	// ErrBadDefinition: New was given a type that cannot be an event, or
	// Append or LoadSnapshot a snapshot that does not embed Snapshot
	// (reported before any request).
	ErrBadDefinition = errors.New("eventstream: bad definition")
)

// Event is embedded in every event type of a Store. Append fills it;
// Read returns it filled.
type Event struct {
	table.Meta
	// Version is the event's position in its stream: 1 for the first.
	// Append sets it.
	Version int64 `table:"StreamVersion"`
	// ID identifies the event for deduplication: an append whose event
	// has an ID already in the stream fails whole with an error matching
	// ErrDuplicateEvent (its message names the ID). "" means the event is not deduplicated (and
	// costs one operation instead of two).
	ID string `table:"EventID,omitempty"`
}

func (e *Event) streamEvent() *Event { return e }

type streamEventer interface{ streamEvent() *Event }

// Head is what a writer knows of a stream: the version it has seen,
// and the header's ETag that makes an append conditional on it. Open reads
// it; Append returns the next one, so a single writer pays one request per
// append. Its fields are read-only: a head always describes a header as it
// was stored, so an append can never be aimed past the stream's end, and
// every version up to a head's is committed: reads and snapshot loads as of
// a head (ReadOptions.AsOf, for Read and LoadSnapshot) give the state at it.
type Head struct {
	stream           string
	version, pending int64
	etag             azcore.ETag
}

// NewHead is the head of a stream that does not exist yet, for a
// writer that knows it is new: the first Append creates the stream without
// an Open, and fails with ErrConflict if it already exists.
func NewHead(stream string) *Head { return &Head{stream: stream} }

// Stream is the stream's ID, its PartitionKey.
func (h *Head) Stream() string { return h.stream }

// Version is the number of committed events; 0 for a new stream.
func (h *Head) Version() int64 { return h.version }

// Pending, when above Version, is the end of an append spread over several
// transactions that has not committed (it is in progress, or its writer
// died). Readers never see those events; the next Append removes them
// first. 0 otherwise.
func (h *Head) Pending() int64 { return h.pending }

// ETag is the header's version; "" when the stream does not exist yet.
func (h *Head) ETag() azcore.ETag { return h.etag }

// streamHeadRow is the header entity.
type streamHeadRow struct {
	table.Meta
	Version int64 `table:"StreamVersion"`
	Pending int64 `table:"PendingVersion"`
	// Append and Chunk name the append and the transaction that wrote the
	// header last, so a writer whose answer was lost can recognise its own
	// commit in one read.
	Append string `table:"AppendID"`
	Chunk  int    `table:"AppendChunk"`
}

// eventIDRow is an event's deduplication row: it exists while the event
// does, and an Add of the same ID fails with 409.
type eventIDRow struct {
	table.Meta
	Version int64 `table:"StreamVersion"`
}

// eventKeyRow is the part of an event a rollback needs.
type eventKeyRow struct {
	table.Meta
	Version int64  `table:"StreamVersion"`
	ID      string `table:"EventID,omitempty"`
}

// Options configure a Store. nil means the defaults.
type Options struct {
	// Logger receives a warning when an append removes the uncommitted
	// events of an earlier one. Default: no logging.
	Logger *slog.Logger
	// TracingProvider opens one span per Append ("EventStream.Append", with
	// the table, the stream as partition, the event count and the outcome
	// as attributes); see "Tracing" in package table's documentation.
	// Default: zero, no spans.
	TracingProvider tracing.Provider
	// TableName names the table in the spans (aztables does not expose a
	// client's table name). Default: "", no table attribute.
	TableName string
}

// Store keeps streams of events of type E in one table, each stream an
// append-only sequence in a partition of its own (the stream ID is the
// PartitionKey), on entity group transactions (Streamstone's design): a
// header entity holds the committed version, each event is a row keyed by
// its version, and an event with an ID has a second row keyed by the ID.
// An append writes the header, guarded by the ETag the writer read, with
// its events in one transaction, so it commits whole at exactly the
// expected version or not at all (optimistic concurrency), and an ID
// already in the stream fails it whole (deduplication). "Appends and
// reads" in the package documentation covers larger appends and reads.
//
// E is a struct that embeds Event. Other entities of the partition
// can be written atomically with an append (AppendOptions.Include), such
// as a projection, as long as their RowKeys do not start with "ES-"; a
// snapshot of the stream's state goes with an append too
// (AppendOptions.Snapshot, LoadSnapshot).
type Store[E any] struct {
	client table.Client
	events *table.Table[E]
	heads  *table.Table[streamHeadRow]
	keys   *table.Table[eventKeyRow]
	raw    *table.Table[table.Entity] // the snapshots, decoded into their own types
	logger *slog.Logger
	tr     trace.OpTracer
}

// New defines streams of events of type E over client. It sends
// no request; E must be a struct that embeds Event.
func New[E any](client table.Client, opts *Options) (*Store[E], error) {
	if _, ok := any(new(E)).(streamEventer); !ok {
		return nil, fmt.Errorf("%w: %T does not embed eventstream.Event", ErrBadDefinition, *new(E))
	}
	events, err := table.New[E](client, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadDefinition, err)
	}
	heads, err := table.New[streamHeadRow](client, nil)
	if err != nil {
		return nil, err
	}
	ks, err := table.New[eventKeyRow](client, nil)
	if err != nil {
		return nil, err
	}
	raw, err := table.New[table.Entity](client, nil)
	if err != nil {
		return nil, err
	}
	s := &Store[E]{client: client, events: events, heads: heads, keys: ks, raw: raw}
	if opts != nil {
		s.logger = opts.Logger
		s.tr = trace.NewOpTracer(opts.TracingProvider, opts.TableName)
	}
	return s, nil
}

func eventOf[E any](e *E) *Event { return any(e).(streamEventer).streamEvent() }

func eventKey(version int64) string {
	k, _ := keys.FixedUint(uint64(version), versionDigits) // every int64 >= 0 fits 19 digits
	return streamEventPrefix + k
}

// Open reads the stream's header: one request, a point read whose options
// are table.Table's Get's. A stream that does not exist yet has Version 0
// and no ETag; the first Append creates it.
func (s *Store[E]) Open(ctx context.Context, stream string, options *table.ReadOptions) (*Head, error) {
	if err := keyrules.ValidatePartitionKey(stream); err != nil || stream == "" {
		return nil, &table.InputError{Op: "Open", Field: "stream", Rule: table.ErrInvalidValue, Detail: fmt.Sprintf("stream ID %q is not a valid PartitionKey", stream)}
	}
	row, err := s.heads.Get(ctx, stream, streamHeadKey, options)
	if table.Is(err, table.ErrNotFound) {
		return NewHead(stream), nil
	}
	if err != nil {
		return nil, err
	}
	return headOf(row), nil
}

func headOf(row *streamHeadRow) *Head {
	return &Head{stream: row.PartitionKey, version: row.Version, pending: row.Pending, etag: row.ETag}
}

// AppendOptions configure Append. nil means the defaults.
type AppendOptions struct {
	// Include lists operations on other entities of the stream's
	// partition, committed in the same transaction as the append's last
	// events and its header: all of them commit with the append or none
	// does. Their RowKeys must not start with "ES-", which starts the
	// stream's own rows (ErrReservedRowKey). Default: none.
	Include []batch.Op
	// Snapshot, a pointer to a struct that embeds Snapshot, is stored
	// with the append in the same transaction, stamped with the version it
	// commits, and replaces the stream's previous snapshot (LoadSnapshot
	// reads it). A value that embeds no Snapshot is refused with
	// ErrBadDefinition before any request. Default: nil, none.
	Snapshot any
}

// concurrencyError is an append refused because the stream was not at the
// version it expected: it matches ErrConflict and wraps the refused
// transaction's *batch.TransactionError (412 or 409), so
// table.Is(err, table.ErrLostRace) holds and table.RetryOnConflict retries
// it (open again, decide again, append).
type concurrencyError struct {
	Stream   string
	Expected int64 // the version the append expected
	// Current is the stream's head as read right after the refusal, when
	// the header was what refused it (Append reads it to tell a lost
	// answer from a lost race): AppendFunc's next round starts from it
	// after its back-off instead of opening the stream again. nil when an
	// event row refused the append, or the read failed.
	Current *Head
	Err     error
}

// Error names the stream and the version expected.
func (e *concurrencyError) Error() string {
	return fmt.Sprintf("eventstream: stream %q is no longer at version %d: %s", e.Stream, e.Expected, redact.Line(e.Err))
}

// Is matches ErrConflict.
func (e *concurrencyError) Is(target error) bool { return target == ErrConflict }

// Unwrap returns the transaction's error.
func (e *concurrencyError) Unwrap() error { return e.Err }

// duplicateEventError is an append refused because one of its events has
// an ID the stream already holds: it matches ErrDuplicateEvent and names
// the ID. It is not a lost race: retry loops stop on it (Unwrap returns the
// SDK's error, not a conflict).
type duplicateEventError struct {
	Stream string
	ID     string
	Err    error
}

// Error names the stream and the ID, then the service's answer.
func (e *duplicateEventError) Error() string {
	return fmt.Sprintf("eventstream: event ID %q is already in stream %q: %s", e.ID, e.Stream, redact.Line(e.Err))
}

// Is matches ErrDuplicateEvent.
func (e *duplicateEventError) Is(target error) bool { return target == ErrDuplicateEvent }

// Unwrap returns the SDK's error (the 202 *azcore.ResponseError).
func (e *duplicateEventError) Unwrap() error {
	var te *batch.TransactionError
	if errors.As(e.Err, &te) {
		return te.Err
	}
	return e.Err
}

// chunk is a run of events [lo, hi) sent in one transaction.
type chunk struct{ lo, hi int }

// appendRun is one Append's state.
type appendRun[E any] struct {
	s        *Store[E]
	head     streamHeadRow
	from     int64 // the version the append expected
	events   []*E
	include  []batch.Op
	snapshot batch.Op
	hasSnap  bool
	id       string
	// settleWait runs before a refusal's settling read, when set.
	settleWait func() error
}

// Append writes events after head.Version() and returns the stream's new
// head. It commits only if the stream is still exactly as head says
// (its ETag), else it fails with an error matching ErrConflict (and
// table.ErrLostRace) and writes nothing.
// Each event's keys and Version are set; on success their ETags too.
//
// Cost: one request when the events, their ID rows, the includes and the
// header fit one transaction (up to 99 events without IDs, 49 with); a
// larger append one request per transaction ("Appends and reads" in the
// package documentation). An append after a crashed multi-transaction
// append first removes its events: a query and a transaction per 49 of
// them. Every input is checked before any request: a nil head or event,
// an invalid stream ID, an invalid or repeated event ID, an include
// outside the partition or on a stream row, an event that cannot be
// encoded or cannot fit a transaction with the header.
//
// If the SDK retried a transaction whose first answer was lost, the retry
// meets 412 although the append committed; Append then reads the header
// (one request) and, finding its own append there, succeeds.
func (s *Store[E]) Append(ctx context.Context, head *Head, events []*E, opts *AppendOptions) (_ *Head, err error) {
	ctx, end := s.tr.Start(ctx, "EventStream.Append", streamOf(head), len(events))
	defer func() { end(err) }()
	return s.append(ctx, head, events, opts, nil)
}

// append is Append; settleWait, when set, runs before the read that
// settles a refusal by the header (AppendFunc's back-off, so that read is
// also the fresh head of the next round).
func (s *Store[E]) append(ctx context.Context, head *Head, events []*E, opts *AppendOptions, settleWait func() error) (*Head, error) {
	run, err := s.newAppend(head, events, opts)
	if err != nil {
		return nil, err
	}
	run.settleWait = settleWait
	// Plan first: every input is checked before any request, the
	// rollback's included. The plan does not depend on the header's ETag.
	chunks, tx, h, err := run.plan()
	if err != nil {
		return nil, run.explain(err)
	}
	if head.pending > head.version {
		if err := s.rollback(ctx, &run.head); err != nil {
			return nil, err
		}
		tx = nil // built with the ETag the rollback replaced
	}
	for i, c := range chunks {
		if i > 0 || tx == nil {
			// A transaction after the first is built only now, guarded by
			// the header's ETag from the one before.
			if tx, h, err = run.build(i, c, i == len(chunks)-1); err != nil {
				return nil, err
			}
		}
		if err := run.send(ctx, tx, h, c, i == len(chunks)-1); err != nil {
			if i > 0 && !errors.Is(err, ErrConflict) {
				// The header is still this append's: take its earlier
				// transactions back now rather than leave them to the next
				// append. If that fails too, the next append does it.
				if rerr := s.rollback(ctx, &run.head); rerr != nil {
					return nil, errors.Join(err, rerr)
				}
			}
			return nil, err
		}
	}
	return headOf(&run.head), nil
}

// AppendFunc appends to stream what decide makes of its current head,
// with optimistic concurrency: it opens the stream, calls decide, and
// appends the events decide returns at the version decide saw. If another
// writer appended first, it waits a jittered, growing back-off, reads the
// header and calls decide again, at most MaxAttempts times, after which
// the error is a *table.ConflictError. decide must be safe to call more
// than once. An error from decide ends AppendFunc and is returned as it
// is, so that a command the state refuses reaches its caller;
// table.ErrNoChange alone means there is nothing to append (a command
// already applied, say), and the head is then returned with no error. A
// duplicate event (ErrDuplicateEvent) or any other failure of the append
// ends it too.
// opts nil means table.RetryOptions' defaults. What a command costs, and
// how to size MaxAttempts for concurrent writers, is in "Commands" in the
// package documentation.
func (s *Store[E]) AppendFunc(ctx context.Context, stream string, decide func(head *Head) ([]*E, *AppendOptions, error), opts *table.RetryOptions) (*Head, error) {
	if decide == nil {
		return nil, &table.InputError{Op: "AppendFunc", Field: "decide", Rule: table.ErrNilValue, Detail: "decide func is nil"}
	}
	o := opts.WithDefaults()
	delay := o.BaseDelay
	backoff := func() error {
		wait := delay/2 + rand.N(delay/2+1)
		delay = min(delay*2, o.MaxDelay)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
			return nil
		}
	}
	head, err := s.Open(ctx, stream, nil)
	if err != nil {
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		events, aopts, err := decide(head)
		if errors.Is(err, table.ErrNoChange) {
			return head, nil
		}
		if err != nil {
			return nil, err
		}
		wait := backoff
		if attempt == o.MaxAttempts {
			wait = nil // no next round to wait for
		}
		next, err := s.append(ctx, head, events, aopts, wait)
		var ce *concurrencyError
		if err == nil || !errors.As(err, &ce) {
			return next, err
		}
		if attempt == o.MaxAttempts {
			return nil, &table.ConflictError{Attempts: attempt, Err: err}
		}
		if head = ce.Current; head == nil {
			// An event row refused it, or the read failed: back off, open.
			if err := backoff(); err != nil {
				return nil, err
			}
			if head, err = s.Open(ctx, stream, nil); err != nil {
				return nil, err
			}
		}
	}
}

func (s *Store[E]) newAppend(head *Head, events []*E, opts *AppendOptions) (*appendRun[E], error) {
	bad := func(field string, rule error, format string, args ...any) error {
		return &table.InputError{Op: "Append", Field: field, Rule: rule, Detail: fmt.Sprintf(format, args...)}
	}
	switch {
	case head == nil:
		return nil, bad("head", table.ErrNilValue, "no head: Open the stream first")
	case head.stream == "" || keyrules.ValidatePartitionKey(head.stream) != nil:
		return nil, bad("head", table.ErrInvalidValue, "stream ID %q is not a valid PartitionKey", head.stream)
	case len(events) == 0:
		return nil, bad("events", table.ErrInvalidValue, "no events to append")
	}
	run := &appendRun[E]{s: s, from: head.version, events: events, id: newAppendID()}
	run.head = streamHeadRow{Meta: table.Meta{PartitionKey: head.stream, RowKey: streamHeadKey, ETag: head.etag}, Version: head.version, Pending: head.pending}
	ids := map[string]int{}
	for i, e := range events {
		if e == nil {
			return nil, bad(fmt.Sprintf("events[%d]", i), table.ErrNilValue, "nil event")
		}
		ev := eventOf(e)
		if ev.ID != "" {
			if err := keyrules.ValidateRowKey(streamIDPrefix + ev.ID); err != nil {
				return nil, &table.InputError{Op: "Append", Field: fmt.Sprintf("events[%d].ID", i), Rule: err, Detail: "an event ID is part of a RowKey"}
			}
			if j, dup := ids[ev.ID]; dup {
				return nil, bad(fmt.Sprintf("events[%d].ID", i), ErrDuplicateEvent, "ID %q is also the ID of events[%d]", ev.ID, j)
			}
			ids[ev.ID] = i
		}
		ev.PartitionKey, ev.RowKey, ev.ETag = head.stream, eventKey(head.version+1+int64(i)), ""
		ev.Version = head.version + 1 + int64(i)
	}
	if opts != nil {
		for i, op := range opts.Include {
			switch {
			case op.PartitionKey() != head.stream:
				return nil, bad(fmt.Sprintf("Include[%d]", i), batch.ErrMixedPartitions, "PartitionKey %q is not the stream's %q", op.PartitionKey(), head.stream)
			case strings.HasPrefix(op.RowKey(), rowPrefix):
				return nil, bad(fmt.Sprintf("Include[%d]", i), ErrReservedRowKey, "RowKey %q starts with %q", op.RowKey(), rowPrefix)
			}
		}
		run.include = opts.Include
		if opts.Snapshot != nil {
			op, err := snapshotOp(opts.Snapshot, head.stream, head.version+int64(len(events)))
			if err != nil {
				return nil, err
			}
			run.snapshot, run.hasSnap = op, true
		}
	}
	return run, nil
}

// newAppendID names one append in the header, so a writer can tell its
// own commit from another's after a lost answer.
func newAppendID() string {
	var b [12]byte
	_, _ = crand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24)
	return hex.EncodeToString(b[:])
}

// ops are the operations of events [lo, hi): each event and its ID row.
func (r *appendRun[E]) ops(lo, hi int) []batch.Op {
	var out []batch.Op
	for _, e := range r.events[lo:hi] {
		ev := eventOf(e)
		out = append(out, batch.Add(e))
		if ev.ID != "" {
			out = append(out, batch.Add(&eventIDRow{Meta: table.Meta{PartitionKey: ev.PartitionKey, RowKey: streamIDPrefix + ev.ID}, Version: ev.Version}))
		}
	}
	return out
}

// headerOp is the header as transaction k of the append writes it: the
// last commits the version, the others mark it pending. The stream's
// first transaction creates the header; every other one replaces it
// guarded by its ETag.
func (r *appendRun[E]) headerOp(k int, last bool) (batch.Op, *streamHeadRow) {
	h := r.head
	h.Append, h.Chunk = r.id, k
	if last {
		h.Version, h.Pending = r.from+int64(len(r.events)), 0
	} else {
		h.Pending = r.from + int64(len(r.events))
	}
	if h.ETag == "" {
		return batch.Add(&h), &h
	}
	return batch.Update(&h, aztables.UpdateModeReplace), &h
}

// tail is what the last transaction carries besides events and header.
func (r *appendRun[E]) tail() []batch.Op {
	out := slices.Clone(r.include)
	if r.hasSnap {
		out = append(out, r.snapshot)
	}
	return out
}

// build makes transaction k of events c; it fails, before any request, if
// they do not fit one transaction.
func (r *appendRun[E]) build(k int, c chunk, last bool) (*batch.Transaction, *streamHeadRow, error) {
	tx := batch.NewTransaction(nil)
	hop, h := r.headerOp(k, last)
	ops := append([]batch.Op{hop}, r.ops(c.lo, c.hi)...)
	if last {
		ops = append(ops, r.tail()...)
	}
	for _, op := range ops {
		if err := tx.Append(op); err != nil {
			return nil, nil, err
		}
	}
	return tx, h, nil
}

// explain names the event or include behind an operation refused before
// sending (the transaction's index counts the header and ID rows).
func (r *appendRun[E]) explain(err error) error {
	var oe *batch.OpError
	if !errors.As(err, &oe) || full(err) {
		return err
	}
	if v, ok := strings.CutPrefix(oe.RowKey, streamEventPrefix); ok {
		if n, perr := strconv.ParseInt(v, 10, 64); perr == nil {
			return fmt.Errorf("eventstream: events[%d] of the append to stream %q: %w", n-r.from-1, oe.PartitionKey, err)
		}
	}
	if !strings.HasPrefix(oe.RowKey, rowPrefix) {
		return fmt.Errorf("eventstream: an included operation on RowKey %q of stream %q: %w", oe.RowKey, oe.PartitionKey, err)
	}
	return err
}

// full reports an Append error that only means "start another transaction".
func full(err error) bool {
	return errors.Is(err, batch.ErrTooManyOperations) || errors.Is(err, batch.ErrTooLarge)
}

// plan splits the events into transactions. One transaction is the common
// case: it is returned built, so the events are encoded once; otherwise
// split decides, and each transaction is built when it is sent.
func (r *appendRun[E]) plan() ([]chunk, *batch.Transaction, *streamHeadRow, error) {
	all := chunk{0, len(r.events)}
	tx, h, err := r.build(0, all, true)
	if err == nil {
		return []chunk{all}, tx, h, nil
	}
	if !full(err) {
		return nil, nil, nil, err
	}
	chunks, err := r.split()
	return chunks, nil, nil, err
}

// split fills transactions in order, each as full as the service allows,
// and the last takes the rest with the includes and the snapshot. If they
// do not fit there, the last is filled first, from the end, and the others
// before it, so the includes always travel with the commit.
func (r *appendRun[E]) split() ([]chunk, error) {
	chunks, err := r.fill(0, len(r.events))
	if err != nil {
		return nil, err
	}
	end := chunks[len(chunks)-1]
	if _, _, err := r.build(len(chunks)-1, end, true); err == nil {
		return chunks, nil
	} else if !full(err) {
		return nil, err
	}
	tx, err := r.open(true)
	if err != nil {
		return nil, err
	}
	lo := len(r.events)
	for lo > 0 && appendAll(tx, r.ops(lo-1, lo)) == nil {
		lo--
	}
	if lo == len(r.events) {
		return nil, &table.InputError{Op: "Append", Field: "Include", Rule: batch.ErrTooLarge, Detail: "the includes and the snapshot must fit one transaction with the header and the last event"}
	}
	if lo == 0 {
		return []chunk{{0, len(r.events)}}, nil
	}
	chunks, err = r.fill(0, lo)
	if err != nil {
		return nil, err
	}
	return append(chunks, chunk{lo, len(r.events)}), nil
}

// open starts a trial transaction with a header (and, for the last, the
// includes and the snapshot).
func (r *appendRun[E]) open(last bool) (*batch.Transaction, error) {
	tx := batch.NewTransaction(nil)
	hop, _ := r.headerOp(0, last)
	ops := []batch.Op{hop}
	if last {
		ops = append(ops, r.tail()...)
	}
	if err := appendAll(tx, ops); err != nil {
		if full(err) {
			return nil, &table.InputError{Op: "Append", Field: "Include", Rule: err, Detail: "the includes and the snapshot must fit one transaction with the header and the last event"}
		}
		return nil, err
	}
	return tx, nil
}

// fill splits events [lo, hi) greedily into transactions of a header and
// as many events (with their ID rows) as fit.
func (r *appendRun[E]) fill(lo, hi int) ([]chunk, error) {
	var out []chunk
	for lo < hi {
		tx, err := r.open(false)
		if err != nil {
			return nil, err
		}
		end := lo
		for end < hi {
			err := appendAll(tx, r.ops(end, end+1))
			if err == nil {
				end++
				continue
			}
			if !full(err) {
				return nil, err
			}
			break
		}
		if end == lo {
			return nil, &table.InputError{Op: "Append", Field: fmt.Sprintf("events[%d]", lo), Rule: batch.ErrTooLarge, Detail: "the event does not fit one transaction with the header"}
		}
		out = append(out, chunk{lo, end})
		lo = end
	}
	return out, nil
}

func appendAll(tx *batch.Transaction, ops []batch.Op) error {
	for _, op := range ops {
		if err := tx.Append(op); err != nil {
			return err
		}
	}
	return nil
}

// send submits tx, which writes the header h and events c, and turns its
// failure into the stream's errors.
func (r *appendRun[E]) send(ctx context.Context, tx *batch.Transaction, h *streamHeadRow, c chunk, last bool) error {
	_, err := tx.Submit(ctx, r.s.client, nil)
	if err == nil {
		r.head = *h
		return nil
	}
	var te *batch.TransactionError
	if !errors.As(err, &te) {
		return err
	}
	stream := r.head.PartitionKey
	switch {
	case te.Index == 0 && (te.StatusCode == http.StatusPreconditionFailed || te.StatusCode == http.StatusConflict || te.StatusCode == http.StatusNotFound):
		// The header moved. If it moved to exactly what this transaction
		// writes, the SDK retried a commit whose answer was lost.
		if r.settleWait != nil {
			if werr := r.settleWait(); werr != nil {
				return werr
			}
		}
		stored, gerr := r.s.heads.Get(ctx, stream, streamHeadKey, nil)
		if gerr == nil && stored.Append == h.Append && stored.Chunk == h.Chunk && stored.Version == h.Version && stored.Pending == h.Pending {
			for _, e := range r.events[c.lo:c.hi] {
				eventOf(e).ETag = "" // committed; the lost answer had their ETags
			}
			r.head = *stored
			return nil
		}
		ce := &concurrencyError{Stream: stream, Expected: r.from, Err: err}
		switch {
		case gerr == nil:
			ce.Current = headOf(stored)
		case table.Is(gerr, table.ErrNotFound):
			ce.Current = NewHead(stream)
		}
		return ce
	case te.Index > 0 && te.StatusCode == http.StatusConflict:
		rk := te.Op.RowKey()
		if id, ok := strings.CutPrefix(rk, streamIDPrefix); ok {
			return &duplicateEventError{Stream: stream, ID: id, Err: err}
		}
		if strings.HasPrefix(rk, streamEventPrefix) {
			// An event row past the header: written around tablekit.
			return &concurrencyError{Stream: stream, Expected: r.from, Err: err}
		}
	}
	if te.Index > 0 && last && !strings.HasPrefix(te.Op.RowKey(), rowPrefix) {
		return fmt.Errorf("eventstream: an included operation on %q failed, so the append to stream %q did not commit: %w", te.Op.RowKey(), stream, err)
	}
	return err
}

// rollbackPerTx is the events one rollback transaction removes: each has
// an event row and at most one ID row, and the header takes one operation.
const rollbackPerTx = (batch.MaxOperations - 1) / 2

// rollback removes the events of an append that never committed (those
// after h.Version, up to h.Pending) and clears the mark, each transaction
// guarded by the header's ETag; h is updated as it goes. A live writer of
// that append then fails on its next transaction.
func (s *Store[E]) rollback(ctx context.Context, h *streamHeadRow) error {
	var rows []*eventKeyRow
	f := table.Partition(h.PartitionKey).And(table.Prop("RowKey").Ge(eventKey(h.Version+1)), table.Prop("RowKey").Le(eventKey(h.Pending)))
	for row, err := range s.keys.Query(ctx, &table.QueryOptions{Filter: f, Select: []string{"StreamVersion", "EventID"}}) {
		if err != nil {
			return err
		}
		rows = append(rows, row)
	}
	if s.logger != nil {
		s.logger.WarnContext(ctx, "event stream: removing the events of an append that did not commit",
			"stream", h.PartitionKey, "version", h.Version, "pending", h.Pending, "events", len(rows))
	}
	from := h.Version
	for i := 0; ; i += rollbackPerTx {
		end := min(i+rollbackPerTx, len(rows))
		next := *h
		next.Append, next.Chunk = "", -1
		if end == len(rows) {
			next.Pending = 0
		}
		ops := []batch.Op{batch.Update(&next, aztables.UpdateModeReplace)}
		for _, row := range rows[i:end] {
			ops = append(ops, batch.Delete(row.PartitionKey, row.RowKey))
			if row.ID != "" {
				ops = append(ops, batch.Delete(row.PartitionKey, streamIDPrefix+row.ID))
			}
		}
		if _, err := batch.Submit(ctx, s.client, ops, nil); err != nil {
			var te *batch.TransactionError
			if errors.As(err, &te) && te.Index == 0 {
				return &concurrencyError{Stream: h.PartitionKey, Expected: from, Err: err}
			}
			return err
		}
		*h = next
		if end == len(rows) {
			return nil
		}
	}
}

// ReadOptions configure Read and ReadPage. nil means the defaults.
type ReadOptions struct {
	// Backward reads from the given version down to the first event.
	// Default: false, from the given version up to the last.
	Backward bool
	// PageSize is the number of events per page, 1 to table.MaxPageSize.
	// Default: table.MaxPageSize (1,000: one request per page).
	PageSize int
	// AsOf is the read's upper version bound, given as the head the caller
	// decides on (from Open, Append or AppendFunc's decide): no event past head.Version() is read, forward or
	// backward (a backward read from a later version starts at the
	// head's), and the header is not read, since every version up to a
	// head's is committed: a read as of a head costs one request per page,
	// none when from is past the head. A head of another stream is refused
	// before any request. Ignored with a token, whose read is already
	// bounded. Default: nil, the version committed when the read begins
	// (one request to read the header first). LoadSnapshot takes AsOf
	// too: see there.
	AsOf *Head
}

// readToken is what a page's Next encodes.
type readToken struct {
	backward bool
	next     int64 // the next version to read
	end      int64 // the committed version the read is capped at
}

func (t readToken) String() string {
	d := "f"
	if t.backward {
		d = "b"
	}
	return "es1." + d + "." + strconv.FormatInt(t.next, 10) + "." + strconv.FormatInt(t.end, 10)
}

func parseReadToken(s string, backward bool) (readToken, error) {
	bad := &table.InputError{Op: "ReadPage", Field: "token", Rule: table.ErrBadToken, Detail: fmt.Sprintf("%q is not a stream read token", s)}
	parts := strings.Split(s, ".")
	if len(parts) != 4 || parts[0] != "es1" || (parts[1] != "f" && parts[1] != "b") {
		return readToken{}, bad
	}
	next, err1 := strconv.ParseInt(parts[2], 10, 64)
	end, err2 := strconv.ParseInt(parts[3], 10, 64)
	t := readToken{backward: parts[1] == "b", next: next, end: end}
	if err1 != nil || err2 != nil || next < 1 || end < 1 || next > end {
		return readToken{}, bad
	}
	if t.backward != backward {
		bad.Detail = "the token is of a read in the other direction"
		return readToken{}, bad
	}
	return t, nil
}

// asOf is opts.AsOf, nil for nil options.
func (opts *ReadOptions) asOf() *Head {
	if opts == nil {
		return nil
	}
	return opts.AsOf
}

func readOpts(opts *ReadOptions) (bool, int, error) {
	if opts == nil {
		return false, table.MaxPageSize, nil
	}
	size := opts.PageSize
	if size == 0 {
		size = table.MaxPageSize
	}
	if size < 1 || size > table.MaxPageSize {
		return false, 0, &table.InputError{Op: "Read", Field: "PageSize", Rule: table.ErrBadOption, Detail: fmt.Sprintf("%d is outside 1..%d", opts.PageSize, table.MaxPageSize)}
	}
	return opts.Backward, size, nil
}

// ReadPage reads one page of stream: with token "", the first page
// starting at version from (forward: from >= 1; backward: from >= 1, and
// any version past the last, such as math.MaxInt64, starts at the last
// event);
// with a token, the page after it (from is then ignored). The first page
// reads the header, one request, to cap the read at the committed version,
// unless ReadOptions.AsOf gives the cap; each page is then one range query
// over the events' RowKeys, which hold exactly the page's versions. A
// stream that does not exist reads as empty.
//
// The page's Items are in the read's direction; its Next resumes the read
// after it ("" when it is done) and can be stored and used after a
// restart. A read, page after page, never goes past the version its first
// page capped it at, even if the stream grows meanwhile.
func (s *Store[E]) ReadPage(ctx context.Context, stream string, from int64, token string, opts *ReadOptions) (*table.Page[E], error) {
	backward, size, err := readOpts(opts)
	if err != nil {
		return nil, err
	}
	if err := keyrules.ValidatePartitionKey(stream); err != nil || stream == "" {
		return nil, &table.InputError{Op: "ReadPage", Field: "stream", Rule: table.ErrInvalidValue, Detail: fmt.Sprintf("stream ID %q is not a valid PartitionKey", stream)}
	}
	var t readToken
	if token != "" {
		if t, err = parseReadToken(token, backward); err != nil {
			return nil, err
		}
	} else {
		if from < 1 {
			return nil, &table.InputError{Op: "ReadPage", Field: "from", Rule: table.ErrValueOutOfRange, Detail: fmt.Sprintf("version %d: versions start at 1", from)}
		}
		head := opts.asOf()
		if head != nil && head.stream != stream {
			return nil, &table.InputError{Op: "ReadPage", Field: "AsOf", Rule: table.ErrInvalidValue, Detail: fmt.Sprintf("the head is of stream %q, not %q", head.stream, stream)}
		}
		if head == nil {
			if head, err = s.Open(ctx, stream, nil); err != nil {
				return nil, err
			}
		}
		if head.version == 0 || (!backward && from > head.version) {
			return &table.Page[E]{}, nil
		}
		t = readToken{backward: backward, next: min(from, head.version), end: head.version}
	}
	lo, hi := t.next, min(t.end, t.next+int64(size)-1)
	if backward {
		lo, hi = max(1, t.next-int64(size)+1), t.next
	}
	page := &table.Page[E]{Items: make([]*E, 0, hi-lo+1)}
	want := lo
	for e, err := range s.events.Query(ctx, &table.QueryOptions{Filter: table.Partition(stream).And(table.Prop("RowKey").Ge(eventKey(lo)), table.Prop("RowKey").Le(eventKey(hi)))}) {
		if err != nil {
			return nil, err
		}
		if v := eventOf(e).Version; v != want {
			return nil, fmt.Errorf("%w: stream %q: found version %d where %d belongs", ErrCorrupt, stream, v, want)
		}
		want++
		page.Items = append(page.Items, e)
	}
	if want != hi+1 {
		return nil, fmt.Errorf("%w: stream %q: version %d is missing (committed: %d)", ErrCorrupt, stream, want, t.end)
	}
	if backward {
		slices.Reverse(page.Items)
		if lo > 1 {
			page.Next = readToken{backward: true, next: lo - 1, end: t.end}.String()
		}
	} else if hi < t.end {
		page.Next = readToken{next: hi + 1, end: t.end}.String()
	}
	return page, nil
}

// Read yields the events of stream from version from, forward or backward
// as opts say, up to the version committed when it began, or up to the
// head ReadOptions.AsOf gives: one request for the header (none with AsOf)
// and one per page. Iteration stops at the first error, which is yielded
// with a nil event.
func (s *Store[E]) Read(ctx context.Context, stream string, from int64, opts *ReadOptions) iter.Seq2[*E, error] {
	return func(yield func(*E, error) bool) {
		token := ""
		for {
			page, err := s.ReadPage(ctx, stream, from, token, opts)
			if err != nil {
				yield(nil, err)
				return
			}
			for _, e := range page.Items {
				if !yield(e, nil) {
					return
				}
			}
			if page.Next == "" {
				return
			}
			token = page.Next
		}
	}
}

// Snapshot is embedded in a snapshot type: the state of a stream's
// aggregate as of Version, so a reader can load it (Store.LoadSnapshot)
// and read only the events after it. An append stores one
// (AppendOptions.Snapshot) in the stream's partition, replacing the
// previous one: a stream keeps its latest.
type Snapshot struct {
	table.Meta
	// Version is the stream version the snapshot is the state at; the
	// append that stores it sets it.
	Version int64 `table:"SnapshotVersion"`
}

func (s *Snapshot) streamSnapshot() *Snapshot { return s }

type streamSnapshotter interface{ streamSnapshot() *Snapshot }

// snapshotOp is the write of v, the snapshot of an append, stamped with
// the version the append commits.
func snapshotOp(v any, stream string, version int64) (batch.Op, error) {
	sn, err := snapshotOf("Append", v)
	if err != nil {
		return batch.Op{}, err
	}
	sn.PartitionKey, sn.RowKey, sn.ETag, sn.Version = stream, streamSnapshotKey, "", version
	return batch.Upsert(v, aztables.UpdateModeReplace), nil
}

// snapshotOf returns the Snapshot that v, a pointer to a struct, embeds.
func snapshotOf(op string, v any) (*Snapshot, error) {
	if v == nil || reflect.ValueOf(v).Kind() == reflect.Pointer && reflect.ValueOf(v).IsNil() {
		return nil, &table.InputError{Op: op, Field: "Snapshot", Rule: table.ErrNilValue, Detail: "nil snapshot"}
	}
	s, ok := v.(streamSnapshotter)
	if !ok {
		return nil, &table.InputError{Op: op, Field: "Snapshot", Rule: ErrBadDefinition, Detail: fmt.Sprintf("%T does not point to a struct that embeds eventstream.Snapshot", v)}
	}
	return s.streamSnapshot(), nil
}

// LoadSnapshot reads the stream's latest snapshot into snap, a pointer to
// a struct that embeds Snapshot (the type AppendOptions.Snapshot stored):
// one request. When the stream has none, or, with opts.AsOf, none at or
// before the head's version, *snap is set to its zero value, whose
// Version 0 means "replay from the first event": the state rebuilt from
// snap and the events after snap.Version is right either way. A snap that
// embeds no Snapshot is refused with ErrBadDefinition before any request.
//
// opts.AsOf bounds the snapshot by the head the caller decides on, as it
// bounds Read: a snapshot stored by an append after that head (at a version
// past head.Version()) is not loaded, as for a stream without one, so a
// state rebuilt at the head (the snapshot, then Read with the same options)
// is the state at the head, never a later one. A head of another stream is
// refused before any request; a head at version 0 costs none. LoadSnapshot
// reads no other field of opts.
func (s *Store[E]) LoadSnapshot(ctx context.Context, stream string, snap any, opts *ReadOptions) error {
	if _, err := snapshotOf("LoadSnapshot", snap); err != nil {
		return err
	}
	none := func() error {
		reflect.ValueOf(snap).Elem().SetZero()
		return nil
	}
	var asOf *Head
	if opts != nil && opts.AsOf != nil {
		asOf = opts.AsOf
		if asOf.stream != stream {
			return &table.InputError{Op: "LoadSnapshot", Field: "AsOf", Rule: table.ErrInvalidValue, Detail: fmt.Sprintf("the head is of stream %q, not %q", asOf.stream, stream)}
		}
		if asOf.version == 0 {
			return none() // every snapshot is of a later append
		}
	}
	e, err := s.raw.Get(ctx, stream, streamSnapshotKey, nil)
	if table.Is(err, table.ErrNotFound) {
		return none()
	}
	if err != nil {
		return err
	}
	// The stored entity, decoded into snap's own type as a typed read
	// decodes it.
	data, err := tableio.For(s.raw).Encode(e)
	if err != nil {
		return err
	}
	if err := tableio.Unmarshal(data, snap); err != nil {
		return fmt.Errorf("%w: %w", ErrBadDefinition, err)
	}
	sn := snap.(streamSnapshotter).streamSnapshot()
	sn.Meta = e.Meta
	if asOf != nil && sn.Version > asOf.version {
		// Stored by an append after the head: the state past the head.
		// The stream keeps only its latest snapshot, so there is none to
		// give at the head; the caller replays from the first event.
		return none()
	}
	return nil
}
