package patterns

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/internal/keyrules"
	"github.com/tablekit/tablekit/internal/msgtype"
	"github.com/tablekit/tablekit/internal/tableio"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/table"
)

// messageType is the type of an index's messages: "<base>.v1" for an
// unnamed index, "<base>.<name>.v1" otherwise, checked by the consistency
// package's rules.
func messageType(base, name string) (string, error) {
	if name == "" {
		return base + ".v1", nil
	}
	t := base + "." + name + ".v1"
	if !msgtype.Valid(t) {
		return "", fmt.Errorf("%w: index name %q makes no message type: %w: %q", ErrBadDefinition, name, consistency.ErrBadType, t)
	}
	return t, nil
}

// indexMessage carries keys only: the handler reads the primary and makes
// the copies match it, so messages can arrive late, twice or out of order.
type indexMessage struct {
	PK    string     `json:"pk"`
	RK    string     `json:"rk"`
	Stale []copyAddr `json:"stale,omitempty"` // copies the previous version had
}

type copyAddr struct {
	Index int    `json:"i"`
	PK    string `json:"pk"`
	RK    string `json:"rk"`
}

// InterPartitionIndex keeps copies of entities under other PartitionKeys or
// in other tables ("Inter-partition secondary index pattern"), which no
// transaction can span, eventually consistent through a queue
// (consistency). Put writes the primary and a message; a Worker running
// Handle makes the copies match the primary (a Model's ProcessBatch does
// so for 32 messages at a time). The window of inconsistency is
// the time from Put to the message's handling (the queue's latency, or the
// publish delay after a crash); after the queue drains, the copies equal the
// primaries, which a test shows under redelivery and faults.
type interPartitionIndex[T any] struct {
	tbl     *table.Table[T]
	primary string // the primaries' RowKey prefix within a Model; "" alone
	// local are the RowKey prefixes of the model's copies in the primaries'
	// partitions: rows of the primaries' table that name an owner of their
	// own partition under one of them are those copies, not cross copies.
	local   []string
	defs    []IndexDef[T]
	copies  []*table.Table[table.Entity]
	project []map[string]bool
	byName  map[string]int
	sender  *consistency.Sender
	delay   time.Duration
	msgType string
	log     *slog.Logger
}

// InterPartitionIndexOptions configure an InterPartitionIndex.
type interPartitionIndexOptions struct {
	// Name names the index in its message type ("tablekit.index.<Name>.v1",
	// see MessageType), so several indexes can share one queue and one
	// worker; letters, digits, "_", "-" and ".". Default: "", and the
	// type is "tablekit.index.v1".
	Name string
	// PublishDelay hides a Put's message until Put has written the primary
	// (Put then shows it at once); after a crash in between, the message
	// appears when the delay ends and converges to whatever the primary is.
	// Default: 30 s.
	PublishDelay time.Duration
	// Logger receives the failures the pattern retries or leaves to a
	// later run, at Warn. Default: no logging.
	Logger *slog.Logger
}

// newInterPartitionIndex is NewInterPartitionIndex, also used by the
// entity model.
func newInterPartitionIndex[T any](tbl *table.Table[T], queue consistency.Queue, defs []IndexDef[T], opts *interPartitionIndexOptions) (*interPartitionIndex[T], error) {
	if tbl == nil {
		return nil, fmt.Errorf("%w: cross copies need the primaries' table", ErrBadDefinition)
	}
	var err error
	if queue == nil {
		return nil, fmt.Errorf("%w: no queue", ErrBadDefinition)
	}
	props := tableio.For(tbl).Properties()
	x := &interPartitionIndex[T]{tbl: tbl, defs: defs, byName: map[string]int{}, sender: consistency.NewSender(queue, nil), delay: 30 * time.Second}
	var name string
	if opts != nil {
		if opts.PublishDelay > 0 {
			x.delay = opts.PublishDelay
		}
		name = opts.Name
		x.log = opts.Logger
	}
	if x.msgType, err = messageType("tablekit.index", name); err != nil {
		return nil, err
	}
	for i, d := range defs {
		if d.Name == "" || d.PartitionKey == nil || d.Value == nil {
			return nil, fmt.Errorf("%w: index %d needs a Name, a PartitionKey and a Value func", ErrBadDefinition, i)
		}
		if _, dup := x.byName[d.Name]; dup {
			return nil, fmt.Errorf("%w: two indexes named %s", ErrBadDefinition, d.Name)
		}
		x.byName[d.Name] = i
		ct := d.Table
		if ct == nil {
			ct = tbl.Entities()
		}
		x.copies = append(x.copies, ct)
		var proj map[string]bool
		if d.Project != nil {
			proj = map[string]bool{}
			for _, p := range d.Project {
				if !slices.Contains(props, p) {
					return nil, fmt.Errorf("%w: index %s projects %q, not a property of the type", ErrBadDefinition, d.Name, p)
				}
				if slices.Contains(tableio.For(tbl).EncryptedProperties(), p) {
					return nil, fmt.Errorf("%w: index %s projects %q, an encrypted property: a copy holds clear properties only", ErrBadDefinition, d.Name, p)
				}
				proj[p] = true
			}
		}
		x.project = append(x.project, proj)
	}
	return x, nil
}

// ownerDigestBytes is how much of the SHA-256 of a primary's reference
// a copy's RowKey carries: 96 bits, 24 hex digits.
const ownerDigestBytes = 12

// crossRowKey is the RowKey of the copy of value that the primary (pk, rk)
// has: the tuple encoding of the value and a digest of the primary's
// reference. Every owner of a value has its own row; the rows of a value
// are the RowKeys that keys.EncodeTuple(value) starts, in value order;
// the digest keeps the key's length that of the value's whatever the
// primary's keys (the copy names its owner in full, indexOfProperty).
func crossRowKey(value, pk, rk string) (string, error) {
	sum := sha256.Sum256([]byte(ownerRef(pk, rk)))
	return keys.EncodeTuple(value, hex.EncodeToString(sum[:ownerDigestBytes]))
}

// addrs are v's copies, one per index (zero addr for none); op names the
// operation in errors.
func (x *interPartitionIndex[T]) addrs(op string, v *T) ([]copyAddr, error) {
	out := make([]copyAddr, len(x.defs))
	m := x.tbl.Meta(v)
	for i, d := range x.defs {
		val := d.Value(v)
		if val == "" {
			continue
		}
		a := copyAddr{Index: i, PK: d.PartitionKey(v)}
		if err := keyrules.ValidatePartitionKey(a.PK); err != nil {
			return nil, &table.InputError{Op: op, Field: d.Name, Rule: err, Detail: "the index's PartitionKey"}
		}
		rk, err := crossRowKey(val, m.PartitionKey, m.RowKey)
		if err != nil {
			return nil, &table.InputError{Op: op, Field: d.Name, Rule: err, Detail: "the indexed value and a digest of the primary's keys form the copy's RowKey"}
		}
		a.RK = rk
		out[i] = a
	}
	return out, nil
}

func (x *interPartitionIndex[T]) converge(ctx context.Context, pk, rk string, stale []copyAddr) error {
	v, err := x.tbl.Get(ctx, pk, rk, nil)
	if table.Is(err, table.ErrNotFound) {
		v = nil
	} else if err != nil {
		return err
	}
	wanted, err := x.wanted(v)
	if err != nil {
		return err
	}
	for _, c := range wanted {
		// Replace, never Merge: a property the primary lost must leave the
		// copy too.
		if err := x.copies[c.index].Upsert(ctx, c.e, &table.UpsertOptions{Mode: aztables.UpdateModeReplace}); err != nil {
			return err
		}
	}
	return x.removeStale(ctx, pk, rk, v, stale)
}

// wantedCopy is one copy the current primary calls for, in index i.
type wantedCopy struct {
	index int
	e     *table.Entity
}

// wanted is the copies v calls for (none when v is nil: the primary is
// gone).
func (x *interPartitionIndex[T]) wanted(v *T) ([]wantedCopy, error) {
	if v == nil {
		return nil, nil
	}
	want, err := x.addrs(opModelProcess, v)
	if err != nil {
		return nil, consistency.Permanent(err)
	}
	var out []wantedCopy
	for i, a := range want {
		if a.RK == "" {
			continue
		}
		c, err := x.copyOf(i, v, a)
		if err != nil {
			return nil, consistency.Permanent(err)
		}
		out = append(out, wantedCopy{index: i, e: c})
	}
	return out, nil
}

// removeStale removes the copies a previous version had and v (nil: gone)
// no longer calls for, each only while it still belongs to (pk, rk).
func (x *interPartitionIndex[T]) removeStale(ctx context.Context, pk, rk string, v *T, stale []copyAddr) error {
	want := make([]copyAddr, len(x.defs))
	if v != nil {
		var err error
		if want, err = x.addrs(opModelProcess, v); err != nil {
			return consistency.Permanent(err)
		}
	}
	for _, s := range stale {
		if s.Index < 0 || s.Index >= len(x.defs) || s == want[s.Index] {
			continue
		}
		if _, err := removeIfOwned(ctx, x.copies[s.Index], s.PK, s.RK, ownerRef(pk, rk)); err != nil {
			return err
		}
	}
	return nil
}

// copyOf is v's copy in index i, at a.
func (x *interPartitionIndex[T]) copyOf(i int, v *T, a copyAddr) (*table.Entity, error) {
	m := x.tbl.Meta(v)
	return copyEntity(x.tbl, v, x.project[i], a.PK, a.RK, ownerRef(m.PartitionKey, m.RowKey))
}

// decodeCopy decodes a copy into T under its primary's keys (no ETag).
func (x *interPartitionIndex[T]) decodeCopy(e *table.Entity) (*T, error) {
	ref, _ := ownerOf(e)
	pk, rk, ok := ownerKeys(ref)
	if !ok {
		return nil, fmt.Errorf("patterns: (%q, %q) is not an index copy (no %s)", e.PartitionKey, e.RowKey, indexOfProperty)
	}
	return fromCopy(x.tbl, e, pk, rk)
}

// lookup finds, for op, the entity whose copy in an index holds value in
// partitionKey: one query on the index's table, for the value's rows. The
// result holds what the copy stores, under the primary's keys. A value no
// primary holds is table.ErrNotFound; one that several hold is
// ErrNotUnique, naming them (a sharedValueError). The query also reads a copy stored at
// the value itself, the RowKey of copies written before each owner had
// its own row (Verify reports those, and Repair rewrites them).
func (x *interPartitionIndex[T]) lookup(ctx context.Context, op, index, partitionKey, value string) (*T, error) {
	i, ok := x.byName[index]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownIndex, index)
	}
	if err := keyrules.ValidatePartitionKey(partitionKey); err != nil {
		return nil, &table.InputError{Op: op, Field: "PartitionKey", Rule: err}
	}
	enc, err := keys.EncodeTuple(value)
	if value == "" || err != nil {
		return nil, &table.InputError{Op: op, Field: "value", Rule: table.ErrInvalidValue, Detail: "a value is not empty, and its encoding fits a RowKey"}
	}
	f := table.RowPrefix(partitionKey, enc)
	if keyrules.ValidateRowKey(value) == nil {
		f = table.Or(f, table.Prop("PartitionKey").Eq(partitionKey).And(table.Prop("RowKey").Eq(value)))
	}
	var found []*table.Entity
	var owners []Owner
	for c, err := range x.copies[i].Query(ctx, &table.QueryOptions{Filter: f}) {
		if err != nil {
			return nil, err
		}
		ref, _ := ownerOf(c)
		pk, rk, ok := ownerKeys(ref)
		if !ok || slices.Contains(owners, Owner{pk, rk}) {
			continue // no copy, or an owner's row in both layouts
		}
		found, owners = append(found, c), append(owners, Owner{pk, rk})
	}
	switch len(found) {
	case 0:
		return nil, &notFoundError{Op: op, PartitionKey: partitionKey, RowKey: value}
	case 1:
		return x.decodeCopy(found[0])
	}
	slices.SortFunc(owners, func(a, b Owner) int {
		return cmp.Or(strings.Compare(a.PartitionKey, b.PartitionKey), strings.Compare(a.RowKey, b.RowKey))
	})
	return nil, &sharedValueError{Index: index, Value: value, Owners: owners}
}

// Owner names a primary by its keys.
type Owner struct {
	PartitionKey, RowKey string
}

// sharedValueError is a Lookup of a value that several primaries hold in
// a cross-partition index: there is no one answer. It matches ErrNotUnique
// and its message names each owner; Model.Find returns them all.
type sharedValueError struct {
	Index, Value string
	Owners       []Owner
}

// Error names the index, the value and every owner.
func (e *sharedValueError) Error() string {
	var b strings.Builder
	b.WriteString("patterns: value " + quote(e.Value) + " of index " + e.Index + " belongs to " + strconv.Itoa(len(e.Owners)) + " primaries:")
	for _, o := range e.Owners {
		b.WriteString(" (" + quote(o.PartitionKey) + ", " + quote(o.RowKey) + ")")
	}
	return b.String()
}

// Unwrap returns ErrNotUnique.
func (e *sharedValueError) Unwrap() error { return ErrNotUnique }

// validKeys checks a PartitionKey and a RowKey (called rkField in errors)
// for operation op.
func validKeys(op, pk, rkField, rk string) error {
	if err := keyrules.ValidatePartitionKey(pk); err != nil {
		return &table.InputError{Op: op, Field: "PartitionKey", Rule: err}
	}
	if err := keyrules.ValidateRowKey(rk); err != nil {
		return &table.InputError{Op: op, Field: rkField, Rule: err}
	}
	return nil
}

// verifyBatch is how many rows a range of a cross-partition verify holds:
// a page of the service's.
const verifyBatch = 1000

// verify checks the copies from both sides, a page at a time, with no set
// of the table in memory. From the primaries' side it reads the primaries
// of opts.Partition (all of them when it is "") page by page and each copy
// a primary calls for by a point read: a missing copy is Missing, one
// whose properties differ is Stale. From the index side it reads every
// copy of each index's table page by page and, for each page, the owners
// its copies name (a point read per distinct owner): a copy whose owner is
// gone or calls for no copy at that address is an Orphan. Requests: one
// per page of the primaries' table, one per copy the primaries call for,
// one per page of each index's copies, and one per distinct owner of each
// such page. Memory: a page of rows and the owners it names. Index rows
// kept in the primaries' own table (copies, which name their owner, and
// index entities) are never taken for primaries. A partition's verify
// judges every copy whose owner is in that partition, so it finds the
// orphans of primaries deleted there as a whole-table verify does.
func (x *interPartitionIndex[T]) verify(ctx context.Context, opts *VerifyOptions, each func(*verifyRange) error) error {
	var filter table.Filter
	var progress func(int)
	scope := ""
	if opts != nil {
		if opts.Partition != "" {
			filter = table.Partition(opts.Partition)
		}
		progress = opts.Progress
		scope = opts.Partition
	}
	read := 0
	tick := func() {
		read++
		if progress != nil && read%100 == 0 {
			progress(read)
		}
	}
	newRange := func() *verifyRange {
		r := newRange(x, x.reportName(), opts)
		r.toFix = map[[2]string]bool{}
		return r
	}
	// The primaries' side.
	var page []*T
	flush := func() error {
		if len(page) == 0 {
			return nil
		}
		r := newRange()
		for _, v := range page {
			if err := x.verifyPrimary(ctx, v, r, tick); err != nil {
				return err
			}
		}
		page = page[:0]
		return each(r)
	}
	for e, err := range x.tbl.Entities().Query(ctx, &table.QueryOptions{Filter: filter}) {
		if err != nil {
			return err
		}
		tick()
		if isMarkedRow(e) || !strings.HasPrefix(e.RowKey, x.primary) {
			continue // an index row kept in the primaries' table is no primary
		}
		v, err := tableio.For(x.tbl).FromStored(ctx, e)
		if err != nil {
			return err
		}
		if page = append(page, v); len(page) == verifyBatch {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := flush(); err != nil {
		return err
	}
	// The index side.
	for i := range x.defs {
		var copies []*table.Entity
		flush := func() error {
			if len(copies) == 0 {
				return nil
			}
			r := newRange()
			if err := x.judgeOwners(ctx, i, copies, r); err != nil {
				return err
			}
			copies = copies[:0]
			return each(r)
		}
		hasRef := table.Prop(indexOfProperty).Ge("")
		for c, err := range x.copies[i].Query(ctx, &table.QueryOptions{Filter: hasRef}) {
			if err != nil {
				return err
			}
			tick()
			of, _ := ownerOf(c)
			if x.defs[i].Table == nil && x.isLocalCopy(c, of) {
				continue
			}
			if opk, _, ok := ownerKeys(of); scope != "" && (!ok || opk != scope) {
				continue // another partition's copy
			}
			if copies = append(copies, c); len(copies) == verifyBatch {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		if err := flush(); err != nil {
			return err
		}
	}
	if progress != nil {
		progress(read)
	}
	return nil
}

// verifyPrimary reads the copies v calls for (a point read each) and adds
// to r those missing or stale.
func (x *interPartitionIndex[T]) verifyPrimary(ctx context.Context, v *T, r *verifyRange, tick func()) error {
	r.Primaries++
	want, err := x.addrs(opModelVerify, v)
	if err != nil {
		return err
	}
	m := x.tbl.Meta(v)
	for i, a := range want {
		if a.RK == "" {
			continue
		}
		c, err := x.copies[i].Get(ctx, a.PK, a.RK, nil)
		issue := IndexIssue{Index: x.defs[i].Name, PartitionKey: a.PK, Copy: a.RK, PrimaryPartitionKey: m.PartitionKey, Primary: m.RowKey}
		if table.Is(err, table.ErrNotFound) {
			issue.Kind = IssueMissing
			r.Missing = append(r.Missing, issue)
			r.toFix[[2]string{m.PartitionKey, m.RowKey}] = true
			continue
		}
		if err != nil {
			return err
		}
		tick()
		r.Copies++
		wantCopy, err := x.copyOf(i, v, a)
		if err != nil {
			return err
		}
		if !wantCopy.SameProperties(c) {
			issue.Kind, issue.CopyETag = IssueStale, c.ETag
			r.Stale = append(r.Stale, issue)
			r.toFix[[2]string{m.PartitionKey, m.RowKey}] = true
		}
	}
	return nil
}

// judgeOwners reads the owners that a page of index i's copies name (a
// point read per distinct owner) and adds to r each copy whose owner is
// gone or calls for no copy at its address. A copy its owner calls for
// was judged from the primaries' side.
func (x *interPartitionIndex[T]) judgeOwners(ctx context.Context, i int, copies []*table.Entity, r *verifyRange) error {
	type owner struct {
		want []copyAddr // nil: no such primary
	}
	owners := map[string]owner{}
	for _, c := range copies {
		of, _ := ownerOf(c)
		if _, done := owners[of]; done {
			continue
		}
		var o owner
		// An owner outside the primaries' prefix is no primary: not read.
		if pk, rk, ok := ownerKeys(of); ok && strings.HasPrefix(rk, x.primary) {
			e, err := x.tbl.Entities().Get(ctx, pk, rk, nil)
			switch {
			case table.Is(err, table.ErrNotFound):
			case err != nil:
				return err
			case !isMarkedRow(e) && strings.HasPrefix(e.RowKey, x.primary):
				v, err := tableio.For(x.tbl).FromStored(ctx, e)
				if err != nil {
					return err
				}
				if o.want, err = x.addrs(opModelVerify, v); err != nil {
					return err
				}
			}
		}
		owners[of] = o
	}
	for _, c := range copies {
		of, _ := ownerOf(c)
		a := copyAddr{Index: i, PK: c.PartitionKey, RK: c.RowKey}
		if o := owners[of]; o.want != nil && o.want[i] == a {
			continue
		}
		is := IndexIssue{Kind: IssueOrphan, Index: x.defs[i].Name, PartitionKey: a.PK, Copy: a.RK, Primary: of, CopyETag: c.ETag}
		if opk, ork, ok := ownerKeys(of); ok {
			is.PrimaryPartitionKey, is.Primary = opk, ork
		}
		r.Orphans = append(r.Orphans, is)
		r.orphans = append(r.orphans, a)
	}
	return nil
}

// isLocalCopy reports a row of the primaries' table that is a copy in its
// owner's partition (the model's Copies), whose owner reference is of.
func (x *interPartitionIndex[T]) isLocalCopy(c *table.Entity, of string) bool {
	pk, _, ok := ownerKeys(of)
	if !ok {
		pk = c.PartitionKey // a copy naming its owner by RowKey alone is of its partition
	}
	if pk != c.PartitionKey {
		return false
	}
	for _, p := range x.local {
		if strings.HasPrefix(c.RowKey, p) {
			return true
		}
	}
	return false
}

// reportName names the index in its reports: its indexes' names.
func (x *interPartitionIndex[T]) reportName() string {
	names := make([]string, len(x.defs))
	for i, d := range x.defs {
		names[i] = d.Name
	}
	return "cross copies(" + strings.Join(names, ",") + ")"
}

// repair fixes what verify found in one range: each primary with missing
// or stale copies is converged as Handle would (a read, and a Replace per
// copy), and each orphan is deleted while it still has no primary that
// calls for it (guarded by its ETag). PerTransaction does not apply
// (copies in other partitions take a request each).
func (x *interPartitionIndex[T]) repair(ctx context.Context, r *verifyRange, opts *RepairOptions) (sum RepairSummary, err error) {
	fix := slices.SortedFunc(maps.Keys(r.toFix), func(a, b [2]string) int { return strings.Compare(a[0]+"\x00"+a[1], b[0]+"\x00"+b[1]) })
	for _, k := range fix {
		if err := x.converge(ctx, k[0], k[1], nil); err != nil {
			return sum, err
		}
		sum.Written++
	}
	for _, a := range r.orphans {
		c, err := x.copies[a.Index].Get(ctx, a.PK, a.RK, nil)
		if table.Is(err, table.ErrNotFound) {
			continue
		}
		if err != nil {
			return sum, err
		}
		of, _ := ownerOf(c)
		if pk, rk, ok := ownerKeys(of); ok {
			if _, err := x.tbl.Get(ctx, pk, rk, nil); err == nil {
				// Its primary exists after all: converge it instead, which
				// removes this copy if the primary no longer calls for it.
				if err := x.converge(ctx, pk, rk, []copyAddr{a}); err != nil {
					return sum, err
				}
				continue
			}
		}
		etag := c.ETag
		if err := x.copies[a.Index].Delete(ctx, a.PK, a.RK, &table.DeleteOptions{IfMatch: &etag, IfExists: true}); err != nil {
			return sum, err
		}
		sum.Deleted++
	}
	return sum, nil
}
