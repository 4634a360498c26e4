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
// and leaves the SDK as 2). On the wire path (ClientOptions) the policy
// keeps the service's bytes and the SDK decodes a two-byte body instead of
// the entity; without it, the captured response's body is read.
// w remembers whether the client has the policy: once it is known to, the
// read takes no capture of the response (the policy keeps the bytes).
func getEntity(ctx context.Context, client Client, w *wirePath, partitionKey, rowKey string, opts *aztables.GetEntityOptions) (aztables.GetEntityResponse, []byte, error) {
	x := &wireExchange{}
	ctx = withWireExchange(ctx, x)
	var raw *http.Response
	if w.state.Load() != 1 {
		ctx = policy.WithCaptureResponse(ctx, &raw)
	}
	resp, err := client.GetEntity(ctx, partitionKey, rowKey, opts)
	if x.Invoked {
		w.learn(true)
	}
	if err != nil {
		return resp, nil, err
	}
	if x.Invoked && x.Response != nil {
		return resp, x.Response, nil
	}
	return resp, serviceBody(raw, resp.Value), nil
}
