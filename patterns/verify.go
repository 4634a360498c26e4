package patterns

import (
	"context"
	"fmt"
	"strings"

	"github.com/tablekit/tablekit/internal/keyrules"
	"github.com/tablekit/tablekit/internal/rowkind"
	"github.com/tablekit/tablekit/table"
)

// verifier is the one verify-and-repair contract that every index kind
// shares under the entity model: verify reads range by range (a partition,
// or a page) and hands each range's findings to each as soon as the range
// is read; repair fixes one such range. Nothing of a range is kept after
// each returns, so memory is bounded by a range, not by the table.
type verifier interface {
	verify(ctx context.Context, opts *VerifyOptions, each func(*verifyRange) error) error
	repair(ctx context.Context, r *verifyRange, opts *RepairOptions) (RepairSummary, error)
}

// VerifyOptions configure Model.Verify, and Model.Repair's verify. nil
// means the defaults.
type VerifyOptions struct {
	// Partition limits Verify to the primaries of one PartitionKey and to
	// every index row that belongs to them or claims to, wherever that row
	// is stored, so a partition's Verify finds everything a whole-table
	// Verify finds for that partition. Default: "", every partition.
	Partition string
	// Indexes names the declared indexes to check; a name the model does
	// not declare is refused before any request. Default: nil, every
	// index.
	Indexes []string
	// Issue, when set, is handed each issue as it is found, in the order
	// the ranges are read; an error it returns ends the run with that
	// error. Issues are not kept: the summary counts them. Default: nil.
	Issue func(IndexIssue) error
	// Progress, when set, is called after each page read with the number of
	// rows read so far. Default: nil.
	Progress func(read int)
}

// IssueKind says how an index row disagrees with its primary.
type IssueKind string

// IssueMissing: a primary lacks the index row its value calls for (also
// every row of an index added to an existing table).
const IssueMissing IssueKind = "missing"

// IssueOrphan: an index row whose primary does not exist or no longer
// calls for it.
const IssueOrphan IssueKind = "orphan"

// IssueStale: an index row in its place whose values differ from its
// primary's (for a list: an ID listed twice).
const IssueStale IssueKind = "stale"

// VerifySummary is what a Verify read and found, counted: the issues
// themselves went to VerifyOptions.Issue as they were found.
type VerifySummary struct {
	// Partition is VerifyOptions.Partition: "" for the whole table.
	Partition string
	// Primaries is the primaries verified; IndexRows the index rows
	// judged (copies, and the IDs the lists hold).
	Primaries, IndexRows int
	// Missing, Orphans and Stale count the issues of each kind.
	Missing, Orphans, Stale int
	// ByIndex counts the issues by declared index and kind; nil when
	// there are none.
	ByIndex map[string]map[IssueKind]int
}

// OK reports a Verify that found no issue.
func (s VerifySummary) OK() bool { return s.Missing+s.Orphans+s.Stale == 0 }

// count adds one issue to the summary.
func (s *VerifySummary) count(is IndexIssue) {
	switch is.Kind {
	case IssueMissing:
		s.Missing++
	case IssueOrphan:
		s.Orphans++
	case IssueStale:
		s.Stale++
	}
	if s.ByIndex == nil {
		s.ByIndex = map[string]map[IssueKind]int{}
	}
	if s.ByIndex[is.Index] == nil {
		s.ByIndex[is.Index] = map[IssueKind]int{}
	}
	s.ByIndex[is.Index][is.Kind]++
}

// newRange starts the findings of one range of owner's verify.
func newRange(owner any, name string, opts *VerifyOptions) *verifyRange {
	r := &verifyRange{Index: name, owner: owner}
	if opts != nil {
		r.Partition = opts.Partition
	}
	return r
}

// checkVerifyOptions refuses a Partition the service would refuse.
func checkVerifyOptions(op string, opts *VerifyOptions) error {
	if opts == nil || opts.Partition == "" {
		return nil
	}
	if err := keyrules.ValidatePartitionKey(opts.Partition); err != nil {
		return &table.InputError{Op: op, Field: "Partition", Rule: err}
	}
	return nil
}

// isMarkedRow reports a row that this package wrote beside the primaries:
// a copy (it names its owner), an index entity (it holds an ID list), or
// any other row marked with its kind (a model's control or checkpoint
// row; a log tail's entry, a shard's append, a data series, a wide
// entity's part, a large entity). Such a row is never a primary, whatever
// table or RowKey it has. A scan that selects properties must select
// both marks (markProps).
func isMarkedRow(e *table.Entity) bool {
	if _, ok := e.Get(indexOfProperty); ok {
		return true
	}
	if _, ok := e.Get(rowkind.Property); ok {
		return true
	}
	_, ok := e.Get(idsProperty(0))
	return ok
}

// markProps are the properties isMarkedRow reads.
func markProps() []string { return []string{indexOfProperty, rowkind.Property} }

// scanPartitions reads opts.Partition, or the whole table when it is "",
// and hands each partition's rows to f in PartitionKey order (one request
// a page); opts.Progress hears the rows read. One partition's rows are
// held at a time.
func scanPartitions(ctx context.Context, raw *table.Table[table.Entity], opts *VerifyOptions, f func(pk string, rows []*table.Entity) error) error {
	q := &table.QueryOptions{}
	var progress func(int)
	if opts != nil {
		if opts.Partition != "" {
			q.Filter = table.Partition(opts.Partition)
		}
		progress = opts.Progress
	}
	var rows []*table.Entity
	cur, read := "", 0
	for e, err := range raw.Query(ctx, q) {
		if err != nil {
			return err
		}
		if len(rows) > 0 && e.PartitionKey != cur {
			if err := f(cur, rows); err != nil {
				return err
			}
			rows = nil
		}
		cur = e.PartitionKey
		rows = append(rows, e)
		read++
		if progress != nil && read%1000 == 0 {
			progress(read)
		}
	}
	if progress != nil {
		progress(read)
	}
	if len(rows) > 0 {
		return f(cur, rows)
	}
	return nil
}

// compareIssues orders issues by partition, primary and copy, so a range's
// issues come in the same order on every run.
func compareIssues(a, b IndexIssue) int {
	if c := strings.Compare(a.PartitionKey, b.PartitionKey); c != 0 {
		return c
	}
	if c := strings.Compare(a.Primary, b.Primary); c != 0 {
		return c
	}
	return strings.Compare(a.Copy, b.Copy)
}

// checkIndexes refuses names that are not among the declared ones.
func checkIndexes(op string, names []string, declared []string) error {
	for _, n := range names {
		found := false
		for _, d := range declared {
			found = found || d == n
		}
		if !found {
			return &table.InputError{Op: op, Field: "Indexes", Rule: ErrUnknownIndex, Detail: fmt.Sprintf("%q is not an index of the model (%s)", n, strings.Join(declared, ", "))}
		}
	}
	return nil
}
