// Package fakehttp serves the in-memory fakes over HTTP, so that the child
// processes of a multi-process test share one account, and gives a child's
// clients the transport that reaches them.
package fakehttp

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
)

// header names the service a forwarded request is for.
const header = "X-Fake-Service"

// Service is one fake served: Name is what a Transport for it sends,
// Fake the service itself and URL its endpoint (the fake's URL method).
type Service struct {
	Name string
	Fake policy.Transporter
	URL  string
}

// Serve serves the services over HTTP until tb ends and returns the
// server's URL, which child processes pass to Transport.
func Serve(tb testing.TB, services ...Service) string {
	byName := map[string]Service{}
	for _, s := range services {
		byName[s.Name] = s
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s, ok := byName[r.Header.Get(header)]
		if !ok {
			http.Error(w, "no "+header, http.StatusBadRequest)
			return
		}
		body, _ := io.ReadAll(r.Body)
		req, err := http.NewRequestWithContext(r.Context(), r.Method, strings.TrimSuffix(s.URL, "/")+r.URL.RequestURI(), bytes.NewReader(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		req.Header = r.Header.Clone()
		req.ContentLength = int64(len(body))
		resp, err := s.Fake.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	}))
	tb.Cleanup(srv.Close)
	return srv.URL
}

// Transport sends a request made for the fake service name to the server
// at base that Serve started (in another process).
func Transport(base, service string) policy.Transporter {
	return forward{base: base, service: service}
}

type forward struct{ base, service string }

// client keeps connections to the server open for the many requests a
// child sends at once.
var client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}

func (f forward) Do(req *http.Request) (*http.Response, error) {
	out := req.Clone(req.Context())
	out.URL.Scheme, out.URL.Host = "http", strings.TrimPrefix(f.base, "http://")
	out.Host = out.URL.Host
	out.RequestURI = ""
	out.Header.Set(header, f.service)
	return client.Do(out)
}

// Child is the start of a child process's test: the spec its parent put
// in the environment variable env as JSON, and a context that ends at
// SIGTERM. Started without it (by go test itself), the test is skipped,
// saying it is one of what's processes.
func Child[S any](t *testing.T, env, what string) (S, context.Context) {
	var s S
	raw := os.Getenv(env)
	if raw == "" {
		t.Skip("a process of " + what + "; started by it")
	}
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		t.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	t.Cleanup(stop)
	return s, ctx
}
