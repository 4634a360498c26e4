package accounts_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/accounts"
)

// recordingTransport answers every request 204 and keeps the last one.
type recordingTransport struct{ last *http.Request }

func (r *recordingTransport) Do(req *http.Request) (*http.Response, error) {
	r.last = req
	return &http.Response{StatusCode: http.StatusNoContent, Header: http.Header{}, Body: io.NopCloser(strings.NewReader("")), Request: req}, nil
}

// TestConnectionStringConnectsWithTheGivenOptions: the Connect it returns
// builds a client of the connection string's endpoint and key, with the
// options the Router gives it (here, the transport); a malformed string
// is an error.
func TestConnectionStringConnectsWithTheGivenOptions(t *testing.T) {
	const cs = "DefaultEndpointsProtocol=http;AccountName=east;AccountKey=Zm9vYmFy;TableEndpoint=http://127.0.0.1:10002/east;"
	rec := &recordingTransport{}
	svc, err := accounts.ConnectionString(cs)(&aztables.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: rec, Retry: policy.RetryOptions{MaxRetries: -1}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.DeleteTable(t.Context(), "Orders", nil); err != nil {
		t.Fatal(err)
	}
	if rec.last == nil {
		t.Fatal("the options' transport was not used")
	}
	if got := rec.last.URL.String(); !strings.HasPrefix(got, "http://127.0.0.1:10002/east/Tables('Orders')") {
		t.Errorf("request to %s, want the connection string's endpoint", got)
	}
	if auth := rec.last.Header.Get("Authorization"); !strings.HasPrefix(auth, "SharedKeyLite east:") {
		t.Errorf("Authorization %q, want the account's shared key", auth)
	}
	if _, err := accounts.ConnectionString("AccountName=east")(nil); err == nil {
		t.Error("a connection string without a key or endpoint connected")
	}
}
