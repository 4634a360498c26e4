package patterns

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/tablekit/tablekit/internal/tableio"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/consistency/blobstore"
	"github.com/tablekit/tablekit/internal/batchraw"
	"github.com/tablekit/tablekit/internal/keyrules"
	"github.com/tablekit/tablekit/table"
)

// The entity model: one declaration of an entity type's key layout and of
// every index on it, kept by every path that writes, loads, moves, reads,
// verifies or repairs the entity, and the one way to write an indexed
// entity. Each index kind it declares has its own part (intra, inter,
// index entities, eventual lists: unexported), which the model composes so
// that they share one table handle, one transaction per write and one
// queue message per write:
//
//   - indexes in the primary's partition (Copies: the guide's "email_" rows;
//     Lists: its index entities, option 2) change in the primary's own
//     entity group transaction, so they never disagree with it;
//   - indexes elsewhere (CrossCopies: copies under other PartitionKeys or in
//     other tables; RemoteLists: ID lists in other partitions, tables or
//     blobs, options 1 and 3) are brought along by one queue message sent
//     hidden before the transaction and shown after it, which the worker's
//     Process turns into the current state of every such index (level
//     triggered: a message late, twice or out of order is harmless).
//
// Every row kind the model writes into the primaries' table has a RowKey
// prefix of its own (Primary, each Copies and Lists prefix), none the start
// of another, so a read of primaries is a range of RowKeys that no index
// row falls in, and every index row also names its owner (indexOfProperty).

// modelMessageType is the base of a model's message type:
// "tablekit.model.<Name>.v1" (see Model.MessageType).
const modelMessageType = "tablekit.model"

// ListDef declares a list index of a Model: for each value, the IDs of the
// primaries that have it. In ModelOptions.Lists the lists are index
// entities in the primary's partition (the guide's option 2: Prefix),
// changed in the primary's transaction. In ModelOptions.RemoteLists they
// are kept elsewhere, eventually consistent through the model's queue:
// index entities in another partition or table (option 3: Table and
// Partition) or a blob per value (option 1, for lists beyond what index
// entities hold: Blobs and Container). OpenModel refuses a field of the
// other kind.
type ListDef[T any] struct {
	// Name identifies the index in reads and reports.
	Name string
	// Value is the indexed value of v; "" means v is in no list.
	Value func(v *T) string
	// Prefix starts the RowKey of every index entity of this index (the
	// guide's "lastname_"), or with Blobs each list's blob name. Required
	// in Lists and with Table; in Lists no row kind's prefix may start
	// another's.
	Prefix string
	// MaxListUnits caps the UTF-16 units of one index entity's list (Lists
	// and Table): a list beyond it continues in the value's next index
	// entity. Default (0): what one index entity holds (491,520).
	MaxListUnits int
	// Table (RemoteLists) holds the lists as index entities under
	// Partition, each change one update guarded by its ETag.
	Table *table.Table[table.Entity]
	// Partition (RemoteLists, with Table) is the lists' PartitionKey.
	Partition string
	// Blobs (RemoteLists) holds each value's list as a blob in Container,
	// each change written with If-Match.
	Blobs blobstore.Client
	// Container (RemoteLists, with Blobs) is the lists' blob container.
	Container string
}

// list is the ID list a RemoteLists def declares; what it names is
// checked before any request.
func (d ListDef[T]) list() (idList, error) {
	switch {
	case d.Table != nil && d.Blobs != nil:
		return nil, fmt.Errorf("%w: remote list %s names both a Table and Blobs", ErrBadDefinition, d.Name)
	case d.Table != nil:
		return newRemoteIndexEntities(d.Table, d.Partition, d.Prefix, &indexEntitiesOptions{MaxListUnits: d.MaxListUnits})
	case d.Blobs != nil:
		return newBlobIndex(d.Blobs, d.Container, d.Prefix)
	}
	return nil, fmt.Errorf("%w: remote list %s needs a Table or Blobs", ErrBadDefinition, d.Name)
}

// ModelOptions declare an entity model. Everything is checked by OpenModel,
// before any request.
type ModelOptions[T any] struct {
	// Name names the model in its message type ("tablekit.model.<Name>.v1")
	// and its reports; letters, digits, "_", "-" and ".". Required.
	Name string
	// Primary is the RowKey prefix of the primaries (the guide's
	// "empid_"). Required when Copies, Lists or CrossCopies keep rows in
	// the primaries' table, so that reads of primaries skip them by their
	// keys; may be "" otherwise.
	Primary string
	// Copies are copies of the primary under other RowKeys of its
	// partition (the guide's intra-partition secondary index), written in
	// the primary's transaction.
	Copies []IndexDef[T]
	// Lists are index entities in the primary's partition (the guide's
	// option 2), changed in the primary's transaction.
	Lists []ListDef[T]
	// CrossCopies are copies under other PartitionKeys or in other tables
	// (the guide's inter-partition secondary index), eventually consistent
	// through Queue.
	CrossCopies []IndexDef[T]
	// RemoteLists are ID lists in other partitions, tables or blobs (the
	// guide's options 3 and 1), eventually consistent through Queue.
	RemoteLists []ListDef[T]
	// Queue carries the work of CrossCopies and RemoteLists: one message a
	// write, which a consistency.Worker hands to Process. Required when
	// either is declared.
	Queue consistency.Queue
	// PublishDelay hides a write's message until the write is done (it is
	// then shown at once); after a crash in between it appears when the
	// delay ends. Default: 30 s.
	PublishDelay time.Duration
	// Logger receives the failures the model leaves to a later run (a
	// message that returns to the queue), at Warn. Default: no logging.
	Logger *slog.Logger
	// StateRefresh is how old a process's copy of the indexes' stored
	// state (see IndexState) may be before a write or an index read reads
	// it again (one request). A Build or Drop waits twice as long before it
	// scans, so every process has seen the new state first. Default: 30 s.
	StateRefresh time.Duration
	// RangeSize is the entities of one range of a Build or Drop: one queue
	// message and one checkpoint row each; a large partition is cut into
	// several ranges by RowKey. Default: 5,000.
	RangeSize int
}

// Model is an entity type with its key layout and every index on it, over
// one table handle. Its writes keep every index; its reads see primaries
// only; Verify and Repair cover every index at once. Build it with
// OpenModel.
type Model[T any] struct {
	name    string
	tbl     *table.Table[T]
	raw     *table.Table[table.Entity] // the primaries' table, as rows
	primary string
	copies  *intraPartitionIndex[T] // nil without Copies
	lists   []*indexEntities[T]
	listDef []ListDef[T]
	cross   *interPartitionIndex[T] // nil without CrossCopies
	remote  []ListDef[T]
	// remoteIdx verify and repair RemoteLists (their writes go through
	// the model's own message).
	remoteIdx  []*eventualIndexEntities[T]
	remoteList []idList            // the lists of remote, by index
	sender     *consistency.Sender // nil without cross-partition indexes
	msgType    string
	delay      time.Duration
	log        *slog.Logger
	retry      table.RetryOptions
	quotes     quoteGuard // see refuseQuotes
	// The indexes' stored state (model_state.go) and what this process
	// declares of each index.
	state     stateHolder
	decl      map[string]indexDecl
	queue     consistency.Queue // ModelOptions.Queue, for builds
	rangeSize int
	// beforeBackfill, set by tests only, runs between a range page's read
	// and its writes.
	beforeBackfill func()
}

// OpenModel declares T's model over tbl, the handle whose codec,
// encryption, logger, tracing and name every part of the model uses, and
// reads its indexes' stored state (one request; none without a Primary
// prefix, whose model has no states: every declared index is active).
// Every rule is checked first, before any request: names unique across all indexes,
// prefixes non-empty and none the start of another, a Primary prefix when
// index rows share the primaries' table, projections naming clear
// properties of T, a Queue when an index lives outside the partition, and
// the largest transaction a change can need within the service's 100
// operations. With a Primary prefix, tbl becomes the handle of the
// primaries only: its Query skips every index row, and its Get and writes
// refuse their RowKeys, so no code that holds it reads an index row as a
// T or writes a T over one (any other Table of a T over the table skips
// and refuses them by what they store).
func OpenModel[T any](ctx context.Context, tbl *table.Table[T], opts *ModelOptions[T]) (*Model[T], error) {
	m, err := declareModel(tbl, opts)
	if err != nil {
		return nil, err
	}
	if m.evolves() {
		if _, err := m.loadState(ctx); err != nil {
			return nil, fmt.Errorf("patterns: OpenModel %s: reading the indexes' state: %w", m.name, err)
		}
	}
	return m, nil
}

// declareModel checks opts and builds the model; nothing is sent.
func declareModel[T any](tbl *table.Table[T], opts *ModelOptions[T]) (*Model[T], error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: model: %s", ErrBadDefinition, fmt.Sprintf(format, args...))
	}
	if tbl == nil {
		return nil, bad("no table")
	}
	if opts == nil || opts.Name == "" {
		return nil, bad("a model needs a Name")
	}
	m := &Model[T]{name: opts.Name, tbl: tbl, raw: tbl.Entities(), primary: opts.Primary,
		delay: defaultPublishDelay, log: opts.Logger, retry: listRetry(), queue: opts.Queue,
		decl: map[string]indexDecl{}, rangeSize: defaultRangeSize}
	m.state.refresh = defaultStateRefresh
	if opts.StateRefresh > 0 {
		m.state.refresh = opts.StateRefresh
	}
	if opts.RangeSize > 0 {
		m.rangeSize = opts.RangeSize
	}
	if opts.Primary != "" && strings.HasPrefix(controlRowPrefix, opts.Primary) {
		return nil, bad("the Primary prefix %q starts the RowKey of the model's control row (%s…)", opts.Primary, controlRowPrefix)
	}
	// Every part sees an index's Value through gate: while the stored state
	// says writes no longer maintain an index (dropping, dropped), each
	// primary is in none of its rows.
	copies, lists, cross, remote := slices.Clone(opts.Copies), slices.Clone(opts.Lists), slices.Clone(opts.CrossCopies), slices.Clone(opts.RemoteLists)
	for i, d := range copies {
		copies[i].Value = m.gate(d.Name, d.Value)
		m.decl[d.Name] = indexDecl{kind: "copies", fingerprint: indexFingerprint("copies", d)}
	}
	for i, d := range lists {
		lists[i].Value = m.gate(d.Name, d.Value)
		m.decl[d.Name] = indexDecl{kind: "list", fingerprint: listFingerprint("list", d)}
	}
	for i, d := range cross {
		cross[i].Value = m.gate(d.Name, d.Value)
		m.decl[d.Name] = indexDecl{kind: "cross", fingerprint: indexFingerprint("cross", d)}
	}
	for i, d := range remote {
		remote[i].Value = m.gate(d.Name, d.Value)
		m.decl[d.Name] = indexDecl{kind: "remote", fingerprint: listFingerprint("remote", d)}
	}
	m.listDef, m.remote = lists, remote
	opts = &ModelOptions[T]{Name: opts.Name, Primary: opts.Primary, Copies: copies, Lists: lists, CrossCopies: cross,
		RemoteLists: remote, Queue: opts.Queue, PublishDelay: opts.PublishDelay, Logger: opts.Logger}
	var err error
	if m.msgType, err = messageType(modelMessageType, opts.Name); err != nil {
		return nil, err
	}
	if opts.PublishDelay > 0 {
		m.delay = opts.PublishDelay
	}
	names := map[string]bool{}
	name := func(n string) error {
		if n == "" {
			return bad("an index has no Name")
		}
		if names[n] {
			return bad("two indexes named %s", n)
		}
		names[n] = true
		return nil
	}
	local := len(opts.Copies) + len(opts.Lists)
	if local > 0 && opts.Primary == "" {
		return nil, bad("Copies and Lists keep rows in the primaries' table: declare the primaries' RowKey prefix (Primary, the guide's \"empid_\")")
	}
	// The largest change: the primary, a delete and a write per copy, and
	// a write to two lists' last parts (old value, new value) per list.
	if n := 1 + 2*local; n > batch.MaxOperations {
		return nil, bad("%d same-partition indexes need transactions of %d operations; the service allows %d", local, n, batch.MaxOperations)
	}
	prefixes := map[string]string{}
	if opts.Primary != "" {
		if err := keyrules.ValidateRowKey(opts.Primary); err != nil {
			return nil, fmt.Errorf("%w: model: the Primary prefix: %w", ErrBadDefinition, err)
		}
		prefixes["primary"] = opts.Primary
	}
	for _, d := range opts.Copies {
		if err := name(d.Name); err != nil {
			return nil, err
		}
		if d.PartitionKey != nil || d.Table != nil {
			return nil, bad("copies %s names a PartitionKey func or a Table: an index elsewhere is one of CrossCopies", d.Name)
		}
		prefixes["index "+d.Name] = d.Prefix
	}
	for _, d := range opts.Lists {
		if err := name(d.Name); err != nil {
			return nil, err
		}
		if d.Prefix == "" || d.Value == nil {
			return nil, bad("list %s needs a Prefix and a Value func", d.Name)
		}
		if d.Table != nil || d.Blobs != nil || d.Partition != "" || d.Container != "" {
			return nil, bad("list %s names a Table, Partition, Blobs or Container: a list elsewhere is one of RemoteLists", d.Name)
		}
		prefixes["list "+d.Name] = d.Prefix
	}
	for what, p := range prefixes {
		for other, q := range prefixes {
			if what != other && strings.HasPrefix(q, p) {
				return nil, bad("the prefix %q of the %s starts the prefix %q of the %s: their rows would mix", p, what, q, other)
			}
		}
	}
	if len(opts.Copies) > 0 {
		if m.copies, err = newIntraPartitionIndex(tbl, opts.Primary, opts.Copies); err != nil {
			return nil, err
		}
	}
	for _, d := range opts.Lists {
		x, err := newIndexEntities(tbl, d.Prefix, d.Value, &indexEntitiesOptions{MaxListUnits: d.MaxListUnits})
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", d.Name, err)
		}
		x.primary = opts.Primary
		m.lists = append(m.lists, x)
	}
	for _, d := range opts.CrossCopies {
		if err := name(d.Name); err != nil {
			return nil, err
		}
		if d.Prefix != "" || d.Unique {
			return nil, bad("cross copies %s names a Prefix or Unique: a copy in the entity's partition is one of Copies", d.Name)
		}
	}
	for _, d := range opts.RemoteLists {
		if err := name(d.Name); err != nil {
			return nil, err
		}
		if d.Value == nil {
			return nil, bad("remote list %s needs a Value func", d.Name)
		}
		list, err := d.list()
		if err != nil {
			return nil, err
		}
		m.remoteList = append(m.remoteList, list)
		e := newEventualIndexEntities(tbl, d.Value, list, nil, &eventualIndexEntitiesOptions{Name: opts.Name + "." + d.Name})
		e.primary = opts.Primary
		m.remoteIdx = append(m.remoteIdx, e)
	}
	if len(opts.CrossCopies)+len(opts.RemoteLists) > 0 {
		if opts.Queue == nil {
			return nil, bad("CrossCopies and RemoteLists travel through a queue: set Queue")
		}
		m.sender = consistency.NewSender(opts.Queue, nil)
	}
	if len(opts.CrossCopies) > 0 {
		if m.cross, err = newInterPartitionIndex(tbl, opts.Queue, opts.CrossCopies, &interPartitionIndexOptions{Logger: opts.Logger}); err != nil {
			return nil, err
		}
		m.cross.primary = opts.Primary
		for _, d := range opts.Copies {
			m.cross.local = append(m.cross.local, d.Prefix)
		}
	}
	for _, d := range opts.CrossCopies {
		if d.Table == nil && opts.Primary == "" {
			return nil, bad("cross copies %s live in the primaries' table: declare the primaries' RowKey prefix (Primary, the guide's \"empid_\")", d.Name)
		}
	}
	// The handle is the primaries': no pattern may write its rows (of
	// the model's type, around its indexes) through it.
	if err := tableio.For(tbl).OnlyKind(""); err != nil {
		return nil, fmt.Errorf("%w: model: %w", ErrBadDefinition, err)
	}
	if opts.Primary != "" {
		// The handle reads and writes primaries only, whoever holds it.
		if err := tableio.For(tbl).OnlyRowPrefix(opts.Primary); err != nil {
			return nil, fmt.Errorf("%w: model: %w", ErrBadDefinition, err)
		}
	}
	return m, nil
}

// Table is the handle of the primaries, the one OpenModel was given: with a
// Primary prefix it reads and writes the primaries' rows only.
func (m *Model[T]) Table() *table.Table[T] { return m.tbl }

// Name is the model's name, as its reports carry it.
func (m *Model[T]) Name() string { return m.name }

// MessageType is the type of the model's messages: register Process or
// ProcessBatch under it (w.Handle(m.MessageType(), m.Process) or
// w.HandleBatch(m.MessageType(), m.ProcessBatch)). A model without
// cross-partition indexes sends none.
func (m *Model[T]) MessageType() string { return m.msgType }

// modelMessage names the primaries a write changed, and what each had
// before in the indexes outside the partition: the handler reads every
// primary and makes those indexes match it, removing what the old version
// had and the new one does not.
type modelMessage struct {
	Rows []modelRow `json:"rows"`
	// Build is a step of a Build or Drop (model_build.go) instead of rows.
	Build *buildStep `json:"build,omitempty"`
}

type modelRow struct {
	PK    string            `json:"pk"`
	RK    string            `json:"rk"`
	Stale []copyAddr        `json:"stale,omitempty"` // CrossCopies of the old version
	Old   map[string]string `json:"old,omitempty"`   // RemoteLists: index name → old value
}

// crossRow is what the handler of a write of cur → next must know: the
// primary's keys and the cross-partition rows cur had. It checks next's
// cross-partition keys too, so a bad one is refused before any request.
func (m *Model[T]) crossRow(op string, cur, next *T) (modelRow, error) {
	v := next
	if v == nil {
		v = cur
	}
	km := m.tbl.Meta(v)
	row := modelRow{PK: km.PartitionKey, RK: km.RowKey}
	if m.cross != nil {
		var want []copyAddr
		if next != nil {
			var err error
			if want, err = m.cross.addrs(op, next); err != nil {
				return row, err
			}
		}
		if cur != nil {
			had, err := m.cross.addrs(op, cur)
			if err != nil {
				return row, err
			}
			for i, a := range had {
				if a.RK != "" && (want == nil || want[i] != a) {
					row.Stale = append(row.Stale, a)
				}
			}
		}
	}
	for _, d := range m.remote {
		old := ""
		if cur != nil {
			old = d.Value(cur)
		}
		if next != nil && d.Value(next) == old {
			continue
		}
		if old != "" {
			if row.Old == nil {
				row.Old = map[string]string{}
			}
			row.Old[d.Name] = old
		}
	}
	return row, nil
}

// around runs write with the message of rows sent around it: hidden
// before, shown after (consistency.Sender.SendAround), so a crash at any
// step leaves a message that converges the indexes outside the partition
// to the primaries. Rows that do not fit one message go in several, each
// sent around the next.
func (m *Model[T]) around(ctx context.Context, rows []modelRow, write func() error) error {
	if m.sender == nil || len(rows) == 0 {
		return write()
	}
	chunks := chunkRows(rows)
	var send func(i int) error
	send = func(i int) error {
		if i == len(chunks) {
			return write()
		}
		c := chunks[i]
		return m.sender.SendAround(ctx, m.msgType, messageKey(c[0].PK, c[0].RK), modelMessage{Rows: c}, m.delay, func() error { return send(i + 1) }, nil)
	}
	return send(0)
}

// maxMessageRowBytes bounds the rows of one message well within a queue
// message's 64 KiB (consistency adds its envelope and base64 on top).
const maxMessageRowBytes = 24 << 10

func chunkRows(rows []modelRow) [][]modelRow {
	var out [][]modelRow
	var cur []modelRow
	size := 0
	for _, r := range rows {
		n := 64 + 2*(len(r.PK)+len(r.RK))
		for _, s := range r.Stale {
			n += 32 + 2*(len(s.PK)+len(s.RK))
		}
		for k, v := range r.Old {
			n += 16 + 2*(len(k)+len(v))
		}
		if len(cur) > 0 && size+n > maxMessageRowBytes {
			out, cur, size = append(out, cur), nil, 0
		}
		cur, size = append(cur, r), size+n
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// primaryOp is the primary's operation in a write's transaction, encoded
// by the model's table (encrypted fields sealed under the primary's keys).
func (m *Model[T]) primaryOp(ctx context.Context, kind batch.Kind, v *T, ifMatch *azcore.ETag) (batch.Op, error) {
	mode := aztables.UpdateModeReplace
	if kind == batch.KindUpdateMerge || kind == batch.KindUpsertMerge {
		mode = aztables.UpdateModeMerge
	}
	body, err := tableio.For(m.tbl).EncodeWrite(ctx, v, mode)
	if err != nil {
		return batch.Op{}, err
	}
	return batchraw.Op(kind, body, ifMatch), nil
}

// check validates v as a primary of the model for op: its keys composed
// and valid, its RowKey under the Primary prefix, every index key it
// makes valid. Nothing is sent.
func (m *Model[T]) check(ctx context.Context, op string, v *T, mode aztables.UpdateMode) error {
	if v == nil {
		return &table.InputError{Op: op, Rule: table.ErrNilValue}
	}
	// An empty RowKey (a declared key that does not compose) is
	// EncodeWrite's to report.
	if rk := m.tbl.Meta(v).RowKey; rk != "" && !strings.HasPrefix(rk, m.primary) {
		return &table.InputError{Op: op, Field: "RowKey", Rule: ErrNotPrimary, Detail: fmt.Sprintf("%q lacks the model's Primary prefix %q", rk, m.primary)}
	}
	if _, err := tableio.For(m.tbl).EncodeWrite(ctx, v, mode); err != nil {
		return err
	}
	if m.copies != nil {
		if _, err := m.copies.plan(op, v); err != nil {
			return err
		}
	}
	for i, x := range m.lists {
		if val := x.value(v); val != "" {
			if _, err := x.partKey(val, 0); err != nil {
				return &table.InputError{Op: op, Field: m.listDef[i].Name, Rule: err, Detail: "the value is part of its index entity's RowKey"}
			}
		}
	}
	if m.cross != nil {
		if _, err := m.cross.addrs(op, v); err != nil {
			return err
		}
	}
	if err := m.refuseQuotes(op, v); err != nil {
		return err
	}
	return m.checkDeclaration(ctx, op)
}

// localTx is the transaction of one write in the primary's partition: the
// primary's operation, then every same-partition index row that changes
// from cur to next (either may be nil). It reads the lists it changes.
type localTx struct {
	tx       *batch.Transaction
	uniqueAt map[int]int    // op index → Copies index whose value must be free
	deleteAt map[int]string // op index → old copy deleted
	listFrom int            // the first list operation's index
}

func (m *Model[T]) localTx(ctx context.Context, op string, primary batch.Op, cur, next *T, gone map[string]bool) (*localTx, error) {
	lt := &localTx{tx: batch.NewTransaction(nil), uniqueAt: map[int]int{}, deleteAt: map[int]string{}}
	if err := lt.tx.Append(primary); err != nil {
		return nil, err
	}
	v := next
	if v == nil {
		v = cur
	}
	pk, rk := m.tbl.Meta(v).PartitionKey, m.tbl.Meta(v).RowKey
	if m.copies != nil {
		var prev, want []string
		var err error
		if cur != nil {
			if prev, err = m.copies.plan(op, cur); err != nil {
				return nil, err
			}
		}
		if next != nil {
			if want, err = m.copies.plan(op, next); err != nil {
				return nil, err
			}
		}
		for i := range m.copies.defs {
			old, now := at(prev, i), at(want, i)
			if old != "" && old != now && !gone[old] {
				lt.deleteAt[lt.tx.Len()] = old
				if err := lt.tx.Append(batch.Delete(pk, old)); err != nil {
					return nil, err
				}
			}
			if now == "" {
				continue
			}
			c, err := m.copies.copyOf(i, next, now)
			if err != nil {
				return nil, err
			}
			isNew := m.copies.defs[i].Unique && now != old
			if isNew {
				lt.uniqueAt[lt.tx.Len()] = i
			}
			if err := lt.tx.Append(copyOp(c, isNew)); err != nil {
				return nil, err
			}
		}
	}
	lt.listFrom = lt.tx.Len()
	for _, x := range m.lists {
		old, now := "", ""
		if cur != nil {
			old = x.value(cur)
		}
		if next != nil {
			now = x.value(next)
		}
		if old == now {
			continue
		}
		if old != "" {
			parts, err := x.read(ctx, op, pk, old)
			if err != nil {
				return nil, err
			}
			o, err := x.removeFrom(pk, old, rk, parts)
			if err != nil {
				return nil, err
			}
			if o != nil {
				if err := lt.tx.Append(*o); err != nil {
					return nil, err
				}
			}
		}
		if now != "" {
			parts, err := x.read(ctx, op, pk, now)
			if err != nil {
				return nil, err
			}
			if containsID(parts, rk) {
				continue
			}
			o, err := x.addTo(pk, now, rk, parts)
			if err != nil {
				return nil, err
			}
			if err := lt.tx.Append(o); err != nil {
				return nil, err
			}
		}
	}
	return lt, nil
}

func at(s []string, i int) string {
	if s == nil {
		return ""
	}
	return s[i]
}

// commit writes cur → next in the primary's partition, going round again
// while a list lost a race (412 on an index entity: another writer changed
// it between the read and the transaction) or an old copy to delete was
// already missing; a failure of the primary's own operation ends it. It
// sets the primary's ETag from the answer.
func (m *Model[T]) commit(ctx context.Context, op string, primary func() (batch.Op, error), cur, next *T) error {
	gone := map[string]bool{}
	var final error
	_, err := table.RetryOnConflict(ctx, func(int) error {
		for {
			p, err := primary()
			if err != nil {
				final = err
				return nil
			}
			lt, err := m.localTx(ctx, op, p, cur, next, gone)
			if err != nil {
				final = err
				return nil
			}
			res, err := lt.tx.Submit(ctx, m.tbl.Client(), nil)
			var te *batch.TransactionError
			if errors.As(err, &te) {
				if old, ok := lt.deleteAt[te.Index]; ok && te.StatusCode == http.StatusNotFound {
					gone[old] = true // written around the model: nothing to delete
					continue
				}
				if i, ok := lt.uniqueAt[te.Index]; ok && te.StatusCode == http.StatusConflict {
					d := m.copies.defs[i]
					final = &ValueTakenError{Index: d.Name, Value: d.Value(next), PartitionKey: m.tbl.Meta(next).PartitionKey, Err: te.Err}
					return nil
				}
				if te.Index >= lt.listFrom && te.Index > 0 {
					return err // a list changed: read again, go round
				}
				final = err
				return nil
			}
			if err != nil {
				final = err
				return nil
			}
			if next != nil {
				tableio.WrittenVia(m.tbl.Meta(next), m.tbl.Client(), res.ETags[0], true)
			}
			return nil
		}
	}, &m.retry)
	if err != nil {
		return err
	}
	return final
}

// write is every model write: check next, send the cross-partition message
// around the partition's transaction.
func (m *Model[T]) write(ctx context.Context, op string, primary func() (batch.Op, error), cur, next *T) error {
	if err := m.checkDeclaration(ctx, op); err != nil {
		return err
	}
	row, err := m.crossRow(op, cur, next)
	if err != nil {
		return err
	}
	var rows []modelRow
	if m.sender != nil && (next != nil || cur != nil) {
		rows = []modelRow{row}
	}
	return m.around(ctx, rows, func() error { return m.commit(ctx, op, primary, cur, next) })
}

// Add inserts v with every index row it calls for. Without indexes outside
// the partition it is one transaction (and a read per list whose value v
// has); with them, a hidden message, the transaction, and the message
// shown. It fails with table.ErrAlreadyExists if v exists and with
// *ValueTakenError if a unique Copies value is taken; with opts.Idempotent
// an entity stored exactly as v is a success (one more read), as after a
// retry whose first answer was lost. Nothing is sent for a bad v.
func (m *Model[T]) Add(ctx context.Context, v *T, opts *table.AddOptions) (err error) {
	ctx, done := m.enter(ctx, opModelAdd, partitionOf(m.tbl, v))
	defer done(&err)
	const op = opModelAdd
	if err := m.check(ctx, op, v, aztables.UpdateModeReplace); err != nil {
		return err
	}
	err = m.write(ctx, op, func() (batch.Op, error) { return m.primaryOp(ctx, batch.KindAdd, v, nil) }, nil, v)
	if err != nil && storedAlready(ctx, m.tbl, v, err, opts) {
		// The check that found v stored gave v the stored ETag.
		return nil
	}
	return err
}

// Update writes v over the stored entity at the version of v's ETag (or
// opts.IfMatch), in opts.Mode (by default the handle's, as table.Update:
// Merge, or Replace for a type with encrypted fields), with
// every index brought along: a read of the stored entity (whose index rows
// the change replaces), then the write as Add describes. A changed entity
// is table.ErrPreconditionFailed and nothing is written.
func (m *Model[T]) Update(ctx context.Context, v *T, opts *table.UpdateOptions) (err error) {
	ctx, done := m.enter(ctx, opModelUpdate, partitionOf(m.tbl, v))
	defer done(&err)
	const op = opModelUpdate
	var mode aztables.UpdateMode
	var ifMatch *azcore.ETag
	if opts != nil {
		mode, ifMatch = opts.Mode, opts.IfMatch
	}
	mode, err = tableio.For(m.tbl).WriteMode(mode)
	if err != nil {
		return err
	}
	if err := m.check(ctx, op, v, mode); err != nil {
		return err
	}
	km := m.tbl.Meta(v)
	guard := km.ETag
	if ifMatch != nil {
		guard = *ifMatch
	}
	if guard == "" {
		return &table.InputError{Op: op, Field: "ETag", Rule: table.ErrNoETag, Detail: "read the entity first, or set WriteOptions.IfMatch"}
	}
	cur, err := m.tbl.Get(ctx, km.PartitionKey, km.RowKey, nil)
	if err != nil {
		return err
	}
	if guard == azcore.ETagAny {
		guard = m.tbl.Meta(cur).ETag
	}
	return m.write(ctx, op, func() (batch.Op, error) { return m.primaryOp(ctx, updateKind(mode), v, &guard) }, cur, v)
}

// Upsert inserts v or writes it over the stored entity whatever its
// version, in opts.Mode (by default the handle's, as table.Upsert: Merge,
// or Replace for a type with encrypted fields), with every
// index brought along: a read, then the write as Add describes; a writer
// that changes the entity in between sends it round again.
func (m *Model[T]) Upsert(ctx context.Context, v *T, opts *table.UpsertOptions) (err error) {
	ctx, done := m.enter(ctx, opModelUpsert, partitionOf(m.tbl, v))
	defer done(&err)
	const op = opModelUpsert
	var mode aztables.UpdateMode
	if opts != nil {
		mode = opts.Mode
	}
	mode, err = tableio.For(m.tbl).WriteMode(mode)
	if err != nil {
		return err
	}
	if err := m.check(ctx, op, v, mode); err != nil {
		return err
	}
	km := m.tbl.Meta(v)
	_, err = table.RetryOnConflict(ctx, func(int) error {
		cur, err := m.tbl.Get(ctx, km.PartitionKey, km.RowKey, nil)
		if table.Is(err, table.ErrNotFound) {
			return m.write(ctx, op, func() (batch.Op, error) { return m.primaryOp(ctx, batch.KindAdd, v, nil) }, nil, v)
		}
		if err != nil {
			return err
		}
		guard := m.tbl.Meta(cur).ETag
		return m.write(ctx, op, func() (batch.Op, error) { return m.primaryOp(ctx, updateKind(mode), v, &guard) }, cur, v)
	}, nil)
	return err
}

func updateKind(mode aztables.UpdateMode) batch.Kind {
	if mode == aztables.UpdateModeReplace {
		return batch.KindUpdateReplace
	}
	return batch.KindUpdateMerge
}

// Modify reads the entity, applies change to a copy and writes the result
// over the version it read (Replace, or opts.Mode), with every index
// brought along, going round again when another writer got there first
// (bounded by opts). Two requests without contention and without indexes
// outside the partition. It returns the stored value. opts.Create is
// refused before any request: Add creates an entity with its index rows.
func (m *Model[T]) Modify(ctx context.Context, partitionKey, rowKey string, change func(*T) error, opts *table.ModifyOptions) (_ *T, err error) {
	ctx, done := m.enter(ctx, opModelModify, partitionKey)
	defer done(&err)
	const op = opModelModify
	if change == nil {
		return nil, &table.InputError{Op: op, Rule: table.ErrNilValue, Detail: "change func is nil"}
	}
	if err := validKeys(op, partitionKey, "RowKey", rowKey); err != nil {
		return nil, err
	}
	if opts != nil && opts.Create {
		return nil, &table.InputError{Op: op, Field: "Create", Rule: table.ErrInvalidValue, Detail: "a model's Modify changes a stored entity; Add creates one with its index rows"}
	}
	mode := aztables.UpdateModeReplace
	var retry *table.RetryOptions
	if opts != nil {
		if opts.Mode != "" {
			mode = opts.Mode
		}
		retry = &table.RetryOptions{MaxAttempts: opts.MaxAttempts, BaseDelay: opts.BaseDelay, MaxDelay: opts.MaxDelay}
	}
	var out *T
	_, err = table.RetryOnConflict(ctx, func(int) error {
		cur, err := m.tbl.Get(ctx, partitionKey, rowKey, nil)
		if err != nil {
			return err
		}
		next, err := m.snapshot(cur)
		if err != nil {
			return err
		}
		if err := change(next); err != nil {
			return err
		}
		nm := m.tbl.Meta(next)
		if nm.PartitionKey != partitionKey || nm.RowKey != rowKey {
			return &table.InputError{Op: op, Field: "RowKey", Rule: table.ErrInvalidValue, Detail: "change moved the entity to other keys"}
		}
		if err := m.check(ctx, op, next, mode); err != nil {
			return err
		}
		guard := m.tbl.Meta(cur).ETag
		if err := m.write(ctx, op, func() (batch.Op, error) { return m.primaryOp(ctx, updateKind(mode), next, &guard) }, cur, next); err != nil {
			return err
		}
		out = next
		return nil
	}, retry)
	return out, err
}

// snapshot is a deep copy of v, Meta included: change may not reach the
// version Modify compares with through a shared slice or map.
func (m *Model[T]) snapshot(v *T) (*T, error) {
	e, err := tableio.For(m.tbl).EncodeWrite(context.Background(), v, aztables.UpdateModeReplace)
	if err != nil || len(tableio.For(m.tbl).EncryptedProperties()) > 0 {
		// A sealed body decodes only through the table's reads; a shallow
		// copy of an encrypted type shares only what its fields share.
		c := *v
		return &c, nil
	}
	out := new(T)
	if err := tableio.For(m.tbl).Decode(e, out); err != nil {
		return nil, err
	}
	*m.tbl.Meta(out) = *m.tbl.Meta(v)
	return out, nil
}

// Delete removes the entity and every index row of it: a read (the rows
// to remove follow from the stored value), then the transaction, around
// which the message for the indexes outside the partition goes. With
// opts.IfMatch only that version is deleted; without it, a writer that
// changes the entity between the read and the transaction sends it round
// again (table.RetryOnConflict). With opts.IfExists a missing entity is a
// success.
func (m *Model[T]) Delete(ctx context.Context, partitionKey, rowKey string, opts *table.DeleteOptions) (err error) {
	ctx, done := m.enter(ctx, opModelDelete, partitionKey)
	defer done(&err)
	const op = opModelDelete
	if err := validKeys(op, partitionKey, "RowKey", rowKey); err != nil {
		return err
	}
	ifExists := opts != nil && opts.IfExists
	// A version asked for is deleted or refused; without one, a writer
	// that changes the entity between the read and the transaction (whose
	// If-Match guards the index rows read with it) sends it round again.
	if opts != nil && opts.IfMatch != nil && *opts.IfMatch != azcore.ETagAny {
		cur, err := m.tbl.Get(ctx, partitionKey, rowKey, nil)
		if table.Is(err, table.ErrNotFound) && ifExists {
			return nil
		}
		if err != nil {
			return err
		}
		return m.deleteAt(ctx, op, cur, *opts.IfMatch)
	}
	_, err = table.RetryOnConflict(ctx, func(int) error {
		cur, err := m.tbl.Get(ctx, partitionKey, rowKey, nil)
		if table.Is(err, table.ErrNotFound) && ifExists {
			return nil
		}
		if err != nil {
			return err
		}
		return m.deleteAt(ctx, op, cur, m.tbl.Meta(cur).ETag)
	}, nil)
	return err
}

func (m *Model[T]) deleteAt(ctx context.Context, op string, cur *T, guard azcore.ETag) error {
	km := m.tbl.Meta(cur)
	return m.write(ctx, op, func() (batch.Op, error) {
		return batch.Delete(km.PartitionKey, km.RowKey).IfMatch(guard), nil
	}, cur, nil)
}

// Get reads a primary: one request.
func (m *Model[T]) Get(ctx context.Context, partitionKey, rowKey string, opts *table.ReadOptions) (_ *T, err error) {
	ctx, done := m.enter(ctx, opModelGet, partitionKey)
	defer done(&err)
	if rowKey != "" && !strings.HasPrefix(rowKey, m.primary) {
		return nil, &table.InputError{Op: opModelGet, Field: "RowKey", Rule: ErrNotPrimary, Detail: fmt.Sprintf("%q lacks the model's Primary prefix %q", rowKey, m.primary)}
	}
	return m.tbl.Get(ctx, partitionKey, rowKey, opts)
}

// Query reads primaries only, whatever the filter: the model's handle
// reads the Primary prefix's RowKey range only, so no index row of the
// model, nor any other row kind outside the range, is returned. One request a page. A value read with opts.Select lacks the
// properties left out, and every write refuses it (table.ErrPartialValue).
func (m *Model[T]) Query(ctx context.Context, opts *table.QueryOptions) iter.Seq2[*T, error] {
	return namedSeq(opModelQuery, m.tbl.Query(ctx, opts))
}

// Lookup returns the primary whose unique index holds value (Copies: in
// partitionKey; CrossCopies: the copy at partitionKey and value), whole:
// read from the copy when the copy stores every property (one request;
// the value then has no ETag, a copy's version not being the primary's),
// else from the primary the copy names, with its ETag (one more request),
// since a copy lacks the encrypted properties and those its projection
// leaves out. A copy whose primary is gone or no longer holds value (it
// changed after the copy was read, or a cross copy is not yet brought up
// to date) is table.ErrNotFound.
func (m *Model[T]) Lookup(ctx context.Context, index, partitionKey, value string, opts *table.ReadOptions) (_ *T, err error) {
	ctx, done := m.enter(ctx, opModelLookup, partitionKey)
	defer done(&err)
	if err := m.readable(ctx, opModelLookup, index); err != nil {
		return nil, err
	}
	var v *T
	var whole bool
	var holds func(*T) bool
	if i, ok := m.copyIndex(index); ok {
		d := m.copies.defs[i]
		v, err = m.copies.lookup(ctx, opModelLookup, index, partitionKey, value)
		whole = m.copies.project[i] == nil
		holds = func(p *T) bool { return d.Value(p) == value }
	} else if i, ok := m.crossIndex(index); ok {
		d := m.cross.defs[i]
		v, err = m.cross.lookup(ctx, opModelLookup, index, partitionKey, value)
		whole = m.cross.project[i] == nil
		holds = func(p *T) bool { return d.PartitionKey(p) == partitionKey && d.Value(p) == value }
	} else {
		return nil, m.unknown(index, "copies")
	}
	if err != nil || (whole && len(tableio.For(m.tbl).EncryptedProperties()) == 0) {
		return v, err
	}
	km := m.tbl.Meta(v)
	p, err := m.tbl.Get(ctx, km.PartitionKey, km.RowKey, nil)
	if err != nil {
		return nil, fmt.Errorf("patterns: Model.Lookup: the primary of %s %q: %w", index, value, err)
	}
	if !holds(p) {
		return nil, fmt.Errorf("patterns: Model.Lookup: the primary (%q, %q) that the copy of %s %q names holds another value now: %w", km.PartitionKey, km.RowKey, index, value, table.ErrNotFound)
	}
	return p, nil
}

func (m *Model[T]) copyIndex(name string) (int, bool) {
	if m.copies == nil {
		return 0, false
	}
	i, ok := m.copies.byName[name]
	return i, ok
}

func (m *Model[T]) crossIndex(name string) (int, bool) {
	if m.cross == nil {
		return 0, false
	}
	i, ok := m.cross.byName[name]
	return i, ok
}

// LookupEntities returns the primaries that a list index (Lists: in
// partitionKey; RemoteLists: partitionKey is ignored) holds for value,
// each whole, read from the primaries' table (one read of the list, then a
// point read a primary; IDs whose primary is gone are skipped).
func (m *Model[T]) LookupEntities(ctx context.Context, index, partitionKey, value string, opts *ReadOptions) (_ []*T, err error) {
	ctx, done := m.enter(ctx, opModelLookupEntities, partitionKey)
	defer done(&err)
	if err := m.readable(ctx, opModelLookupEntities, index); err != nil {
		return nil, err
	}
	for i, d := range m.listDef {
		if d.Name == index {
			vs, err := m.lists[i].LookupEntities(ctx, partitionKey, value, nil)
			return vs, err
		}
	}
	for i, d := range m.remote {
		if d.Name != index {
			continue
		}
		ids, err := m.remoteList[i].IDs(ctx, opModelLookupEntities, value)
		if err != nil {
			return nil, err
		}
		var out []*T
		for _, id := range ids {
			pk, rk, ok := ownerKeys(id)
			if !ok {
				return nil, fmt.Errorf("patterns: Model.LookupEntities: the list of %q holds %q, which is no ID", value, id)
			}
			v, err := m.tbl.Get(ctx, pk, rk, nil)
			if table.Is(err, table.ErrNotFound) {
				continue
			}
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	}
	return nil, m.unknown(index, "list")
}

// Process is the consistency.Handler for MessageType: it reads each
// primary the message names (one request each) and makes every index
// outside the partition match it: copies written whole, those of one
// partition together in entity group transactions; stale copies removed
// while still the primary's; each ID in its value's list (the IDs of one
// value added in one change where the list allows it) and out of the old
// value's. A message of another type is refused as permanent.
func (m *Model[T]) Process(ctx context.Context, msg *consistency.Message) (err error) {
	ctx, done := m.enter(ctx, opModelProcess, "")
	defer done(&err)
	if msg.Type != m.msgType {
		return consistency.Permanent(fmt.Errorf("%w: Model.Process: a %s message reached the handler of %s", ErrBadDefinition, msg.Type, m.msgType))
	}
	var body modelMessage
	if err := msg.Decode(&body); err != nil {
		return err
	}
	if body.Build != nil {
		return m.processBuild(ctx, body.Build)
	}
	if err := m.converge(ctx, body.Rows, false); err != nil {
		m.warnUnconverged(ctx, "Model.Process", len(body.Rows), err)
		return err
	}
	return nil
}

// converge brings the indexes outside the partition to the current state
// of rows' primaries: the cross copies with applyCopies (the copies of an
// index partition and the stale ones' guarded deletes in shared
// transactions), then the lists' changes,
// all of a list table's together when batched (ProcessBatch), a value at a
// time otherwise (applyListChanges says why).
func (m *Model[T]) converge(ctx context.Context, rows []modelRow, batched bool) error {
	// A worker with an older declaration leaves the message to one that
	// maintains every index the stored state lists.
	if err := m.checkDeclaration(ctx, "Model.Process"); err != nil {
		return err
	}
	current, err := m.readRows(ctx, rows)
	if err != nil {
		return err
	}
	found := map[[2]string]*T{}
	for _, r := range rows {
		k := [2]string{r.PK, r.RK}
		v, read := current[k]
		if !read {
			if v, err = m.tbl.Get(ctx, r.PK, r.RK, nil); table.Is(err, table.ErrNotFound) {
				v = nil
			} else if err != nil {
				return err
			}
			current[k] = v
		}
		if v != nil {
			found[k] = v
		}
	}
	if m.cross != nil {
		bodies := make([]indexMessage, len(rows))
		live := make([]bool, len(rows))
		for i, r := range rows {
			bodies[i], live[i] = indexMessage{PK: r.PK, RK: r.RK, Stale: r.Stale}, true
		}
		errs := make([]error, len(rows))
		m.cross.applyCopies(ctx, bodies, live, found, nil, errs)
		for _, err := range errs {
			if err != nil {
				return err
			}
		}
	}
	lists := make([]map[string]*idChange, len(m.remote))
	for i := range lists {
		lists[i] = map[string]*idChange{}
	}
	change := func(i int, value string) *idChange {
		c := lists[i][value]
		if c == nil {
			c = &idChange{}
			lists[i][value] = c
		}
		return c
	}
	for _, r := range rows {
		v, id := found[[2]string{r.PK, r.RK}], ownerRef(r.PK, r.RK)
		for i, d := range m.remote {
			now := ""
			if v != nil {
				now = d.Value(v)
			}
			if now != "" {
				if c := change(i, now); !slices.Contains(c.add, id) {
					c.add = append(c.add, id)
				}
			}
			if old := r.Old[d.Name]; old != "" && old != now {
				if c := change(i, old); !slices.Contains(c.remove, id) {
					c.remove = append(c.remove, id)
				}
			}
		}
	}
	for i := range m.remote {
		var first error
		applyListChanges(ctx, m.remoteList[i], lists[i], batched, func(_ string, err error) {
			if first == nil {
				first = err
			}
		})
		if first != nil {
			return first
		}
	}
	return nil
}

// readRows reads the primaries of rows that share a partition with others
// in one range query per partition (a bulk load's message names a
// transaction's worth of neighbours): found ones map to their value,
// missing ones to nil. A range that holds far more rows than it was read
// for is given up (the caller reads those rows one by one).
func (m *Model[T]) readRows(ctx context.Context, rows []modelRow) (map[[2]string]*T, error) {
	byPK := map[string][]string{}
	for _, r := range rows {
		byPK[r.PK] = append(byPK[r.PK], r.RK)
	}
	out := map[[2]string]*T{}
	for pk, rks := range byPK {
		if len(rks) < 2 {
			continue
		}
		lo, hi := slices.Min(rks), slices.Max(rks)
		want := map[string]bool{}
		for _, rk := range rks {
			want[rk] = true
		}
		found := map[[2]string]*T{}
		seen, budget := 0, 4*len(rks)+table.MaxPageSize
		for v, err := range m.tbl.Query(ctx, &table.QueryOptions{Filter: table.Partition(pk).And(table.Prop("RowKey").Ge(lo), table.Prop("RowKey").Le(hi))}) {
			if err != nil {
				return nil, err
			}
			if seen++; seen > budget {
				found = nil
				break
			}
			if km := m.tbl.Meta(v); want[km.RowKey] {
				found[[2]string{pk, km.RowKey}] = v
			}
		}
		if found == nil {
			continue
		}
		for _, rk := range rks {
			out[[2]string{pk, rk}] = found[[2]string{pk, rk}] // nil: gone
		}
	}
	return out, nil
}

// MoveSource is the model as the source of a consistency.Mover: its
// DeleteValue removes the primary and every index row of it (the
// partition's in the primary's transaction, the others through the model's
// message), so a move to an archive leaves no index naming the entity.
func (m *Model[T]) MoveSource() consistency.Source[T] { return modelSource[T]{m} }

type modelSource[T any] struct{ m *Model[T] }

func (s modelSource[T]) Get(ctx context.Context, pk, rk string, o *table.ReadOptions) (*T, error) {
	return s.m.Get(ctx, pk, rk, o)
}

func (s modelSource[T]) Meta(v *T) *table.Meta { return s.m.tbl.Meta(v) }

// DeleteValue deletes v's entity at v's version with every index row of
// v: v is the stored value the Mover read, so its index rows are v's.
func (s modelSource[T]) DeleteValue(ctx context.Context, v *T, _ *table.WriteOptions) error {
	if v == nil {
		return &table.InputError{Op: opModelDeleteValue, Rule: table.ErrNilValue}
	}
	etag := s.m.tbl.Meta(v).ETag
	if etag == "" {
		return &table.InputError{Op: opModelDeleteValue, Field: "ETag", Rule: table.ErrNoETag}
	}
	return s.m.deleteAt(ctx, opModelDeleteValue, v, etag)
}
