package fake

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/tablekit/tablekit/keys"
)

// Blob operations, for counters and fault injection.
const (
	OpCreateContainer Operation = "CreateContainer"
	OpDeleteContainer Operation = "DeleteContainer"
	OpPutBlob         Operation = "PutBlob"
	OpGetBlob         Operation = "GetBlob"
	OpDeleteBlob      Operation = "DeleteBlob"
	OpListBlobs       Operation = "ListBlobs"
)

// BlobServiceOptions configure a BlobService. nil means the defaults.
type BlobServiceOptions struct {
	// Now is the clock for Last-Modified and ETags. Default: time.Now.
	Now func() time.Time
}

// BlobService is an in-memory Azure Blob service for block blobs uploaded in
// one request (Put Blob), an HTTP transport behind the official
// *azblob.Client: containers, put, get (whole or ranged), delete, with the
// If-Match / If-None-Match conditions and the service's error codes,
// request counters and fault injection. Safe for concurrent use.
type BlobService struct {
	faults     // FailNext, FailNextAfter, Count, Total, Counts, ResetCounts; mu guards all
	now        func() time.Time
	containers map[string]map[string]*blobData
	seq        uint64
}

type blobData struct {
	data     []byte
	etag     string
	modified time.Time
	ctype    string
	meta     http.Header
}

// BlobURL is the endpoint the fake's blob clients use.
const BlobURL = "https://fake.blob.core.windows.net/"

// NewBlobService returns an empty service.
func NewBlobService(opts *BlobServiceOptions) *BlobService {
	s := &BlobService{now: time.Now, containers: map[string]map[string]*blobData{}}
	if opts != nil && opts.Now != nil {
		s.now = opts.Now
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
	c, err := azblob.NewClientWithNoCredential(BlobURL, &o)
	if err != nil {
		panic("fake: " + err.Error()) // only a malformed constant URL could cause this
	}
	return c
}

// Blob returns a copy of a blob's content, and whether it exists.
func (s *BlobService) Blob(container, name string) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.containers[container][name]
	if !ok {
		return nil, false
	}
	return bytes.Clone(b.data), true
}

// Names lists the blobs of a container in name order, as the service
// lists them.
func (s *BlobService) Names(container string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.containers[container]))
}

// Do serves one HTTP request of the Blob REST API.
func (s *BlobService) Do(req *http.Request) (*http.Response, error) {
	body, err := readRequest(req)
	if err != nil {
		return nil, err
	}
	path := strings.TrimPrefix(req.URL.Path, "/")
	container, name, isBlob := strings.Cut(path, "/")
	q := req.URL.Query()
	var op Operation
	switch {
	case !isBlob && q.Get("restype") == "container" && req.Method == http.MethodPut:
		op = OpCreateContainer
	case !isBlob && q.Get("restype") == "container" && req.Method == http.MethodDelete:
		op = OpDeleteContainer
	case !isBlob && q.Get("restype") == "container" && q.Get("comp") == "list" && req.Method == http.MethodGet:
		op = OpListBlobs
	case isBlob && req.Method == http.MethodPut && q.Get("comp") == "":
		op = OpPutBlob
	case isBlob && (req.Method == http.MethodGet || req.Method == http.MethodHead) && q.Get("comp") == "":
		op = OpGetBlob
	case isBlob && req.Method == http.MethodDelete:
		op = OpDeleteBlob
	default:
		return xmlError(req, http.StatusNotImplemented, "NotImplemented", "The fake blob service does not implement this operation."), nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if f := s.arrive(op); f != nil {
		return xmlError(req, f.status, f.code, "injected fault"), nil
	}
	blobs, exists := s.containers[container]
	switch op {
	case OpCreateContainer:
		if err := keys.ValidateContainerName(container); err != nil {
			return xmlError(req, http.StatusBadRequest, "InvalidResourceName", "The specified resource name contains invalid characters."), nil
		}
		if exists {
			return xmlError(req, http.StatusConflict, "ContainerAlreadyExists", "The specified container already exists."), nil
		}
		s.containers[container] = map[string]*blobData{}
		h := http.Header{}
		h.Set("ETag", s.etag())
		h.Set("Last-Modified", rfc1123(s.now()))
		return response(req, http.StatusCreated, h, nil), nil
	case OpDeleteContainer:
		if !exists {
			return xmlError(req, http.StatusNotFound, "ContainerNotFound", "The specified container does not exist."), nil
		}
		delete(s.containers, container)
		return response(req, http.StatusAccepted, nil, nil), nil
	}
	if !exists {
		return xmlError(req, http.StatusNotFound, "ContainerNotFound", "The specified container does not exist."), nil
	}
	if op == OpListBlobs {
		return s.list(req, container, blobs), nil
	}
	if err := keys.ValidateBlobName(name); err != nil {
		return xmlError(req, http.StatusBadRequest, "InvalidResourceName", "The specified resource name contains invalid characters."), nil
	}
	cur := blobs[name]
	if resp := s.conditions(req, cur, op); resp != nil {
		return resp, nil
	}
	switch op {
	case OpPutBlob:
		if req.Header.Get("X-Ms-Blob-Type") != "BlockBlob" {
			return xmlError(req, http.StatusBadRequest, "InvalidBlobType", "The fake blob service stores block blobs only."), nil
		}
		b := &blobData{data: body, etag: s.etag(), modified: s.now().UTC(), ctype: req.Header.Get("X-Ms-Blob-Content-Type"), meta: http.Header{}}
		for k, v := range req.Header {
			if strings.HasPrefix(strings.ToLower(k), "x-ms-meta-") {
				b.meta[k] = v
			}
		}
		blobs[name] = b
		h := http.Header{}
		h.Set("ETag", b.etag)
		h.Set("Last-Modified", rfc1123(b.modified))
		h.Set("X-Ms-Request-Server-Encrypted", "true")
		return response(req, http.StatusCreated, h, nil), nil
	case OpDeleteBlob:
		if cur == nil {
			return xmlError(req, http.StatusNotFound, "BlobNotFound", "The specified blob does not exist."), nil
		}
		delete(blobs, name)
		return response(req, http.StatusAccepted, nil, nil), nil
	}
	// Get (or HEAD).
	if cur == nil {
		return xmlError(req, http.StatusNotFound, "BlobNotFound", "The specified blob does not exist."), nil
	}
	h := http.Header{}
	for k, v := range cur.meta {
		h[k] = v
	}
	h.Set("ETag", cur.etag)
	h.Set("Last-Modified", rfc1123(cur.modified))
	h.Set("X-Ms-Blob-Type", "BlockBlob")
	h.Set("Accept-Ranges", "bytes")
	ctype := cur.ctype
	if ctype == "" {
		ctype = "application/octet-stream"
	}
	h.Set("Content-Type", ctype)
	data, status := cur.data, http.StatusOK
	if rng := req.Header.Get("X-Ms-Range"); rng != "" || req.Header.Get("Range") != "" {
		if rng == "" {
			rng = req.Header.Get("Range")
		}
		var from, to int64 = 0, int64(len(cur.data)) - 1
		spec := strings.TrimPrefix(rng, "bytes=")
		a, b, _ := strings.Cut(spec, "-")
		from, _ = strconv.ParseInt(a, 10, 64)
		if b != "" {
			to, _ = strconv.ParseInt(b, 10, 64)
		}
		if from >= int64(len(cur.data)) && len(cur.data) > 0 {
			return xmlError(req, http.StatusRequestedRangeNotSatisfiable, "InvalidRange", "The range specified is invalid for the current size of the resource."), nil
		}
		to = min(to, int64(len(cur.data))-1)
		if len(cur.data) > 0 {
			data = cur.data[from : to+1]
			h.Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", from, to, len(cur.data)))
			status = http.StatusPartialContent
		}
	}
	h.Set("Content-Length", strconv.Itoa(len(data)))
	if req.Method == http.MethodHead {
		data = nil
	}
	return response(req, status, h, bytes.Clone(data)), nil
}

// conditions applies If-Match and If-None-Match.
func (s *BlobService) conditions(req *http.Request, cur *blobData, op Operation) *http.Response {
	if m := req.Header.Get("If-Match"); m != "" {
		if cur == nil {
			if op == OpPutBlob {
				return xmlError(req, http.StatusPreconditionFailed, "ConditionNotMet", "The condition specified using HTTP conditional header(s) is not met.")
			}
			return xmlError(req, http.StatusNotFound, "BlobNotFound", "The specified blob does not exist.")
		}
		if m != "*" && m != cur.etag {
			return xmlError(req, http.StatusPreconditionFailed, "ConditionNotMet", "The condition specified using HTTP conditional header(s) is not met.")
		}
	}
	if m := req.Header.Get("If-None-Match"); m != "" && cur != nil && (m == "*" || m == cur.etag) {
		if op == OpPutBlob {
			return xmlError(req, http.StatusConflict, "BlobAlreadyExists", "The specified blob already exists.")
		}
		return xmlError(req, http.StatusNotModified, "ConditionNotMet", "The condition specified using HTTP conditional header(s) is not met.")
	}
	return nil
}

func (s *BlobService) etag() string {
	s.seq++
	return fmt.Sprintf(`"0x8DC%013X"`, uint64(s.now().UnixNano()/100)+s.seq)
}

// list answers List Blobs (flat): names in order, from the marker, with
// properties and, when asked, metadata.
func (s *BlobService) list(req *http.Request, container string, blobs map[string]*blobData) *http.Response {
	q := req.URL.Query()
	prefix, marker := q.Get("prefix"), q.Get("marker")
	max := 5000
	if m, err := strconv.Atoi(q.Get("maxresults")); err == nil && m > 0 && m < max {
		max = m
	}
	withMeta := strings.Contains(q.Get("include"), "metadata")
	var names []string
	for n := range blobs {
		if strings.HasPrefix(n, prefix) && n >= marker {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	next := ""
	if len(names) > max {
		next, names = names[max], names[:max]
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, `<?xml version="1.0" encoding="utf-8"?><EnumerationResults ServiceEndpoint="%s" ContainerName="%s"><Prefix>`, BlobURL, container)
	_ = xml.EscapeText(&b, []byte(prefix))
	fmt.Fprintf(&b, "</Prefix><MaxResults>%d</MaxResults><Blobs>", max)
	for _, n := range names {
		bd := blobs[n]
		b.WriteString("<Blob><Name>")
		_ = xml.EscapeText(&b, []byte(n))
		ctype := bd.ctype
		if ctype == "" {
			ctype = "application/octet-stream"
		}
		fmt.Fprintf(&b, "</Name><Properties><Creation-Time>%s</Creation-Time><Last-Modified>%s</Last-Modified><Etag>%s</Etag><Content-Length>%d</Content-Length><Content-Type>%s</Content-Type><BlobType>BlockBlob</BlobType></Properties>",
			rfc1123(bd.modified), rfc1123(bd.modified), bd.etag, len(bd.data), ctype)
		if withMeta && len(bd.meta) > 0 {
			b.WriteString("<Metadata>")
			for k, v := range bd.meta {
				key := strings.ToLower(strings.TrimPrefix(strings.ToLower(k), "x-ms-meta-"))
				fmt.Fprintf(&b, "<%s>", key)
				_ = xml.EscapeText(&b, []byte(strings.Join(v, ",")))
				fmt.Fprintf(&b, "</%s>", key)
			}
			b.WriteString("</Metadata>")
		}
		b.WriteString("</Blob>")
	}
	b.WriteString("</Blobs><NextMarker>")
	_ = xml.EscapeText(&b, []byte(next))
	b.WriteString("</NextMarker></EnumerationResults>")
	return xmlResponse(req, http.StatusOK, b.Bytes())
}
