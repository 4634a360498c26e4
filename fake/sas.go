package fake

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/xml"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/tablekit/tablekit/internal/keyrules"
)

// The fake checks a request that carries a SAS (a sig parameter) the way
// "Create a service SAS", "Create an account SAS" and "SAS error codes"
// document it, in the service's order:
//
//  1. the signature, recomputed from the request's resource with the
//     account key (when the service has one): 403 AuthenticationFailed;
//  2. a signed identifier (si) must name a stored access policy of the
//     resource; the policy supplies the permissions, start and expiry the
//     token leaves out, and a field set in both is refused: 403
//     AuthenticationFailed otherwise;
//  3. start and expiry on the service's clock: 403 AuthenticationFailed;
//  4. the signed IP (sip) against the client's address: 403
//     AuthorizationSourceIPMismatch. The fake is called in-process and
//     sees no socket, so the client's address is the ClientIP option
//     (default 127.0.0.1, what a service on loopback sees);
//  5. the signed protocol (spr) against the request URL's scheme: 403
//     AuthorizationProtocolMismatch;
//  6. an account SAS's services (ss) and resource types (srt): 403
//     AuthorizationServiceMismatch, AuthorizationResourceTypeMismatch;
//  7. the permissions the operation needs: 403 AuthorizationPermissionMismatch.
//
// A SAS never reaches the ACL operations: 403 AuthorizationFailure.

// Operations on stored access policies, for counters and fault injection.
const (
	OpGetTableACL     Operation = "GetTableACL"
	OpSetTableACL     Operation = "SetTableACL"
	OpGetQueueACL     Operation = "GetQueueACL"
	OpSetQueueACL     Operation = "SetQueueACL"
	OpGetContainerACL Operation = "GetContainerACL"
	OpSetContainerACL Operation = "SetContainerACL"
)

// maxSignedIdentifiers is the most stored access policies a table, queue
// or container holds ("Define a stored access policy": five).
const maxSignedIdentifiers = 5

// maxIdentifierLength: "the identifier may be up to 64 characters long".
const maxIdentifierLength = 64

const sasTime = "2006-01-02T15:04:05Z"

// sasConfig is what a service knows to check tokens.
type sasConfig struct {
	account, key string // key "" : signatures are not verified
	clientIP     netip.Addr
}

func newSASConfig(account, key string, ip netip.Addr) sasConfig {
	if !ip.IsValid() {
		ip = netip.AddrFrom4([4]byte{127, 0, 0, 1})
	}
	return sasConfig{account: account, key: key, clientIP: ip}
}

// storedPolicy is a signed identifier as the resource keeps it.
type storedPolicy struct {
	ID     string `xml:"Id"`
	Start  string `xml:"AccessPolicy>Start,omitempty"`
	Expiry string `xml:"AccessPolicy>Expiry,omitempty"`
	Perm   string `xml:"AccessPolicy>Permission,omitempty"`
}

// sasTarget is what one request needs of a token.
type sasTarget struct {
	service byte // 'b', 'q' or 't': the account SAS's ss letter
	// canonical is the service SAS's canonicalized resource for the
	// token's signed resource (sr for blobs).
	canonical func(q url.Values) string
	// need: the permission letters a service SAS must all grant, or
	// alternatives of them separated by '|' ("w|c"); "" when no service
	// SAS may do this.
	need string
	// resourceType (s, c, o) and accountNeed: what an account SAS needs.
	resourceType byte
	accountNeed  string
	// policies are the stored access policies of the resource a service
	// SAS is for.
	policies []storedPolicy
}

func deny(code, msg string) *svcError { return errf(http.StatusForbidden, code, "%s", msg) }

const authFailed = "Server failed to authenticate the request. Make sure the value of Authorization header is formed correctly including the signature."

// check applies a SAS to one request; nil means allowed.
func (c sasConfig) check(req *http.Request, q url.Values, now time.Time, t sasTarget) *svcError {
	account := q.Has("ss") || q.Has("srt")
	sp, st, se := q.Get("sp"), q.Get("st"), q.Get("se")
	if c.key != "" {
		var lines []string
		if account {
			lines = []string{c.account, sp, q.Get("ss"), q.Get("srt"), st, se, q.Get("sip"), q.Get("spr"), q.Get("sv")}
			if q.Get("sv") >= "2020-12-06" {
				lines = append(lines, q.Get("ses"))
			}
			lines = append(lines, "")
		} else {
			lines = []string{sp, st, se, t.canonical(q), q.Get("si"), q.Get("sip"), q.Get("spr"), q.Get("sv")}
			switch t.service {
			case 't':
				lines = append(lines, q.Get("spk"), q.Get("srk"), q.Get("epk"), q.Get("erk"))
			case 'b':
				lines = append(lines, q.Get("sr"), q.Get("snapshot"))
				if q.Get("sv") >= "2020-12-06" {
					lines = append(lines, q.Get("ses"))
				}
				lines = append(lines, q.Get("rscc"), q.Get("rscd"), q.Get("rsce"), q.Get("rscl"), q.Get("rsct"))
			}
		}
		key, _ := base64.StdEncoding.DecodeString(c.key)
		mac := hmac.New(sha256.New, key)
		mac.Write([]byte(strings.Join(lines, "\n")))
		if !hmac.Equal([]byte(base64.StdEncoding.EncodeToString(mac.Sum(nil))), []byte(q.Get("sig"))) {
			return deny("AuthenticationFailed", authFailed+"\nSignature did not match.")
		}
	}
	if id := q.Get("si"); id != "" && !account {
		var p *storedPolicy
		for i := range t.policies {
			if t.policies[i].ID == id {
				p = &t.policies[i]
			}
		}
		if p == nil {
			return deny("AuthenticationFailed", authFailed+"\nSigned identifier "+id+" not found: the stored access policy does not exist or was revoked.")
		}
		// "You can't specify a parameter on both the SAS token and the
		// stored access policy."
		if sp != "" && p.Perm != "" || st != "" && p.Start != "" || se != "" && p.Expiry != "" {
			return deny("AuthenticationFailed", authFailed+"\nAccess policy fields can be associated with signature or SAS identifier but not both.")
		}
		sp, st, se = or(sp, p.Perm), or(st, p.Start), or(se, p.Expiry)
	}
	expiry, err := parseSASTime(se)
	if err != nil || !now.Before(expiry) {
		return deny("AuthenticationFailed", authFailed+"\nSigned expiry time has passed or is malformed.")
	}
	if st != "" {
		if start, err := parseSASTime(st); err != nil || now.Before(start) {
			return deny("AuthenticationFailed", authFailed+"\nSigned start time is in the future or malformed.")
		}
	}
	if sip := q.Get("sip"); sip != "" && !ipIn(sip, c.clientIP) {
		return deny("AuthorizationSourceIPMismatch", "This request is not authorized to perform this operation using this source IP "+c.clientIP.String()+".")
	}
	if spr := q.Get("spr"); spr == "https" && req.URL.Scheme != "https" {
		return deny("AuthorizationProtocolMismatch", "This request is not authorized to perform this operation using this protocol.")
	}
	need := t.need
	if account {
		if !strings.ContainsRune(q.Get("ss"), rune(t.service)) {
			return deny("AuthorizationServiceMismatch", "This request is not authorized to perform this operation using this service.")
		}
		if !strings.ContainsRune(q.Get("srt"), rune(t.resourceType)) {
			return deny("AuthorizationResourceTypeMismatch", "This request is not authorized to perform this operation using this resource type.")
		}
		need = t.accountNeed
	}
	// need lists alternatives ("w|c"), each a set of letters all needed.
	if !slices.ContainsFunc(strings.Split(need, "|"), func(alt string) bool {
		return alt != "" && !strings.ContainsFunc(alt, func(r rune) bool { return !strings.ContainsRune(sp, r) })
	}) {
		return deny("AuthorizationPermissionMismatch", "This request is not authorized to perform this operation using this permission.")
	}
	return nil
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func parseSASTime(s string) (time.Time, error) {
	for _, layout := range []string{sasTime, "2006-01-02T15:04Z", "2006-01-02", time.RFC3339Nano} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Parse(sasTime, s)
}

// ipIn reports whether ip is in a sip value ("a.b.c.d" or "a.b.c.d-e.f.g.h").
func ipIn(sip string, ip netip.Addr) bool {
	lo, hi, isRange := strings.Cut(sip, "-")
	start, err := netip.ParseAddr(lo)
	if err != nil {
		return false
	}
	if !isRange {
		return ip.Unmap() == start
	}
	end, err := netip.ParseAddr(hi)
	return err == nil && start.Compare(ip.Unmap()) <= 0 && ip.Unmap().Compare(end) <= 0
}

// checkSAS enforces a table service SAS or an account SAS on one
// operation, then the table the token names. Azurite checks the
// signature, expiry and permissions but not the key range; the fake
// checks all of them (the key range in Do and checkBatchSAS).
func (s *TableService) checkSAS(req *http.Request, op Operation, tg target, h http.Header, q url.Values) *svcError {
	need := map[Operation]string{OpGetEntity: "r", OpQueryEntities: "r", OpInsertEntity: "a", OpDeleteEntity: "d", OpUpdateEntity: "u", OpMergeEntity: "u"}[op]
	if (op == OpUpdateEntity || op == OpMergeEntity) && h.Get("If-Match") == "" {
		need = "au" // an upsert may insert: it needs both
	}
	t := sasTarget{service: 't', need: need, resourceType: 'o', accountNeed: need,
		canonical: func(q url.Values) string { return "/table/" + s.opts.AccountName + "/" + strings.ToLower(q.Get("tn")) }}
	switch op {
	// "Create an account SAS": creating a table, queue or container
	// takes w (c creates blobs and files only); listing them is a
	// service-level call (srt=s) taking l.
	case OpCreateTable:
		t.need, t.resourceType, t.accountNeed = "", 'c', "w"
	case OpDeleteTable:
		t.need, t.resourceType, t.accountNeed = "", 'c', "d"
	case OpQueryTables:
		t.need, t.resourceType, t.accountNeed = "", 's', "l"
	}
	account := q.Has("ss") || q.Has("srt")
	if !account {
		if td := s.tables[strings.ToLower(q.Get("tn"))]; td != nil {
			t.policies = td.policies
		}
	}
	if serr := s.sas.check(req, q, s.opts.Now(), t); serr != nil {
		return serr
	}
	if !account && tg.table != "" && !strings.EqualFold(tg.table, q.Get("tn")) {
		return deny("AuthorizationFailure", "This request is not authorized to perform this operation: the SAS is for another table.")
	}
	return nil
}

// checkBatchSAS applies a SAS to every operation of a transaction: the
// service authorizes the whole request, so one operation the token may
// not do refuses it all with 403, before anything is written.
func (s *TableService) checkBatchSAS(req *http.Request, ops []batchOp) *svcError {
	q := req.URL.Query()
	for _, o := range ops {
		if o.op == "" {
			continue // reported as the transaction's own error
		}
		if serr := s.checkSAS(req, o.op, o.tg, o.header, q); serr != nil {
			return serr
		}
		if !inSASRange(q, o.pk, o.rk) {
			return deny("AuthorizationFailure", "This request is not authorized to perform this operation: an entity is outside the SAS key range.")
		}
	}
	return nil
}

// inSASRange reports whether (pk, rk) lies in the token's key range.
func inSASRange(q url.Values, pk, rk string) bool {
	spk, srk, epk, erk := q.Get("spk"), q.Get("srk"), q.Get("epk"), q.Get("erk")
	if spk != "" {
		if c := keyrules.Compare(pk, spk); c < 0 || (c == 0 && srk != "" && keyrules.Compare(rk, srk) < 0) {
			return false
		}
	}
	if epk != "" {
		if c := keyrules.Compare(pk, epk); c > 0 || (c == 0 && erk != "" && keyrules.Compare(rk, erk) > 0) {
			return false
		}
	}
	return true
}

// signedIdentifiers is the body of Get and Set ACL.
type signedIdentifiers struct {
	XMLName xml.Name       `xml:"SignedIdentifiers"`
	List    []storedPolicy `xml:"SignedIdentifier"`
}

// parseACL reads a Set ACL body and checks it as the service does: at
// most five identifiers of 1 to 64 characters, valid times; Start,
// Expiry and Permission are optional ("Define a stored access policy";
// Azurite 3.37 requires the three on a table). An empty body clears the
// list.
func parseACL(body []byte) ([]storedPolicy, *svcError) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, nil
	}
	var doc signedIdentifiers
	dec := xml.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&doc); err != nil && err != io.EOF {
		return nil, errf(http.StatusBadRequest, "InvalidXmlDocument", "XML specified is not syntactically valid.")
	}
	if len(doc.List) > maxSignedIdentifiers {
		return nil, errf(http.StatusBadRequest, "InvalidXmlDocument", "XML specified is not syntactically valid: more than %d signed identifiers.", maxSignedIdentifiers)
	}
	seen := map[string]bool{}
	for i, p := range doc.List {
		if n := len([]rune(p.ID)); n == 0 || n > maxIdentifierLength || seen[p.ID] {
			return nil, errf(http.StatusBadRequest, "InvalidXmlDocument", "XML specified is not syntactically valid: signed identifier %q.", p.ID)
		}
		seen[p.ID] = true
		for _, v := range []*string{&doc.List[i].Start, &doc.List[i].Expiry} {
			if *v == "" {
				continue
			}
			t, err := parseSASTime(*v)
			if err != nil {
				return nil, errf(http.StatusBadRequest, "InvalidXmlDocument", "XML specified is not syntactically valid: time %q.", *v)
			}
			*v = t.UTC().Format("2006-01-02T15:04:05.0000000Z") // as Get ACL answers
		}
	}
	return doc.List, nil
}

// aclBody renders a Get ACL answer.
func aclBody(ps []storedPolicy) []byte {
	var b bytes.Buffer
	b.WriteString(`<?xml version="1.0" encoding="utf-8"?><SignedIdentifiers>`)
	elem := func(name, v string) {
		b.WriteString("<" + name + ">")
		_ = xml.EscapeText(&b, []byte(v))
		b.WriteString("</" + name + ">")
	}
	for _, p := range ps {
		b.WriteString("<SignedIdentifier>")
		elem("Id", p.ID)
		// An identifier set without a policy comes back without an
		// AccessPolicy element, as the service answers it.
		if p.Start != "" || p.Expiry != "" || p.Perm != "" {
			b.WriteString("<AccessPolicy>")
			for _, f := range [][2]string{{"Start", p.Start}, {"Expiry", p.Expiry}, {"Permission", p.Perm}} {
				if f[1] != "" {
					elem(f[0], f[1])
				}
			}
			b.WriteString("</AccessPolicy>")
		}
		b.WriteString("</SignedIdentifier>")
	}
	b.WriteString("</SignedIdentifiers>")
	return b.Bytes()
}

// tableACL serves Get and Set Table ACL (?comp=acl); s.mu is held.
func (s *TableService) tableACL(req *http.Request, name string, body []byte) *http.Response {
	if req.URL.Query().Get("sig") != "" {
		return aclError(req, deny("AuthorizationFailure", "This request is not authorized to perform this operation."))
	}
	td, serr := s.table(name)
	if serr != nil {
		return aclError(req, serr)
	}
	if req.Method == http.MethodGet {
		h := http.Header{}
		h.Set("Content-Type", "application/xml")
		return response(req, http.StatusOK, h, aclBody(td.policies))
	}
	ps, serr := parseACL(body)
	if serr != nil {
		return aclError(req, serr)
	}
	td.policies = ps
	return response(req, http.StatusNoContent, nil, nil)
}

// aclError answers a Table ACL request's error as the service does
// (recorded): in XML, the OData error in the metadata namespace, with
// x-ms-error-code, unlike the JSON errors of the rest of the Table API.
func aclError(req *http.Request, e *svcError) *http.Response {
	var b bytes.Buffer
	b.WriteString(`<?xml version="1.0" encoding="utf-8"?><m:error xmlns:m="http://schemas.microsoft.com/ado/2007/08/dataservices/metadata"><m:code>`)
	_ = xml.EscapeText(&b, []byte(e.code))
	b.WriteString(`</m:code><m:message xml:lang="en-US">`)
	_ = xml.EscapeText(&b, []byte(e.msg+"\nRequestId:00000000-0000-0000-0000-000000000000\nTime:"+time.Now().UTC().Format(time.RFC3339Nano)))
	b.WriteString(`</m:message></m:error>`)
	h := http.Header{}
	h.Set("Content-Type", "application/xml")
	h.Set("X-Ms-Error-Code", e.code)
	return response(req, e.status, h, b.Bytes())
}

// queueACL serves Get and Set Queue ACL (?comp=acl); s.mu is held.
func (s *QueueService) queueACL(req *http.Request, qd *queueData, body []byte) *http.Response {
	if req.URL.Query().Get("sig") != "" {
		return xmlError(req, http.StatusForbidden, "AuthorizationFailure", "This request is not authorized to perform this operation.")
	}
	if req.Method == http.MethodGet {
		h := http.Header{}
		h.Set("Content-Type", "application/xml")
		return response(req, http.StatusOK, h, aclBody(qd.policies))
	}
	ps, serr := parseACL(body)
	if serr != nil {
		return xmlError(req, serr.status, serr.code, serr.msg)
	}
	qd.policies = ps
	return response(req, http.StatusNoContent, nil, nil)
}

// queueSASTarget is what a queue operation needs of a token.
func (s *QueueService) queueSASTarget(op Operation, name string) sasTarget {
	t := sasTarget{service: 'q', resourceType: 'o', canonical: func(url.Values) string { return "/queue/" + s.sas.account + "/" + name }}
	t.need = map[Operation]string{OpEnqueue: "a", OpDequeue: "p", OpPeek: "r", OpUpdateMessage: "u", OpDeleteMessage: "p", OpQueueProperties: "r"}[op]
	t.accountNeed = map[Operation]string{
		OpEnqueue: "a", OpDequeue: "p", OpPeek: "r", OpUpdateMessage: "u", OpDeleteMessage: "p", OpClearMessages: "d", OpQueueProperties: "r",
		OpCreateQueue: "w", OpDeleteQueue: "d", OpQueueMetadata: "w",
	}[op]
	switch op {
	case OpCreateQueue, OpDeleteQueue, OpQueueMetadata, OpQueueProperties:
		t.resourceType = 'c'
	}
	if qd := s.queues[name]; qd != nil {
		t.policies = qd.policies
	}
	return t
}

// containerACL serves Get and Set Container ACL; s.mu is held.
func (s *BlobService) containerACL(req *http.Request, c *containerData, body []byte, now time.Time) *http.Response {
	if req.URL.Query().Get("sig") != "" {
		return xmlError(req, http.StatusForbidden, "AuthorizationFailure", "This request is not authorized to perform this operation.")
	}
	if c == nil {
		return blobError(req, http.StatusNotFound, "ContainerNotFound")
	}
	if resp := leaseAllows(req, &c.lease, req.Method == http.MethodPut, "Container"); resp != nil {
		return resp
	}
	h := http.Header{}
	if req.Method == http.MethodGet {
		h.Set("Content-Type", "application/xml")
		h.Set("ETag", c.etag)
		h.Set("Last-Modified", rfc1123(c.modified))
		if c.access != "" {
			h.Set("X-Ms-Blob-Public-Access", c.access)
		}
		return response(req, http.StatusOK, h, aclBody(c.policies))
	}
	ps, serr := parseACL(body)
	if serr != nil {
		return xmlError(req, serr.status, serr.code, serr.msg)
	}
	switch a := req.Header.Get("X-Ms-Blob-Public-Access"); a {
	case "", "container", "blob":
		c.access = a
	default:
		return blobError(req, http.StatusBadRequest, "InvalidHeaderValue")
	}
	c.policies = ps
	c.etag, c.modified = s.etag(), now
	h.Set("ETag", c.etag)
	h.Set("Last-Modified", rfc1123(c.modified))
	return response(req, http.StatusOK, h, nil)
}

// blobSASTarget is what a blob or container operation needs of a token;
// exists: the blob is there (c, create, writes only a new one).
func (s *BlobService) blobSASTarget(op Operation, container, name string, exists bool) sasTarget {
	t := sasTarget{service: 'b', resourceType: 'o', canonical: func(q url.Values) string {
		if q.Get("sr") == "b" {
			return "/blob/" + s.sas.account + "/" + container + "/" + name
		}
		return "/blob/" + s.sas.account + "/" + container
	}}
	t.need = map[Operation]string{
		OpPutBlob: "w", OpPutBlock: "w", OpPutBlockList: "w", OpGetBlob: "r", OpGetBlockList: "r", OpDeleteBlob: "d",
		OpSetBlobMetadata: "w", OpSetBlobProperties: "w", OpLeaseBlob: "w", OpListBlobs: "l",
	}[op]
	t.accountNeed = map[Operation]string{
		OpPutBlob: "w", OpPutBlock: "w", OpPutBlockList: "w", OpGetBlob: "r", OpGetBlockList: "r", OpDeleteBlob: "d",
		OpSetBlobMetadata: "w", OpSetBlobProperties: "w", OpLeaseBlob: "w", OpListBlobs: "l",
		OpCreateContainer: "w", OpDeleteContainer: "d", OpContainerProperties: "r", OpContainerMetadata: "w", OpLeaseContainer: "w",
	}[op]
	if !exists && (op == OpPutBlob || op == OpPutBlock || op == OpPutBlockList) {
		t.need, t.accountNeed = "w|c", "w|c"
	}
	switch op {
	case OpListBlobs, OpCreateContainer, OpDeleteContainer, OpContainerProperties, OpContainerMetadata, OpLeaseContainer:
		t.resourceType = 'c'
	}
	if c := s.containers[container]; c != nil {
		t.policies = c.policies
	}
	return t
}
