package table

import (
	"context"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
)

// Client is the part of *aztables.Client that tablekit uses: pass the client
// you already have. fake.TableService hands out real *aztables.Client values
// too, so this is also how tests plug in the in-memory service.
type Client interface {
	AddEntity(ctx context.Context, entity []byte, options *aztables.AddEntityOptions) (aztables.AddEntityResponse, error)
	GetEntity(ctx context.Context, partitionKey string, rowKey string, options *aztables.GetEntityOptions) (aztables.GetEntityResponse, error)
	UpdateEntity(ctx context.Context, entity []byte, options *aztables.UpdateEntityOptions) (aztables.UpdateEntityResponse, error)
	UpsertEntity(ctx context.Context, entity []byte, options *aztables.UpsertEntityOptions) (aztables.UpsertEntityResponse, error)
	DeleteEntity(ctx context.Context, partitionKey string, rowKey string, options *aztables.DeleteEntityOptions) (aztables.DeleteEntityResponse, error)
	NewListEntitiesPager(listOptions *aztables.ListEntitiesOptions) *runtime.Pager[aztables.ListEntitiesResponse]
	SubmitTransaction(ctx context.Context, transactionActions []aztables.TransactionAction, tableSubmitTransactionOptions *aztables.SubmitTransactionOptions) (aztables.TransactionResponse, error)
	CreateTable(ctx context.Context, options *aztables.CreateTableOptions) (aztables.CreateTableResponse, error)
	Delete(ctx context.Context, options *aztables.DeleteTableOptions) (aztables.DeleteTableResponse, error)
}

// ServiceClient is the part of *aztables.ServiceClient that tablekit uses:
// creating, deleting and listing tables.
type ServiceClient interface {
	CreateTable(ctx context.Context, name string, options *aztables.CreateTableOptions) (aztables.CreateTableResponse, error)
	DeleteTable(ctx context.Context, name string, options *aztables.DeleteTableOptions) (aztables.DeleteTableResponse, error)
	NewListTablesPager(listOptions *aztables.ListTablesOptions) *runtime.Pager[aztables.ListTablesResponse]
	NewClient(tableName string) *aztables.Client
}

// The official clients satisfy the ports with no adapter.
var (
	_ Client        = (*aztables.Client)(nil)
	_ ServiceClient = (*aztables.ServiceClient)(nil)
)
