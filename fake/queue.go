package fake

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/internal/keyrules"
)

// Queue operations, for counters and fault injection.
const (
	OpCreateQueue     Operation = "CreateQueue"
	OpDeleteQueue     Operation = "DeleteQueue"
	OpQueueProperties Operation = "GetQueueProperties"
	OpQueueMetadata   Operation = "SetQueueMetadata"
	OpEnqueue         Operation = "EnqueueMessage"
	OpDequeue         Operation = "DequeueMessages"
	OpPeek            Operation = "PeekMessages"
	OpUpdateMessage   Operation = "UpdateMessage"
	OpDeleteMessage   Operation = "DeleteMessage"
	OpClearMessages   Operation = "ClearMessages"
	OpListQueues      Operation = "ListQueues"
)

// Limits of the Queue service ("Put Message", "Get Messages").
const (
	maxMessageBytes      = 64 * 1024
	maxDequeue           = 32
	maxVisibilitySeconds = 7 * 24 * 3600
	defaultTTL           = 7 * 24 * time.Hour
	defaultDeletedQueues = 40 * time.Second // as Delete Table's "at least 40 seconds"
)

// neverExpires is the expiration time the service reports for a message
// put with messagettl=-1.
func neverExpires() time.Time { return time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC) }

// QueueServiceOptions configure a QueueService. nil means the defaults.
type QueueServiceOptions struct {
	// Now is the clock for visibility timeouts, expiry and the
	// QueueBeingDeleted window. Default: time.Now.
	Now func() time.Time
	// DeletedQueueWindow is how long a deleted queue's name answers 409
	// QueueBeingDeleted to Create Queue, as the service does while it
	// collects the queue. The docs give no figure; the default is that of
	// tables. Default: 40 s; negative: no window.
	DeletedQueueWindow time.Duration
	// AccountName and AccountKey let the fake verify SAS signatures.
	// Requests that carry a SAS are always checked for expiry, IP range,
	// protocol, stored access policy and permissions. Default: signatures
	// are not verified.
	AccountName, AccountKey string
	// ClientIP is the address a SAS's signed IP range is checked against:
	// the fake serves in-process and sees no socket. Default: 127.0.0.1.
	ClientIP netip.Addr
	// Busy makes the service answer as an account at its scalability
	// targets (see Busy). Default: nil, every request is served.
	Busy *Busy
}

// QueueService is an in-memory Azure Queue service, an HTTP transport behind
// the official *azqueue.QueueClient (see TableService for why). It keeps
// visibility timeouts on its clock, counts dequeues, issues a new pop
// receipt on every dequeue and update and accepts only the newest
// (404 MessageNotFound otherwise, as the service answers), returns at most 32 messages a dequeue,
// refuses messages over 64 KiB, expires messages after their time to live,
// checks every bound of Put, Get and Update Message, keeps queue metadata
// (Create Queue again: 204 for the same metadata, 409 QueueAlreadyExists
// for other), answers 409 QueueBeingDeleted to a queue created again
// within DeletedQueueWindow of its deletion, counts requests and injects
// faults. Safe for concurrent use.
type QueueService struct {
	faults  // FailNext, FailNextAfter, Count, Total, Counts, ResetCounts; mu guards all
	now     func() time.Time
	window  time.Duration
	queues  map[string]*queueData
	deleted map[string]time.Time // queue name -> when it was deleted
	seq     uint64
	sas     sasConfig
	busy    *Busy
}

type queueData struct {
	msgs []*message // in insertion order
	// firstExpiry is at or before the earliest expiry of msgs (zero: no
	// message): until then, no message has expired and expire need not
	// look.
	firstExpiry time.Time
	meta        http.Header    // x-ms-meta-* headers as the creator sent them
	policies    []storedPolicy // stored access policies (Set Queue ACL)
}

// queueMeta keeps the request's metadata headers.
func queueMeta(req *http.Request) http.Header {
	h := http.Header{}
	for k, v := range req.Header {
		if strings.HasPrefix(strings.ToLower(k), "x-ms-meta-") {
			h[k] = v
		}
	}
	return h
}

// sameMeta compares metadata as the service does when a queue is created
// again: names case-insensitively, values exactly.
func sameMeta(a, b http.Header) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !slices.Equal(b.Values(k), v) {
			return false
		}
	}
	return true
}

// removeAt deletes the i-th message, moving the shorter side of the
// queue: a consumer deletes near the head, so deleting costs what it
// skipped over, not the queue's length.
func (q *queueData) removeAt(i int) {
	if i < len(q.msgs)/2 {
		copy(q.msgs[1:i+1], q.msgs[:i])
		q.msgs[0] = nil
		q.msgs = q.msgs[1:]
		return
	}
	q.msgs = slices.Delete(q.msgs, i, i+1)
}

type message struct {
	id         string
	text       string
	inserted   time.Time
	expires    time.Time
	visible    time.Time
	dequeues   int64
	popReceipt string
}

// queueURL is the endpoint the fake's queue clients use.
const queueURL = "https://fake.queue.core.windows.net/"

// URL is the endpoint the fake's queue clients use, ending in '/': for a
// client the fake did not make (one authorized by a SAS token, say), built
// with this service as its transport.
func (s *QueueService) URL() string { return queueURL }

// NewQueueService returns an empty service.
func NewQueueService(opts *QueueServiceOptions) *QueueService {
	s := &QueueService{now: time.Now, window: defaultDeletedQueues, queues: map[string]*queueData{}, deleted: map[string]time.Time{}}
	if opts != nil && opts.Now != nil {
		s.now = opts.Now
	}
	if opts != nil && opts.DeletedQueueWindow != 0 {
		s.window = max(opts.DeletedQueueWindow, 0)
	}
	if opts != nil {
		s.sas = newSASConfig(opts.AccountName, opts.AccountKey, opts.ClientIP)
		s.busy = opts.Busy
	} else {
		s.sas = newSASConfig("", "", netip.Addr{})
	}
	return s
}

var _ policy.Transporter = (*QueueService)(nil)

// NewServiceClient returns an official service client served by this fake.
// opts may add policies; its Transport is replaced, and retries keep the
// SDK's policy with millisecond delays unless opts sets them.
func (s *QueueService) NewServiceClient(opts *azqueue.ClientOptions) *azqueue.ServiceClient {
	var o azqueue.ClientOptions
	if opts != nil {
		o = *opts
	}
	serveWith(&o.ClientOptions, s)
	c, err := azqueue.NewServiceClientWithNoCredential(queueURL, &o)
	if err != nil {
		panic("fake: " + err.Error()) // only a malformed constant URL could cause this
	}
	return c
}

// NewQueueClient returns an official client for one queue (which need not exist yet).
func (s *QueueService) NewQueueClient(queue string, opts *azqueue.ClientOptions) *azqueue.QueueClient {
	return s.NewServiceClient(opts).NewQueueClient(queue)
}

// Len is the number of messages in a queue, visible or not.
func (s *QueueService) Len(queue string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if q := s.queues[queue]; q != nil {
		s.expire(q)
		return len(q.msgs)
	}
	return 0
}

// Texts returns the text of every message in a queue, in order.
func (s *QueueService) Texts(queue string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	if q := s.queues[queue]; q != nil {
		s.expire(q)
		for _, m := range q.msgs {
			out = append(out, m.text)
		}
	}
	return out
}

func xmlError(req *http.Request, status int, code, msg string) *http.Response {
	var b bytes.Buffer
	b.WriteString(`<?xml version="1.0" encoding="utf-8"?><Error><Code>`)
	_ = xml.EscapeText(&b, []byte(code))
	b.WriteString(`</Code><Message>`)
	_ = xml.EscapeText(&b, []byte(msg+"\nRequestId:00000000-0000-0000-0000-000000000000\nTime:"+time.Now().UTC().Format(time.RFC3339Nano)))
	b.WriteString(`</Message></Error>`)
	h := http.Header{}
	h.Set("Content-Type", "application/xml")
	h.Set("X-Ms-Error-Code", code)
	return response(req, status, h, b.Bytes())
}

func (s *QueueService) newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	s.seq++
	return fmt.Sprintf("%08x-%s-%s-%s-%s", s.seq, hex.EncodeToString(b[4:6]), hex.EncodeToString(b[6:8]), hex.EncodeToString(b[8:10]), hex.EncodeToString(b[10:]))
}

func (s *QueueService) newReceipt() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return base64.StdEncoding.EncodeToString(b[:])
}

// expire drops messages past their time to live. s.mu must be held.
func (s *QueueService) expire(q *queueData) {
	now := s.now()
	if q.firstExpiry.IsZero() || now.Before(q.firstExpiry) {
		return
	}
	q.msgs = slices.DeleteFunc(q.msgs, func(m *message) bool { return !now.Before(m.expires) })
	q.firstExpiry = time.Time{}
	for _, m := range q.msgs {
		if q.firstExpiry.IsZero() || m.expires.Before(q.firstExpiry) {
			q.firstExpiry = m.expires
		}
	}
}

func rfc1123(t time.Time) string { return t.UTC().Format(http.TimeFormat) }

// Do serves one HTTP request of the Queue REST API.
func (s *QueueService) Do(req *http.Request) (*http.Response, error) {
	body, err := readRequest(req)
	if err != nil {
		return nil, err
	}
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	q := req.URL.Query()
	var op Operation
	switch {
	case parts[0] == "" && req.Method == http.MethodGet && q.Get("comp") == "list":
		op = OpListQueues
	case len(parts) == 1 && req.Method == http.MethodGet && q.Get("comp") == "acl":
		op = OpGetQueueACL
	case len(parts) == 1 && req.Method == http.MethodPut && q.Get("comp") == "acl":
		op = OpSetQueueACL
	case len(parts) == 1 && req.Method == http.MethodPut && q.Get("comp") == "metadata":
		op = OpQueueMetadata
	case len(parts) == 1 && req.Method == http.MethodPut && q.Get("comp") == "":
		op = OpCreateQueue
	case len(parts) == 1 && req.Method == http.MethodDelete:
		op = OpDeleteQueue
	case len(parts) == 1 && req.Method == http.MethodGet && q.Get("comp") == "metadata":
		op = OpQueueProperties
	case len(parts) == 2 && parts[1] == "messages" && req.Method == http.MethodPost:
		op = OpEnqueue
	case len(parts) == 2 && parts[1] == "messages" && req.Method == http.MethodGet && q.Get("peekonly") == "true":
		op = OpPeek
	case len(parts) == 2 && parts[1] == "messages" && req.Method == http.MethodGet:
		op = OpDequeue
	case len(parts) == 2 && parts[1] == "messages" && req.Method == http.MethodDelete:
		op = OpClearMessages
	case len(parts) == 3 && parts[1] == "messages" && req.Method == http.MethodPut:
		op = OpUpdateMessage
	case len(parts) == 3 && parts[1] == "messages" && req.Method == http.MethodDelete:
		op = OpDeleteMessage
	default:
		return xmlError(req, http.StatusBadRequest, "InvalidUri", "The requested URI does not represent any resource on the server."), nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if f := s.arrive(op); f != nil {
		return xmlError(req, f.status, f.code, "injected fault"), nil
	}
	if berr := s.busy.admitQueue(req, op, parts[0]); berr != nil {
		return xmlError(req, berr.status, berr.code, berr.msg), nil
	}
	if op == OpListQueues {
		return s.listQueues(req, q), nil
	}
	name := parts[0]
	if q.Get("sig") != "" && op != OpGetQueueACL && op != OpSetQueueACL {
		if serr := s.sas.check(req, q, s.now(), s.queueSASTarget(op, name)); serr != nil {
			return xmlError(req, serr.status, serr.code, serr.msg), nil
		}
	}
	if op == OpCreateQueue {
		if err := keyrules.ValidateQueueName(name); err != nil {
			return xmlError(req, http.StatusBadRequest, "InvalidResourceName", "The specified resource name contains invalid characters."), nil
		}
		meta := queueMeta(req)
		if qd, ok := s.queues[name]; ok {
			// Create Queue is idempotent only for the same metadata.
			if !sameMeta(qd.meta, meta) {
				return xmlError(req, http.StatusConflict, "QueueAlreadyExists", "The specified queue already exists."), nil
			}
			return response(req, http.StatusNoContent, nil, nil), nil
		}
		if at, ok := s.deleted[name]; ok {
			if s.now().Before(at.Add(s.window)) {
				return xmlError(req, http.StatusConflict, "QueueBeingDeleted", "The specified queue is being deleted."), nil
			}
			delete(s.deleted, name)
		}
		s.queues[name] = &queueData{meta: meta}
		return response(req, http.StatusCreated, nil, nil), nil
	}
	qd := s.queues[name]
	if qd == nil {
		return xmlError(req, http.StatusNotFound, "QueueNotFound", "The specified queue does not exist."), nil
	}
	if op == OpGetQueueACL || op == OpSetQueueACL {
		return s.queueACL(req, qd, body), nil
	}
	s.expire(qd)
	now := s.now().UTC()
	intParam := func(name string, def, lo, hi int) (int, *http.Response) {
		v := q.Get(name)
		if v == "" {
			return def, nil
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < lo || n > hi {
			return 0, xmlError(req, http.StatusBadRequest, "OutOfRangeQueryParameterValue", fmt.Sprintf("One of the query parameters specified in the request URI is outside the permissible range: %s=%s (%d to %d).", name, v, lo, hi))
		}
		return n, nil
	}
	switch op {
	case OpDeleteQueue:
		delete(s.queues, name)
		if s.window > 0 {
			s.deleted[name] = now
		}
		return response(req, http.StatusNoContent, nil, nil), nil
	case OpQueueProperties:
		h := qd.meta.Clone()
		h.Set("X-Ms-Approximate-Messages-Count", strconv.Itoa(len(qd.msgs)))
		return response(req, http.StatusOK, h, nil), nil
	case OpQueueMetadata:
		qd.meta = queueMeta(req)
		return response(req, http.StatusNoContent, nil, nil), nil
	case OpClearMessages:
		qd.msgs = nil
		return response(req, http.StatusNoContent, nil, nil), nil
	case OpEnqueue:
		text, bad := messageText(req, body)
		if bad != nil {
			return bad, nil
		}
		vt, bad := intParam("visibilitytimeout", 0, 0, maxVisibilitySeconds)
		if bad != nil {
			return bad, nil
		}
		expires := now.Add(defaultTTL)
		if v := q.Get("messagettl"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n == 0 || n < -1 {
				return xmlError(req, http.StatusBadRequest, "InvalidQueryParameterValue", "Value for one of the query parameters specified in the request URI is invalid."), nil
			}
			if n == -1 {
				expires = neverExpires()
			} else {
				expires = now.Add(time.Duration(n) * time.Second)
			}
		}
		visible := now.Add(time.Duration(vt) * time.Second)
		if !visible.Before(expires) {
			// Put Message: the visibility timeout must be smaller than the
			// time to live.
			return xmlError(req, http.StatusBadRequest, "InvalidQueryParameterValue", "Value for one of the query parameters specified in the request URI is invalid."), nil
		}
		m := &message{id: s.newID(), text: text, inserted: now, expires: expires, visible: visible, popReceipt: s.newReceipt()}
		qd.msgs = append(qd.msgs, m)
		if qd.firstExpiry.IsZero() || expires.Before(qd.firstExpiry) {
			qd.firstExpiry = expires
		}
		var b bytes.Buffer
		b.WriteString(`<?xml version="1.0" encoding="utf-8"?><QueueMessagesList><QueueMessage>`)
		fmt.Fprintf(&b, "<MessageId>%s</MessageId><InsertionTime>%s</InsertionTime><ExpirationTime>%s</ExpirationTime><PopReceipt>%s</PopReceipt><TimeNextVisible>%s</TimeNextVisible>",
			m.id, rfc1123(m.inserted), rfc1123(m.expires), m.popReceipt, rfc1123(m.visible))
		b.WriteString(`</QueueMessage></QueueMessagesList>`)
		return xmlResponse(req, http.StatusCreated, b.Bytes()), nil
	case OpDequeue, OpPeek:
		n, bad := intParam("numofmessages", 1, 1, maxDequeue)
		if bad != nil {
			return bad, nil
		}
		vt, bad := intParam("visibilitytimeout", 30, 1, maxVisibilitySeconds)
		if bad != nil {
			return bad, nil
		}
		var b bytes.Buffer
		b.WriteString(`<?xml version="1.0" encoding="utf-8"?><QueueMessagesList>`)
		// One Get Messages issues one pop receipt, shared by the messages
		// it returns, as the service does (recorded exchanges); each
		// message keeps it until it is received or updated again.
		receipt := ""
		for _, m := range qd.msgs {
			if n == 0 {
				break
			}
			if now.Before(m.visible) {
				continue
			}
			n--
			if op == OpDequeue {
				m.dequeues++
				if receipt == "" {
					receipt = s.newReceipt()
				}
				m.popReceipt = receipt
				m.visible = now.Add(time.Duration(vt) * time.Second)
			}
			fmt.Fprintf(&b, "<QueueMessage><MessageId>%s</MessageId><InsertionTime>%s</InsertionTime><ExpirationTime>%s</ExpirationTime>",
				m.id, rfc1123(m.inserted), rfc1123(m.expires))
			if op == OpDequeue {
				fmt.Fprintf(&b, "<PopReceipt>%s</PopReceipt><TimeNextVisible>%s</TimeNextVisible>", m.popReceipt, rfc1123(m.visible))
			}
			fmt.Fprintf(&b, "<DequeueCount>%d</DequeueCount><MessageText>", m.dequeues)
			_ = xml.EscapeText(&b, []byte(m.text))
			b.WriteString("</MessageText></QueueMessage>")
		}
		b.WriteString(`</QueueMessagesList>`)
		return xmlResponse(req, http.StatusOK, b.Bytes()), nil
	}
	// Update and delete name one message by id and pop receipt.
	id := parts[2]
	i := slices.IndexFunc(qd.msgs, func(m *message) bool { return m.id == id })
	if i < 0 {
		return xmlError(req, http.StatusNotFound, "MessageNotFound", "The specified message does not exist."), nil
	}
	m := qd.msgs[i]
	if q.Get("popreceipt") != m.popReceipt {
		// The service answers a receipt that is no longer the newest as if
		// the message were gone: another consumer owns it now.
		return xmlError(req, http.StatusNotFound, "MessageNotFound", "The specified message does not exist."), nil
	}
	if op == OpDeleteMessage {
		qd.removeAt(i)
		return response(req, http.StatusNoContent, nil, nil), nil
	}
	vt, bad := intParam("visibilitytimeout", -1, 0, maxVisibilitySeconds)
	if bad != nil {
		return bad, nil
	}
	if vt < 0 {
		return xmlError(req, http.StatusBadRequest, "MissingRequiredQueryParameter", "visibilitytimeout is required."), nil
	}
	if len(body) > 0 {
		text, bad := messageText(req, body)
		if bad != nil {
			return bad, nil
		}
		m.text = text
	}
	m.popReceipt = s.newReceipt()
	m.visible = now.Add(time.Duration(vt) * time.Second)
	h := http.Header{}
	h.Set("X-Ms-Popreceipt", m.popReceipt)
	h.Set("X-Ms-Time-Next-Visible", rfc1123(m.visible))
	return response(req, http.StatusNoContent, h, nil), nil
}

func xmlResponse(req *http.Request, status int, body []byte) *http.Response {
	h := http.Header{}
	h.Set("Content-Type", "application/xml")
	return response(req, status, h, body)
}

// messageText reads <QueueMessage><MessageText>…</MessageText></QueueMessage>
// and enforces the 64 KiB limit on the text.
func messageText(req *http.Request, body []byte) (string, *http.Response) {
	var m struct {
		Text string `xml:"MessageText"`
	}
	if err := xml.Unmarshal(body, &m); err != nil {
		return "", xmlError(req, http.StatusBadRequest, "InvalidXmlDocument", "XML specified is not syntactically valid.")
	}
	if len(m.Text) > maxMessageBytes {
		return "", xmlError(req, http.StatusRequestEntityTooLarge, "RequestBodyTooLarge", "The request body is too large and exceeds the maximum permissible limit.")
	}
	return m.Text, nil
}

// maxListQueues is the most queues one List Queues response holds
// (maxresults defaults to and may not exceed 5,000).
const maxListQueues = 5000

// listQueues serves List Queues (GET /?comp=list): names in order,
// filtered by prefix, from marker on, at most maxresults, with each
// queue's metadata when include=metadata; s.mu is held.
func (s *QueueService) listQueues(req *http.Request, q url.Values) *http.Response {
	limit := maxListQueues
	if m := q.Get("maxresults"); m != "" {
		n, err := strconv.Atoi(m)
		if err != nil || n < 1 {
			return xmlError(req, http.StatusBadRequest, "OutOfRangeQueryParameterValue", "One of the query parameters specified in the request URI is outside the permissible range.")
		}
		limit = min(n, maxListQueues)
	}
	prefix, marker := q.Get("prefix"), q.Get("marker")
	names := make([]string, 0, len(s.queues))
	for n := range s.queues {
		if strings.HasPrefix(n, prefix) && n >= marker {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	endpoint := "https://" + req.URL.Host + "/"
	var b bytes.Buffer
	elem := func(name, v string) {
		b.WriteString("<" + name + ">")
		_ = xml.EscapeText(&b, []byte(v))
		b.WriteString("</" + name + ">")
	}
	b.WriteString(`<?xml version="1.0" encoding="utf-8"?><EnumerationResults ServiceEndpoint="`)
	_ = xml.EscapeText(&b, []byte(endpoint))
	b.WriteString(`">`)
	if q.Has("prefix") {
		elem("Prefix", prefix)
	}
	if marker != "" {
		elem("Marker", marker)
	}
	if q.Has("maxresults") {
		elem("MaxResults", strconv.Itoa(limit))
	}
	b.WriteString("<Queues>")
	next := ""
	for i, n := range names {
		if i == limit {
			next = n
			break
		}
		b.WriteString("<Queue>")
		elem("Name", n)
		if strings.Contains(q.Get("include"), "metadata") {
			b.WriteString("<Metadata>")
			meta := s.queues[n].meta
			keys := make([]string, 0, len(meta))
			for k := range meta {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				elem(strings.ToLower(k[len("X-Ms-Meta-"):]), meta.Get(k))
			}
			b.WriteString("</Metadata>")
		}
		b.WriteString("</Queue>")
	}
	b.WriteString("</Queues>")
	if next != "" {
		elem("NextMarker", next)
	} else {
		b.WriteString("<NextMarker />")
	}
	b.WriteString("</EnumerationResults>")
	return xmlResponse(req, http.StatusOK, b.Bytes())
}
