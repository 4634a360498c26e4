// Package batchraw builds a transaction operation on an entity already
// encoded as the service's JSON: how tablekit's own packages put a value
// encoded by a Table's plumbing (internal/tableio: encrypted fields
// sealed, an index copy's projection) into a batch.Transaction. Users
// build operations from values with batch.Add, Upsert, Update, Delete and
// DeleteValue.
package batchraw

import (
	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/internal/batchhook"
)

// Op is an operation of kind on entity, the service's JSON (it must hold
// PartitionKey and RowKey). ifMatch guards updates and deletes; nil means
// any version. The entity is checked like a typed value's (names, EDM
// types and values, sizes, keys) when the operation joins a transaction.
func Op(kind batch.Kind, entity []byte, ifMatch *azcore.ETag) batch.Op {
	return batchhook.Raw(int(kind), entity, ifMatch).(batch.Op)
}
