package testenv

import (
	"fmt"
	"net/http"
	"slices"
	"sync"
)

// LocalOnly is a transport (a policy.Transporter) that sends a request only
// to the host Local names (an httptest server's) and refuses any other,
// recording every host it was asked for: a misrouted request is seen and
// never leaves the machine.
type LocalOnly struct {
	Local string // host:port

	mu    sync.Mutex
	hosts []string
}

// Do records the request's host and sends it when the host is Local.
func (l *LocalOnly) Do(req *http.Request) (*http.Response, error) {
	l.mu.Lock()
	l.hosts = append(l.hosts, req.URL.Host)
	l.mu.Unlock()
	if req.URL.Host != l.Local {
		return nil, fmt.Errorf("refused: a request to %s, not the connection string's endpoint", req.URL.Host)
	}
	return http.DefaultTransport.RoundTrip(req)
}

// Seen returns the hosts of every request so far, in order.
func (l *LocalOnly) Seen() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.hosts)
}
