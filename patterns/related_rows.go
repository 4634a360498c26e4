package patterns

import (
	"context"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/internal/keyrules"
	"github.com/tablekit/tablekit/internal/tableio"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/table"
)

// RelatedRows stores rows related to a parent next to it, under compound
// RowKeys that start with the parent's (the guide's review rows
// "000123_2012" beside employee "000123"), so the parent and all its
// related rows come back with one range query, each decoded to its own Go
// type through a table.Registry ("Compound key pattern", "Modeling
// relationships"). Parent ids should have a fixed width (keys.FixedUint):
// the range also spans keys such as "0001230", which Read then drops.
type RelatedRows struct {
	client   table.Client
	registry *table.Registry
	keys     keys.Compound
}

// NewRelatedRows reads related rows through registry; sep joins the parts
// of a compound RowKey ("" means "_").
func NewRelatedRows(client table.Client, registry *table.Registry, sep string) *RelatedRows {
	return &RelatedRows{client: client, registry: registry, keys: keys.Compound{Sep: sep}}
}

// Key is the RowKey of a row related to parentID: "000123_2012".
func (r *RelatedRows) Key(parentID string, parts ...string) (string, error) {
	return r.keys.Join(append([]string{parentID}, parts...)...)
}

// Write stores a parent and its related rows in one transaction (they
// share the partition): one request, all or nothing. Each value is
// upserted (replace).
func (r *RelatedRows) Write(ctx context.Context, parent any, related []any, options *WriteOptions) error {
	ops := []batch.Op{batch.Upsert(parent, aztables.UpdateModeReplace)}
	for _, v := range related {
		ops = append(ops, batch.Upsert(v, aztables.UpdateModeReplace))
	}
	_, err := batch.Submit(ctx, r.client, ops, nil)
	return err
}

// Read returns the parent (RowKey parentID) and every related row, in
// RowKey order, with one range query (one request per page).
func (r *RelatedRows) Read(ctx context.Context, partitionKey, parentID string, options *ReadOptions) ([]any, error) {
	prefix, err := r.keys.Prefix(parentID)
	if err != nil {
		return nil, &table.InputError{Op: opRelatedRowsRead, Field: "parentID", Rule: err}
	}
	_, hi := keyrules.PrefixRange(prefix)
	var out []any
	for v, err := range r.registry.Query(ctx, r.client, &table.QueryOptions{Filter: table.RowRange(partitionKey, parentID, hi)}) {
		if err != nil {
			return nil, err
		}
		m, err := tableio.MetaOf(v)
		if err != nil {
			return nil, err
		}
		if m.RowKey == parentID || strings.HasPrefix(m.RowKey, prefix) {
			out = append(out, v)
		}
	}
	return out, nil
}
