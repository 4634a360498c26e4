package patterns

import (
	"context"
	"errors"
)

// Verify checks every index of the model against the primaries of
// opts.Partition (the whole table when it is ""), each index the way its
// own kind verifies (see IntraPartitionIndex, IndexEntities,
// InterPartitionIndex and EventualIndexEntities), and returns one report:
// each issue names the declared index it belongs to. Index rows are never
// taken for primaries: the primaries are the rows under the Primary
// prefix that name no owner. Every issue names its primary by both keys
// (PrimaryPartitionKey, Primary). Each index reads the table once (one
// request a page).
func (m *Model[T]) Verify(ctx context.Context, opts *VerifyOptions) (*IndexReport, error) {
	if err := checkVerifyOptions(opModelVerify, opts); err != nil {
		return nil, err
	}
	r := newReport(m, "Model("+m.name+")", opts)
	// remote: the part's issues name their primaries by ID (a remote
	// list's); the others' issues are of the primary's own partition,
	// except the cross copies', which name both keys already.
	add := func(part *IndexReport, err error, rename func(string) string, remote bool) error {
		if err != nil {
			return err
		}
		r.parts = append(r.parts, part)
		r.Primaries = max(r.Primaries, part.Primaries)
		r.Copies += part.Copies
		for _, list := range []struct{ from, to *[]IndexIssue }{{&part.Missing, &r.Missing}, {&part.Orphans, &r.Orphans}, {&part.Stale, &r.Stale}} {
			for _, is := range *list.from {
				if rename != nil {
					is.Index = rename(is.Index)
				}
				if is.PrimaryPartitionKey == "" && is.Primary != "" {
					if pk, rk, ok := ownerKeys(is.Primary); ok && remote {
						is.PrimaryPartitionKey, is.Primary = pk, rk // a remote list's ID
					} else {
						is.PrimaryPartitionKey = is.PartitionKey // a list of the primary's partition
					}
				}
				*list.to = append(*list.to, is)
			}
		}
		return nil
	}
	if m.copies != nil {
		part, err := m.copies.Verify(ctx, opts)
		if err := add(part, err, nil, false); err != nil {
			return nil, err
		}
	}
	for i, x := range m.lists {
		name := m.listDef[i].Name
		part, err := x.Verify(ctx, opts)
		if err := add(part, err, func(string) string { return name }, false); err != nil {
			return nil, err
		}
	}
	if m.cross != nil {
		part, err := m.cross.Verify(ctx, opts)
		if err := add(part, err, nil, false); err != nil {
			return nil, err
		}
	}
	for i, e := range m.remoteIdx {
		name := m.remote[i].Name
		part, err := e.Verify(ctx, opts)
		if err := add(part, err, func(string) string { return name }, true); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Repair fixes what the model's Verify reported, each index by its own
// kind's Repair (same-partition rows in transactions guarded by the
// primary's ETag, the others converged as the worker would). A report of
// another index or model is refused before any request. The summary adds
// up the parts'; every part is repaired even when one fails, and the
// failures are joined.
func (m *Model[T]) Repair(ctx context.Context, r *IndexReport, opts *RepairOptions) (RepairSummary, error) {
	if err := checkReport(opModelRepair, m, r); err != nil {
		return RepairSummary{}, err
	}
	if err := checkRepairOptions(opModelRepair, opts); err != nil {
		return RepairSummary{}, err
	}
	var sum RepairSummary
	var errs []error
	for _, part := range r.parts {
		if part.OK() {
			continue
		}
		v, ok := part.owner.(verifier)
		if !ok {
			continue
		}
		s, err := v.Repair(ctx, part, opts)
		sum.Transactions += s.Transactions
		sum.Written += s.Written
		sum.Deleted += s.Deleted
		errs = append(errs, err)
	}
	return sum, errors.Join(errs...)
}
