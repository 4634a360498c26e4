package patterns

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/internal/keyrules"
	"github.com/tablekit/tablekit/internal/rowkind"
	"github.com/tablekit/tablekit/internal/tableio"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/table"
)

// IndexDef declares a copies index of a Model: a copy of each entity that
// has a value, found by that value. In ModelOptions.Copies it is in the
// entity's own partition (the guide's intra-partition secondary index:
// Prefix, Unique); in ModelOptions.CrossCopies it is under another
// PartitionKey or in another table (the inter-partition secondary index:
// PartitionKey, Table). OpenModel refuses a field of the other kind.
type IndexDef[T any] struct {
	// Name identifies the index in reads and reports.
	Name string
	// Prefix (Copies) starts the RowKey of every copy of this index, as
	// the guide's "email_". No prefix may start another.
	Prefix string
	// Value is the indexed value of v; "" means v has no entry in this
	// index. A CrossCopies value is not unique: an index kept through a
	// queue cannot refuse a write whose value another partition's primary
	// holds, so every primary has a copy of its own, whose RowKey is the
	// tuple of the value and a digest of the primary's keys; Lookup of a
	// value that several primaries hold is ErrNotUnique naming them all.
	Value func(v *T) string
	// Unique (Copies) allows one entity per value. A copy's RowKey is then
	// Prefix and the value (the guide's "email_jonesj@contoso.com"), so
	// the value must be valid in a key, and writing a value another entity
	// holds fails with *ValueTakenError. A non-unique copy's RowKey is
	// Prefix and the tuple encoding of (value, primary id), so equal values
	// stay distinct and any string can be indexed.
	Unique bool
	// Project lists the properties a copy stores; nil stores them all.
	Project []string
	// PartitionKey (CrossCopies, required) is the copy's PartitionKey (the
	// guide's "email_" and the department: "email_Sales").
	PartitionKey func(v *T) string
	// Table (CrossCopies) is the table that holds the copies, as raw
	// entities; nil means the primaries' table.
	Table *table.Table[table.Entity]
}

// IntraPartitionIndex keeps copies of each entity under other RowKeys of the
// same partition, one per index, and writes an entity and all its copies in
// one entity group transaction, so they never disagree ("Intra-partition
// secondary index pattern"). The primary entity's RowKey is the primary
// prefix and its id (the guide's "empid_000123").
type intraPartitionIndex[T any] struct {
	tbl     *table.Table[T]
	client  table.Client
	raw     *table.Table[table.Entity] // the same table, for copies
	primary string
	defs    []IndexDef[T]
	project []map[string]bool
	byName  map[string]int
}

// newIntraPartitionIndex is NewIntraPartitionIndex, also used by the
// entity model.
func newIntraPartitionIndex[T any](tbl *table.Table[T], primaryPrefix string, defs []IndexDef[T]) (*intraPartitionIndex[T], error) {
	if tbl == nil {
		return nil, fmt.Errorf("%w: copies need a table", ErrBadDefinition)
	}
	client := tbl.Client()
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrBadDefinition, fmt.Sprintf(format, args...))
	}
	if 1+2*len(defs) > batch.MaxOperations {
		return nil, bad("%d indexes need transactions of %d operations; at most %d indexes fit the service's %d", len(defs), 1+2*len(defs), (batch.MaxOperations-1)/2, batch.MaxOperations)
	}
	props := tableio.For(tbl).Properties()
	prefixes := []string{primaryPrefix}
	x := &intraPartitionIndex[T]{tbl: tbl, client: client, raw: tbl.Entities(), primary: primaryPrefix, defs: defs, byName: map[string]int{}}
	for i, d := range defs {
		switch {
		case d.Name == "":
			return nil, bad("index %d has no name", i)
		case d.Value == nil:
			return nil, bad("index %s has no Value func", d.Name)
		}
		if _, dup := x.byName[d.Name]; dup {
			return nil, bad("two indexes named %s", d.Name)
		}
		x.byName[d.Name] = i
		prefixes = append(prefixes, d.Prefix)
		var proj map[string]bool
		if d.Project != nil {
			proj = map[string]bool{}
			for _, p := range d.Project {
				if !slices.Contains(props, p) {
					return nil, bad("index %s projects %q, which is not a property of the type", d.Name, p)
				}
				if slices.Contains(tableio.For(tbl).EncryptedProperties(), p) {
					return nil, bad("index %s projects %q, an encrypted property: a copy holds clear properties only", d.Name, p)
				}
				proj[p] = true
			}
		}
		x.project = append(x.project, proj)
	}
	for i, p := range prefixes {
		if p == "" {
			return nil, bad("empty RowKey prefix")
		}
		if err := keyrules.ValidateRowKey(p); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrBadDefinition, err)
		}
		for j, q := range prefixes {
			if i != j && strings.HasPrefix(q, p) {
				return nil, bad("prefix %q starts prefix %q: their ranges would overlap", p, q)
			}
		}
	}
	return x, nil
}

func (x *intraPartitionIndex[T]) primaryID(op string, m *table.Meta) (string, error) {
	id, ok := strings.CutPrefix(m.RowKey, x.primary)
	if !ok {
		return "", &table.InputError{Op: op, Field: "RowKey", Rule: ErrNotPrimary, Detail: fmt.Sprintf("%q lacks the prefix %q", m.RowKey, x.primary)}
	}
	return id, nil
}

// copyKey is the RowKey of v's copy in index i, or "" when v has none.
func (x *intraPartitionIndex[T]) copyKey(op string, i int, v *T) (string, error) {
	d := x.defs[i]
	val := d.Value(v)
	if val == "" {
		return "", nil
	}
	if d.Unique {
		k := d.Prefix + val
		if err := keyrules.ValidateRowKey(k); err != nil {
			return "", &table.InputError{Op: op, Field: d.Name, Rule: err, Detail: "the value of a unique index is part of its copy's RowKey"}
		}
		return k, nil
	}
	id, err := x.primaryID(op, x.tbl.Meta(v))
	if err != nil {
		return "", err
	}
	enc, err := keys.EncodeTuple(val, id)
	if err != nil {
		return "", &table.InputError{Op: op, Field: d.Name, Rule: err, Detail: "the value and the id form the copy's RowKey"}
	}
	return d.Prefix + enc, nil
}

// copyOf is v's copy for index i under RowKey rk.
func (x *intraPartitionIndex[T]) copyOf(i int, v *T, rk string) (*table.Entity, error) {
	m := x.tbl.Meta(v)
	return copyEntity(x.tbl, v, x.project[i], m.PartitionKey, rk, ownerRef(m.PartitionKey, m.RowKey))
}

// copyOp writes a copy whole: Add when its unique value must be free,
// Replace otherwise.
func copyOp(c *table.Entity, mustBeNew bool) batch.Op {
	if mustBeNew {
		return batch.Add(c)
	}
	return batch.Upsert(c, aztables.UpdateModeReplace)
}

// plan is the copies a value needs: RowKey per index ("" for none). op
// names the operation in errors.
func (x *intraPartitionIndex[T]) plan(op string, v *T) ([]string, error) {
	if v == nil {
		return nil, &table.InputError{Op: op, Rule: table.ErrNilValue}
	}
	if _, err := x.primaryID(op, x.tbl.Meta(v)); err != nil {
		return nil, err
	}
	out := make([]string, len(x.defs))
	for i := range x.defs {
		k, err := x.copyKey(op, i, v)
		if err != nil {
			return nil, err
		}
		out[i] = k
	}
	return out, nil
}

// PutOptions are the options of the Put of LargeEntity and WideEntity
// (PutOptions[Wide]).
type PutOptions[T any] struct {
	// Current is the value as stored (from Get, Add or a previous Put, or
	// for a WideEntity its Parts), with its ETag. With it Put writes only
	// over that version (table.ErrPreconditionFailed otherwise): a
	// WideEntity's Put then needs no read (one request); LargeEntity.Put
	// never reads, and Current only guards its write. Default: nil, and
	// a WideEntity's Put reads first, a LargeEntity's writes whatever the
	// stored version.
	Current *T
}

// DeleteOptions configure the Delete of LargeEntity and WideEntity
// (DeleteOptions[Wide]).
type DeleteOptions[T any] struct {
	// Current is the entity as stored (from Get; for a WideEntity, Get
	// with keysOnly is enough), with its ETag. With it Delete removes
	// only that version: table.ErrPreconditionFailed if the entity
	// changed since. A WideEntity's Delete then sends no read (one
	// request); LargeEntity's still reads, for the names of that
	// version's blobs, which a T does not carry. A Current of another
	// entity, or without an ETag, is refused before any request.
	// Default: nil, and Delete reads the entity first.
	Current *T
	// IfExists makes a missing entity a success. Default: false, and a
	// missing entity is table.ErrNotFound, as for table.Table's Delete.
	IfExists bool
}

// checkCurrent refuses, before any request, a DeleteOptions or PutOptions
// Current that cannot be the stored version of the entity (pk, rk):
// another entity's keys (curPK, curRK), or no ETag to guard the write.
func checkCurrent(op, pk, rk, curPK, curRK string, etag azcore.ETag) error {
	if curPK != pk || curRK != rk {
		return &table.InputError{Op: op, Field: "Current", Rule: table.ErrInvalidValue,
			Detail: fmt.Sprintf("Current is (%q, %q), another entity than (%q, %q)", curPK, curRK, pk, rk)}
	}
	if etag == "" {
		return &table.InputError{Op: op, Field: "Current.ETag", Rule: table.ErrNoETag, Detail: "Current must be the stored entity, with its ETag"}
	}
	return nil
}

func (x *intraPartitionIndex[T]) def(name string) (int, error) {
	i, ok := x.byName[name]
	if !ok {
		return 0, fmt.Errorf("%w: %q", ErrUnknownIndex, name)
	}
	return i, nil
}

// decodeCopy decodes an index copy into T with the primary's keys; its
// ETag is left empty, since the copy's version is not the primary's.
func (x *intraPartitionIndex[T]) decodeCopy(c *table.Entity) (*T, error) {
	of, ok := ownerOf(c)
	if !ok || of == "" {
		return nil, fmt.Errorf("patterns: entity %q is not an index copy (no %s)", c.RowKey, indexOfProperty)
	}
	return fromCopy(x.tbl, c, c.PartitionKey, ownerRowKey(of, c.PartitionKey))
}

// lookup finds, for op, the entity whose value in a unique index is value:
// one point query. The result holds what the copy stores (all properties, or the
// projection) under the primary's keys, with no ETag: Get the primary
// before a guarded write.
func (x *intraPartitionIndex[T]) lookup(ctx context.Context, op, index, partitionKey, value string) (*T, error) {
	i, err := x.def(index)
	if err != nil {
		return nil, err
	}
	if !x.defs[i].Unique {
		return nil, fmt.Errorf("%w: %s; use Find", ErrNotUnique, index)
	}
	rk := x.defs[i].Prefix + value
	if err := keyrules.ValidateRowKey(rk); err != nil {
		return nil, &table.InputError{Op: op, Field: "value", Rule: err}
	}
	if err := keyrules.ValidatePartitionKey(partitionKey); err != nil {
		return nil, &table.InputError{Op: op, Field: "PartitionKey", Rule: err}
	}
	c, err := x.raw.Get(ctx, partitionKey, rk, nil)
	if err != nil {
		return nil, err
	}
	return x.decodeCopy(c)
}

func errSeq[T any](err error) iter.Seq2[*T, error] {
	return func(yield func(*T, error) bool) { yield(nil, err) }
}

// verify reads opts.Partition (the whole table when it is "", one request
// per page either way) and hands each partition's missing, orphaned and
// stale copies to each, one partition at a time: memory is bounded by one
// partition's rows. Rows of other kinds (no primary prefix, no copy
// prefix) are left alone.
func (x *intraPartitionIndex[T]) verify(ctx context.Context, opts *VerifyOptions, each func(*verifyRange) error) error {
	return scanPartitions(ctx, x.raw, opts, func(pk string, rows []*table.Entity) error {
		r := newRange(x, x.reportName(), opts)
		r.primaries = map[[2]string]*table.Entity{}
		if err := x.verifyPartition(ctx, pk, rows, r); err != nil {
			return err
		}
		return each(r)
	})
}

// reportName names the index in its reports: its copy indexes' names.
func (x *intraPartitionIndex[T]) reportName() string {
	names := make([]string, len(x.defs))
	for i, d := range x.defs {
		names[i] = d.Name
	}
	return "copies(" + strings.Join(names, ",") + ")"
}

// verifyPartition adds to r what the rows of one partition show.
func (x *intraPartitionIndex[T]) verifyPartition(ctx context.Context, partitionKey string, rows []*table.Entity, r *verifyRange) error {
	type copyRow struct {
		index int
		e     *table.Entity
		of    string
	}
	copies := map[string]copyRow{} // by RowKey
	var order []string
	var prim []*T
	primaries := map[string]*table.Entity{}
	for _, e := range rows {
		if _, other := e.Get(rowkind.Property); other {
			continue // a row of another kind (a list, a pattern's): no primary, no copy
		}
		if _, isCopy := ownerOf(e); strings.HasPrefix(e.RowKey, x.primary) && !isCopy {
			v, err := tableio.For(x.tbl).FromStored(ctx, e)
			if err != nil {
				return err
			}
			prim = append(prim, v)
			primaries[e.RowKey] = e
			continue
		}
		for i, d := range x.defs {
			if strings.HasPrefix(e.RowKey, d.Prefix) {
				of, _ := ownerOf(e)
				copies[e.RowKey] = copyRow{index: i, e: e, of: ownerRowKey(of, partitionKey)}
				order = append(order, e.RowKey)
				break
			}
		}
	}
	r.Primaries += len(prim)
	r.Copies += len(copies)
	expected := map[string]bool{}
	for _, v := range prim {
		m := x.tbl.Meta(v)
		want, err := x.plan(opModelVerify, v)
		if err != nil {
			return err
		}
		for i, rk := range want {
			if rk == "" {
				continue
			}
			expected[rk] = true
			issue := IndexIssue{Index: x.defs[i].Name, PartitionKey: partitionKey, PrimaryPartitionKey: partitionKey, Primary: m.RowKey, Copy: rk}
			c, ok := copies[rk]
			if !ok {
				issue.Kind = IssueMissing
				r.Missing = append(r.Missing, issue)
				continue
			}
			issue.Kind = IssueStale
			if c.of != m.RowKey {
				// Another entity's copy holds this entity's unique value.
				issue.CopyETag = c.e.ETag
				r.Stale = append(r.Stale, issue)
				continue
			}
			want, err := x.copyOf(i, v, rk)
			if err != nil {
				return err
			}
			if !want.SameProperties(c.e) {
				issue.CopyETag = c.e.ETag
				r.Stale = append(r.Stale, issue)
			}
		}
	}
	for _, rk := range order {
		if expected[rk] {
			continue
		}
		c := copies[rk]
		r.Orphans = append(r.Orphans, IndexIssue{Kind: IssueOrphan, Index: x.defs[c.index].Name, PartitionKey: partitionKey, PrimaryPartitionKey: partitionKey, Primary: c.of, Copy: rk, CopyETag: c.e.ETag})
	}
	// The range keeps only the primaries repair will need.
	for _, is := range slices.Concat(r.Missing, r.Stale, r.Orphans) {
		if e := primaries[is.Primary]; e != nil && is.PartitionKey == partitionKey {
			r.primaries[[2]string{partitionKey, is.Primary}] = e
		}
	}
	return nil
}

// repair fixes what verify found in one partition. Each primary's missing
// and stale copies are rewritten, and the copies it no longer calls for
// deleted, together with a guard on the primary's ETag as verify read it (a
// merge that changes nothing but the ETag), so a concurrent change of the
// entity makes its repair fail instead of writing stale copies: run Repair
// again. The primaries of a partition share transactions (up to 100
// operations); if one of a transaction's primaries changed, its primaries
// are repaired one by one so the others still are. Orphans of missing
// primaries are deleted guarded by their own ETags. Repairing a partition
// whose copies are all missing costs about one request per 50 entities.
func (x *intraPartitionIndex[T]) repair(ctx context.Context, r *verifyRange, opts *RepairOptions) (_ RepairSummary, err error) {
	byPrimary := map[[2]string][]IndexIssue{}
	var order [][2]string
	add := func(is IndexIssue) {
		k := [2]string{is.PartitionKey, is.Primary}
		if _, ok := byPrimary[k]; !ok {
			order = append(order, k)
		}
		byPrimary[k] = append(byPrimary[k], is)
	}
	var lone []IndexIssue
	for _, is := range slices.Concat(r.Missing, r.Stale) {
		add(is)
	}
	for _, is := range r.Orphans {
		if r.primaries[[2]string{is.PartitionKey, is.Primary}] != nil {
			add(is)
		} else {
			lone = append(lone, is)
		}
	}
	var groups []repairGroup
	for _, k := range order {
		g, err := x.repairOps(r.primaries[k], byPrimary[k])
		if err != nil {
			return RepairSummary{}, err
		}
		groups = append(groups, g)
	}
	sum, err := repairPacked(ctx, x.client, groups, opts)
	errs := []error{err}
	var ops []batch.Op
	for _, is := range lone {
		ops = append(ops, batch.Delete(is.PartitionKey, is.Copy).IfMatch(is.CopyETag))
	}
	if len(ops) > 0 {
		s, err := batch.NewWriter(x.client, &batch.WriterOptions{MaxAttempts: 1}).Write(ctx, slices.Values(ops), nil)
		sum.Transactions += s.Transactions
		sum.Deleted += s.Operations
		if err != nil {
			errs = append(errs, err)
		}
	}
	return sum, errors.Join(errs...)
}

// repairOps builds one primary's repair: the guard, then its copies.
func (x *intraPartitionIndex[T]) repairOps(p *table.Entity, issues []IndexIssue) (repairGroup, error) {
	var g repairGroup
	v, err := tableio.For(x.tbl).FromStored(context.Background(), p)
	if err != nil {
		return g, err
	}
	m := x.tbl.Meta(v)
	// The guard: a merge of no property, which changes nothing but the
	// ETag, and fails if the primary changed since Verify read it.
	g.ops = append(g.ops, batch.Update(&table.Entity{Meta: table.Meta{PartitionKey: m.PartitionKey, RowKey: m.RowKey, ETag: p.ETag}}, aztables.UpdateModeMerge))
	want, err := x.plan(opModelRepair, v)
	if err != nil {
		return g, err
	}
	for _, is := range issues {
		i := x.byName[is.Index]
		if want[i] == is.Copy {
			c, err := x.copyOf(i, v, is.Copy)
			if err != nil {
				return g, err
			}
			g.ops = append(g.ops, copyOp(c, false))
			g.written++
		} else {
			g.ops = append(g.ops, batch.Delete(m.PartitionKey, is.Copy).IfMatch(is.CopyETag))
			g.deleted++
		}
	}
	return g, nil
}

// tupleComponentPrefix is the start of the tuple encoding (keys.EncodeTuple)
// of every tuple whose first component starts with s: the encoding of the
// one-component tuple s without its end marker. The encoding is byte by
// byte, so it is built from pieces short enough for EncodeTuple's length
// check (128 bytes encode to at most 384 units), whatever s's length.
func tupleComponentPrefix(s string) string {
	var b strings.Builder
	for len(s) > 0 {
		n := min(len(s), 128)
		enc, _ := keys.EncodeTuple(s[:n])
		b.WriteString(strings.TrimSuffix(enc, "!"))
		s = s[n:]
	}
	return b.String()
}
