package patterns

import (
	"context"
	"errors"
	"slices"
)

// Verify checks the model's indexes (opts.Indexes, or every one) against
// the primaries of opts.Partition (the whole table when it is ""), each
// index the way its kind is kept, and streams what it finds: each issue
// goes to opts.Issue as soon as its range is read, named by the declared
// index, its kind (IssueMissing, IssueOrphan, IssueStale) and its
// primary's keys (PrimaryPartitionKey, Primary), and the summary counts
// what was read and found. Index rows are never taken for primaries: the
// primaries are the rows under the Primary prefix that name no owner.
//
// Nothing is kept of a range once it is handled, so memory is bounded by a
// range, not by the table:
//   - Copies and Lists (the primary's partition) read the table once, one
//     request a page, and judge one partition at a time: memory is bounded
//     by one partition's rows.
//   - CrossCopies read the primaries a page at a time and each copy a
//     primary calls for by a point read; then each index's copies a page
//     at a time and, per page, each distinct owner they name by a point
//     read (to find orphans). Memory: a page and the owners it names.
//   - RemoteLists read the primaries a page at a time and, per page, each
//     distinct value's list; then every list's index entities a page at a
//     time and, per index entity, each distinct listed entity by a point
//     read. Memory: a page, the lists of its values and the IDs of the
//     list being read (a list kept in blobs, which cannot be enumerated,
//     is judged once for each value the primaries have, and the values
//     checked are kept).
//
// Bad options (a Partition the service would refuse, an index the model
// does not declare) are refused before any request.
func (m *Model[T]) Verify(ctx context.Context, opts *VerifyOptions) (_ VerifySummary, err error) {
	ctx, done := m.enter(ctx, opModelVerify, "")
	defer done(&err)
	if err := m.checkVerifyOptions(opModelVerify, opts); err != nil {
		return VerifySummary{}, err
	}
	sum, err := m.run(ctx, opts, nil)
	return sum.VerifySummary, err
}

// Repair verifies as Verify does, with the same scope, issues and progress
// (opts.VerifyOptions), and repairs each range as soon as it is verified,
// so memory stays bounded by a range: same-partition rows in transactions
// guarded by the ETag of the primary (or list) as the range read it, the
// others converged as the worker would (see each kind's cost in Verify).
// A row that changed since its range was read fails that repair instead of
// writing stale data; every range is still repaired, the failures are
// joined, and Repair run again picks up what is left. The summary holds
// the verify's counts and what was written and deleted.
func (m *Model[T]) Repair(ctx context.Context, opts *RepairOptions) (_ RepairSummary, err error) {
	ctx, done := m.enter(ctx, opModelRepair, "")
	defer done(&err)
	if err := m.checkVerifyOptions(opModelRepair, opts.verifyOptions()); err != nil {
		return RepairSummary{}, err
	}
	if err := checkRepairOptions(opModelRepair, opts); err != nil {
		return RepairSummary{}, err
	}
	if opts == nil {
		opts = &RepairOptions{}
	}
	return m.run(ctx, &opts.VerifyOptions, opts)
}

// verifyPart is one index kind of the model, as Verify runs it.
type verifyPart struct {
	v      verifier
	names  []string // the declared indexes it keeps
	rename string   // the declared name its issues carry; "" when they carry it already
	remote bool     // its issues name primaries by owner reference
}

// parts is the model's index kinds, in the order Verify runs them.
func (m *Model[T]) parts() []verifyPart {
	var out []verifyPart
	if m.copies != nil {
		p := verifyPart{v: m.copies}
		for _, d := range m.copies.defs {
			p.names = append(p.names, d.Name)
		}
		out = append(out, p)
	}
	for i, x := range m.lists {
		name := m.listDef[i].Name
		out = append(out, verifyPart{v: x, names: []string{name}, rename: name})
	}
	if m.cross != nil {
		p := verifyPart{v: m.cross}
		for _, d := range m.cross.defs {
			p.names = append(p.names, d.Name)
		}
		out = append(out, p)
	}
	for i, e := range m.remoteIdx {
		name := m.remote[i].Name
		out = append(out, verifyPart{v: e, names: []string{name}, rename: name, remote: true})
	}
	return out
}

// checkVerifyOptions refuses a Partition the service would refuse and an
// index the model does not declare.
func (m *Model[T]) checkVerifyOptions(op string, opts *VerifyOptions) error {
	if err := checkVerifyOptions(op, opts); err != nil {
		return err
	}
	if opts == nil {
		return nil
	}
	var declared []string
	for _, p := range m.parts() {
		declared = append(declared, p.names...)
	}
	return checkIndexes(op, opts.Indexes, declared)
}

// run verifies (and, with ropts, repairs) every part in scope, range by
// range.
func (m *Model[T]) run(ctx context.Context, opts *VerifyOptions, ropts *RepairOptions) (RepairSummary, error) {
	var o VerifyOptions
	if opts != nil {
		o = *opts
	}
	wanted := func(name string) bool { return len(o.Indexes) == 0 || slices.Contains(o.Indexes, name) }
	sum := RepairSummary{VerifySummary: VerifySummary{Partition: o.Partition}}
	var errs []error
	base := 0 // rows the parts before this one read, for Progress
	for _, p := range m.parts() {
		if !slices.ContainsFunc(p.names, wanted) {
			continue
		}
		po := VerifyOptions{Partition: o.Partition}
		read := 0
		if o.Progress != nil {
			po.Progress = func(n int) { read = n; o.Progress(base + n) }
		}
		primaries := 0
		err := p.v.verify(ctx, &po, func(r *verifyRange) error {
			primaries += r.Primaries
			sum.IndexRows += r.Copies
			keep := func(is IndexIssue) bool {
				if p.rename != "" {
					return true // the part is in scope, and is one index
				}
				return wanted(is.Index)
			}
			r.Missing = slices.DeleteFunc(r.Missing, func(is IndexIssue) bool { return !keep(is) })
			r.Stale = slices.DeleteFunc(r.Stale, func(is IndexIssue) bool { return !keep(is) })
			r.Orphans = slices.DeleteFunc(r.Orphans, func(is IndexIssue) bool { return !keep(is) })
			if len(o.Indexes) > 0 && p.rename == "" {
				m.narrow(r)
			}
			found := slices.Concat(r.Missing, r.Stale, r.Orphans)
			slices.SortStableFunc(found, compareIssues)
			for _, is := range found {
				is = named(is, p)
				sum.count(is)
				if o.Issue != nil {
					if err := o.Issue(is); err != nil {
						return err
					}
				}
			}
			if ropts == nil || r.OK() {
				return nil
			}
			s, err := p.v.repair(ctx, r, ropts)
			sum.Transactions += s.Transactions
			sum.Written += s.Written
			sum.Deleted += s.Deleted
			if err != nil {
				errs = append(errs, err)
			}
			return nil
		})
		base += read
		sum.Primaries = max(sum.Primaries, primaries)
		if err != nil {
			return sum, errors.Join(append(errs, err)...)
		}
	}
	return sum, errors.Join(errs...)
}

// narrow keeps, of a cross-partition range, only the primaries and orphans
// of the issues left in it, so its repair touches the indexes in scope
// only.
func (m *Model[T]) narrow(r *verifyRange) {
	if r.toFix != nil {
		r.toFix = map[[2]string]bool{}
		for _, is := range slices.Concat(r.Missing, r.Stale) {
			r.toFix[[2]string{is.PrimaryPartitionKey, is.Primary}] = true
		}
	}
	if r.orphans != nil && m.cross != nil {
		r.orphans = r.orphans[:0]
		for _, is := range r.Orphans {
			r.orphans = append(r.orphans, copyAddr{Index: m.cross.byName[is.Index], PK: is.PartitionKey, RK: is.Copy})
		}
	}
}

// named is is as the model reports it: under the declared index's name,
// with its primary's keys.
func named(is IndexIssue, p verifyPart) IndexIssue {
	if p.rename != "" {
		is.Index = p.rename
	}
	if p.remote && is.Primary != "" {
		if pk, rk, ok := ownerKeys(is.Primary); ok {
			is.PrimaryPartitionKey, is.Primary = pk, rk // a remote list's ID
		}
	}
	if is.PrimaryPartitionKey == "" && is.Primary != "" {
		is.PrimaryPartitionKey = is.PartitionKey // a list of the primary's partition
	}
	return is
}
