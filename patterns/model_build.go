package patterns

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/internal/keyrules"
	"github.com/tablekit/tablekit/internal/redact"
	"github.com/tablekit/tablekit/internal/rowkind"
	"github.com/tablekit/tablekit/internal/tableio"
	"github.com/tablekit/tablekit/table"
)

// Building and dropping an index of a live model. Build marks the index
// building in the control row (every write maintains it from then on,
// reads refuse it) and sends one planner message on the model's queue. The
// planner scans the keys of the rows to cover (the primaries for a build,
// the index's rows for a drop), cuts a range every RangeSize of them (a
// large partition gets several RowKey ranges), and for each range adds a
// checkpoint row, then sends one message. Any number of workers in any
// number of processes serve those messages through Process: a range
// handler reads its primaries a page at a time, writes each one's rows of
// the index the way Repair writes a missing row (same-partition rows in a
// transaction guarded by the primary's ETag, the others converged as
// Process converges them), and checkpoints the last key done. When the
// planner and every range are done, the index becomes active (a drop:
// dropped). Every step is idempotent and keyed by the range's start, so a
// message delivered twice or after a crash resumes from its checkpoint.
//
// A drop's rows are the index's rows wherever they are kept: Copies and
// Lists under their prefix in the primaries' partitions; CrossCopies the
// rows of their table that name an owner (not the model's Copies, nor a
// copy another CrossCopies index of the model calls for, which takes a
// read of the owner when the model has several); RemoteLists the index
// entities under their Partition and Prefix, or, kept in blobs, one range
// that lists and deletes the blobs under their Prefix a page at a time.
// The rows outside the partition are also written by Process, from the
// messages of writes: Process computes every index's rows through the
// same state gate as writes (an index dropping or dropped has none), after
// reading the state when its copy is older than StateRefresh. So a message
// sent before the drop and processed after it, however late, writes no
// row of the index; one processed meanwhile by a process whose copy still
// said active writes its row before the planner's delay ends, and the
// ranges delete it. Only a Process that read the state before the drop and
// stalled between that read and its write for longer than the planner's
// delay (twice StateRefresh) could write a row after its range passed: a
// row no primary calls for, which Verify reports as an orphan and Repair
// deletes (the same holds for a write of Copies or Lists that stalls so),
// except in a list kept in blobs, which Verify cannot enumerate.
//
// What a crash between steps leaves:
//   - in Build, after the planner message is sent hidden and before the
//     state changes: the message finds no build of its id and does
//     nothing; Build again starts it;
//   - after the state change: the planner appears when its delay ends;
//   - in the planner, after a range's row and before its message or the
//     planner's checkpoint: the redelivered planner counts again from its
//     checkpoint and sends that range again (a duplicate, which the range's
//     checkpoint makes a no-op);
//   - in a range, after a page's writes and before its checkpoint: the
//     page is written again (the writes converge to the primaries);
//   - after the last checkpoint and before the state change: any later
//     delivery of a step of the build finds every range done and changes
//     the state;
//   - in a drop's range, after a page's deletes and before its checkpoint:
//     the page is read again and finds those rows gone; a blob range
//     lists again from its prefix's start, so a crash anywhere in it only
//     repeats a listing;
//   - a message of a write in flight when the state changed: see above
//     (it writes no row of a dropping or dropped index).

// defaultRangeSize is the entities of one range of a Build or Drop.
const defaultRangeSize = 5000

// buildPage is the rows a range handler reads, writes and checkpoints at
// a time; buildListGroup the primaries of one list transaction (each with
// its guard, beside the list's index entities).
const (
	buildPage      = 100
	buildListGroup = 40
)

// The steps of a Build or Drop.
const (
	stepPlan  = "plan"
	stepRange = "range"
	opBuild   = "build"
	opDrop    = "drop"
)

// buildStep is one step of a Build or Drop, carried by the model's message.
type buildStep struct {
	Kind  string `json:"kind"` // stepPlan or stepRange
	Op    string `json:"op"`   // opBuild or opDrop
	Index string `json:"index"`
	Build string `json:"id"`
	Range string `json:"range,omitempty"`
	Lo    string `json:"lo,omitempty"` // the first key's tuple; "" the table's start
	Hi    string `json:"hi,omitempty"` // the first key after the range; "" the end
}

// errKeepHidden ends SendAround's write so that the message it enqueued
// stays hidden for its delay (see sendStep).
var errKeepHidden = errors.New("patterns: keep the message hidden")

// IndexProgress is the state of an index and of its current Build or Drop.
type IndexProgress struct {
	Index   string
	State   IndexState
	Build   string    // the id of the current build or drop
	Started time.Time // when it started
	Paused  bool
	// Planned: the planner has cut every range, so Total is final.
	Planned bool
	// Entities the ranges have done, and Total of the ranges cut so far.
	Entities, Total int64
	Ranges          []IndexRange
}

// IndexRange is one range of a Build or Drop: the keys from From up to
// (not including) To ("" for the end of the table).
type IndexRange struct {
	ID              string
	FromPK, FromRK  string
	ToPK, ToRK      string
	Done            bool
	Entities, Total int64
}

// Build builds index name, which this process declares, while writes go
// on: the index becomes building (every write maintains it, reads are
// refused with ErrIndexNotReady), then the model's queue carries a planner
// and one message per range, which any consistency.Worker serving the
// model's MessageType works through (w.Handle(m.MessageType(), m.Process)),
// and the index becomes active when every range is done. The planner waits
// twice StateRefresh before it scans, so every process has read the new
// state first (a process that does not declare the index is refused writes
// from then on; one that does maintains it). A build already running is
// sent on again (after a crash in Build); an active index is left alone.
// The model needs a Primary prefix and a Queue: without them, and for an
// index it does not declare, Build fails before any request. See
// IndexStatus for progress, Pause and Resume. A model that has no stored
// state yet treats every declared index as active; its first Build or
// Drop records them so: add one index at a time to such a model (each
// declared in the deploy that builds it).
func (m *Model[T]) Build(ctx context.Context, name string, opts *WriteOptions) (err error) {
	ctx, done := m.enter(ctx, opModelBuild, "")
	defer done(&err)
	const op = "Model.Build"
	d, err := m.evolution(op, name)
	if err != nil {
		return err
	}
	st, err := m.loadState(ctx)
	if err != nil {
		return err
	}
	id := newBuildID()
	if st != nil {
		if rec, ok := st.Indexes[name]; ok {
			switch {
			case rec.State == IndexDropping:
				return fmt.Errorf("%w: %s: index %q of model %s is being dropped; build it once it is dropped", ErrIndexNotReady, op, name, m.name)
			case rec.Fingerprint != d.fingerprint && (rec.State == IndexBuilding || rec.State == IndexActive):
				return fmt.Errorf("%w: %s: index %q of model %s is stored with another declaration (a changed index takes a new name)", ErrIndexDeclaration, op, name, m.name)
			case rec.State == IndexActive:
				return nil
			case rec.State == IndexBuilding:
				id = rec.Build
			}
		}
	}
	step := &buildStep{Kind: stepPlan, Op: opBuild, Index: name, Build: id}
	return m.sendStep(ctx, step, m.scanDelay(), func() error {
		_, err := m.changeState(ctx, func(st *modelState) error {
			rec := st.Indexes[name]
			if rec.State == IndexBuilding && rec.Build == id {
				return table.ErrNoChange
			}
			if rec.State == IndexBuilding || rec.State == IndexDropping {
				return fmt.Errorf("%w: %s: index %q of model %s changed state meanwhile (%s); run again", table.ErrLostRace, op, name, m.name, rec.State)
			}
			st.Indexes[name] = indexRecord{State: IndexBuilding, Fingerprint: d.fingerprint, Kind: d.kind, Build: id, Started: time.Now().UTC()}
			return nil
		})
		return err
	})
}

// Drop removes index name's rows while writes go on: the index becomes
// dropping (writes stop maintaining it once every process has read the
// state, reads are refused), then ranges of its rows are deleted the way a
// Build writes them (each row guarded by the ETag it was read at), and it
// becomes dropped. The process must still declare the index (its rows are
// found by its declaration): Copies and Lists under their prefix in the
// primaries' table; CrossCopies, the rows of their table that name an
// owner (less the model's Copies, and any row another CrossCopies index of
// the model calls for); RemoteLists, the index entities under their
// Partition and Prefix, or the blobs under their Prefix (a list in blobs
// without a Prefix is refused before any request). A queued message
// of a write made before the drop, processed once it is dropping, finds
// the index no longer maintained and writes none of its rows. Changing an
// index's projection or key layout is a Build of the new declaration under
// a new name, reads moved to it once it is active, then a Drop of the old
// one.
func (m *Model[T]) Drop(ctx context.Context, name string, opts *WriteOptions) (err error) {
	ctx, done := m.enter(ctx, opModelDrop, "")
	defer done(&err)
	const op = "Model.Drop"
	d, err := m.evolution(op, name)
	if err != nil {
		return err
	}
	for _, l := range m.remote {
		if l.Name == name && l.Blobs != nil && l.Prefix == "" {
			return &table.InputError{Op: op, Field: "index", Rule: ErrBadDefinition, Detail: fmt.Sprintf("the list %q keeps its blobs without a Prefix, so they cannot be told from the container's other blobs; Drop removes a list in blobs under its Prefix", name)}
		}
	}
	st, err := m.loadState(ctx)
	if err != nil {
		return err
	}
	id := newBuildID()
	if st != nil {
		if rec, ok := st.Indexes[name]; ok {
			switch rec.State {
			case IndexDropped:
				return nil
			case IndexDropping:
				id = rec.Build
			}
		}
	}
	step := &buildStep{Kind: stepPlan, Op: opDrop, Index: name, Build: id}
	return m.sendStep(ctx, step, m.scanDelay(), func() error {
		_, err := m.changeState(ctx, func(st *modelState) error {
			rec, ok := st.Indexes[name]
			if ok && rec.State == IndexDropping && rec.Build == id {
				return table.ErrNoChange
			}
			if ok && rec.State == IndexDropping {
				return fmt.Errorf("%w: %s: index %q of model %s changed state meanwhile; run again", table.ErrLostRace, op, name, m.name)
			}
			st.Indexes[name] = indexRecord{State: IndexDropping, Fingerprint: d.fingerprint, Kind: d.kind, Build: id, Started: time.Now().UTC()}
			return nil
		})
		return err
	})
}

// Pause stops the ranges of index name's current Build or Drop: a range
// message that arrives is sent again hidden for StateRefresh (and deleted),
// a range being worked on stops after its page. Resume lets them go on.
func (m *Model[T]) Pause(ctx context.Context, name string, opts *WriteOptions) (err error) {
	ctx, done := m.enter(ctx, opModelPause, "")
	defer done(&err)
	return m.setPaused(ctx, "Model.Pause", name, true)
}

// Resume lets a paused Build or Drop of index name go on (see Pause).
func (m *Model[T]) Resume(ctx context.Context, name string, opts *WriteOptions) (err error) {
	ctx, done := m.enter(ctx, opModelResume, "")
	defer done(&err)
	return m.setPaused(ctx, "Model.Resume", name, false)
}

func (m *Model[T]) setPaused(ctx context.Context, op, name string, paused bool) error {
	if _, err := m.evolution(op, name); err != nil {
		return err
	}
	_, err := m.changeState(ctx, func(st *modelState) error {
		rec, ok := st.Indexes[name]
		if !ok || (rec.State != IndexBuilding && rec.State != IndexDropping) {
			return &table.InputError{Op: op, Field: "index", Rule: table.ErrInvalidValue, Detail: fmt.Sprintf("index %q of model %s is not being built or dropped", name, m.name)}
		}
		if rec.Paused == paused {
			return table.ErrNoChange
		}
		rec.Paused = paused
		st.Indexes[name] = rec
		return nil
	})
	return err
}

// IndexStatus reports index name's state and the progress of its current
// Build or Drop: two requests (the control row, the build's checkpoints)
// and one a page of checkpoints. An index with no stored state is active.
func (m *Model[T]) IndexStatus(ctx context.Context, name string, opts *ReadOptions) (_ *IndexProgress, err error) {
	ctx, done := m.enter(ctx, opModelIndexStatus, "")
	defer done(&err)
	if _, ok := m.decl[name]; !ok {
		return nil, fmt.Errorf("%w: model %s declares no index %q", ErrUnknownIndex, m.name, name)
	}
	p := &IndexProgress{Index: name, State: IndexActive}
	if !m.evolves() {
		return p, nil
	}
	st, err := m.loadState(ctx)
	if err != nil || st == nil {
		return p, err
	}
	rec, ok := st.Indexes[name]
	if !ok {
		p.State = ""
		return p, nil
	}
	p.State, p.Build, p.Started, p.Paused = rec.State, rec.Build, rec.Started, rec.Paused
	if rec.Build == "" {
		return p, nil
	}
	base := m.buildRows(name, rec.Build)
	for e, err := range m.raw.Query(ctx, &table.QueryOptions{Filter: table.RowPrefix(controlPartition, base)}) {
		if err != nil {
			return nil, err
		}
		if e.RowKey == base+"plan" {
			p.Planned = boolProp(e, "Done")
			continue
		}
		r := IndexRange{ID: strings.TrimPrefix(e.RowKey, base+"r."), Done: boolProp(e, "Done"), Entities: intProp(e, "Entities"), Total: intProp(e, "Total")}
		r.FromPK, r.FromRK, _ = ownerKeys(strProp(e, "Lo"))
		r.ToPK, r.ToRK, _ = ownerKeys(strProp(e, "Hi"))
		if r.Done {
			r.Total = r.Entities
		}
		p.Entities += r.Entities
		p.Total += r.Total
		p.Ranges = append(p.Ranges, r)
	}
	return p, nil
}

// evolution checks, before any request, that index name can be built or
// dropped: the model has a Primary prefix and a Queue, and declares it.
func (m *Model[T]) evolution(op, name string) (indexDecl, error) {
	if !m.evolves() {
		return indexDecl{}, &table.InputError{Op: op, Field: "Primary", Rule: ErrBadDefinition, Detail: "index evolution keeps its state beside the primaries: declare the model's Primary prefix"}
	}
	if m.queue == nil {
		return indexDecl{}, &table.InputError{Op: op, Field: "Queue", Rule: ErrBadDefinition, Detail: "a build's ranges travel through the model's queue: set ModelOptions.Queue"}
	}
	d, ok := m.decl[name]
	if !ok {
		return d, fmt.Errorf("%w: %s: model %s declares no index %q", ErrUnknownIndex, op, m.name, name)
	}
	return d, nil
}

// scanDelay is how long a planner stays hidden: twice StateRefresh, so
// every process has read the new state (and maintains the index, or is
// refused writes, or has stopped maintaining it) before a range is read.
func (m *Model[T]) scanDelay() time.Duration { return 2 * m.state.refresh }

func newBuildID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return strconv.FormatInt(time.Now().UnixMilli(), 36) + hex.EncodeToString(b[:])
}

// sendStep sends s on the model's queue hidden for delay (at least a
// second), after first (when not nil) has run: SendAround enqueues hidden,
// runs its write, and shows the message only after the write succeeds, so
// the write here always ends with errKeepHidden.
func (m *Model[T]) sendStep(ctx context.Context, s *buildStep, delay time.Duration, first func() error) error {
	key := "build:" + s.Build + ":" + s.Kind + ":" + s.Range
	err := consistency.NewSender(m.queue, nil).SendAround(ctx, m.msgType, key, modelMessage{Build: s}, delay, func() error {
		if first != nil {
			if err := first(); err != nil {
				return err
			}
		}
		return errKeepHidden
	}, nil)
	if errors.Is(err, errKeepHidden) {
		return nil
	}
	return err
}

// buildRows is the RowKey prefix of a build's checkpoint rows.
func (m *Model[T]) buildRows(index, id string) string {
	sum := sha256.Sum256([]byte(index))
	return buildRowPrefix + m.name + "." + hex.EncodeToString(sum[:6]) + "." + id + "."
}

// live reads the state and reports whether s is of the index's current
// build or drop; a paused one is sent again hidden (and false returned).
func (m *Model[T]) live(ctx context.Context, s *buildStep, fresh bool) (bool, error) {
	var st *modelState
	var err error
	if fresh {
		st, err = m.loadState(ctx)
	} else {
		st, err = m.currentState(ctx)
	}
	if err != nil || st == nil {
		return false, err
	}
	rec := st.Indexes[s.Index]
	want := IndexBuilding
	if s.Op == opDrop {
		want = IndexDropping
	}
	if rec.Build != s.Build || rec.State != want {
		return false, nil // an old build's message: nothing to do
	}
	if rec.Paused {
		return false, m.sendStep(ctx, s, m.state.refresh, nil)
	}
	return true, nil
}

// processBuild runs one step of a Build or Drop (Process hands it over).
func (m *Model[T]) processBuild(ctx context.Context, s *buildStep) error {
	if _, ok := m.decl[s.Index]; !ok {
		// A worker with another declaration leaves it to one that has it.
		return fmt.Errorf("%w: Model.Process: a build step of index %q, which this process does not declare", ErrIndexDeclaration, s.Index)
	}
	live, err := m.live(ctx, s, true)
	if err != nil || !live {
		return err
	}
	if s.Kind == stepPlan {
		return m.plan(ctx, s)
	}
	return m.runRange(ctx, s)
}

// rowScope is where a step's rows are: the rows of rows (of partition pk
// when it is set) with RowKeys in [rkLo, rkHi), only those that name an
// owner when ref; or, for a list kept in blobs, the blobs of blobs.
type rowScope struct {
	rows       *table.Table[table.Entity]
	pk         string
	rkLo, rkHi string
	ref        bool
	blobs      *blobIndex
}

// scope is what a step covers: the primaries for a build, the index's
// rows for a drop.
func (m *Model[T]) scope(s *buildStep) rowScope {
	sc := rowScope{rows: m.raw}
	prefix := m.primary
	if s.Op == opDrop {
		if i, ok := m.copyIndex(s.Index); ok {
			prefix = m.copies.defs[i].Prefix
		}
		for i, d := range m.listDef {
			if d.Name == s.Index {
				prefix = m.lists[i].prefix
			}
		}
		if i, ok := m.crossIndex(s.Index); ok {
			sc.rows, sc.ref, prefix = m.cross.copies[i], true, ""
		}
		for i, d := range m.remote {
			if d.Name != s.Index {
				continue
			}
			switch l := m.remoteList[i].(type) {
			case *remoteIndexEntities:
				sc.rows, sc.pk, prefix = l.x.raw, l.partition, l.x.prefix
			case *blobIndex:
				sc.blobs = l
			}
		}
	}
	sc.rkLo, sc.rkHi = keyrules.PrefixRange(prefix)
	return sc
}

// covers reports whether a row the scope's filter selected is one the
// step covers, by what the row itself says: a build covers primaries; a
// drop of cross copies, the rows that are not the model's Copies (which
// share the primaries' table and also name their owner).
func (m *Model[T]) covers(s *buildStep, sc rowScope, e *table.Entity) bool {
	if s.Op == opBuild {
		return !isMarkedRow(e)
	}
	if sc.ref && m.cross != nil {
		of, _ := ownerOf(e)
		return !m.cross.isLocalCopy(e, of)
	}
	return true
}

// keySegments are the filters that together select, in key order, the
// rows with keys after from (or from itself when incl) and before to (""
// for either: no bound), with RowKeys in [rkLo, rkHi): the rest of from's
// partition, the partitions between, and the start of to's partition.
// Each is a chain of ands, whose key bounds the service scans between; one
// filter or-ing them would have every read scan the table from its start.
func keySegments(from string, incl bool, to string, rkLo, rkHi string) []table.Filter {
	rks := func(fs ...table.Filter) table.Filter {
		fs = append(fs, table.Prop("RowKey").Ge(rkLo))
		if rkHi != "" {
			fs = append(fs, table.Prop("RowKey").Lt(rkHi))
		}
		return table.And(fs...)
	}
	fpk, frk, fok := ownerKeys(from)
	tpk, trk, tok := ownerKeys(to)
	after := func() table.Filter {
		if incl {
			return table.Prop("RowKey").Ge(frk)
		}
		return table.Prop("RowKey").Gt(frk)
	}
	if fok && tok && fpk == tpk {
		return []table.Filter{rks(table.Prop("PartitionKey").Eq(fpk), after(), table.Prop("RowKey").Lt(trk))}
	}
	var segs []table.Filter
	var between []table.Filter
	if fok {
		segs = append(segs, rks(table.Prop("PartitionKey").Eq(fpk), after()))
		between = append(between, table.Prop("PartitionKey").Gt(fpk))
	}
	if tok {
		between = append(between, table.Prop("PartitionKey").Lt(tpk))
	}
	segs = append(segs, rks(between...))
	if tok {
		segs = append(segs, rks(table.Prop("PartitionKey").Eq(tpk), table.Prop("RowKey").Lt(trk)))
	}
	return segs
}

// read reads the scope's rows after from (or from itself when incl) and
// before to ("" for either: no bound), in key order, segment by segment
// (keySegments): at most top of them (0: all), with the properties sel
// names (nil: all).
func (sc rowScope) read(ctx context.Context, from string, incl bool, to string, top int, sel []string) iter.Seq2[*table.Entity, error] {
	return func(yield func(*table.Entity, error) bool) {
		n := 0
		for _, f := range keySegments(from, incl, to, sc.rkLo, sc.rkHi) {
			if sc.pk != "" {
				f = table.And(table.Prop("PartitionKey").Eq(sc.pk), f)
			}
			if sc.ref {
				f = table.And(f, table.Prop(indexOfProperty).Ge(""))
			}
			opts := &table.QueryOptions{Filter: f, Select: sel}
			if top > 0 {
				opts.Top = top - n
			}
			for e, err := range sc.rows.Query(ctx, opts) {
				if err != nil {
					yield(nil, err)
					return
				}
				n++
				if !yield(e, nil) {
					return
				}
			}
			if top > 0 && n >= top {
				return
			}
		}
	}
}

func rangeID(lo string) string {
	sum := sha256.Sum256([]byte(lo))
	return hex.EncodeToString(sum[:8])
}

// plan cuts the scope into ranges from the planner's checkpoint on.
func (m *Model[T]) plan(ctx context.Context, s *buildStep) error {
	base := m.buildRows(s.Index, s.Build)
	cp, err := m.raw.Get(ctx, controlPartition, base+"plan", nil)
	if table.Is(err, table.ErrNotFound) {
		cp, err = &table.Entity{Meta: table.Meta{PartitionKey: controlPartition, RowKey: base + "plan"}}, nil
	}
	if err != nil {
		return err
	}
	if boolProp(cp, "Done") {
		return m.finish(ctx, s)
	}
	save := func(lo string, done bool) error {
		cp.Set("Lo", table.ValueOf(lo))
		cp.Set("Done", table.ValueOf(done))
		cp.Set(rowkind.Property, table.ValueOf(string(rowkind.Checkpoint)))
		var err error
		if cp.ETag == "" {
			err = m.raw.Add(ctx, cp, nil)
		} else {
			err = m.raw.Update(ctx, cp, &table.UpdateOptions{Mode: aztables.UpdateModeReplace})
		}
		return err
	}
	sc := m.scope(s)
	if sc.blobs != nil {
		// A list kept in blobs is one range, which lists and deletes its
		// blobs a page at a time.
		n, err := countBlobs(ctx, sc.blobs)
		if err != nil {
			return err
		}
		if _, err := m.cut(ctx, s, "", "", n); err != nil {
			return err
		}
		if err := save("", true); err != nil {
			return err
		}
		return m.finish(ctx, s)
	}
	lo := strProp(cp, "Lo")
scan:
	for {
		n := 0
		for e, err := range sc.read(ctx, lo, true, "", 0, markProps()) {
			if err != nil {
				return err
			}
			if !m.covers(s, sc, e) {
				continue
			}
			if n < m.rangeSize {
				n++
				continue
			}
			key := ownerRef(e.PartitionKey, e.RowKey)
			hi, err := m.cut(ctx, s, lo, key, n)
			if err != nil {
				return err
			}
			if err := save(hi, hi == ""); err != nil {
				return err
			}
			if hi == "" {
				return m.finish(ctx, s)
			}
			lo = hi
			if hi != key {
				continue scan // an earlier run cut this range elsewhere: count from its end
			}
			n = 1
		}
		if n > 0 || lo == "" {
			if _, err := m.cut(ctx, s, lo, "", n); err != nil {
				return err
			}
		}
		if err := save(lo, true); err != nil {
			return err
		}
		return m.finish(ctx, s)
	}
}

// cut adds the checkpoint row of the range [lo, hi) unless an earlier run
// of the planner added it, and sends the range's message (again, then: a
// duplicate is harmless). It returns the range's end as stored.
func (m *Model[T]) cut(ctx context.Context, s *buildStep, lo, hi string, n int) (string, error) {
	id := rangeID(lo)
	rk := m.buildRows(s.Index, s.Build) + "r." + id
	row := &table.Entity{Meta: table.Meta{PartitionKey: controlPartition, RowKey: rk}}
	row.Set("Lo", table.ValueOf(lo))
	row.Set("Hi", table.ValueOf(hi))
	row.Set("Total", table.ValueOf(int64(n)))
	row.Set("Entities", table.ValueOf(int64(0)))
	row.Set("Done", table.ValueOf(false))
	row.Set(rowkind.Property, table.ValueOf(string(rowkind.Checkpoint)))
	err := m.raw.Add(ctx, row, nil)
	if table.Is(err, table.ErrAlreadyExists) {
		stored, gerr := m.raw.Get(ctx, controlPartition, rk, nil)
		if gerr != nil {
			return "", gerr
		}
		hi, err = strProp(stored, "Hi"), nil
	}
	if err != nil {
		return "", err
	}
	step := &buildStep{Kind: stepRange, Op: s.Op, Index: s.Index, Build: s.Build, Range: id, Lo: lo, Hi: hi}
	key := "build:" + s.Build + ":" + id
	if err := consistency.NewSender(m.queue, nil).Send(ctx, m.msgType, key, modelMessage{Build: step}, nil); err != nil {
		return "", err
	}
	return hi, nil
}

// runRange works through one range from its checkpoint on, a page at a
// time, checkpointing each page (guarded by the checkpoint's ETag, so two
// deliveries of one range never both advance it).
func (m *Model[T]) runRange(ctx context.Context, s *buildStep) error {
	rk := m.buildRows(s.Index, s.Build) + "r." + s.Range
	cp, err := m.raw.Get(ctx, controlPartition, rk, nil)
	if table.Is(err, table.ErrNotFound) {
		return nil // no planner of this build cut it
	}
	if err != nil {
		return err
	}
	sc := m.scope(s)
	for !boolProp(cp, "Done") {
		var n int
		var done bool
		if sc.blobs != nil {
			n, done, err = dropBlobs(ctx, sc.blobs)
		} else {
			from, incl := strProp(cp, "Last"), false
			if from == "" {
				from, incl = s.Lo, true
			}
			var rows []*table.Entity
			rows, n, err = m.rangePage(ctx, s, sc, sc.read(ctx, from, incl, s.Hi, buildPage, nil))
			if len(rows) > 0 {
				last := rows[len(rows)-1]
				cp.Set("Last", table.ValueOf(ownerRef(last.PartitionKey, last.RowKey)))
			}
			done = len(rows) < buildPage
		}
		if err != nil {
			return err
		}
		cp.Set("Entities", table.ValueOf(intProp(cp, "Entities")+int64(n)))
		cp.Set("Done", table.ValueOf(done))
		cp.Set(rowkind.Property, table.ValueOf(string(rowkind.Checkpoint)))
		if err := m.raw.Update(ctx, cp, &table.UpdateOptions{Mode: aztables.UpdateModeReplace}); err != nil {
			return err // another delivery advanced it: this one reads again
		}
		if live, err := m.live(ctx, s, false); err != nil || !live {
			return err
		}
	}
	return m.finish(ctx, s)
}

// pageAttempts bounds the reads of one page of a range: a primary that
// another writer (a user's write, another build's or a Repair's guard)
// changed or deleted between the page's read and its transaction fails
// that transaction's guard, and a list entity another range of the same
// partition created meanwhile fails its Add; the page is then read again
// and written from the newer state, rather than the range failing whole
// and coming back.
const pageAttempts = 8

// rangePage reads the page of s's range that page yields and writes
// (a build) or removes (a drop) its rows of the index, reading it again
// while a guard finds a primary changed since the read. It returns the
// rows read and how many of them the step covers.
func (m *Model[T]) rangePage(ctx context.Context, s *buildStep, sc rowScope, page iter.Seq2[*table.Entity, error]) ([]*table.Entity, int, error) {
	for attempt := 1; ; attempt++ {
		var rows, covered []*table.Entity
		for e, err := range page {
			if err != nil {
				return nil, 0, err
			}
			rows = append(rows, e)
			if m.covers(s, sc, e) {
				covered = append(covered, e)
			}
		}
		var err error
		if s.Op == opBuild {
			err = m.backfill(ctx, s.Index, covered)
		} else {
			err = m.unfill(ctx, s.Index, sc, covered)
		}
		changed := table.Is(err, table.ErrPreconditionFailed) || table.Is(err, table.ErrNotFound) || table.Is(err, table.ErrAlreadyExists)
		if err == nil || !changed || attempt == pageAttempts {
			return rows, len(covered), err
		}
	}
}

// backfill writes rows' (primaries') rows of index name.
func (m *Model[T]) backfill(ctx context.Context, name string, rows []*table.Entity) error {
	const op = "Model.Build"
	var prim []*table.Entity
	for _, e := range rows {
		if !isMarkedRow(e) {
			prim = append(prim, e)
		}
	}
	if len(prim) == 0 {
		return nil
	}
	if m.beforeBackfill != nil {
		m.beforeBackfill()
	}
	if i, ok := m.copyIndex(name); ok {
		var groups []repairGroup
		for _, p := range prim {
			v, err := tableio.For(m.tbl).FromStored(ctx, p)
			if err != nil {
				return err
			}
			want, err := m.copies.plan(op, v)
			if err != nil {
				return consistency.Permanent(err)
			}
			if want[i] == "" {
				continue
			}
			var g repairGroup
			if m.copies.defs[i].Unique {
				g, err = m.uniqueCopy(ctx, i, p, v, want[i])
			} else {
				g, err = m.copies.repairOps(p, []IndexIssue{{Index: name, Copy: want[i]}})
			}
			if err != nil {
				return err
			}
			groups = append(groups, g)
		}
		_, err := repairPacked(ctx, m.tbl.Client(), groups, nil)
		return err
	}
	for j, d := range m.listDef {
		if d.Name == name {
			return m.backfillList(ctx, m.lists[j], prim)
		}
	}
	// An index outside the partition: converged as Process converges a
	// write's message (it reads each primary's current state).
	mr := make([]modelRow, len(prim))
	for i, p := range prim {
		mr[i] = modelRow{PK: p.PartitionKey, RK: p.RowKey}
	}
	return m.converge(ctx, mr, true)
}

// guardOp is a merge of no property onto primary p at the ETag it was read
// at: it changes nothing but the ETag, and fails the transaction if the
// primary changed since (the write that changed it kept the index).
func guardOp(p *table.Entity) batch.Op {
	return batch.Update(&table.Entity{Meta: table.Meta{PartitionKey: p.PartitionKey, RowKey: p.RowKey, ETag: p.ETag}}, aztables.UpdateModeMerge)
}

// uniqueCopy is the backfill of a unique copy: added when its RowKey is
// free, rewritten under its ETag when it is already this primary's (a
// write during the build made it), and a ValueTakenError when another
// primary holds the value (the build cannot go on: two primaries hold one
// value of a unique index).
func (m *Model[T]) uniqueCopy(ctx context.Context, i int, p *table.Entity, v *T, rk string) (repairGroup, error) {
	g := repairGroup{ops: []batch.Op{guardOp(p)}, written: 1}
	c, err := m.copies.copyOf(i, v, rk)
	if err != nil {
		return g, err
	}
	have, err := m.raw.Get(ctx, p.PartitionKey, rk, nil)
	if table.Is(err, table.ErrNotFound) {
		g.ops = append(g.ops, copyOp(c, true))
		return g, nil
	}
	if err != nil {
		return g, err
	}
	if of, _ := ownerOf(have); ownerRowKey(of, p.PartitionKey) != p.RowKey {
		d := m.copies.defs[i]
		return g, consistency.Permanent(&ValueTakenError{Index: d.Name, Value: d.Value(v), PartitionKey: p.PartitionKey})
	}
	etag := have.ETag
	c.ETag = etag
	g.ops = append(g.ops, batch.Update(c, aztables.UpdateModeReplace))
	return g, nil
}

// backfillList puts each primary's RowKey in its value's list: the
// primaries of one value together, each guarded, in one transaction with
// the list's index entities (guarded by the ETags they were read at).
func (m *Model[T]) backfillList(ctx context.Context, x *indexEntities[T], prim []*table.Entity) error {
	type group struct{ pk, value string }
	var order []group
	by := map[group][]*table.Entity{}
	for _, p := range prim {
		v, err := tableio.For(m.tbl).FromStored(ctx, p)
		if err != nil {
			return err
		}
		val := x.value(v)
		if val == "" {
			continue
		}
		g := group{p.PartitionKey, val}
		if _, ok := by[g]; !ok {
			order = append(order, g)
		}
		by[g] = append(by[g], p)
	}
	for _, g := range order {
		ps := by[g]
		for len(ps) > 0 {
			n := min(len(ps), buildListGroup)
			chunk := ps[:n]
			ps = ps[n:]
			parts, err := x.read(ctx, "Model.Build", g.pk, g.value)
			if err != nil {
				return err
			}
			var ids []string
			tx := batch.NewTransaction(nil)
			for _, p := range chunk {
				if containsID(parts, p.RowKey) {
					continue
				}
				ids = append(ids, p.RowKey)
				if err := tx.Append(guardOp(p)); err != nil {
					return err
				}
			}
			if len(ids) == 0 {
				continue
			}
			ops, err := x.appendIDs(g.pk, g.value, ids, parts)
			if err != nil {
				return err
			}
			for _, o := range ops {
				if err := tx.Append(o); err != nil {
					return err
				}
			}
			if _, err := tx.Submit(ctx, m.tbl.Client(), nil); err != nil {
				return err // a primary or the list changed: the range comes back
			}
		}
	}
	return nil
}

// unfill deletes a dropped index's rows, each guarded by the ETag it was
// read at (a row changed since is read again by the range's next run).
// Cross copies another CrossCopies index of the model calls for (one table
// may hold several indexes' copies) are left.
func (m *Model[T]) unfill(ctx context.Context, name string, sc rowScope, rows []*table.Entity) error {
	if i, ok := m.crossIndex(name); ok && len(m.cross.defs) > 1 {
		var err error
		if rows, err = m.notOthers(ctx, i, rows); err != nil {
			return err
		}
	}
	groups := make([]repairGroup, 0, len(rows))
	for _, e := range rows {
		etag := e.ETag
		if etag == "" {
			etag = azcore.ETagAny
		}
		groups = append(groups, repairGroup{ops: []batch.Op{batch.Delete(e.PartitionKey, e.RowKey).IfMatch(etag)}, deleted: 1})
	}
	_, err := repairPacked(ctx, sc.rows.Client(), groups, nil)
	return err
}

// notOthers is the copies of rows that no other CrossCopies index than i
// calls for: it reads each distinct owner (a point read) and the copies
// its current value calls for.
func (m *Model[T]) notOthers(ctx context.Context, i int, rows []*table.Entity) ([]*table.Entity, error) {
	wants := map[string][]copyAddr{}
	var out []*table.Entity
	for _, e := range rows {
		of, _ := ownerOf(e)
		want, read := wants[of]
		if !read {
			if pk, rk, ok := ownerKeys(of); ok && strings.HasPrefix(rk, m.primary) {
				p, err := m.raw.Get(ctx, pk, rk, nil)
				switch {
				case table.Is(err, table.ErrNotFound):
				case err != nil:
					return nil, err
				case !isMarkedRow(p):
					v, err := tableio.For(m.tbl).FromStored(ctx, p)
					if err != nil {
						return nil, err
					}
					if want, err = m.cross.addrs("Model.Drop", v); err != nil {
						return nil, err
					}
				}
			}
			wants[of] = want
		}
		other := false
		for j, a := range want {
			if j != i && a.PK == e.PartitionKey && a.RK == e.RowKey {
				other = true
			}
		}
		if !other {
			out = append(out, e)
		}
	}
	return out, nil
}

// countBlobs counts the blobs of a list kept in blobs: one request a page
// of names.
func countBlobs(ctx context.Context, b *blobIndex) (int, error) {
	n := 0
	pager := b.blobs.NewListBlobsFlatPager(b.container, &azblob.ListBlobsFlatOptions{Prefix: &b.prefix})
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return 0, redact.Error(err)
		}
		n += len(page.Segment.BlobItems)
	}
	return n, nil
}

// dropBlobs deletes a page of the blobs of a list kept in blobs (listed
// from the prefix's start: those deleted are gone), each with If-Match at
// the ETag listed; one changed since is listed again by the next page. It
// returns the blobs deleted, and done when none is left.
func dropBlobs(ctx context.Context, b *blobIndex) (int, bool, error) {
	pager := b.blobs.NewListBlobsFlatPager(b.container, &azblob.ListBlobsFlatOptions{Prefix: &b.prefix, MaxResults: to.Ptr(int32(buildPage))})
	page, err := pager.NextPage(ctx)
	if err != nil {
		return 0, false, redact.Error(err)
	}
	n, changed := 0, false
	for _, item := range page.Segment.BlobItems {
		if item.Name == nil {
			continue
		}
		var cond *blob.AccessConditions
		if item.Properties != nil && item.Properties.ETag != nil {
			cond = &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfMatch: item.Properties.ETag}}
		}
		_, err := b.blobs.DeleteBlob(ctx, b.container, *item.Name, &azblob.DeleteBlobOptions{AccessConditions: cond})
		var re *azcore.ResponseError
		switch {
		case err == nil:
			n++
		case errors.As(err, &re) && re.StatusCode == http.StatusNotFound:
		case errors.As(err, &re) && re.StatusCode == http.StatusPreconditionFailed:
			changed = true
		default:
			return n, false, redact.Error(err)
		}
	}
	return n, !changed && len(page.Segment.BlobItems) < buildPage, nil
}

// finish makes the index active (a drop: dropped) when the planner and
// every range of s's build are done: one query of the build's rows.
func (m *Model[T]) finish(ctx context.Context, s *buildStep) error {
	base := m.buildRows(s.Index, s.Build)
	planned := false
	for e, err := range m.raw.Query(ctx, &table.QueryOptions{Filter: table.RowPrefix(controlPartition, base), Select: []string{"Done"}}) {
		if err != nil {
			return err
		}
		if !boolProp(e, "Done") {
			return nil
		}
		if e.RowKey == base+"plan" {
			planned = true
		}
	}
	if !planned {
		return nil
	}
	from, to := IndexBuilding, IndexActive
	if s.Op == opDrop {
		from, to = IndexDropping, IndexDropped
	}
	_, err := m.changeState(ctx, func(st *modelState) error {
		rec := st.Indexes[s.Index]
		if rec.State != from || rec.Build != s.Build {
			return table.ErrNoChange
		}
		rec.State, rec.Paused = to, false
		st.Indexes[s.Index] = rec
		return nil
	})
	return err
}

func strProp(e *table.Entity, name string) string {
	v, _ := e.Get(name)
	s, _ := v.AsString()
	return s
}

func boolProp(e *table.Entity, name string) bool {
	v, _ := e.Get(name)
	b, _ := v.AsBool()
	return b
}

func intProp(e *table.Entity, name string) int64 {
	v, _ := e.Get(name)
	n, _ := v.AsInt64()
	return n
}
