package patterns

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"slices"
	"sync"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/internal/tableio"
	"github.com/tablekit/tablekit/table"
)

// ModelLoadOptions configure Model.Load. nil means the defaults.
type ModelLoadOptions struct {
	// Parallelism bounds the transactions in flight, each of another
	// partition. Default: 8.
	Parallelism int
	// MaxBuffered bounds the entities held while their partition's
	// transaction fills; past it the fullest partition is sent at once.
	// It bounds Load's memory whatever the input's size. Default: 10,000.
	MaxBuffered int
	// Idempotent makes an entity already stored exactly as given a
	// success (one read per such entity), so a load that died can be run
	// again from the start. Default: false, and such an entity is a
	// Failure with table.ErrAlreadyExists.
	Idempotent bool
}

// LoadFailure is an entity Load did not write, and why.
type LoadFailure struct {
	PartitionKey, RowKey string
	Err                  error
}

// LoadSummary accounts for every entity Load took from its input: each is
// written (counted in Entities), a Failure (the service refused it, or it
// is bad input), or NotSent, so Entities, len(Failures) and len(NotSent)
// add up to the entities taken.
type LoadSummary struct {
	Entities     int // primaries written (with their index rows)
	Transactions int // entity group transactions committed
	Messages     int // queue messages sent for the indexes outside the partition
	Failures     []LoadFailure
	// NotSent are the entities taken from the input and never sent
	// because the load stopped first (the context ended); Err is why.
	// Nothing of them was written: load them again.
	NotSent []LoadFailure
}

// Load adds many new entities with every index row they call for. The
// entities of a partition are packed into entity group transactions, each
// primary with its same-partition index rows (copies, and its ID in its
// value's lists, the lists read once per transaction), so an entity and
// those rows are written together or not at all; the indexes outside the
// partition get one message per transaction listing its entities, sent
// hidden before the transaction and shown after it, as a single write's
// is. A bad entity is refused before any request of its own with its
// *table.InputError, as a Failure, and the load goes on with the rest;
// Load's error then wraps the first such refusal. When ctx ends the load,
// Load takes nothing more from values, and the entities it still held
// (taken, not yet sent) are NotSent. An entity the service
// refuses (it exists, a unique value is taken) is a Failure; the other
// entities of its transaction are sent again without it. Of two entities
// that claim one row (a primary, a unique copy) the first in values is
// written and the second is the Failure, as with two Adds in turn. A missing
// table fails every entity of a transaction at once (table.ErrTableNotFound
// in Load's error), one request a transaction. A crash
// leaves whole entities with their rows and messages that converge the
// rest: run Load again with Idempotent.
func (m *Model[T]) Load(ctx context.Context, values iter.Seq[*T], opts *ModelLoadOptions) (_ LoadSummary, err error) {
	ctx, done := m.enter(ctx, opModelLoad, "")
	defer done(&err)
	const op = opModelLoad
	par, maxBuf, idem := 8, 10000, false
	if opts != nil {
		if opts.Parallelism < 0 || opts.MaxBuffered < 0 {
			return LoadSummary{}, &table.InputError{Op: op, Field: "Parallelism", Rule: table.ErrBadOption, Detail: "Parallelism and MaxBuffered are 0 (the default) or more"}
		}
		if opts.Parallelism > 0 {
			par = opts.Parallelism
		}
		if opts.MaxBuffered > 0 {
			maxBuf = opts.MaxBuffered
		}
		idem = opts.Idempotent
	}
	l := &loader[T]{m: m, idem: idem, slots: make(chan struct{}, par), last: map[string]chan struct{}{}}
	buf := map[string][]*T{}
	held := 0
	flush := func(pk string, all bool) {
		for len(buf[pk]) > 0 {
			n := l.fit(buf[pk])
			if !all && n == len(buf[pk]) {
				return // the partition's last transaction may still fill
			}
			chunk := slices.Clone(buf[pk][:n])
			buf[pk] = buf[pk][n:]
			held -= n
			l.start(ctx, pk, chunk)
		}
		delete(buf, pk)
	}
	var bad, refused error
	for v := range values {
		if err := m.check(ctx, op, v, aztables.UpdateModeReplace); err != nil {
			// Refused before any request of its own; the load goes on.
			if refused == nil {
				refused = err
			}
			var f LoadFailure
			if v != nil {
				km := m.tbl.Meta(v)
				f.PartitionKey, f.RowKey = km.PartitionKey, km.RowKey
			}
			f.Err = err
			l.mu.Lock()
			l.sum.Failures = append(l.sum.Failures, f)
			l.mu.Unlock()
			continue
		}
		pk := m.tbl.Meta(v).PartitionKey
		buf[pk] = append(buf[pk], v)
		held++
		if l.fit(buf[pk]) < len(buf[pk]) {
			flush(pk, false)
		}
		if held > maxBuf {
			fullest := ""
			for k, vs := range buf {
				if len(vs) > len(buf[fullest]) {
					fullest = k
				}
			}
			flush(fullest, true)
		}
		if ctx.Err() != nil {
			break
		}
	}
	bad = ctx.Err()
	for _, pk := range slices.Sorted(mapKeys(buf)) {
		if bad == nil {
			flush(pk, true)
			continue
		}
		// The load stopped: what it still held was never sent.
		for _, v := range buf[pk] {
			km := m.tbl.Meta(v)
			l.notSent(LoadFailure{PartitionKey: km.PartitionKey, RowKey: km.RowKey, Err: fmt.Errorf("patterns: Model.Load stopped before sending it: %w", bad)})
		}
	}
	l.wg.Wait()
	if refused != nil {
		refused = fmt.Errorf("patterns: Model.Load refused bad input (see the summary's Failures): %w", refused)
	}
	for i := range l.sum.Failures {
		l.sum.Failures[i].Err = asCalled(op, l.sum.Failures[i].Err)
	}
	for i := range l.sum.NotSent {
		l.sum.NotSent[i].Err = asCalled(op, l.sum.NotSent[i].Err)
	}
	return l.sum, errors.Join(bad, refused, l.err)
}

func mapKeys[V any](m map[string]V) iter.Seq[string] {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// loader runs Load's transactions.
type loader[T any] struct {
	m     *Model[T]
	idem  bool
	slots chan struct{}
	wg    sync.WaitGroup
	mu    sync.Mutex // guards sum and err
	sum   LoadSummary
	err   error
	// last is the done signal of each partition's latest transaction: a
	// partition's transactions run one at a time (its lists' ETags) and in
	// the order Load cut them, so that of two entities claiming one row
	// the first in the input is written, as two sequential Adds would.
	last map[string]chan struct{}
}

func (l *loader[T]) notSent(f LoadFailure) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sum.NotSent = append(l.sum.NotSent, f)
}

// fit is how many of vs, from the start, one transaction holds: each
// entity's primary and copies, and up to two operations per list value
// (its last part rewritten, a new part begun). A transaction names a row
// once, so it ends before an entity whose primary or copy an earlier one
// of vs also writes (the same entity twice, one unique value twice): that
// entity goes in the next, where the service refuses it alone, as it
// would the second of two Adds.
func (l *loader[T]) fit(vs []*T) int {
	ops := 0
	values := map[[2]string]bool{}
	written := map[string]bool{} // RowKeys of the primaries and copies so far
	for i, v := range vs {
		n := 1
		rks := []string{l.m.tbl.Meta(v).RowKey}
		if l.m.copies != nil {
			// Load checked v, so its copies' keys are valid.
			want, _ := l.m.copies.plan(opModelLoad, v)
			for _, rk := range want {
				if rk != "" {
					rks = append(rks, rk)
					n++
				}
			}
		}
		for j, x := range l.m.lists {
			if val := x.value(v); val != "" && !values[[2]string{l.m.listDef[j].Name, val}] {
				n += 2
			}
		}
		if ops+n > batch.MaxOperations || slices.ContainsFunc(rks, func(rk string) bool { return written[rk] }) {
			return i
		}
		ops += n
		for _, rk := range rks {
			written[rk] = true
		}
		for j, x := range l.m.lists {
			if val := x.value(v); val != "" {
				values[[2]string{l.m.listDef[j].Name, val}] = true
			}
		}
	}
	return len(vs)
}

func (l *loader[T]) start(ctx context.Context, pk string, chunk []*T) {
	l.slots <- struct{}{}
	l.wg.Add(1)
	prev, done := l.last[pk], make(chan struct{}) // only Load's goroutine uses last
	l.last[pk] = done
	go func() {
		defer func() { <-l.slots; l.wg.Done() }()
		defer close(done)
		if prev != nil {
			<-prev // a slot is held while waiting; prev holds one too and never waits on this
		}
		l.send(ctx, chunk)
	}()
}

// send writes chunk (one partition), dropping the entities the service
// refuses and sending the rest again.
func (l *loader[T]) send(ctx context.Context, chunk []*T) {
	m := l.m
	for len(chunk) > 0 {
		var rows []modelRow
		for _, v := range chunk {
			if r, err := m.crossRow(opModelLoad, nil, v); err == nil && m.sender != nil {
				rows = append(rows, r)
			}
		}
		var owner []int // op index → chunk index
		var te *batch.TransactionError
		var res *batch.Result
		var final error // a failure that another round would not change
		_, err := table.RetryOnConflict(ctx, func(int) error {
			tx, own, listFrom, err := l.tx(ctx, chunk)
			if err != nil {
				final = err
				return nil
			}
			owner = own
			err = m.around(ctx, rows, func() error {
				var serr error
				res, serr = tx.Submit(ctx, m.tbl.Client(), nil)
				return serr
			})
			if errors.As(err, &te) && te.Index >= listFrom {
				return err // a list changed since it was read: read again
			}
			final = err // an entity's own refusal: settled below, not retried
			return nil
		}, &m.retry)
		if err == nil {
			err = final
		}
		if errors.Is(err, batch.ErrTooLarge) && len(chunk) > 1 {
			// fit counts operations, not bytes: large entities can pass
			// the service's 4 MiB request first. Nothing was written; each
			// half goes on its own (and is halved again if need be).
			half := len(chunk) / 2
			l.send(ctx, chunk[:half])
			l.send(ctx, chunk[half:])
			return
		}
		if err == nil {
			for i, v := range chunk {
				tableio.WrittenVia(m.tbl.Meta(v), m.tbl.Client(), res.ETags[slices.Index(owner, i)], true)
			}
			l.mu.Lock()
			l.sum.Entities += len(chunk)
			l.sum.Transactions++
			l.sum.Messages += len(chunkRows(rows))
			l.mu.Unlock()
			return
		}
		// A missing table is answered as its first operation's failure
		// (404 TableNotFound at index 0), but it is no one entity's
		// fault: without the table every entity of the chunk fails alike.
		if !errors.As(err, &te) || te.Index < 0 || te.Index >= len(owner) || owner[te.Index] < 0 || table.Is(err, table.ErrTableNotFound) {
			l.fail(chunk, err)
			return
		}
		i := owner[te.Index]
		v := chunk[i]
		km := m.tbl.Meta(v)
		switch {
		case l.idem && te.StatusCode == http.StatusConflict && te.Index == slices.Index(owner, i) && l.storedAsSent(ctx, v):
			l.mu.Lock()
			l.sum.Entities++
			l.mu.Unlock()
		default:
			ferr := err
			if d, ok := l.uniqueAt(te.Index, owner, chunk); ok && te.StatusCode == http.StatusConflict {
				ferr = &ValueTakenError{Index: d.Name, Value: d.Value(v), PartitionKey: km.PartitionKey, Err: te.Err}
			}
			l.mu.Lock()
			l.sum.Failures = append(l.sum.Failures, LoadFailure{PartitionKey: km.PartitionKey, RowKey: km.RowKey, Err: ferr})
			l.mu.Unlock()
		}
		chunk = slices.Delete(slices.Clone(chunk), i, i+1)
	}
}

// uniqueAt is the unique Copies index whose copy is operation at, if any.
func (l *loader[T]) uniqueAt(at int, owner []int, chunk []*T) (IndexDef[T], bool) {
	if l.m.copies == nil || owner[at] < 0 {
		return IndexDef[T]{}, false
	}
	// An entity's operations are its primary, then its copies in
	// definition order (those it has a value for).
	first := slices.Index(owner, owner[at])
	k := at - first - 1
	v := chunk[owner[at]]
	for _, d := range l.m.copies.defs {
		if d.Value(v) == "" {
			continue
		}
		if k == 0 {
			return d, d.Unique
		}
		k--
	}
	return IndexDef[T]{}, false
}

func (l *loader[T]) fail(chunk []*T, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, v := range chunk {
		km := l.m.tbl.Meta(v)
		l.sum.Failures = append(l.sum.Failures, LoadFailure{PartitionKey: km.PartitionKey, RowKey: km.RowKey, Err: err})
	}
	l.err = errors.Join(l.err, fmt.Errorf("patterns: Model.Load: %d entities of partition %q not written: %w", len(chunk), l.m.tbl.Meta(chunk[0]).PartitionKey, err))
}

// tx is one chunk's transaction: each entity's primary and copies, then
// the lists' operations; owner maps each operation to its entity (-1 for
// a list's), listFrom is the first list operation.
func (l *loader[T]) tx(ctx context.Context, chunk []*T) (*batch.Transaction, []int, int, error) {
	m := l.m
	tx := batch.NewTransaction(nil)
	var owner []int
	for i, v := range chunk {
		p, err := m.primaryOp(ctx, batch.KindAdd, v, nil)
		if err != nil {
			return nil, nil, 0, err
		}
		lt, err := m.localCopies(opModelLoad, p, v)
		if err != nil {
			return nil, nil, 0, err
		}
		for _, o := range lt {
			if err := tx.Append(o); err != nil {
				return nil, nil, 0, err
			}
			owner = append(owner, i)
		}
	}
	listFrom := tx.Len()
	if len(chunk) == 0 {
		return tx, owner, listFrom, nil
	}
	pk := m.tbl.Meta(chunk[0]).PartitionKey
	for _, x := range m.lists {
		ids := map[string][]string{}
		var values []string
		for _, v := range chunk {
			if val := x.value(v); val != "" {
				if ids[val] == nil {
					values = append(values, val)
				}
				ids[val] = append(ids[val], m.tbl.Meta(v).RowKey)
			}
		}
		for _, val := range values {
			parts, err := x.read(ctx, opModelLoad, pk, val)
			if err != nil {
				return nil, nil, 0, err
			}
			ops, err := x.appendIDs(pk, val, ids[val], parts)
			if err != nil {
				return nil, nil, 0, err
			}
			for _, o := range ops {
				if err := tx.Append(o); err != nil {
					return nil, nil, 0, err
				}
				owner = append(owner, -1)
			}
		}
	}
	return tx, owner, listFrom, nil
}

// refuseQuotes refuses, before any request, keys of v that the model's
// later writes could not send on their clients (see quoteGuard): every
// write of the primary is a transaction, its updates batch updates of the
// primary, its copies and its lists' entities, and the worker upserts its
// cross copies. check calls it with the keys already valid.
func (m *Model[T]) refuseQuotes(op string, v *T) error {
	km := m.tbl.Meta(v)
	client := m.tbl.Client()
	ks := []quotedKey{{client, "PartitionKey", km.PartitionKey}, {client, "RowKey", km.RowKey}}
	if m.copies != nil {
		want, err := m.copies.plan(op, v)
		if err != nil {
			return err
		}
		for i, rk := range want {
			if rk != "" {
				ks = append(ks, quotedKey{client, m.copies.defs[i].Name, rk})
			}
		}
	}
	for i, x := range m.lists {
		if val := x.value(v); val != "" {
			rk, err := x.partKey(val, 0)
			if err != nil {
				return err
			}
			ks = append(ks, quotedKey{client, m.listDef[i].Name, rk})
		}
	}
	if m.cross != nil {
		addrs, err := m.cross.addrs(op, v)
		if err != nil {
			return err
		}
		for i, a := range addrs {
			if a.RK != "" {
				c := m.cross.copies[i].Client()
				ks = append(ks, quotedKey{c, m.cross.defs[i].Name, a.PK}, quotedKey{c, m.cross.defs[i].Name, a.RK})
			}
		}
	}
	return m.quotes.check(op, ks...)
}

// localCopies is an added entity's primary operation and its copies'.
func (m *Model[T]) localCopies(op string, primary batch.Op, v *T) ([]batch.Op, error) {
	ops := []batch.Op{primary}
	if m.copies == nil {
		return ops, nil
	}
	want, err := m.copies.plan(op, v)
	if err != nil {
		return nil, err
	}
	for i, rk := range want {
		if rk == "" {
			continue
		}
		c, err := m.copies.copyOf(i, v, rk)
		if err != nil {
			return nil, err
		}
		ops = append(ops, copyOp(c, m.copies.defs[i].Unique))
	}
	return ops, nil
}

// storedAsSent reports v stored exactly as Load would write it: the
// conflict of an Add whose first answer was lost.
func (l *loader[T]) storedAsSent(ctx context.Context, v *T) bool {
	ok, err := tableio.For(l.m.tbl).Stored(ctx, v)
	return err == nil && ok
}
