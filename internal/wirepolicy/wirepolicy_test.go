package wirepolicy

import (
	"bytes"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
)

// The table's URL comes from the first request line of the SDK's $batch
// body, whatever the operation: an insert (no keys, a query string), a
// keyed update, the placeholder delete.
func TestTableURL(t *testing.T) {
	const u = "http://127.0.0.1:10002/devstoreaccount1/Bench"
	head := "--batch_1\r\nContent-Type: multipart/mixed; boundary=changeset_1\r\n\r\n--changeset_1\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n"
	for _, line := range []string{
		"POST " + u + "?%24format=application%2Fjson%3Bodata%3Dminimalmetadata HTTP/1.1\r\n",
		"POST " + u + " HTTP/1.1\r\n",
		"PATCH " + u + "(PartitionKey='a',RowKey='b')?$format=x HTTP/1.1\r\n",
		"DELETE " + u + "(PartitionKey='O%27%27Brien',RowKey='r') HTTP/1.1\r\n",
	} {
		got, err := tableURL(streaming.NopCloser(bytes.NewReader([]byte(head + line + "Accept: application/json\r\n\r\n"))))
		if err != nil || got != u {
			t.Errorf("%q: %q %v", line, got, err)
		}
	}
	if _, err := tableURL(streaming.NopCloser(bytes.NewReader([]byte(head)))); err == nil {
		t.Error("a body without a request line gave a URL")
	}
}

// Add puts the policy first once, and leaves the caller's slice alone;
// Off keeps it out.
func TestAdd(t *testing.T) {
	co := azcore.ClientOptions{PerCallPolicies: []policy.Policy{Off{}}}
	Add(&co)
	if len(co.PerCallPolicies) != 1 {
		t.Fatalf("Off present: %d policies, want 1", len(co.PerCallPolicies))
	}
	co = azcore.ClientOptions{PerCallPolicies: []policy.Policy{nil}}
	Add(&co)
	Add(&co)
	if len(co.PerCallPolicies) != 2 {
		t.Fatalf("%d policies, want 2", len(co.PerCallPolicies))
	}
	if _, ok := co.PerCallPolicies[0].(Policy); !ok {
		t.Fatal("the policy is not first")
	}
}
