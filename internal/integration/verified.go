package integration

import (
	"context"
	"fmt"

	"github.com/tablekit/tablekit/patterns"
)

// report is what a model's Verify streamed, gathered by kind beside its
// summary: the suites' view of one Verify (Verify itself keeps nothing).
type report struct {
	patterns.VerifySummary
	Missing, Orphans, Stale []patterns.IndexIssue
}

// verifyOf runs m's Verify with opts and gathers the issues it streams.
func verifyOf[T any](ctx context.Context, m *patterns.Model[T], opts *patterns.VerifyOptions) (*report, error) {
	r := &report{}
	var o patterns.VerifyOptions
	if opts != nil {
		o = *opts
	}
	o.Issue = func(is patterns.IndexIssue) error {
		switch is.Kind {
		case patterns.IssueMissing:
			r.Missing = append(r.Missing, is)
		case patterns.IssueOrphan:
			r.Orphans = append(r.Orphans, is)
		case patterns.IssueStale:
			r.Stale = append(r.Stale, is)
		}
		return nil
	}
	sum, err := m.Verify(ctx, &o)
	r.VerifySummary = sum
	if err == nil && (len(r.Missing) != sum.Missing || len(r.Orphans) != sum.Orphans || len(r.Stale) != sum.Stale) {
		err = fmt.Errorf("integration: Verify's summary %+v does not count the issues it streamed: %d missing, %d orphans, %d stale", sum, len(r.Missing), len(r.Orphans), len(r.Stale))
	}
	return r, err
}

// repairOpts are opts (nil: the defaults) scoped as the Verify of r was.
func repairOpts(r *report, opts *patterns.RepairOptions) *patterns.RepairOptions {
	var o patterns.RepairOptions
	if opts != nil {
		o = *opts
	}
	if r != nil {
		o.Partition = r.Partition
	}
	return &o
}
