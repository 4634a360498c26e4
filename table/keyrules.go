package table

import (
	"errors"

	"github.com/tablekit/tablekit/internal/keyrules"
)

// ErrEmptyPartitionKey: the entity's PartitionKey is empty. The service
// accepts it, but aztables v1.4.1 refuses to build a Get, Update, Merge,
// Upsert or Delete request for it (its generated request builders fail
// with "parameter partitionKey cannot be empty", in single calls and in
// batches alike), so an entity added with one could be read only by a
// query and never changed or removed through the SDK. tablekit therefore
// refuses an empty PartitionKey in every write, Get and Delete, before any
// request. Entities that other tools stored under "" are still returned by
// Query (Filter: Partition("")). An empty RowKey is fine everywhere.
var ErrEmptyPartitionKey = errors.New("empty PartitionKey (the Azure SDK cannot address it after Add)")

// checkEntityKeys is the key check of every write and point operation of
// Table: validateKeys, and a non-empty PartitionKey (ErrEmptyPartitionKey).
// Encoding alone (encodeValue) accepts "", which the service does.
func checkEntityKeys(op, typ, pk, rk string) error {
	if pk == "" {
		return inputErr(op, typ, "PartitionKey", ErrEmptyPartitionKey, "use a non-empty PartitionKey; Query(Partition(\"\")) reads entities stored under one")
	}
	return validateKeys(op, typ, pk, rk)
}

// validateKeys checks keys as the service does (keyrules.ValidatePartitionKey,
// keyrules.ValidateRowKey).
func validateKeys(op, typ, pk, rk string) error {
	if err := keyrules.ValidatePartitionKey(pk); err != nil {
		return &InputError{Op: op, Type: typ, Field: "PartitionKey", Rule: err}
	}
	if err := keyrules.ValidateRowKey(rk); err != nil {
		return &InputError{Op: op, Type: typ, Field: "RowKey", Rule: err}
	}
	return nil
}
