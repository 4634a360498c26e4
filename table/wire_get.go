package table

import (
	"context"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
)

// getEntity is client.GetEntity that, when the client has WirePolicy,
// returns the service's own bytes as Value: the SDK then decodes a
// two-byte-long page into its map and marshals it back, instead of the
// entity. Without the policy it is client.GetEntity. (Table.Get and the
// read of Modify call client.GetEntity directly today; switching them to
// getEntity is the whole change.)
func getEntity(ctx context.Context, client Client, partitionKey, rowKey string, opts *aztables.GetEntityOptions) (aztables.GetEntityResponse, error) {
	x := &WireExchange{}
	resp, err := client.GetEntity(WithWireExchange(ctx, x), partitionKey, rowKey, opts)
	if err == nil && x.Invoked && x.Response != nil {
		resp.Value = x.Response
	}
	return resp, err
}
