// Package http11 is the transport table.ClientOptions gives a table
// client: HTTP/1.1, the one version Azure Storage speaks
// (https://learn.microsoft.com/rest/api/storageservices/http-version-support),
// with each round trip made on the goroutine that asks for it.
//
// Why not net/http's Transport, which the SDK uses by default: it hands each
// request to a connection's writer goroutine and takes each response from
// the connection's reader goroutine, and the reader waits for the body to
// be read before it reads again. A round trip so wakes three goroutines
// besides the caller's, and every wake-up of an idle processor costs a
// thread's futex call and its search for work. On a point read over
// loopback that was more than half of the client's CPU (BENCHMARKS.md).
// Here the caller writes the request and reads the answer itself, and
// parks only while the network is silent.
//
// What it does not do, and hands to a net/http Transport configured as
// the SDK's default one instead: requests through a proxy (from
// HTTPS_PROXY, HTTP_PROXY and NO_PROXY, as the SDK's transport reads them)
// and any scheme but http and https; and on systems other than Unix, every
// request (see quiet_other.go). It follows no redirect (the service
// sends none) and asks for no compression: the service compresses
// nothing (in the SDK's recordings, sdk/data/aztables/testdata/recordings,
// net/http's "Accept-Encoding: gzip" gets query pages back uncompressed
// and chunked). It never retries: the SDK's retry policy above it does,
// once.
package http11

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
)

// The SDK's default transport's settings (azure-sdk-for-go
// sdk/internal/transport), kept so that a client built with
// table.ClientOptions dials, times out and pools as one built without.
const (
	dialTimeout         = 30 * time.Second
	keepAlive           = 30 * time.Second
	tlsHandshakeTimeout = 10 * time.Second
	idleConnTimeout     = 90 * time.Second
	maxIdleConnsPerHost = 10
)

// Transport is a policy.Transporter for HTTP/1.1 that makes each round
// trip on the calling goroutine. It keeps its own pool of idle
// connections: build one per set of client options and share the clients.
type Transport struct {
	dialer  net.Dialer
	tls     *tls.Config // cloned for each TLS connection
	proxy   func(*http.Request) (*url.URL, error)
	idleFor time.Duration // an idle connection is closed after this
	maxIdle int           // idle connections kept per host

	fallbackOnce sync.Once
	fallback     *http.Client // proxied requests and other schemes

	mu   sync.Mutex
	idle map[hostKey][]*conn // most recently used last
}

var _ policy.Transporter = (*Transport)(nil)

// hostKey names the server a connection is to: the URL's host as written
// (with or without its port).
type hostKey struct {
	https bool
	host  string
}

// New returns a Transport with the SDK's default transport's settings.
func New() *Transport {
	return &Transport{
		dialer: net.Dialer{Timeout: dialTimeout, KeepAlive: keepAlive},
		tls: &tls.Config{
			MinVersion:    tls.VersionTLS12,
			Renegotiation: tls.RenegotiateFreelyAsClient,
			NextProtos:    []string{"http/1.1"},
		},
		proxy:   http.ProxyFromEnvironment,
		idleFor: idleConnTimeout,
		maxIdle: maxIdleConnsPerHost,
	}
}

// Do sends req and returns the server's answer, whose body the caller
// reads and closes: the connection goes back to the pool when the body
// has been read to its end, and is closed if the body is closed before.
// Errors are *url.Error, as the SDK's default transport returns them; a
// request whose context ends fails with the context's error inside.
func (t *Transport) Do(req *http.Request) (*http.Response, error) {
	k, ok, err := t.route(req)
	if err != nil {
		return nil, urlError(req, err)
	}
	if !ok {
		return t.fallbackClient().Do(req)
	}
	resp, err := t.roundTrip(req, k)
	if err != nil {
		return nil, urlError(req, err)
	}
	return resp, nil
}

// route says whether Do sends req itself: http or https to a host, not
// through a proxy, where a pooled connection can be checked (probes).
func (t *Transport) route(req *http.Request) (hostKey, bool, error) {
	u := req.URL
	if !probes || u == nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return hostKey{}, false, nil
	}
	p, err := t.proxy(req)
	if err != nil || p != nil {
		return hostKey{}, false, err
	}
	return hostKey{https: u.Scheme == "https", host: u.Host}, true, nil
}

func (t *Transport) fallbackClient() *http.Client {
	t.fallbackOnce.Do(func() {
		d := t.dialer
		t.fallback = &http.Client{Transport: &http.Transport{
			Proxy:                 t.proxy,
			DialContext:           d.DialContext,
			MaxIdleConns:          100,
			MaxIdleConnsPerHost:   t.maxIdle,
			IdleConnTimeout:       t.idleFor,
			TLSHandshakeTimeout:   tlsHandshakeTimeout,
			ExpectContinueTimeout: time.Second,
			TLSClientConfig:       t.tls.Clone(),
		}}
	})
	return t.fallback
}

// urlError wraps err as net/http's client does, so that callers (and
// tablekit's redaction of SAS tokens) find the same shape on both paths.
func urlError(req *http.Request, err error) error {
	op := "Get"
	if m := req.Method; m != "" {
		op = m[:1] + strings.ToLower(m[1:])
	}
	return &url.Error{Op: op, URL: req.URL.Redacted(), Err: err}
}

// roundTrip writes req on an idle or new connection and reads the
// response's head; the body stays on the connection for the caller.
func (t *Transport) roundTrip(req *http.Request, k hostKey) (*http.Response, error) {
	ctx := req.Context()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c := t.take(k)
	if c == nil {
		var err error
		if c, err = t.dial(ctx, k, req.URL); err != nil {
			return nil, err
		}
	}
	// A context that can end sets a deadline in the past on the
	// connection, which ends any read or write blocked on it; stop, when
	// the exchange is over, says whether that happened (the connection is
	// then closed, not pooled).
	stop := func() bool { return true }
	if ctx.Done() != nil {
		stop = context.AfterFunc(ctx, func() { _ = c.nc.SetDeadline(aLongTimeAgo) })
	}
	fail := func(err error) (*http.Response, error) {
		stop()
		c.close()
		if cerr := ctx.Err(); cerr != nil {
			err = cerr
		}
		return nil, err
	}
	out, rb := req, (*recordingBody)(nil)
	if req.Body != nil && req.Body != http.NoBody {
		// net/http wraps a body's read error in a type of its own that
		// hides it from errors.Is; the body's own error is the cause.
		rb = &recordingBody{ReadCloser: req.Body}
		r := *req
		r.Body = rb
		out = &r
	}
	if err := out.Write(c.bw); err != nil {
		if rb != nil && rb.err != nil {
			err = rb.err
		}
		return fail(err)
	}
	if err := c.bw.Flush(); err != nil {
		return fail(err)
	}
	resp, err := http.ReadResponse(c.br, req)
	for err == nil && resp.StatusCode >= 100 && resp.StatusCode < 200 {
		// An interim answer (100 Continue, 103 Early Hints) precedes the
		// real one; nothing here asked for either.
		resp, err = http.ReadResponse(c.br, req)
	}
	if err != nil {
		return fail(err)
	}
	b := &body{ctx: ctx, t: t, c: c, rc: resp.Body, stop: stop, reuse: !resp.Close && !req.Close}
	if resp.Body == http.NoBody {
		b.finish(true)
	} else {
		resp.Body = b
	}
	return resp, nil
}

// recordingBody is a request body that keeps its read error.
type recordingBody struct {
	io.ReadCloser
	err error
}

func (b *recordingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF {
		b.err = err
	}
	return n, err
}

// aLongTimeAgo is a deadline that has passed: setting it ends blocked I/O.
var aLongTimeAgo = time.Unix(1, 0)

// take returns an idle connection to k that is still open, or nil.
func (t *Transport) take(k hostKey) *conn {
	for {
		t.mu.Lock()
		l := t.idle[k]
		if len(l) == 0 {
			t.mu.Unlock()
			return nil
		}
		c := l[len(l)-1]
		l[len(l)-1] = nil
		t.idle[k] = l[:len(l)-1]
		t.mu.Unlock()
		c.idleTimer.Stop() // if it fired, expire finds c gone and leaves it
		if c.open() {
			return c
		}
		c.close()
	}
}

// put pools c, or closes it when k's pool is full.
func (t *Transport) put(c *conn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	l := t.idle[c.key]
	if len(l) >= t.maxIdle {
		c.close()
		return
	}
	if t.idle == nil {
		t.idle = make(map[hostKey][]*conn)
	}
	t.idle[c.key] = append(l, c)
	if c.idleTimer == nil {
		c.idleTimer = time.AfterFunc(t.idleFor, func() { t.expire(c) })
	} else {
		c.idleTimer.Reset(t.idleFor)
	}
}

// expire closes c if it is still idle (its timer fired).
func (t *Transport) expire(c *conn) {
	t.mu.Lock()
	l := t.idle[c.key]
	i := 0
	for i < len(l) && l[i] != c {
		i++
	}
	if i < len(l) {
		t.idle[c.key] = append(l[:i], l[i+1:]...)
		l[len(l)-1] = nil
	}
	t.mu.Unlock()
	if i < len(l) {
		c.close()
	}
}

// dial opens a connection to u's host, with TLS for https.
func (t *Transport) dial(ctx context.Context, k hostKey, u *url.URL) (*conn, error) {
	port := u.Port()
	if port == "" {
		port = "80"
		if k.https {
			port = "443"
		}
	}
	nc, err := t.dialer.DialContext(ctx, "tcp", net.JoinHostPort(u.Hostname(), port))
	if err != nil {
		return nil, err
	}
	c := &conn{key: k, tcp: nc, nc: nc}
	if k.https {
		cfg := t.tls.Clone()
		if cfg.ServerName == "" {
			cfg.ServerName = u.Hostname()
		}
		tc := tls.Client(nc, cfg)
		hctx, cancel := context.WithTimeout(ctx, tlsHandshakeTimeout)
		err := tc.HandshakeContext(hctx)
		cancel()
		if err != nil {
			nc.Close()
			return nil, err
		}
		c.nc = tc
	}
	c.br = bufio.NewReaderSize(c.nc, 16<<10)
	c.bw = bufio.NewWriterSize(c.nc, 4<<10)
	return c, nil
}

// conn is one connection to a server.
type conn struct {
	key       hostKey
	tcp       net.Conn // the TCP connection (under TLS for https)
	nc        net.Conn // what requests are written to: tcp, or TLS over it
	br        *bufio.Reader
	bw        *bufio.Writer
	idleTimer *time.Timer // set when first pooled
	probe     [1]byte     // open's read buffer
}

func (c *conn) close() { _ = c.nc.Close() }

// open reports whether an idle connection can carry a request: the
// server has not closed it (servers and load balancers close idle
// connections) and sent nothing unasked. A request written to a closed
// connection fails, and the SDK would retry it after a back-off.
func (c *conn) open() bool {
	if c.br.Buffered() > 0 {
		return false
	}
	return quiet(c.tcp, c.probe[:])
}

// body is a response body on a connection: read to its end, it gives the
// connection back to the pool.
type body struct {
	ctx   context.Context
	t     *Transport
	c     *conn
	rc    io.ReadCloser
	stop  func() bool
	reuse bool // neither side asked to close the connection
	done  bool
}

var errBodyClosed = errors.New("http11: read on a closed response body")

func (b *body) Read(p []byte) (int, error) {
	if b.done {
		return 0, errBodyClosed
	}
	n, err := b.rc.Read(p)
	switch {
	case err == io.EOF:
		b.finish(true)
	case err != nil:
		b.finish(false)
		if cerr := b.ctx.Err(); cerr != nil {
			err = cerr
		}
	}
	return n, err
}

// Close before the end closes the connection: what is left of the body
// would otherwise have to be read first.
func (b *body) Close() error {
	if !b.done {
		b.finish(false)
	}
	return nil
}

// finish ends the exchange: the connection is pooled if the body was read
// to its end, nobody asked to close it and the context did not end.
func (b *body) finish(whole bool) {
	b.done = true
	if b.stop() && whole && b.reuse {
		_ = b.rc.Close()
		b.t.put(b.c)
		return
	}
	b.c.close()
}
