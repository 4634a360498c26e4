package accounts_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/accounts"
	"github.com/tablekit/tablekit/internal/testenv"
)

// connect is the Config.Connect of cs, as a Router's caller makes it.
func connect(t *testing.T, cs string) func(*aztables.ClientOptions) (*aztables.ServiceClient, error) {
	t.Helper()
	c, err := accounts.ParseConnectionString(cs)
	if err != nil {
		t.Fatal(err)
	}
	return c.TableService
}

// recordingTransport answers every request 204 and keeps the last one.
type recordingTransport struct{ last *http.Request }

func (r *recordingTransport) Do(req *http.Request) (*http.Response, error) {
	r.last = req
	return &http.Response{StatusCode: http.StatusNoContent, Header: http.Header{}, Body: io.NopCloser(strings.NewReader("")), Request: req}, nil
}

// TestConnectionStringConnectsWithTheGivenOptions: a parsed string's
// TableService, a Config.Connect, builds a client of the connection
// string's endpoint and key, with the options the Router gives it (here,
// the transport); a string without a key or endpoint is an error.
func TestConnectionStringConnectsWithTheGivenOptions(t *testing.T) {
	const cs = "DefaultEndpointsProtocol=http;AccountName=east;AccountKey=Zm9vYmFy;TableEndpoint=http://127.0.0.1:10002/east;"
	rec := &recordingTransport{}
	svc, err := connect(t, cs)(&aztables.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: rec, Retry: policy.RetryOptions{MaxRetries: -1}}})
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
	if _, err := accounts.ParseConnectionString("AccountName=east"); err == nil {
		t.Error("a connection string without a key or endpoint connected")
	}
}

// sasServer is a local endpoint that answers every request 204 and
// records the host and query of each.
func sasServer(t *testing.T) (srv *httptest.Server, requests func() []*url.URL) {
	t.Helper()
	var mu sync.Mutex
	var got []*url.URL
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		u := *r.URL
		u.Host = r.Host
		got = append(got, &u)
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []*url.URL {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(got)
	}
}

// sasConnectionString names the local endpoint for every service and
// carries a SAS, as the portal's "SAS and connection string" does; the
// AccountName is the one the SDK derives a public host from.
func sasConnectionString(endpoint string) string {
	return "AccountName=east;TableEndpoint=" + endpoint + "/east;QueueEndpoint=" + endpoint + "/east;BlobEndpoint=" + endpoint + "/east;SharedAccessSignature=sv=2022-11-02&ss=bqt&srt=sco&sp=rwdlacu&se=2099-01-01T00:00:00Z&sig=c2lnbmF0dXJl"
}

// TestConnectionStringSASKeepsTableEndpoint: with a SharedAccessSignature
// every table request goes to the string's TableEndpoint, the signature
// attached. aztables.NewServiceClientFromConnectionString sends them to
// https://ACCOUNT.table.core.windows.net instead, which the second half
// shows (so the test notices if the SDK ever changes).
func TestConnectionStringSASKeepsTableEndpoint(t *testing.T) {
	srv, requests := sasServer(t)
	local := strings.TrimPrefix(srv.URL, "http://")
	cs := sasConnectionString(srv.URL)
	opts := func(tr policy.Transporter) *aztables.ClientOptions {
		return &aztables.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: tr, Retry: policy.RetryOptions{MaxRetries: -1}}}
	}

	guard := &testenv.LocalOnly{Local: local}
	svc, err := connect(t, cs)(opts(guard))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = svc.DeleteTable(t.Context(), "Orders", nil)
	_, _ = svc.NewClient("Orders").DeleteEntity(t.Context(), "pk", "rk", nil)
	if hosts := guard.Seen(); len(hosts) != 2 || hosts[0] != local || hosts[1] != local {
		t.Errorf("table requests went to %v, want both to the TableEndpoint %s", hosts, local)
	}
	for _, u := range requests() {
		if !strings.HasPrefix(u.Path, "/east/") || u.Query().Get("sig") == "" {
			t.Errorf("request %s: want the TableEndpoint's path and the SAS", u.Redacted())
		}
	}

	// The unguarded SDK path: the same string, another host.
	sdk := &testenv.LocalOnly{Local: local}
	raw, err := aztables.NewServiceClientFromConnectionString(cs, opts(sdk))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = raw.DeleteTable(t.Context(), "Orders", nil)
	if hosts := sdk.Seen(); len(hosts) != 1 || hosts[0] != "east.table.core.windows.net" {
		t.Errorf("aztables sent the request to %v; this test expects it to ignore TableEndpoint", hosts)
	}
}

// TestConnectionSendsEachServiceToItsEndpoint: a SAS string's table, queue
// and blob clients all send to the endpoints the string names, each with
// the signature.
func TestConnectionSendsEachServiceToItsEndpoint(t *testing.T) {
	srv, requests := sasServer(t)
	local := strings.TrimPrefix(srv.URL, "http://")
	c, err := accounts.ParseConnectionString(sasConnectionString(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	guard := &testenv.LocalOnly{Local: local}
	base := azcore.ClientOptions{Transport: guard, Retry: policy.RetryOptions{MaxRetries: -1}}
	tables, err := c.TableService(&aztables.ClientOptions{ClientOptions: base})
	if err != nil {
		t.Fatal(err)
	}
	queues, err := c.QueueService(&azqueue.ClientOptions{ClientOptions: base})
	if err != nil {
		t.Fatal(err)
	}
	blobs, err := c.BlobService(&azblob.ClientOptions{ClientOptions: base})
	if err != nil {
		t.Fatal(err)
	}
	_, _ = tables.DeleteTable(t.Context(), "Orders", nil)
	_, _ = queues.DeleteQueue(t.Context(), "orders", nil)
	_, _ = blobs.DeleteContainer(t.Context(), "orders", nil)
	if hosts := guard.Seen(); len(hosts) != 3 || slices.ContainsFunc(hosts, func(h string) bool { return h != local }) {
		t.Errorf("requests went to %v, want all three to %s", hosts, local)
	}
	if got := requests(); len(got) != 3 {
		t.Errorf("the endpoint saw %d requests, want 3", len(got))
	}
	for _, u := range requests() {
		if !strings.HasPrefix(u.Path, "/east/") || u.Query().Get("sig") == "" {
			t.Errorf("request %s: want the endpoint's path and the SAS", u.Redacted())
		}
	}
	if s := fmt.Sprintf("%v %#v", c, c); strings.Contains(s, "c2lnbmF0dXJl") {
		t.Errorf("printing a Connection shows the signature: %s", s)
	}
}

// TestParseConnectionStringRefuses: a string that cannot be honoured as
// written is ErrBadConfig, named by setting and never quoting a
// key or signature.
func TestParseConnectionStringRefuses(t *testing.T) {
	const key = "Zm9vYmFy"
	const sas = "sv=2022-11-02&sig=c2VjcmV0"
	for _, c := range []struct{ cs, says string }{
		{"", "no AccountKey or SharedAccessSignature"},
		{"AccountName=east", "no AccountKey or SharedAccessSignature"},
		{"AccountName=east;AccountKey=" + key + ";SharedAccessSignature=" + sas, "both AccountKey and SharedAccessSignature"},
		{"AccountKey=" + key, "AccountKey without AccountName"},
		{"AccountName=east;AccountKey=not*base64", "AccountKey is not base64"},
		{"AccountName=east;SharedAccessSignature=sv=2022-11-02", "has no signature"},
		{"AccountName=east;AccountName=west;AccountKey=" + key, "AccountName is given twice"},
		{"AccountName=east;TableEndPoint=http://x/;AccountKey=" + key + ";tableendpoint=http://y/", "TableEndpoint is given twice"},
		{"AccountName=east;TabelEndpoint=http://127.0.0.1/;AccountKey=" + key, `unknown setting "TabelEndpoint"`},
		{"UseDevelopmentStorage=true", "UseDevelopmentStorage is not supported"},
		{"AccountName=east;AccountKey=" + key + ";DefaultEndpointsProtocol=ftp", "neither http nor https"},
		{"AccountName=east;AccountKey=" + key + ";TableEndpoint=127.0.0.1:10002", "TableEndpoint is not an http or https URL"},
		{"SharedAccessSignature=" + sas + ";TableEndpoint=https://east.table.core.windows.net/?" + sas, "TableEndpoint is not an http or https URL"},
		{"AccountName=east;" + key + ";AccountKey=" + key, "part 2 is not Name=value"},
		{"AccountName=east;AccountKey=" + key + ";c2Vj/cmV0+=", "part 3 is not a setting"},
	} {
		_, err := accounts.ParseConnectionString(c.cs)
		if !errors.Is(err, accounts.ErrBadConfig) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%q: %v, want ErrBadConfig saying %q", c.cs, err, c.says)
			continue
		}
		if strings.Contains(err.Error(), key) || strings.Contains(err.Error(), "c2VjcmV0") {
			t.Errorf("%q: the error quotes a secret: %v", c.cs, err)
		}
	}

	// A SAS for blobs only parses; its table client is refused, not sent
	// to a host the string does not name.
	c, err := accounts.ParseConnectionString("BlobEndpoint=https://east.blob.core.windows.net/;SharedAccessSignature=" + sas)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.TableService(nil); !errors.Is(err, accounts.ErrBadConfig) || !strings.Contains(err.Error(), "no TableEndpoint") {
		t.Errorf("table client of a blob-only SAS: %v, want ErrBadConfig", err)
	}
	if _, err := c.BlobService(nil); err != nil {
		t.Errorf("blob client of a blob-only SAS: %v", err)
	}
}

// TestConnectionOnAzurite: the emulator's string (AccountKey and explicit
// endpoints) and a SAS string made from it reach Azurite's three
// services; the SAS string's table requests through aztables'
// own constructor do not.
func TestConnectionOnAzurite(t *testing.T) {
	cs := testenv.ConnectionString(t)
	ctx := t.Context()
	c, err := accounts.ParseConnectionString(cs)
	if err != nil {
		t.Fatal(err)
	}
	var name, key string
	endpoints := map[string]string{}
	for _, kv := range strings.Split(cs, ";") {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "AccountName":
			name = v
		case "AccountKey":
			key = v
		case "TableEndpoint", "QueueEndpoint", "BlobEndpoint":
			endpoints[k] = v
		}
	}
	cred, err := aztables.NewSharedKeyCredential(name, key)
	if err != nil {
		t.Fatal(err)
	}
	sas, err := aztables.AccountSASSignatureValues{
		Protocol: aztables.SASProtocolHTTPSandHTTP, ExpiryTime: time.Now().Add(time.Hour),
		Permissions: "rwdlacu", Services: "bqt", ResourceTypes: "sco",
	}.Sign(cred)
	if err != nil {
		t.Fatal(err)
	}
	sasCS := "AccountName=" + name + ";TableEndpoint=" + endpoints["TableEndpoint"] + ";QueueEndpoint=" + endpoints["QueueEndpoint"] +
		";BlobEndpoint=" + endpoints["BlobEndpoint"] + ";SharedAccessSignature=" + sas.Encode()
	s, err := accounts.ParseConnectionString(sasCS)
	if err != nil {
		t.Fatal(err)
	}
	for label, conn := range map[string]*accounts.Connection{"key": c, "SAS": s} {
		suffix := strings.ToLower(testenv.UniqueName("conn"))
		tables, err := conn.TableService(nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tables.CreateTable(ctx, suffix, nil); err != nil {
			t.Errorf("%s: create table: %v", label, err)
		} else {
			_, _ = tables.DeleteTable(ctx, suffix, nil)
		}
		queues, err := conn.QueueService(nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := queues.CreateQueue(ctx, suffix, nil); err != nil {
			t.Errorf("%s: create queue: %v", label, err)
		} else {
			_, _ = queues.DeleteQueue(ctx, suffix, nil)
		}
		blobs, err := conn.BlobService(nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := blobs.CreateContainer(ctx, suffix, nil); err != nil {
			t.Errorf("%s: create container: %v", label, err)
		} else {
			_, _ = blobs.DeleteContainer(ctx, suffix, nil)
		}
	}

	// The same SAS string through accounts.ParseConnectionString reaches
	// Azurite; through aztables' constructor it is sent elsewhere.
	tableHost := strings.TrimPrefix(strings.TrimPrefix(endpoints["TableEndpoint"], "http://"), "https://")
	tableHost, _, _ = strings.Cut(tableHost, "/")
	opts := func(tr policy.Transporter) *aztables.ClientOptions {
		return &aztables.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: tr, Retry: policy.RetryOptions{MaxRetries: -1}}}
	}
	ours := &testenv.LocalOnly{Local: tableHost}
	svc, err := connect(t, sasCS)(opts(ours))
	if err != nil {
		t.Fatal(err)
	}
	pager := svc.NewListTablesPager(nil)
	if _, err := pager.NextPage(ctx); err != nil {
		t.Errorf("list tables with the SAS string: %v", err)
	}
	theirs := &testenv.LocalOnly{Local: tableHost}
	raw, err := aztables.NewServiceClientFromConnectionString(sasCS, opts(theirs))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = raw.NewListTablesPager(nil).NextPage(ctx)
	if got := ours.Seen(); len(got) != 1 || got[0] != tableHost {
		t.Errorf("accounts.Connection sent to %v, want %s", got, tableHost)
	}
	if got := theirs.Seen(); len(got) != 1 || got[0] == tableHost {
		t.Errorf("aztables sent to %v; this test expects it to ignore TableEndpoint", got)
	}
}
