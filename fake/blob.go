package fake

import (
	"bytes"
	"crypto/md5"
	"encoding/base64"
	"encoding/xml"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/tablekit/tablekit/internal/keyrules"
)

// Blob operations, for counters and fault injection.
const (
	OpCreateContainer     Operation = "CreateContainer"
	OpDeleteContainer     Operation = "DeleteContainer"
	OpContainerProperties Operation = "GetContainerProperties"
	OpContainerMetadata   Operation = "SetContainerMetadata"
	OpLeaseContainer      Operation = "LeaseContainer"
	OpPutBlob             Operation = "PutBlob"
	OpGetBlob             Operation = "GetBlob"
	OpDeleteBlob          Operation = "DeleteBlob"
	OpListBlobs           Operation = "ListBlobs"
	OpPutBlock            Operation = "PutBlock"
	OpPutBlockList        Operation = "PutBlockList"
	OpGetBlockList        Operation = "GetBlockList"
	OpSetBlobMetadata     Operation = "SetBlobMetadata"
	OpSetBlobProperties   Operation = "SetBlobProperties"
	OpLeaseBlob           Operation = "LeaseBlob"
)

// Limits of the Blob service ("Put Block", "Lease Blob", "List Blobs").
const (
	defaultDeletedContainers = 30 * time.Second // Delete Container: the name is unusable for at least 30 seconds
	maxBlockIDBytes          = 64               // Put Block: a block ID is at most 64 bytes before encoding
	minLeaseSeconds          = 15               // Lease Blob: a fixed lease lasts 15 to 60 seconds
	maxLeaseSeconds          = 60               //
	maxBreakSeconds          = 60               // Lease Blob: x-ms-lease-break-period is 0 to 60
	maxListResults           = 5000             // List Blobs: maxresults up to 5,000
	maxCommittedBlocks       = 50000            // Put Block List: up to 50,000 blocks
	httpDateGranularity      = time.Second
	infiniteLease            = -1 // Lease Blob: x-ms-lease-duration -1 is an infinite lease
	// Put Blob: a blob written without x-ms-blob-content-type has this
	// one; Set Blob Properties without it leaves the blob none.
	defaultContentType = "application/octet-stream"
)

// BlobServiceOptions configure a BlobService. nil means the defaults.
type BlobServiceOptions struct {
	// Now is the clock for Last-Modified, ETags, lease expiry and the
	// ContainerBeingDeleted window. Default: time.Now.
	Now func() time.Time
	// DeletedContainerWindow is how long a deleted container's name answers
	// 409 ContainerBeingDeleted to Create Container, as the service does
	// for at least 30 seconds. Default: 30 s; negative: no window.
	DeletedContainerWindow time.Duration
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

// BlobService is an in-memory Azure Blob service for block blobs, an HTTP
// transport behind the official *azblob.Client (and the container, blob,
// block blob and lease clients made from it): containers with metadata and
// leases; Put Blob; Put Block, Put Block List and Get Block List (so
// UploadStream and large UploadBuffer calls work); Get Blob whole or
// ranged, and Get Blob Properties; Set Blob Metadata and Set Blob
// Properties; Delete Blob; List Blobs flat or with a delimiter (BlobPrefix
// items); blob and container leases (acquire, renew, change, release,
// break, expiry on the clock) and the lease rules on every write; the
// If-Match, If-None-Match, If-Modified-Since and If-Unmodified-Since
// conditions on every blob operation; ContainerBeingDeleted after a delete;
// the service's status and error codes; request counters and fault
// injection. Safe for concurrent use.
type BlobService struct {
	faults     // FailNext, FailNextAfter, Count, Total, Counts, ResetCounts; mu guards all
	now        func() time.Time
	window     time.Duration
	containers map[string]*containerData
	deleted    map[string]time.Time // container name -> when it was deleted
	seq        uint64
	sas        sasConfig
	busy       *Busy
}

type containerData struct {
	blobs    map[string]*blobData
	meta     http.Header
	etag     string
	modified time.Time
	lease    lease
	policies []storedPolicy // stored access policies (Set Container ACL)
	access   string         // public access level: "", "container" or "blob"
}

type blobData struct {
	committed bool // false: a blob of staged blocks only, invisible but to Get Block List and Put Block List
	data      []byte
	blocks    []block // the committed block list; nil after Put Blob
	staged    []block // uncommitted blocks, newest last
	etag      string
	created   time.Time
	modified  time.Time
	props     http.Header // Content-Type, Content-Encoding, … as Get Blob answers them
	meta      http.Header
	tags      url.Values // x-ms-tags of the write that made the blob
	lease     lease
}

type block struct {
	id   string // as sent: base64
	data []byte
}

// blobURL is the endpoint the fake's blob clients use.
const blobURL = "https://fake.blob.core.windows.net/"

// URL is the endpoint the fake's blob clients use, ending in '/': for a
// client the fake did not make (one authorized by a SAS token, say), built
// with this service as its transport.
func (s *BlobService) URL() string { return blobURL }

// NewBlobService returns an empty service.
func NewBlobService(opts *BlobServiceOptions) *BlobService {
	s := &BlobService{now: time.Now, window: defaultDeletedContainers, containers: map[string]*containerData{}, deleted: map[string]time.Time{}}
	if opts != nil && opts.Now != nil {
		s.now = opts.Now
	}
	if opts != nil && opts.DeletedContainerWindow != 0 {
		s.window = max(opts.DeletedContainerWindow, 0)
	}
	if opts != nil {
		s.sas = newSASConfig(opts.AccountName, opts.AccountKey, opts.ClientIP)
		s.busy = opts.Busy
	} else {
		s.sas = newSASConfig("", "", netip.Addr{})
	}
	return s
}

var _ policy.Transporter = (*BlobService)(nil)

// NewClient returns an official client served by this fake. opts may add
// policies; its Transport is replaced.
func (s *BlobService) NewClient(opts *azblob.ClientOptions) *azblob.Client {
	var o azblob.ClientOptions
	if opts != nil {
		o = *opts
	}
	serveWith(&o.ClientOptions, s)
	c, err := azblob.NewClientWithNoCredential(blobURL, &o)
	if err != nil {
		panic("fake: " + err.Error()) // only a malformed constant URL could cause this
	}
	return c
}

// Blob returns a copy of a blob's content, and whether it exists.
func (s *BlobService) Blob(container, name string) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.containers[container]
	if c == nil {
		return nil, false
	}
	b, ok := c.blobs[name]
	if !ok || !b.committed {
		return nil, false
	}
	return bytes.Clone(b.data), true
}

// Names lists the blobs of a container in name order, as the service
// lists them.
func (s *BlobService) Names(container string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.containers[container]
	if c == nil {
		return nil
	}
	var out []string
	for n, b := range c.blobs {
		if b.committed {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// blobError is the service's answer for the error codes the fake sends,
// with the service's message.
func blobError(req *http.Request, status int, code string) *http.Response {
	return xmlError(req, status, code, blobMessage(code))
}

func blobMessage(code string) string {
	switch code {
	case "ContainerNotFound":
		return "The specified container does not exist."
	case "ContainerAlreadyExists":
		return "The specified container already exists."
	case "ContainerBeingDeleted":
		return "The specified container is being deleted. Try operation later."
	case "BlobNotFound":
		return "The specified blob does not exist."
	case "BlobAlreadyExists":
		return "The specified blob already exists."
	case "ConditionNotMet":
		return "The condition specified using HTTP conditional header(s) is not met."
	case "InvalidRange":
		return "The range specified is invalid for the current size of the resource."
	case "InvalidHeaderValue":
		return "The value for one of the HTTP headers is not in the correct format."
	case "InvalidQueryParameterValue":
		return "Value for one of the query parameters specified in the request URI is invalid."
	case "InvalidBlobOrBlock":
		return "The specified blob or block content is invalid."
	case "InvalidBlockList":
		return "The specified block list is invalid."
	case "InvalidXmlDocument":
		return "XML specified is not syntactically valid."
	case "LeaseAlreadyPresent":
		return "There is already a lease present."
	case "LeaseIdMissing":
		return "There is currently a lease on the blob and no lease ID was specified in the request."
	case "LeaseIdMismatchWithBlobOperation":
		return "The lease ID specified did not match the lease ID for the blob."
	case "LeaseIdMismatchWithContainerOperation":
		return "The lease ID specified did not match the lease ID for the container."
	case "LeaseIdMismatchWithLeaseOperation":
		return "The lease ID specified did not match the lease ID for the blob/container."
	case "LeaseNotPresentWithBlobOperation":
		return "There is currently no lease on the blob."
	case "LeaseNotPresentWithContainerOperation":
		return "There is currently no lease on the container."
	case "LeaseNotPresentWithLeaseOperation":
		return "There is currently no lease on the blob/container."
	case "LeaseLost":
		return "A lease ID was specified, but the lease for the blob/container has expired."
	case "LeaseIsBreakingAndCannotBeAcquired":
		return "There is already a lease present, and the lease is currently breaking."
	case "LeaseIsBreakingAndCannotBeChanged":
		return "The lease ID matched, but the lease is currently in breaking state and cannot be changed."
	case "LeaseIsBreakingAndCannotBeExtended":
		return "The lease ID matched, but the lease is currently in breaking state and cannot be renewed."
	case "LeaseIsBrokenAndCannotBeRenewed":
		return "The lease ID matched, but the lease has been broken explicitly and cannot be renewed."
	case "MissingRequiredHeader":
		return "An HTTP header that's mandatory for this request is not specified."
	case "InvalidBlobType":
		return "The blob type is invalid for this operation."
	case "UnsupportedHeader":
		return "One of the HTTP headers specified in the request is not supported."
	case "NotImplemented":
		return "The fake blob service does not implement this operation."
	case "InvalidResourceName":
		return "The specified resource name contains invalid characters."
	case "OutOfRangeQueryParameterValue":
		return "One of the query parameters specified in the request URI is outside the permissible range."
	}
	return code
}

// blobRoute names the operation of a Blob service request.
func blobRoute(req *http.Request, isBlob bool) Operation {
	q := req.URL.Query()
	comp, restype, m := q.Get("comp"), q.Get("restype"), req.Method
	if !isBlob {
		switch {
		case restype == "container" && comp == "" && m == http.MethodPut:
			return OpCreateContainer
		case restype == "container" && comp == "" && m == http.MethodDelete:
			return OpDeleteContainer
		case restype == "container" && comp == "" && (m == http.MethodGet || m == http.MethodHead):
			return OpContainerProperties
		case restype == "container" && comp == "metadata" && m == http.MethodPut:
			return OpContainerMetadata
		case restype == "container" && comp == "lease" && m == http.MethodPut:
			return OpLeaseContainer
		case restype == "container" && comp == "list" && m == http.MethodGet:
			return OpListBlobs
		case restype == "container" && comp == "acl" && m == http.MethodGet:
			return OpGetContainerACL
		case restype == "container" && comp == "acl" && m == http.MethodPut:
			return OpSetContainerACL
		}
		return ""
	}
	switch {
	case m == http.MethodPut && comp == "":
		return OpPutBlob
	case m == http.MethodPut && comp == "block":
		return OpPutBlock
	case m == http.MethodPut && comp == "blocklist":
		return OpPutBlockList
	case m == http.MethodGet && comp == "blocklist":
		return OpGetBlockList
	case m == http.MethodPut && comp == "metadata":
		return OpSetBlobMetadata
	case m == http.MethodPut && comp == "properties":
		return OpSetBlobProperties
	case m == http.MethodPut && comp == "lease":
		return OpLeaseBlob
	case (m == http.MethodGet || m == http.MethodHead) && comp == "":
		return OpGetBlob
	case m == http.MethodDelete && comp == "":
		return OpDeleteBlob
	}
	return ""
}

// Do serves one HTTP request of the Blob REST API.
func (s *BlobService) Do(req *http.Request) (*http.Response, error) {
	resp, err := s.serve(req)
	s.busy.servedBlob(req, resp)
	if err == nil && req.Method == http.MethodHead && resp.ContentLength > 0 && resp.StatusCode >= 400 {
		// A HEAD answer has no body: the service's error is in
		// x-ms-error-code alone (recorded).
		resp.Body, resp.ContentLength = http.NoBody, 0
		resp.Header.Del("Content-Type")
	}
	return resp, err
}

func (s *BlobService) serve(req *http.Request) (*http.Response, error) {
	body, err := readRequest(req)
	if err != nil {
		return nil, err
	}
	path := strings.TrimPrefix(req.URL.Path, "/")
	container, name, isBlob := strings.Cut(path, "/")
	op := blobRoute(req, isBlob)
	if op == "" {
		return blobError(req, http.StatusNotImplemented, "NotImplemented"), nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if f := s.arrive(op); f != nil {
		return xmlError(req, f.status, f.code, "injected fault"), nil
	}
	if berr := s.busy.admitBlob(container, name, len(body)); berr != nil {
		return xmlError(req, berr.status, berr.code, berr.msg), nil
	}
	now := s.now().UTC()
	c := s.containers[container]
	if op == OpGetContainerACL || op == OpSetContainerACL {
		return s.containerACL(req, c, body, now), nil
	}
	if q := req.URL.Query(); q.Get("sig") != "" {
		exists := false
		if c != nil && isBlob {
			b := c.blobs[name]
			exists = b != nil && b.committed
		}
		if serr := s.sas.check(req, q, now, s.blobSASTarget(op, container, name, exists)); serr != nil {
			return xmlError(req, serr.status, serr.code, serr.msg), nil
		}
	}
	if !isBlob {
		return s.containerOp(req, op, container, c, now), nil
	}
	if c == nil {
		return blobError(req, http.StatusNotFound, "ContainerNotFound"), nil
	}
	if err := keyrules.ValidateBlobName(name); err != nil {
		return blobError(req, http.StatusBadRequest, "InvalidResourceName"), nil
	}
	cur := c.blobs[name]
	if cur != nil {
		cur.lease.settle(now)
	}
	visible := cur != nil && cur.committed
	switch op {
	case OpPutBlock:
		return s.putBlock(req, c, name, cur, body, now), nil
	case OpGetBlockList:
		return s.getBlockList(req, cur), nil
	case OpLeaseBlob:
		if !visible {
			return blobError(req, http.StatusNotFound, "BlobNotFound"), nil
		}
		if resp := conditions(req, true, cur.etag, cur.modified, true, false); resp != nil {
			return resp, nil
		}
		return s.leaseAction(req, &cur.lease, cur.etag, cur.modified, now), nil
	}
	creates := op == OpPutBlob || op == OpPutBlockList
	var etag string
	var modified time.Time
	if visible {
		etag, modified = cur.etag, cur.modified
	}
	if resp := conditions(req, visible, etag, modified, op != OpGetBlob, creates); resp != nil {
		return resp, nil
	}
	if !visible && !creates {
		return blobError(req, http.StatusNotFound, "BlobNotFound"), nil
	}
	var l *lease
	if cur != nil && cur.committed {
		l = &cur.lease
	}
	if resp := leaseAllows(req, l, op != OpGetBlob, "Blob"); resp != nil {
		return resp, nil
	}
	switch op {
	case OpPutBlob:
		if req.Header.Get("X-Ms-Blob-Type") != "BlockBlob" {
			return blobError(req, http.StatusBadRequest, "InvalidBlobType"), nil
		}
		b := s.write(c, name, cur, body, nil, req, now)
		sum := md5.Sum(body)
		if b.props.Get("Content-Md5") == "" {
			b.props.Set("Content-Md5", base64.StdEncoding.EncodeToString(sum[:]))
		}
		h := s.written(b)
		h.Set("Content-Md5", base64.StdEncoding.EncodeToString(sum[:]))
		return response(req, http.StatusCreated, h, nil), nil
	case OpPutBlockList:
		return s.putBlockList(req, c, name, cur, body, now), nil
	case OpSetBlobMetadata:
		cur.lease.wrote()
		cur.meta = metaHeaders(req)
		s.touch(cur, now)
		return response(req, http.StatusOK, s.written(cur), nil), nil
	case OpSetBlobProperties:
		// Set Blob Properties sets the standard properties together: one
		// left out of the request is cleared.
		// A content type left out is cleared too (the default applies only
		// when the blob is written), and the answer, unlike a write's,
		// has no x-ms-request-server-encrypted: no content was stored.
		cur.lease.wrote()
		cur.props = blobProps(req)
		s.touch(cur, now)
		h := s.written(cur)
		h.Del("X-Ms-Request-Server-Encrypted")
		return response(req, http.StatusOK, h, nil), nil
	case OpDeleteBlob:
		delete(c.blobs, name)
		return response(req, http.StatusAccepted, nil, nil), nil
	}
	return s.getBlob(req, cur), nil
}

// write stores data as name's committed content, keeping the lease and
// the creation time of a blob it replaces.
func (s *BlobService) write(c *containerData, name string, cur *blobData, data []byte, blocks []block, req *http.Request, now time.Time) *blobData {
	b := &blobData{committed: true, data: data, blocks: blocks, created: now, props: blobProps(req), meta: metaHeaders(req)}
	// Put Blob and Put Block List set the tags x-ms-tags gives
	// (query-string encoded), and replace those the blob had.
	b.tags, _ = url.ParseQuery(req.Header.Get("X-Ms-Tags"))
	if b.props.Get("Content-Type") == "" {
		b.props.Set("Content-Type", defaultContentType)
	}
	if cur != nil && cur.committed {
		b.created, b.lease = cur.created, cur.lease
		b.lease.wrote()
	}
	s.touch(b, now)
	c.blobs[name] = b
	return b
}

func (s *BlobService) touch(b *blobData, now time.Time) {
	b.etag, b.modified = s.etag(), now
}

// written is the header of a write's answer.
func (s *BlobService) written(b *blobData) http.Header {
	h := http.Header{}
	h.Set("ETag", b.etag)
	h.Set("Last-Modified", rfc1123(b.modified))
	h.Set("X-Ms-Request-Server-Encrypted", "true")
	return h
}

// blobPropHeaders maps the request headers of the standard blob properties
// to the response headers Get Blob answers them in.
func blobPropHeaders() [][2]string {
	return [][2]string{
		{"X-Ms-Blob-Content-Type", "Content-Type"},
		{"X-Ms-Blob-Content-Encoding", "Content-Encoding"},
		{"X-Ms-Blob-Content-Language", "Content-Language"},
		{"X-Ms-Blob-Content-Md5", "Content-Md5"},
		{"X-Ms-Blob-Content-Disposition", "Content-Disposition"},
		{"X-Ms-Blob-Cache-Control", "Cache-Control"},
	}
}

func blobProps(req *http.Request) http.Header {
	h := http.Header{}
	for _, p := range blobPropHeaders() {
		if v := req.Header.Get(p[0]); v != "" {
			h.Set(p[1], v)
		}
	}
	return h
}

func metaHeaders(req *http.Request) http.Header {
	h := http.Header{}
	for k, v := range req.Header {
		if strings.HasPrefix(strings.ToLower(k), "x-ms-meta-") {
			h[k] = v
		}
	}
	return h
}

// putBlock stages a block. The blob need not exist; its lease rules apply
// when it does.
func (s *BlobService) putBlock(req *http.Request, c *containerData, name string, cur *blobData, body []byte, now time.Time) *http.Response {
	id := req.URL.Query().Get("blockid")
	raw, err := base64.StdEncoding.DecodeString(id)
	if id == "" || err != nil || len(raw) > maxBlockIDBytes {
		return blobError(req, http.StatusBadRequest, "InvalidQueryParameterValue")
	}
	var l *lease
	if cur != nil && cur.committed {
		l = &cur.lease
	}
	if resp := leaseAllows(req, l, true, "Blob"); resp != nil {
		return resp
	}
	if cur == nil {
		cur = &blobData{created: now}
		c.blobs[name] = cur
	}
	// Put Block: every block ID of a blob has the same length.
	for _, b := range slices.Concat(cur.blocks, cur.staged) {
		if len(b.id) != len(id) {
			return blobError(req, http.StatusBadRequest, "InvalidBlobOrBlock")
		}
	}
	cur.staged = slices.DeleteFunc(cur.staged, func(b block) bool { return b.id == id })
	cur.staged = append(cur.staged, block{id: id, data: body})
	sum := md5.Sum(body)
	h := http.Header{}
	h.Set("Content-Md5", base64.StdEncoding.EncodeToString(sum[:]))
	h.Set("X-Ms-Request-Server-Encrypted", "true")
	return response(req, http.StatusCreated, h, nil)
}

// putBlockList commits the listed blocks as the blob's content; the blocks
// left uncommitted are discarded.
func (s *BlobService) putBlockList(req *http.Request, c *containerData, name string, cur *blobData, body []byte, now time.Time) *http.Response {
	type ref struct{ kind, id string }
	var refs []ref
	dec := xml.NewDecoder(bytes.NewReader(body))
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return blobError(req, http.StatusBadRequest, "InvalidXmlDocument")
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local != "BlockList" {
			var id string
			if err := dec.DecodeElement(&id, &se); err != nil {
				return blobError(req, http.StatusBadRequest, "InvalidXmlDocument")
			}
			refs = append(refs, ref{se.Name.Local, id})
		}
	}
	if len(refs) > maxCommittedBlocks {
		return blobError(req, http.StatusBadRequest, "InvalidBlockList")
	}
	var committed, staged []block
	if cur != nil {
		committed, staged = cur.blocks, cur.staged
	}
	find := func(list []block, id string) (block, bool) {
		i := slices.IndexFunc(list, func(b block) bool { return b.id == id })
		if i < 0 {
			return block{}, false
		}
		return list[i], true
	}
	var blocks []block
	var data []byte
	for _, r := range refs {
		var b block
		var ok bool
		switch r.kind {
		case "Committed":
			b, ok = find(committed, r.id)
		case "Uncommitted":
			b, ok = find(staged, r.id)
		case "Latest":
			if b, ok = find(staged, r.id); !ok {
				b, ok = find(committed, r.id)
			}
		}
		if !ok {
			return blobError(req, http.StatusBadRequest, "InvalidBlockList")
		}
		blocks = append(blocks, b)
		data = append(data, b.data...)
	}
	b := s.write(c, name, cur, data, blocks, req, now)
	// Content-MD5 is of the request, the block list, not of the blob.
	sum := md5.Sum(body)
	h := s.written(b)
	h.Set("Content-Md5", base64.StdEncoding.EncodeToString(sum[:]))
	return response(req, http.StatusCreated, h, nil)
}

// getBlockList answers Get Block List.
func (s *BlobService) getBlockList(req *http.Request, cur *blobData) *http.Response {
	if cur == nil {
		return blobError(req, http.StatusNotFound, "BlobNotFound")
	}
	if cur.committed {
		if resp := conditions(req, true, cur.etag, cur.modified, false, false); resp != nil {
			return resp
		}
	}
	var l *lease
	if cur.committed {
		l = &cur.lease
	}
	if resp := leaseAllows(req, l, false, "Blob"); resp != nil {
		return resp
	}
	kind := strings.ToLower(req.URL.Query().Get("blocklisttype"))
	if kind == "" {
		kind = "committed"
	}
	var b bytes.Buffer
	b.WriteString(`<?xml version="1.0" encoding="utf-8"?><BlockList>`)
	list := func(tag string, blocks []block) {
		fmt.Fprintf(&b, "<%s>", tag)
		for _, bl := range blocks {
			fmt.Fprintf(&b, "<Block><Name>%s</Name><Size>%d</Size></Block>", bl.id, len(bl.data))
		}
		fmt.Fprintf(&b, "</%s>", tag)
	}
	if kind == "committed" || kind == "all" {
		list("CommittedBlocks", cur.blocks)
	}
	if kind == "uncommitted" || kind == "all" {
		list("UncommittedBlocks", cur.staged)
	}
	b.WriteString("</BlockList>")
	h := http.Header{}
	h.Set("Content-Type", "application/xml")
	if cur.committed {
		h.Set("ETag", cur.etag)
		h.Set("Last-Modified", rfc1123(cur.modified))
		h.Set("X-Ms-Blob-Content-Length", strconv.Itoa(len(cur.data)))
	}
	return response(req, http.StatusOK, h, b.Bytes())
}

// getBlob answers Get Blob (GET) and Get Blob Properties (HEAD).
func (s *BlobService) getBlob(req *http.Request, cur *blobData) *http.Response {
	h := http.Header{}
	maps.Copy(h, cur.meta)
	h.Set("ETag", cur.etag)
	h.Set("Last-Modified", rfc1123(cur.modified))
	h.Set("X-Ms-Creation-Time", rfc1123(cur.created))
	h.Set("X-Ms-Blob-Type", "BlockBlob")
	h.Set("X-Ms-Server-Encrypted", "true")
	h.Set("Accept-Ranges", "bytes")
	cur.lease.headers(h)
	for k, v := range cur.props {
		h[k] = v
	}
	if len(cur.tags) > 0 {
		h.Set("X-Ms-Tag-Count", strconv.Itoa(len(cur.tags)))
	}
	data, status := cur.data, http.StatusOK
	rng := req.Header.Get("X-Ms-Range")
	if rng == "" {
		rng = req.Header.Get("Range")
	}
	if rng != "" && req.Method == http.MethodGet {
		size := int64(len(cur.data))
		a, b, _ := strings.Cut(strings.TrimPrefix(rng, "bytes="), "-")
		from, err := strconv.ParseInt(a, 10, 64)
		to := size - 1
		if err == nil && b != "" {
			to, err = strconv.ParseInt(b, 10, 64)
		}
		if err != nil || from < 0 || to < from {
			return blobError(req, http.StatusBadRequest, "InvalidHeaderValue")
		}
		// A range that starts at or past the end, an empty blob's
		// included, is not satisfiable.
		if from >= size {
			h := http.Header{}
			h.Set("Content-Range", fmt.Sprintf("bytes */%d", size))
			resp := blobError(req, http.StatusRequestedRangeNotSatisfiable, "InvalidRange")
			maps.Copy(resp.Header, h)
			return resp
		}
		to = min(to, size-1)
		data = cur.data[from : to+1]
		h.Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", from, to, size))
		if md := h.Get("Content-Md5"); md != "" {
			h.Del("Content-Md5")
			h.Set("X-Ms-Blob-Content-Md5", md)
		}
		status = http.StatusPartialContent
	}
	h.Set("Content-Length", strconv.Itoa(len(data)))
	if req.Method == http.MethodHead {
		data = nil
	}
	return response(req, status, h, bytes.Clone(data))
}

// conditions applies If-Match, If-None-Match, If-Modified-Since and
// If-Unmodified-Since to a resource that exists or not. A read that fails
// If-None-Match or If-Modified-Since is 304 Not Modified; every other
// failure is 412 ConditionNotMet, except that a create (Put Blob, Put
// Block List) with If-None-Match: * of an existing blob is 409
// BlobAlreadyExists, and a create with If-Match of a missing blob is 412.
// Conditions on a missing blob that is not being created are left to the
// 404 that follows.
func conditions(req *http.Request, exists bool, etag string, modified time.Time, write, creates bool) *http.Response {
	failed := func(notModified bool) *http.Response {
		if notModified && !write {
			// The service's 304 names neither the ETag nor the time it
			// was modified: the reader keeps what it had.
			h := http.Header{}
			h.Set("X-Ms-Error-Code", "ConditionNotMet")
			return response(req, http.StatusNotModified, h, nil)
		}
		return blobError(req, http.StatusPreconditionFailed, "ConditionNotMet")
	}
	if !exists {
		if creates && req.Header.Get("If-Match") != "" {
			return failed(false)
		}
		return nil
	}
	if m := req.Header.Get("If-Match"); m != "" && m != "*" && m != etag {
		return failed(false)
	}
	if m := req.Header.Get("If-None-Match"); m != "" && (m == "*" || m == etag) {
		if creates && m == "*" {
			return blobError(req, http.StatusConflict, "BlobAlreadyExists")
		}
		return failed(true)
	}
	mod := modified.Truncate(httpDateGranularity)
	if v := req.Header.Get("If-Modified-Since"); v != "" {
		if since, err := http.ParseTime(v); err == nil && !mod.After(since) {
			return failed(true)
		}
	}
	if v := req.Header.Get("If-Unmodified-Since"); v != "" {
		if since, err := http.ParseTime(v); err == nil && mod.After(since) {
			return failed(false)
		}
	}
	return nil
}

func (s *BlobService) etag() string {
	s.seq++
	return fmt.Sprintf(`"0x8DC%013X"`, uint64(s.now().UnixNano()/100)+s.seq)
}

// containerOp serves the container operations and List Blobs.
func (s *BlobService) containerOp(req *http.Request, op Operation, name string, c *containerData, now time.Time) *http.Response {
	if c != nil {
		c.lease.settle(now)
	}
	switch op {
	case OpCreateContainer:
		if err := keyrules.ValidateContainerName(name); err != nil {
			return blobError(req, http.StatusBadRequest, "InvalidResourceName")
		}
		if c != nil {
			return blobError(req, http.StatusConflict, "ContainerAlreadyExists")
		}
		if at, ok := s.deleted[name]; ok {
			if now.Before(at.Add(s.window)) {
				return blobError(req, http.StatusConflict, "ContainerBeingDeleted")
			}
			delete(s.deleted, name)
		}
		c = &containerData{blobs: map[string]*blobData{}, meta: metaHeaders(req), etag: s.etag(), modified: now}
		s.containers[name] = c
		h := http.Header{}
		h.Set("ETag", c.etag)
		h.Set("Last-Modified", rfc1123(c.modified))
		return response(req, http.StatusCreated, h, nil)
	}
	if c == nil {
		return blobError(req, http.StatusNotFound, "ContainerNotFound")
	}
	switch op {
	case OpDeleteContainer:
		if resp := conditions(req, true, c.etag, c.modified, true, false); resp != nil {
			return resp
		}
		if resp := leaseAllows(req, &c.lease, true, "Container"); resp != nil {
			return resp
		}
		delete(s.containers, name)
		if s.window > 0 {
			s.deleted[name] = now
		}
		return response(req, http.StatusAccepted, nil, nil)
	case OpContainerProperties:
		if resp := leaseAllows(req, &c.lease, false, "Container"); resp != nil {
			return resp
		}
		h := c.meta.Clone()
		h.Set("ETag", c.etag)
		h.Set("Last-Modified", rfc1123(c.modified))
		c.lease.headers(h)
		return response(req, http.StatusOK, h, nil)
	case OpContainerMetadata:
		if resp := leaseAllows(req, &c.lease, false, "Container"); resp != nil {
			return resp
		}
		c.meta = metaHeaders(req)
		c.etag, c.modified = s.etag(), now
		h := http.Header{}
		h.Set("ETag", c.etag)
		h.Set("Last-Modified", rfc1123(c.modified))
		return response(req, http.StatusOK, h, nil)
	case OpLeaseContainer:
		if resp := conditions(req, true, c.etag, c.modified, true, false); resp != nil {
			return resp
		}
		return s.leaseAction(req, &c.lease, c.etag, c.modified, now)
	}
	return s.list(req, name, c.blobs, now)
}

// list answers List Blobs: committed blobs in name order from the marker,
// with properties and, when asked, metadata; with a delimiter, the names
// that go on past it after the prefix collapse into one BlobPrefix item.
func (s *BlobService) list(req *http.Request, container string, blobs map[string]*blobData, now time.Time) *http.Response {
	q := req.URL.Query()
	prefix, marker, delim := q.Get("prefix"), q.Get("marker"), q.Get("delimiter")
	limit := maxListResults
	if v := q.Get("maxresults"); v != "" {
		m, err := strconv.Atoi(v)
		if err != nil || m < 1 {
			return blobError(req, http.StatusBadRequest, "OutOfRangeQueryParameterValue")
		}
		limit = min(m, maxListResults)
	}
	include := strings.Split(q.Get("include"), ",")
	withMeta, withTags := slices.Contains(include, "metadata"), slices.Contains(include, "tags")
	var names []string
	for n, b := range blobs {
		if b.committed && strings.HasPrefix(n, prefix) && n >= marker {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	type item struct {
		name   string
		prefix bool
	}
	var items []item
	next := ""
	for _, n := range names {
		it := item{name: n}
		if delim != "" {
			if i := strings.Index(n[len(prefix):], delim); i >= 0 {
				it = item{name: n[:len(prefix)+i+len(delim)], prefix: true}
				if len(items) > 0 && items[len(items)-1] == it {
					continue
				}
			}
		}
		if len(items) == limit {
			next = it.name
			break
		}
		items = append(items, it)
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, `<?xml version="1.0" encoding="utf-8"?><EnumerationResults ServiceEndpoint="%s" ContainerName="%s">`, blobURL, container)
	// Prefix, Marker and MaxResults echo only what the request gave
	// (recorded List Blobs answers).
	if q.Has("prefix") {
		b.WriteString("<Prefix>")
		_ = xml.EscapeText(&b, []byte(prefix))
		b.WriteString("</Prefix>")
	}
	if marker != "" {
		b.WriteString("<Marker>")
		_ = xml.EscapeText(&b, []byte(marker))
		b.WriteString("</Marker>")
	}
	if q.Has("maxresults") {
		fmt.Fprintf(&b, "<MaxResults>%d</MaxResults>", limit)
	}
	if delim != "" {
		b.WriteString("<Delimiter>")
		_ = xml.EscapeText(&b, []byte(delim))
		b.WriteString("</Delimiter>")
	}
	b.WriteString("<Blobs>")
	for _, it := range items {
		if it.prefix {
			b.WriteString("<BlobPrefix><Name>")
			_ = xml.EscapeText(&b, []byte(it.name))
			b.WriteString("</Name></BlobPrefix>")
			continue
		}
		bd := blobs[it.name]
		bd.lease.settle(now)
		b.WriteString("<Blob><Name>")
		_ = xml.EscapeText(&b, []byte(it.name))
		fmt.Fprintf(&b, "</Name><Properties><Creation-Time>%s</Creation-Time><Last-Modified>%s</Last-Modified><Etag>%s</Etag><Content-Length>%d</Content-Length>",
			rfc1123(bd.created), rfc1123(bd.modified), bd.etag, len(bd.data))
		// Every property element, empty when unset, in the service's order
		// (recorded List Blobs answers): a reader can tell a compressed
		// blob by its Content-Encoding without reading it.
		elem := func(name, v string) {
			if v == "" {
				b.WriteString("<" + name + " />")
				return
			}
			b.WriteString("<" + name + ">")
			_ = xml.EscapeText(&b, []byte(v))
			b.WriteString("</" + name + ">")
		}
		elem("Content-Type", bd.props.Get("Content-Type"))
		elem("Content-Encoding", bd.props.Get("Content-Encoding"))
		elem("Content-Language", bd.props.Get("Content-Language"))
		elem("Content-CRC64", "")
		elem("Content-MD5", bd.props.Get("Content-Md5"))
		elem("Cache-Control", bd.props.Get("Cache-Control"))
		elem("Content-Disposition", bd.props.Get("Content-Disposition"))
		fmt.Fprintf(&b, "<BlobType>BlockBlob</BlobType><AccessTier>Hot</AccessTier><AccessTierInferred>true</AccessTierInferred><LeaseStatus>%s</LeaseStatus><LeaseState>%s</LeaseState>", bd.lease.status(), bd.lease.state)
		if bd.lease.state == leaseLeased {
			fmt.Fprintf(&b, "<LeaseDuration>%s</LeaseDuration>", bd.lease.duration())
		}
		b.WriteString("<ServerEncrypted>true</ServerEncrypted>")
		if len(bd.tags) > 0 {
			fmt.Fprintf(&b, "<TagCount>%d</TagCount>", len(bd.tags))
		}
		b.WriteString("</Properties>")
		if withMeta && len(bd.meta) > 0 {
			b.WriteString("<Metadata>")
			for _, k := range slices.Sorted(maps.Keys(bd.meta)) {
				key := strings.ToLower(strings.TrimPrefix(strings.ToLower(k), "x-ms-meta-"))
				fmt.Fprintf(&b, "<%s>", key)
				_ = xml.EscapeText(&b, []byte(strings.Join(bd.meta[k], ",")))
				fmt.Fprintf(&b, "</%s>", key)
			}
			b.WriteString("</Metadata>")
		}
		if withTags && len(bd.tags) > 0 {
			b.WriteString("<Tags><TagSet>")
			for _, k := range slices.Sorted(maps.Keys(bd.tags)) {
				b.WriteString("<Tag><Key>")
				_ = xml.EscapeText(&b, []byte(k))
				b.WriteString("</Key><Value>")
				_ = xml.EscapeText(&b, []byte(bd.tags.Get(k)))
				b.WriteString("</Value></Tag>")
			}
			b.WriteString("</TagSet></Tags>")
		}
		b.WriteString("</Blob>")
	}
	b.WriteString("</Blobs><NextMarker>")
	_ = xml.EscapeText(&b, []byte(next))
	b.WriteString("</NextMarker></EnumerationResults>")
	return xmlResponse(req, http.StatusOK, b.Bytes())
}
