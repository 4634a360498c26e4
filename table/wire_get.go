package table

import (
	"context"
	"net/http"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
)

// getEntity is client.GetEntity that also returns the entity as the
// service sent it. The SDK hands back the body re-encoded through
// map[string]any, which loses what the JSON itself says (an integral
// Double arrives as 2.0, the service's way of telling it from an Int32,
// and leaves the SDK as 2). With WirePolicy on the client the policy keeps
// the service's bytes and the SDK decodes a two-byte body instead of the
// entity; without it, the captured response's body is read.
func getEntity(ctx context.Context, client Client, partitionKey, rowKey string, opts *aztables.GetEntityOptions) (aztables.GetEntityResponse, []byte, error) {
	x := &WireExchange{}
	var raw *http.Response
	resp, err := client.GetEntity(policy.WithCaptureResponse(WithWireExchange(ctx, x), &raw), partitionKey, rowKey, opts)
	if err != nil {
		return resp, nil, err
	}
	if x.Invoked && x.Response != nil {
		return resp, x.Response, nil
	}
	return resp, serviceBody(raw, resp.Value), nil
}
