//go:build unix

// On other systems every request goes through net/http (quiet_other.go),
// and these tests of the transport's own path do not apply.

package http11

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// server is an httptest server that counts the connections its clients
// opened, and tells which it saw closed.
type server struct {
	*httptest.Server
	opened atomic.Int32
	closed chan net.Conn
}

func newServer(t *testing.T, h http.HandlerFunc, tlsToo bool) *server {
	s := &server{closed: make(chan net.Conn, 16)}
	s.Server = httptest.NewUnstartedServer(h)
	s.Config.ConnState = func(c net.Conn, st http.ConnState) {
		switch st {
		case http.StateNew:
			s.opened.Add(1)
		case http.StateClosed, http.StateHijacked:
			select {
			case s.closed <- c:
			default:
			}
		}
	}
	if tlsToo {
		s.StartTLS()
	} else {
		s.Start()
	}
	t.Cleanup(s.Close)
	return s
}

// key is the pool's key of s's connections.
func (s *server) key() hostKey { return hostKey{host: strings.TrimPrefix(s.URL, "http://")} }

// get sends a GET and returns the body read to its end.
func get(t *testing.T, tr *Transport, u string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := tr.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp, string(b)
}

func TestReusesOneConnectionForSequentialRequests(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello %s", r.URL.Query().Get("n"))
	}, false)
	tr := New()
	for i := range 5 {
		resp, b := get(t, tr, fmt.Sprintf("%s/x?n=%d", s.URL, i))
		if resp.StatusCode != 200 || b != fmt.Sprintf("hello %d", i) {
			t.Fatalf("request %d: %d %q", i, resp.StatusCode, b)
		}
	}
	if n := s.opened.Load(); n != 1 {
		t.Errorf("5 requests one after another opened %d connections, want 1", n)
	}
}

// The request's method, headers and body reach the server as the SDK set
// them, and the response's status and headers come back.
func TestSendsMethodHeadersAndBody(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Echo-Method", r.Method)
		w.Header().Set("X-Echo-Auth", r.Header.Get("Authorization"))
		w.Header().Set("X-Echo-Length", fmt.Sprint(r.ContentLength))
		w.WriteHeader(http.StatusCreated)
		w.Write(b)
	}, false)
	tr := New()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, s.URL+"/Tables", strings.NewReader(`{"TableName":"t"}`))
	req.Header.Set("Authorization", "SharedKey a:b")
	resp, err := tr.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || string(b) != `{"TableName":"t"}` ||
		resp.Header.Get("X-Echo-Method") != "POST" || resp.Header.Get("X-Echo-Auth") != "SharedKey a:b" || resp.Header.Get("X-Echo-Length") != "17" {
		t.Errorf("got %d %q %v", resp.StatusCode, b, resp.Header)
	}
}

// A chunked body is read to its end, and the connection is reused after.
func TestChunkedBody(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		for i := range 3 {
			fmt.Fprintf(w, "part%d;", i)
			w.(http.Flusher).Flush()
		}
	}, false)
	tr := New()
	for range 2 {
		resp, b := get(t, tr, s.URL)
		if b != "part0;part1;part2;" || len(resp.TransferEncoding) != 1 {
			t.Fatalf("got %q, transfer encoding %v", b, resp.TransferEncoding)
		}
	}
	if n := s.opened.Load(); n != 1 {
		t.Errorf("opened %d connections, want 1", n)
	}
}

// A server's "Connection: close" is obeyed: the next request dials anew.
func TestConnectionCloseIsNotPooled(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		io.WriteString(w, "bye")
	}, false)
	tr := New()
	get(t, tr, s.URL)
	get(t, tr, s.URL)
	if n := s.opened.Load(); n != 2 {
		t.Errorf("opened %d connections, want 2", n)
	}
	if len(tr.idle[s.key()]) != 0 {
		t.Errorf("a closed connection was pooled")
	}
}

// An idle connection the server has closed is not used: the next request
// opens another and succeeds, where writing on the closed one would fail.
func TestServerClosedIdleConnectionIsNotUsed(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }, false)
	tr := New()
	get(t, tr, s.URL)
	s.CloseClientConnections()
	waitClosed(t, s)
	// The server's close has reached the client's socket once a
	// non-blocking read there sees it.
	k := s.key()
	c := tr.idle[k][0]
	deadline := time.Now().Add(5 * time.Second)
	for quiet(c.tcp, c.probe[:]) {
		if time.Now().After(deadline) {
			t.Fatal("the server's close never reached the client's socket")
		}
		time.Sleep(time.Millisecond)
	}
	if resp, b := get(t, tr, s.URL); b != "ok" || resp.StatusCode != 200 {
		t.Fatalf("got %d %q", resp.StatusCode, b)
	}
	if n := s.opened.Load(); n != 2 {
		t.Errorf("opened %d connections, want 2", n)
	}
	if err := c.nc.Close(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("the dead connection was left open (Close: %v)", err)
	}
}

// A connection's idle timer that fires after a request took it from the
// pool (its Stop came too late) leaves it open: expire closes only what
// is still idle.
func TestExpireLeavesATakenConnection(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }, false)
	tr := New()
	get(t, tr, s.URL)
	k := s.key()
	c := tr.take(k)
	if c == nil {
		t.Fatal("nothing pooled")
	}
	tr.expire(c) // the timer's function, run after the take
	tr.put(c)
	if _, b := get(t, tr, s.URL); b != "ok" {
		t.Fatalf("got %q", b)
	}
	if n := s.opened.Load(); n != 1 {
		t.Errorf("opened %d connections, want 1: expire closed a connection in use", n)
	}
}

// hold keeps a handler until the client closes its connection (the
// server then ends the request's context) or the test releases it.
func hold(r *http.Request, release <-chan struct{}) {
	select {
	case <-r.Context().Done():
	case <-release:
	}
}

func waitClosed(t *testing.T, s *server) {
	t.Helper()
	select {
	case <-s.closed:
	case <-time.After(5 * time.Second):
		t.Fatal("the server closed no connection")
	}
}

// A body closed before its end closes its connection: the rest would
// have to be read before the next request.
func TestBodyClosedEarlyIsNotPooled(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, strings.Repeat("x", 64<<10))
	}, false)
	tr := New()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, s.URL, nil)
	resp, err := tr.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := resp.Body.Read(make([]byte, 10)); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if n, err := resp.Body.Read(make([]byte, 10)); n != 0 || !errors.Is(err, errBodyClosed) {
		t.Errorf("read after Close: %d, %v", n, err)
	}
	waitClosed(t, s) // closed by the client, not left open
	get(t, tr, s.URL)
	if n := s.opened.Load(); n != 2 {
		t.Errorf("opened %d connections, want 2", n)
	}
}

// A response without a body (204, HEAD) gives its connection back at
// once, body read or not.
func TestNoBodyPoolsAtOnce(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}, false)
	tr := New()
	for range 3 {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodDelete, s.URL, nil)
		resp, err := tr.Do(req)
		if err != nil || resp.StatusCode != http.StatusNoContent {
			t.Fatal(resp, err)
		}
		// Body neither read nor closed.
	}
	if n := s.opened.Load(); n != 1 {
		t.Errorf("opened %d connections, want 1", n)
	}
}

// A context that ends while the server has not answered ends the request
// with the context's error, and its connection is not pooled.
func TestContextEndsWhileWaitingForTheAnswer(t *testing.T) {
	got, release := make(chan struct{}), make(chan struct{})
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			close(got)
			hold(r, release)
		}
		io.WriteString(w, "ok")
	}, false)
	defer close(release)
	tr := New()
	get(t, tr, s.URL) // one pooled connection
	ctx, cancel := context.WithCancel(t.Context())
	go func() { <-got; cancel() }()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/slow", nil)
	_, err := tr.Do(req)
	var ue *url.Error
	if !errors.Is(err, context.Canceled) || !errors.As(err, &ue) || ue.Op != "Get" {
		t.Fatalf("got %v, want a *url.Error around context.Canceled", err)
	}
	waitClosed(t, s) // the cancelled request's connection, closed
	get(t, tr, s.URL)
	if n := s.opened.Load(); n != 2 {
		t.Errorf("opened %d connections, want 2: the cancelled one was pooled", n)
	}
}

// A context that ends while the body is read ends the read with the
// context's error.
func TestContextEndsWhileReadingTheBody(t *testing.T) {
	release := make(chan struct{})
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "first;")
		w.(http.Flusher).Flush()
		hold(r, release)
		io.WriteString(w, "second")
	}, false)
	defer close(release)
	tr := New()
	ctx, cancel := context.WithCancel(t.Context())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL, nil)
	resp, err := tr.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 6)
	if _, err := io.ReadFull(resp.Body, buf); err != nil || string(buf) != "first;" {
		t.Fatalf("%q %v", buf, err)
	}
	cancel()
	if _, err := io.ReadAll(resp.Body); !errors.Is(err, context.Canceled) {
		t.Errorf("read after cancel: %v, want context.Canceled", err)
	}
	waitClosed(t, s) // by the failed read, before any Close
}

// A context already ended sends nothing.
func TestEndedContextSendsNothing(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/ok" {
			t.Error("the server got the ended request")
		}
	}, false)
	tr := New()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL, nil)
	if _, err := tr.Do(req); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
	if n := s.opened.Load(); n != 0 {
		t.Errorf("opened %d connections, want 0", n)
	}
	// Nor does it spend a pooled connection.
	ok := New()
	get(t, ok, s.URL+"/ok")
	if _, err := ok.Do(req); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
	get(t, ok, s.URL+"/ok")
	if n := s.opened.Load(); n != 1 {
		t.Errorf("opened %d connections, want 1: the ended request closed the pooled one", n)
	}
}

// An idle connection is closed after idleFor.
func TestIdleConnectionIsClosedAfterIdleFor(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }, false)
	tr := New()
	tr.idleFor = 20 * time.Millisecond
	get(t, tr, s.URL)
	get(t, tr, s.URL) // reused: its timer must be armed again
	waitClosed(t, s)
	tr.mu.Lock()
	n := 0
	for _, l := range tr.idle {
		n += len(l)
	}
	tr.mu.Unlock()
	if n != 0 {
		t.Errorf("%d connections still pooled after they were closed", n)
	}
}

// The pool keeps at most maxIdleConnsPerHost (the SDK's 10) connections a
// host and closes the rest.
func TestPoolKeepsMaxIdlePerHost(t *testing.T) {
	s, tr := atOnce(t, maxIdleConnsPerHost+1)
	waitClosed(t, s)
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if n := len(tr.idle[s.key()]); n != 10 {
		t.Errorf("%d idle connections pooled, want 10", n)
	}
}

// atOnce sends n requests to a new server at once, through a new
// Transport, each on a connection of its own (the server answers none
// before it holds all n), and reads their answers.
func atOnce(t *testing.T, n int) (*server, *Transport) {
	var inside sync.WaitGroup
	inside.Add(n)
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		inside.Done()
		inside.Wait()
		io.WriteString(w, "ok")
	}, false)
	tr := New()
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			resp, err := tr.Do(mustRequest(t, s.URL))
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		})
	}
	wg.Wait()
	return s, tr
}

// An interim 100 Continue is skipped for the answer after it.
func TestSkipsInterimAnswers(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body) // with Expect: 100-continue, the server sends 100 first
		w.Write(bytes.ToUpper(b))
	}, false)
	tr := New()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPut, s.URL, strings.NewReader("abc"))
	req.Header.Set("Expect", "100-continue")
	resp, err := tr.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(b) != "ABC" {
		t.Errorf("got %d %q", resp.StatusCode, b)
	}
}

// https: TLS with HTTP/1.1 offered, verified against the roots, and the
// connection reused.
func TestTLS(t *testing.T) {
	var mu sync.Mutex
	remotes := map[string]bool{}
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		remotes[r.RemoteAddr] = true
		mu.Unlock()
		fmt.Fprintf(w, "%s %v", r.Proto, r.TLS != nil)
	}, true)
	tr := New()
	if _, err := tr.Do(mustRequest(t, s.URL)); err == nil {
		t.Fatal("a certificate the roots do not hold was accepted")
	}
	roots := x509.NewCertPool()
	roots.AddCert(s.Certificate())
	tr.tls.RootCAs = roots
	for range 2 {
		if _, b := get(t, tr, s.URL); b != "HTTP/1.1 true" {
			t.Fatalf("got %q", b)
		}
	}
	if len(remotes) != 1 {
		t.Errorf("two requests came from %d connections, want 1", len(remotes))
	}
	if tr.tls.MinVersion != tls.VersionTLS12 {
		t.Errorf("minimum TLS version %x", tr.tls.MinVersion)
	}
}

// A request the proxy settings send through a proxy goes through
// net/http's transport, to the proxy.
func TestProxiedRequestsGoThroughNetHTTP(t *testing.T) {
	target := newServer(t, func(w http.ResponseWriter, r *http.Request) { t.Error("the target was reached directly") }, false)
	proxy := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "proxied %s", r.URL.Host)
	}, false)
	tr := New()
	pu, _ := url.Parse(proxy.URL)
	tr.proxy = http.ProxyURL(pu)
	host := strings.TrimPrefix(target.URL, "http://")
	if _, b := get(t, tr, target.URL); b != "proxied "+host {
		t.Errorf("got %q", b)
	}
	if len(tr.idle) != 0 {
		t.Errorf("the own pool holds %v", tr.idle)
	}
}

// A failure to connect is a *url.Error naming the operation.
func TestDialErrorIsURLError(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://"+addr+"/$batch", strings.NewReader("x"))
	_, err = New().Do(req)
	var ue *url.Error
	var oe *net.OpError
	if !errors.As(err, &ue) || ue.Op != "Post" || !errors.As(err, &oe) || oe.Op != "dial" {
		t.Errorf("got %#v", err)
	}
}

func mustRequest(t *testing.T, u string) *http.Request {
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// A request that asks to close its connection does not pool it.
func TestRequestCloseIsNotPooled(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }, false)
	tr := New()
	for range 2 {
		req := mustRequest(t, s.URL)
		req.Close = true
		resp, err := tr.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	if n := s.opened.Load(); n != 2 {
		t.Errorf("opened %d connections, want 2", n)
	}
}

// A URL without a port is dialled at 80 (http) or 443 (https).
func TestDefaultPorts(t *testing.T) {
	for scheme, want := range map[string]string{"http": "127.0.0.1:80", "https": "127.0.0.1:443"} {
		tr := New()
		var got string
		stop := errors.New("stop before connecting")
		tr.dialer.ControlContext = func(_ context.Context, _, address string, _ syscall.RawConn) error {
			got = address
			return stop
		}
		if _, err := tr.Do(mustRequest(t, scheme+"://127.0.0.1/x")); !errors.Is(err, stop) {
			t.Fatalf("%s: %v", scheme, err)
		}
		if got != want {
			t.Errorf("%s dialled %q, want %q", scheme, got, want)
		}
	}
}

// Bytes after a response's end (a server's stray byte) leave the
// connection out of the pool: read as the start of the next answer, they
// would make it unreadable.
func TestStrayBytesAfterTheBodyDropTheConnection(t *testing.T) {
	addr := rawServer(t, func(c net.Conn, _ <-chan struct{}) {
		br := bufio.NewReader(c)
		for {
			if _, err := http.ReadRequest(br); err != nil {
				return
			}
			// One write: the stray byte arrives with the body.
			if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokX"); err != nil {
				return
			}
		}
	})
	tr := New()
	for i := range 2 {
		if _, b := get(t, tr, "http://"+addr+"/"); b != "ok" {
			t.Fatalf("request %d: %q", i, b)
		}
	}
}

// A server that accepts and never finishes the TLS handshake holds the
// request only until its context ends.
func TestHandshakeEndsWithTheContext(t *testing.T) {
	addr := rawServer(t, func(_ net.Conn, done <-chan struct{}) {
		<-done // silent: no ServerHello
	})
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+"/", nil)
	if _, err := New().Do(req); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("got %v, want the context's deadline", err)
	}
}

// rawServer serves each connection to the returned address with serve,
// below HTTP, and closes it when serve returns; done closes when the test
// ends.
func rawServer(t *testing.T, serve func(c net.Conn, done <-chan struct{})) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() {
		close(done)
		l.Close()
	})
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				serve(c, done)
			}()
		}
	}()
	return l.Addr().String()
}

// The request body's read error ends the request with that error, and
// the half-written connection is not pooled.
func TestRequestBodyErrorIsReturned(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, "ok")
	}, false)
	tr := New()
	boom := errors.New("boom")
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, s.URL, io.MultiReader(strings.NewReader("half"), errReader{boom}))
	req.ContentLength = 8
	if _, err := tr.Do(req); !errors.Is(err, boom) {
		t.Fatalf("got %v, want the body's error", err)
	}
	waitClosed(t, s)
	get(t, tr, s.URL)
	if n := s.opened.Load(); n != 2 {
		t.Errorf("opened %d connections, want 2", n)
	}
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

// What Do does not send itself goes to net/http: another scheme, a URL
// without a host, and a proxy setting's error comes back as Do's.
func TestOtherRequestsGoToNetHTTP(t *testing.T) {
	tr := New()
	for _, u := range []string{"ftp://127.0.0.1/x", "http:///x"} {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, u, nil)
		_, err := tr.Do(req)
		var ue *url.Error
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), map[bool]string{true: "unsupported protocol scheme", false: "no Host in request URL"}[strings.HasPrefix(u, "ftp")]) {
			t.Errorf("%s: got %v, want net/http's refusal", u, err)
		}
	}
	bad := errors.New("bad proxy setting")
	tr.proxy = func(*http.Request) (*url.URL, error) { return nil, bad }
	_, err := tr.Do(mustRequest(t, "http://127.0.0.1:1/"))
	var ue *url.Error
	if !errors.Is(err, bad) || !errors.As(err, &ue) {
		t.Errorf("got %v, want a *url.Error around the proxy setting's error", err)
	}
}

// A request whose body is shorter than its ContentLength fails with
// net/http's own refusal, not with the body's end (io.EOF).
func TestShortBodyIsRefused(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) { io.Copy(io.Discard, r.Body) }, false)
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPut, s.URL, io.NopCloser(strings.NewReader("four")))
	req.ContentLength = 10
	_, err := New().Do(req)
	if err == nil || errors.Is(err, io.EOF) || !strings.Contains(err.Error(), "ContentLength=10 with Body length 4") {
		t.Errorf("got %v, want net/http's length mismatch", err)
	}
}

// An idle timer closes its own connection and leaves the others pooled.
func TestExpireClosesOnlyItsConnection(t *testing.T) {
	s, tr := atOnce(t, 2)
	k := s.key()
	tr.mu.Lock()
	l := append([]*conn(nil), tr.idle[k]...)
	tr.mu.Unlock()
	if len(l) != 2 {
		t.Fatalf("%d pooled, want 2", len(l))
	}
	tr.expire(l[1]) // the newer one's timer
	waitClosed(t, s)
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if got := tr.idle[k]; len(got) != 1 || got[0] != l[0] {
		t.Errorf("pool after expire: %v, want only the older connection", got)
	}
}
