package patterns

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tablekit/tablekit/internal/rowkind"
	"github.com/tablekit/tablekit/table"
)

// The state of a model's indexes, kept in storage so that every process
// that opens the model agrees on it. A model with a Primary prefix has a
// control row in the primaries' table, under the reserved PartitionKey
// controlPartition and the RowKey controlRowPrefix+Name, outside the
// Primary prefix (the model's handle never reads it as a T). It records,
// per index, its IndexState, a fingerprint of its declaration, and the id
// and start of its current build or drop. No control row means that every
// declared index is active: a table written before any Build works as it
// did. Every change of the row is an ETag-guarded read-modify-write.
//
// Each process caches the row and reads it again on a write or an index
// read once the copy is older than ModelOptions.StateRefresh. A write is
// refused (ErrIndexDeclaration) while the row lists a building or active
// index the process does not declare, or one it declares differently: a
// process with an older declaration cannot write without the new index. A
// declared index the row does not list yet is maintained by writes and
// refused to reads until a Build makes it active.

// IndexState is the state of one index of a model, as its control row
// records it.
type IndexState string

// The states of an index. Building: every write maintains it, reads are
// refused while the backfill fills in what was written before. Active:
// written and read. Dropping: writes no longer maintain it, reads are
// refused, and its rows are being removed. Dropped: its rows are gone.
const (
	IndexBuilding IndexState = "building"
	IndexActive   IndexState = "active"
	IndexDropping IndexState = "dropping"
	IndexDropped  IndexState = "dropped"
)

// Errors of index evolution, matched with errors.Is.
var (
	// ErrIndexNotReady: a read named an index that is not active (being
	// built, dropped, or declared but never built). It wraps
	// ErrUnknownIndex, so code that treats an unknown index as a bad name
	// keeps doing so. Nothing was sent for the read.
	ErrIndexNotReady = fmt.Errorf("%w: index not ready", ErrUnknownIndex)
	// ErrIndexDeclaration: the model's stored state disagrees with this
	// process's declaration (an index built or being built that it does
	// not declare, or declares differently). The write was refused before
	// any write request; deploy the current declaration.
	ErrIndexDeclaration = errors.New("patterns: index declaration differs from the model's stored state")
)

// controlPartition is the PartitionKey of every model's control rows.
const controlPartition = "~tablekit"

// controlRowPrefix starts the RowKey of a model's control row, and
// buildRowPrefix those of its builds' checkpoints.
const (
	controlRowPrefix = "~tablekit.model."
	buildRowPrefix   = "~tablekit.build."
)

// defaultStateRefresh is how old a process's copy of the state may be
// before a write reads it again.
const defaultStateRefresh = 30 * time.Second

// stateProperty holds the control row's JSON (modelState).
const stateProperty = "State"

// indexRecord is one index in the control row.
type indexRecord struct {
	State       IndexState `json:"state"`
	Fingerprint string     `json:"fp"`
	Kind        string     `json:"kind"`
	Build       string     `json:"build,omitempty"`
	Started     time.Time  `json:"started,omitzero"`
	Paused      bool       `json:"paused,omitempty"`
}

// modelState is the control row's content.
type modelState struct {
	Format  int                    `json:"format"`
	Indexes map[string]indexRecord `json:"indexes"`
}

// stateSnap is a process's copy of the state: st nil when there is no
// control row.
type stateSnap struct {
	st *modelState
	at time.Time
}

// indexDecl is what a process declares of one index.
type indexDecl struct {
	kind        string // "copies", "list", "cross", "remote"
	fingerprint string
}

// stateHolder is the model's cached state (an atomic pointer, so writes
// and the index Value gates read it without a lock).
type stateHolder struct {
	snap    atomic.Pointer[stateSnap]
	refresh time.Duration
}

// evolves reports a model whose indexes have states: one with a Primary
// prefix (its control row lives outside the prefix).
func (m *Model[T]) evolves() bool { return m.primary != "" }

func (m *Model[T]) controlRowKey() string { return controlRowPrefix + m.name }

// fingerprint digests the parts of a declaration that decide where and
// what an index's rows are; a Value func cannot be compared, so a changed
// value of an index must come with a new name.
func fingerprint(parts ...string) string {
	sum := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(sum[:8])
}

func indexFingerprint[T any](kind string, d IndexDef[T]) string {
	proj := slices.Clone(d.Project)
	slices.Sort(proj)
	return fingerprint(kind, d.Prefix, strconv.FormatBool(d.Unique), strings.Join(proj, ","), strconv.FormatBool(proj == nil), strconv.FormatBool(d.Table != nil))
}

func listFingerprint[T any](kind string, d ListDef[T]) string {
	return fingerprint(kind, d.Prefix, strconv.Itoa(d.MaxListUnits), strconv.FormatBool(d.Table != nil), d.Partition, d.Container, strconv.FormatBool(d.Blobs != nil))
}

// gate is an index's Value func as the model's writes use it: "" (no row)
// while the stored state says writes no longer maintain the index.
func (m *Model[T]) gate(name string, value func(*T) string) func(*T) string {
	if value == nil {
		return nil
	}
	return func(v *T) string {
		if !m.maintained(name) {
			return ""
		}
		return value(v)
	}
}

// maintained reports whether writes keep index name, by the cached state.
func (m *Model[T]) maintained(name string) bool {
	s := m.state.snap.Load()
	if s == nil || s.st == nil {
		return true
	}
	rec, ok := s.st.Indexes[name]
	return !ok || rec.State == IndexBuilding || rec.State == IndexActive
}

// readState reads the control row: nil state when there is none (nor a
// table yet).
func (m *Model[T]) readState(ctx context.Context) (*modelState, *table.Entity, error) {
	e, err := m.raw.Get(ctx, controlPartition, m.controlRowKey(), nil)
	if table.Is(err, table.ErrNotFound) || table.Is(err, table.ErrTableNotFound) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	st, err := decodeState(e)
	return st, e, err
}

func decodeState(e *table.Entity) (*modelState, error) {
	st := &modelState{}
	v, ok := e.Get(stateProperty)
	if !ok {
		return st, nil
	}
	s, _ := v.AsString()
	if err := json.Unmarshal([]byte(s), st); err != nil {
		return nil, fmt.Errorf("patterns: the control row %q: %w", e.RowKey, err)
	}
	if st.Indexes == nil {
		st.Indexes = map[string]indexRecord{}
	}
	return st, nil
}

// loadState reads the state into the cache.
func (m *Model[T]) loadState(ctx context.Context) (*modelState, error) {
	st, _, err := m.readState(ctx)
	if err != nil {
		return nil, err
	}
	m.state.snap.Store(&stateSnap{st: st, at: time.Now()})
	return st, nil
}

// currentState is the cached state, read again when older than
// StateRefresh.
func (m *Model[T]) currentState(ctx context.Context) (*modelState, error) {
	if !m.evolves() {
		return nil, nil
	}
	if s := m.state.snap.Load(); s != nil && time.Since(s.at) < m.state.refresh {
		return s.st, nil
	}
	return m.loadState(ctx)
}

// checkDeclaration refuses a write by a process whose declaration the
// stored state does not match (see ErrIndexDeclaration). It reads the
// state when the cached copy is old.
func (m *Model[T]) checkDeclaration(ctx context.Context, op string) error {
	st, err := m.currentState(ctx)
	if err != nil || st == nil {
		return err
	}
	for _, name := range slices.Sorted(mapKeys(st.Indexes)) {
		rec := st.Indexes[name]
		if rec.State != IndexBuilding && rec.State != IndexActive {
			continue
		}
		d, ok := m.decl[name]
		if !ok {
			return fmt.Errorf("%w: %s: index %q of model %s is %s, and this process does not declare it", ErrIndexDeclaration, op, name, m.name, rec.State)
		}
		if d.fingerprint != rec.Fingerprint {
			return fmt.Errorf("%w: %s: index %q of model %s is %s with another declaration (a changed index takes a new name)", ErrIndexDeclaration, op, name, m.name, rec.State)
		}
	}
	return nil
}

// readable refuses a read of an index that is not active (ErrIndexNotReady)
// before any request of the read; it reads the state when the cached copy
// is old.
func (m *Model[T]) readable(ctx context.Context, op, index string) error {
	if _, ok := m.decl[index]; !ok {
		return nil // the read's own lookup reports an unknown index
	}
	st, err := m.currentState(ctx)
	if err != nil || st == nil {
		return err
	}
	rec, ok := st.Indexes[index]
	if !ok {
		return fmt.Errorf("%w: %s: index %q of model %s was declared after the model's state was recorded and has not been built (Model.Build)", ErrIndexNotReady, op, index, m.name)
	}
	if rec.State != IndexActive {
		return fmt.Errorf("%w: %s: index %q of model %s is %s", ErrIndexNotReady, op, index, m.name, rec.State)
	}
	if rec.Fingerprint != m.decl[index].fingerprint {
		return fmt.Errorf("%w: %s: index %q of model %s is stored with another declaration", ErrIndexDeclaration, op, index, m.name)
	}
	return nil
}

// changeState applies change to the stored state, ETag-guarded (a
// concurrent change sends it round again), creating the control row with
// every declared index active when there is none. change returns
// table.ErrNoChange to leave the row as it is. The cache takes the result.
func (m *Model[T]) changeState(ctx context.Context, change func(st *modelState) error) (*modelState, error) {
	var out *modelState
	e, err := m.raw.Modify(ctx, controlPartition, m.controlRowKey(), func(e *table.Entity) error {
		var st *modelState
		if _, ok := e.Get(stateProperty); ok {
			var err error
			if st, err = decodeState(e); err != nil {
				return err
			}
		} else {
			st = &modelState{Format: 1, Indexes: map[string]indexRecord{}}
			for name, d := range m.decl {
				st.Indexes[name] = indexRecord{State: IndexActive, Fingerprint: d.fingerprint, Kind: d.kind}
			}
		}
		out = st
		if err := change(st); err != nil {
			return err
		}
		b, err := json.Marshal(st)
		if err != nil {
			return err
		}
		e.Set(stateProperty, table.ValueOf(string(b)))
		e.Set(rowkind.Property, table.ValueOf(string(rowkind.Control)))
		return nil
	}, &table.ModifyOptions{Create: true})
	if errors.Is(err, table.ErrNoChange) {
		err = nil
	}
	if err != nil {
		return nil, err
	}
	if e != nil && out == nil {
		if out, err = decodeState(e); err != nil {
			return nil, err
		}
	}
	m.state.snap.Store(&stateSnap{st: out, at: time.Now()})
	return out, nil
}
