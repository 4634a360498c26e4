package table

import (
	"encoding/json"
	"fmt"
)

// pageEntities returns a query page's entities as the service's JSON:
// from the raw page WirePolicy kept (the SDK's pager then got an empty
// page and did no work), or, when the client has no WirePolicy, the ones
// the SDK decoded and marshalled again.
func pageEntities(x *WireExchange, sdk [][]byte) ([][]byte, error) {
	if !x.Invoked || x.Response == nil {
		return sdk, nil
	}
	var page struct {
		Value []json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(x.Response, &page); err != nil {
		return nil, fmt.Errorf("table: reading a query page: %w", err)
	}
	out := make([][]byte, len(page.Value))
	for i, v := range page.Value {
		out[i] = v
	}
	return out, nil
}
