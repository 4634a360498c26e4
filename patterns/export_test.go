package patterns

import "github.com/tablekit/tablekit/table"

// Test access to what the model keeps to itself: the ID a list holds for
// an entity, and the RowKey of a cross-partition copy.

func ID(partitionKey, rowKey string) string { return ownerRef(partitionKey, rowKey) }

func CrossCopyRowKey(value, partitionKey, rowKey string) (string, error) {
	return crossRowKey(value, partitionKey, rowKey)
}

// NewRemoteIndexEntities is the list of a ListDef with a Table, for
// tests that change a list around its model.
func NewRemoteIndexEntities(tbl *table.Table[table.Entity], partition, prefix string, opts *IndexEntitiesOptions) (*remoteIndexEntities, error) {
	return newRemoteIndexEntities(tbl, partition, prefix, opts)
}

// IndexEntitiesOptions configure NewRemoteIndexEntities.
type IndexEntitiesOptions = indexEntitiesOptions
