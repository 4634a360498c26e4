package patterns

import "context"

// Verifier is the one verify-and-repair contract that every index kind and
// the entity model share: Verify reads and reports, Repair fixes what its
// own Verify reported. A report names the index (or model) it came from;
// Repair refuses another's report with a typed error before any request.
type Verifier interface {
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
