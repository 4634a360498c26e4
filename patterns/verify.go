package patterns

import (
	"context"
	"fmt"
	"strings"

	"github.com/tablekit/tablekit/internal/keyrules"
	"github.com/tablekit/tablekit/table"
)

// Verifier is the one verify-and-repair contract that every index kind and
// the entity model share: Verify reads and reports, Repair fixes what its
// own Verify reported. A report names the index (or model) it came from;
// Repair refuses another's report with a typed error before any request.
type verifier interface {
	Verify(ctx context.Context, opts *VerifyOptions) (*IndexReport, error)
	Repair(ctx context.Context, r *IndexReport, opts *RepairOptions) (RepairSummary, error)
}

// VerifyOptions configure the Verify of every index kind and of the model.
// nil means the defaults.
type VerifyOptions struct {
	// Partition limits Verify to the primaries of one PartitionKey and to
	// every index row that belongs to them or claims to, wherever that row
	// is stored, so a partition's Verify finds everything a whole-table
	// Verify finds for that partition. Default: "", every partition.
	Partition string
	// Progress, when set, is called after each page read with the number of
	// rows read so far. Default: nil.
	Progress func(read int)
}

// newReport starts the report of owner's Verify.
func newReport(owner any, name string, opts *VerifyOptions) *IndexReport {
	r := &IndexReport{Index: name, owner: owner}
	if opts != nil {
		r.Partition = opts.Partition
	}
	return r
}

// checkReport refuses a report that owner's Verify did not make: repairing
// with another index's (or model's) report would read nothing it needs and
// fix nothing, so it is a *table.InputError (table.ErrInvalidValue) before
// any request.
func checkReport(op string, owner any, r *IndexReport) error {
	if r == nil {
		return &table.InputError{Op: op, Field: "report", Rule: table.ErrNilValue}
	}
	if r.owner != owner {
		return &table.InputError{Op: op, Field: "report", Rule: table.ErrInvalidValue, Detail: fmt.Sprintf("the report of %s, which another index's Verify made", r.Index)}
	}
	return nil
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

// isIndexRow reports a row that some index of this package wrote: a copy
// (it names its owner) or an index entity (it holds an ID list). Such a
// row is never a primary, whatever table or RowKey it has.
func isIndexRow(e *table.Entity) bool {
	if _, ok := e.Get(indexOfProperty); ok {
		return true
	}
	_, ok := e.Get(idsProperty(0))
	return ok
}

// scanPartitions reads opts.Partition, or the whole table when it is "",
// and hands each partition's rows to f in PartitionKey order (one request
// a page); opts.Progress hears the rows read.
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

// compareIssues orders issues by partition, primary and copy, so a report
// reads the same on every run.
func compareIssues(a, b IndexIssue) int {
	if c := strings.Compare(a.PartitionKey, b.PartitionKey); c != 0 {
		return c
	}
	if c := strings.Compare(a.Primary, b.Primary); c != 0 {
		return c
	}
	return strings.Compare(a.Copy, b.Copy)
}
