package cli

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tablekit/tablekit/internal/testenv"
)

// TestConnAndAccountRefused: -conn and -account together name two
// accounts. The command exits 2 with one line and opens neither: the
// account is never built, so no request can be sent.
func TestConnAndAccountRefused(t *testing.T) {
	var hits int
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits++
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	conn := "AccountName=east;AccountKey=Zm9vYmFy;TableEndpoint=" + srv.URL + "/east;QueueEndpoint=" + srv.URL + "/east;BlobEndpoint=" + srv.URL + "/east"
	fakes, _ := fakeAccount()
	for _, args := range [][]string{
		{"-conn", conn, "-account", "prodacct", "poison", "list", "-queue", "work-poison"},
		{"-conn", conn, "poison", "list", "-account", "prodacct", "-queue", "work-poison"},
		{"poison", "list", "-queue", "work-poison", "-account", "prodacct", "-conn", conn},
		{"-json", "-account", "prodacct", "periods", "expire", "-prefix", "Logins", "-period", "daily", "-keep", "2", "-conn", conn},
	} {
		for _, hook := range []bool{true, false} {
			var out, errOut bytes.Buffer
			opened := 0
			accounts := func() (*account, error) { opened++; return fakes, nil }
			if !hook {
				accounts = nil // the real path: entraAccount or connAccount
			}
			code := run(t.Context(), args, &out, &errOut, func(string) string { return "" }, accounts, nil)
			line := errOut.String()
			if code != exitUsage || out.Len() != 0 || strings.Count(line, "\n") != 1 || !strings.Contains(line, "-conn and -account") {
				t.Errorf("tablekit %q (fake accounts %v): exit %d, want 2 and one line naming both flags; stdout %q, stderr %d bytes:\n%s", args, hook, code, out.String(), len(line), line)
			}
			if opened != 0 || fakes.ledger.Total() != 0 {
				t.Errorf("tablekit %q: opened the account %d times, %d requests; want none", args, opened, fakes.ledger.Total())
			}
		}
	}
	if hits != 0 {
		t.Errorf("the -conn endpoint saw %d requests, want 0", hits)
	}
}

// TestConnSASSendsToTheStringsEndpoints: with a SAS connection string
// naming a local endpoint for every service, the CLI's table, queue and
// blob requests all go there, each with the signature.
func TestConnSASSendsToTheStringsEndpoints(t *testing.T) {
	var mu sync.Mutex
	var signed []bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		signed = append(signed, r.URL.Query().Get("sig") != "" && strings.HasPrefix(r.URL.Path, "/east/"))
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	local := strings.TrimPrefix(srv.URL, "http://")
	conn := "AccountName=east;TableEndpoint=" + srv.URL + "/east;QueueEndpoint=" + srv.URL + "/east;BlobEndpoint=" + srv.URL + "/east;" +
		"SharedAccessSignature=sv=2022-11-02&ss=bqt&srt=sco&sp=rwdlacu&se=2099-01-01T00:00:00Z&sig=c2lnbmF0dXJl"
	guard := &testenv.LocalOnly{Local: local}
	a, err := connAccount(conn, guard)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	tc, err := a.table("Orders")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = tc.DeleteEntity(ctx, "pk", "rk", nil)
	svc, err := a.tables()
	if err != nil {
		t.Fatal(err)
	}
	_, _ = svc.DeleteTable(ctx, "Orders", nil)
	q, err := a.queue("orders")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = q.Delete(ctx, nil)
	b, err := a.blobs()
	if err != nil {
		t.Fatal(err)
	}
	_, _ = b.DeleteContainer(ctx, "orders", nil)
	if hosts := guard.Seen(); len(hosts) != 4 || slices.ContainsFunc(hosts, func(h string) bool { return h != local }) {
		t.Errorf("requests went to %v, want all four to the string's endpoint %s", hosts, local)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(signed) != 4 || slices.Contains(signed, false) {
		t.Errorf("the endpoint saw %d requests, signed and on its path: %v; want 4, all", len(signed), signed)
	}
}

// TestConnRefusedString: a connection string the CLI cannot honour, from
// the flag or the environment, is a usage error naming the setting, and
// no request is sent.
func TestConnRefusedString(t *testing.T) {
	for _, c := range []struct {
		args []string
		env  string
		says string
	}{
		{[]string{"-conn", "UseDevelopmentStorage=true", "poison", "list", "-queue", "work-poison"}, "", "UseDevelopmentStorage is not supported"},
		{[]string{"poison", "list", "-queue", "work-poison"}, "AccountName=east;AccountKey=Zm9vYmFy;SharedAccessSignature=sig=c2VjcmV0", "both AccountKey and SharedAccessSignature"},
	} {
		var out, errOut bytes.Buffer
		getenv := func(v string) string {
			if v == "TABLEKIT_CONNECTION_STRING" {
				return c.env
			}
			return ""
		}
		code := run(t.Context(), c.args, &out, &errOut, getenv, nil, nil)
		if code != exitUsage || !strings.Contains(errOut.String(), c.says) || strings.Contains(errOut.String(), "c2VjcmV0") {
			t.Errorf("tablekit %q: exit %d, want 2 saying %q:\n%s", c.args, code, c.says, errOut.String())
		}
	}
}
