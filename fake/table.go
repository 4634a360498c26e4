package fake

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/internal/keyrules"
	"github.com/tablekit/tablekit/internal/wirepolicy"
)

// Table operations, for counters and fault injection.
const (
	OpCreateTable   Operation = "CreateTable"
	OpDeleteTable   Operation = "DeleteTable"
	OpQueryTables   Operation = "QueryTables"
	OpInsertEntity  Operation = "InsertEntity"
	OpUpdateEntity  Operation = "UpdateEntity" // PUT: replace, or insert-or-replace without If-Match
	OpMergeEntity   Operation = "MergeEntity"  // PATCH: merge, or insert-or-merge without If-Match
	OpDeleteEntity  Operation = "DeleteEntity"
	OpGetEntity     Operation = "GetEntity"
	OpQueryEntities Operation = "QueryEntities"
	OpBatch         Operation = "Batch"
)

// TableServiceOptions configure a TableService. nil means the defaults.
type TableServiceOptions struct {
	// Now is the clock for Timestamps, ETags and the TableBeingDeleted
	// window. Default: time.Now.
	Now func() time.Time
	// Paging is how every table's query responses are cut into pages;
	// SetPaging changes it for one table at run time. Default: the zero
	// Paging, pages as the service cuts them.
	Paging *Paging
	// DeletedTableWindow is how long a deleted table's name answers 409
	// TableBeingDeleted. Default: 40 s; negative: no window.
	DeletedTableWindow time.Duration
	// AccountName and AccountKey let the fake verify SAS signatures.
	// Requests that carry a SAS are always checked for expiry, table,
	// permissions and key range. Default: signatures are not verified.
	AccountName, AccountKey string
	// ClientIP is the address a SAS's signed IP range is checked against:
	// the fake serves in-process and sees no socket. Default: 127.0.0.1.
	ClientIP netip.Addr
	// Busy makes the service answer as an account at its scalability
	// targets (see Busy). Default: nil, every request is served.
	Busy *Busy
}

// TableService is an in-memory Azure Table service. It is an HTTP transport
// (policy.Transporter) that serves the Table REST API, so the clients it
// hands out are the official *aztables.Client and *aztables.ServiceClient:
// every method set, response type, error type and the SDK's own batch
// handling are exactly the real ones. It enforces the documented limits of
// the service where Azurite does not (entity size, property count and names,
// EDM values, EGT partition, size and count rules, 15 comparisons per
// filter). Safe for concurrent use.
type TableService struct {
	faults   // FailNext, FailNextAfter, Count, Total, Counts, ResetCounts; mu guards all
	opts     TableServiceOptions
	sas      sasConfig
	tables   map[string]*tableData // by lower-case name: names are case-insensitive
	deleted  map[string]time.Time  // lower-case name -> when it was deleted
	lastTick time.Time
	paging   map[string]Paging // by lower-case table name: SetPaging's choices
	// batchTime is the one write time of the entity group transaction
	// being applied: the service gives every entity of a batch the same
	// Timestamp and ETag (recorded exchanges). Zero outside a batch.
	batchTime time.Time
	// scanOnly serves every query by scanning, never by looking RowKeys
	// up: the reference a test checks the lookups against.
	scanOnly bool
}

// Paging is how the fake cuts a query's results into pages. The service
// promises only that a page holds at most 1,000 entities: "A query against
// the Table service may return a maximum of 1,000 items at one time and
// may execute for a maximum of five seconds", and a page may end sooner
// (at a partition boundary) or hold nothing at all while still carrying a
// continuation token (Query timeout and pagination, Table service REST
// API). Code must follow continuation tokens until there is none, whatever
// each page holds; realistic paging makes a test prove it does.
//
// The zero Paging is the service's paging: a page ends after 1,000
// entities, where a partition ends in a query that spans partitions, or
// when the 5-second budget runs out (examining an entity costs 1 ms: 5,000
// entities). A query that names one partition (PartitionKey eq '…') reads
// only that partition, as the service seeks it by its index, so a point or
// single-partition query of a few rows comes back whole in one response.
//
// Paging{EmptyPageEvery: 3} is the service's paging at its least
// convenient, to prove a loop follows continuation tokens whatever a page
// holds: every third response of a table is an empty page with a
// continuation token, for any query, a point lookup included. The service
// may answer so; it seldom does.
//
// Paging{AcrossPartitions: true} cuts pages only at 1,000 entities (or
// $top), never at a partition boundary: the fewest requests a query of a
// few thousand entities can take, and how Azurite 3.37 pages. A test that
// sets it should say why: the service may answer with more, shorter pages.
type Paging struct {
	// PageSize caps the entities of one page; a query's $top caps it
	// further. Default (0 or over 1,000): 1,000, the service's limit
	// (maxPageEntities).
	PageSize int
	// AcrossPartitions lets a page run on past the end of a partition.
	// Default false: a page that holds an entity ends when the next
	// entity is in another partition, as the service may where a
	// partition range ends.
	AcrossPartitions bool
	// EmptyPageEvery makes every n-th query response of the table an empty
	// page; it carries a continuation token when entities remain, as the
	// service may send. Default: 0, never.
	EmptyPageEvery int
	// ScanCost is the server time that examining one entity takes, on the
	// fake's clock: a page ends, with a continuation token and possibly
	// empty, once the entities it examined (matching the filter or not)
	// cost the service's 5-second budget (serverTimeBudget), or the clock
	// itself moved that far during the scan. Default (0): 1 ms; negative:
	// scanning is free (only the clock counts).
	ScanCost time.Duration
}

// Service limits the paging model follows (Query timeout and pagination).
const (
	maxPageEntities  = 1000            // at most 1,000 entities in one response
	serverTimeBudget = 5 * time.Second // a query executes for at most 5 s per response
	defaultScanCost  = time.Millisecond
)

// SetPaging makes the fake cut query responses of table (its name in any
// case; it need not exist yet, and keeps the choice if dropped and
// re-created) as p says from the next request on. Safe to call while
// requests are served.
func (s *TableService) SetPaging(table string, p Paging) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.paging[strings.ToLower(table)] = p.normalized()
}

// normalized fills p's defaults: after it, a ScanCost of 0 is free.
func (p Paging) normalized() Paging {
	if p.PageSize <= 0 || p.PageSize > maxPageEntities {
		p.PageSize = maxPageEntities
	}
	switch {
	case p.ScanCost == 0:
		p.ScanCost = defaultScanCost
	case p.ScanCost < 0:
		p.ScanCost = 0
	}
	return p
}

// pagingOf is the paging of the table named lower. s.mu must be held.
func (s *TableService) pagingOf(lower string) Paging {
	if p, ok := s.paging[lower]; ok {
		return p
	}
	return *s.opts.Paging // normalized by NewTableService
}

type tableData struct {
	name     string
	rows     rows           // the entities, by partition in the service's order
	policies []storedPolicy // stored access policies (Set Table ACL)
	pages    int            // query responses served, for Paging.EmptyPageEvery
}

type entity struct {
	pk, rk string
	ts     time.Time
	etag   string
	props  props
}

// NewTableService returns an empty service.
func NewTableService(opts *TableServiceOptions) *TableService {
	s := &TableService{tables: map[string]*tableData{}, deleted: map[string]time.Time{}, paging: map[string]Paging{}}
	if opts != nil {
		s.opts = *opts
	}
	if s.opts.Now == nil {
		s.opts.Now = time.Now
	}
	var p Paging
	if s.opts.Paging != nil {
		p = *s.opts.Paging
	}
	p = p.normalized()
	s.opts.Paging = &p
	if s.opts.DeletedTableWindow == 0 {
		s.opts.DeletedTableWindow = 40 * time.Second
	}
	s.sas = newSASConfig(s.opts.AccountName, s.opts.AccountKey, s.opts.ClientIP)
	return s
}

// tableURL is the service endpoint that the fake's clients use.
const tableURL = "https://fake.table.core.windows.net/"

// URL is the service endpoint that the fake's clients use, ending in '/':
// for a client the fake did not make (one authorized by a SAS token, say),
// built with this service as its transport.
func (s *TableService) URL() string { return tableURL }

// NewServiceClient returns an official service client whose requests this
// fake serves. opts may add policies (a request ledger, say) or retry
// settings; its Transport is replaced. Retries keep the SDK's policy with
// millisecond delays unless opts sets them. Like a client built with
// table.ClientOptions, it carries tablekit's per-call policy (the wire
// path, tablekit's default); for a plain client without it, see "Your own
// client" in the package documentation.
func (s *TableService) NewServiceClient(opts *aztables.ClientOptions) *aztables.ServiceClient {
	var o aztables.ClientOptions
	if opts != nil {
		o = *opts
	}
	serveWith(&o.ClientOptions, s)
	wirepolicy.Add(&o.ClientOptions)
	c, err := aztables.NewServiceClientWithNoCredential(tableURL, &o)
	if err != nil {
		panic("fake: " + err.Error()) // only a malformed constant URL could cause this
	}
	return c
}

// NewClient returns an official client for one table (which need not exist yet).
func (s *TableService) NewClient(table string, opts *aztables.ClientOptions) *aztables.Client {
	return s.NewServiceClient(opts).NewClient(table)
}

var _ policy.Transporter = (*TableService)(nil)

// Len is the number of entities in a table (0 if it does not exist).
func (s *TableService) Len(table string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t := s.tables[strings.ToLower(table)]; t != nil {
		return t.rows.len()
	}
	return 0
}

// svcError is an error answer of the service.
type svcError struct {
	status int
	code   string
	msg    string
}

func errf(status int, code, format string, args ...any) *svcError {
	return &svcError{status: status, code: code, msg: fmt.Sprintf(format, args...)}
}

func (e *svcError) body(index int) []byte {
	msg := e.msg
	if index >= 0 {
		msg = strconv.Itoa(index) + ":" + msg
	}
	var b []byte
	b = append(b, `{"odata.error":{"code":`...)
	b = appendString(b, e.code)
	b = append(b, `,"message":{"lang":"en-US","value":`...)
	b = appendString(b, msg+"\nRequestId:00000000-0000-0000-0000-000000000000\nTime:"+time.Now().UTC().Format(time.RFC3339Nano))
	return append(b, `}}}`...)
}

func response(req *http.Request, status int, header http.Header, body []byte) *http.Response {
	if header == nil {
		header = http.Header{}
	}
	header.Set("X-Ms-Version", "2019-02-02")
	header.Set("X-Ms-Request-Id", "00000000-0000-0000-0000-000000000000")
	return &http.Response{
		Status:        strconv.Itoa(status) + " " + http.StatusText(status),
		StatusCode:    status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        header,
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}
}

// errorResponse answers e as the Table service does: the code in the
// body's odata.error, at the request's metadata level, and no
// x-ms-error-code header (recorded answers of version 2019-02-02 have
// none; the SDK reads the code from the body).
// An insert or a create that asked for a response preference has it
// applied on an error too (a recorded 400 PropertiesNeedValue carries
// Preference-Applied: return-no-content).
func errorResponse(req *http.Request, e *svcError) *http.Response {
	h := http.Header{}
	h.Set("Content-Type", newAnswer(req).contentType())
	if req.Method == http.MethodPost {
		if p := preference(req.Header); p != "" {
			h.Set("Preference-Applied", p)
		}
	}
	return response(req, e.status, h, e.body(-1))
}

// preference is the response preference a request's Prefer header asks
// for: return-no-content, return-content, or none.
func preference(h http.Header) string {
	switch p := h.Get("Prefer"); {
	case strings.Contains(p, "return-no-content"):
		return "return-no-content"
	case strings.Contains(p, "return-content"):
		return "return-content"
	}
	return ""
}

// Do serves one HTTP request of the Table REST API.
func (s *TableService) Do(req *http.Request) (*http.Response, error) {
	body, err := readRequest(req)
	if err != nil {
		return nil, err
	}
	if q := req.URL.Query(); q.Get("comp") == "acl" && (req.Method == http.MethodGet || req.Method == http.MethodPut) {
		op := OpGetTableACL
		if req.Method == http.MethodPut {
			op = OpSetTableACL
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if f := s.arrive(op); f != nil {
			return errorResponse(req, errf(f.status, f.code, "injected fault")), nil
		}
		return s.tableACL(req, strings.Trim(req.URL.Path, "/"), body), nil
	}
	op, target, rerr := route(req)
	if rerr != nil {
		return errorResponse(req, rerr), nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if f := s.arrive(op); f != nil {
		return errorResponse(req, errf(f.status, f.code, "injected fault")), nil
	}
	if berr := s.opts.Busy.admitTable(req, op, target, body); berr != nil {
		return errorResponse(req, berr), nil
	}
	if op == OpBatch {
		return s.batch(req, body), nil
	}
	q := req.URL.Query()
	if q.Get("sig") != "" {
		if serr := s.checkSAS(req, op, target, req.Header, q); serr != nil {
			return errorResponse(req, serr), nil
		}
		if target.keyed && !inSASRange(q, target.pk, target.rk) {
			return errorResponse(req, errf(http.StatusForbidden, "AuthorizationFailure", "This request is not authorized to perform this operation: the entity is outside the SAS key range.")), nil
		}
		if op == OpInsertEntity {
			if e, perr := parseEntity(body); perr == nil && !inSASRange(q, e.pk, e.rk) {
				return errorResponse(req, errf(http.StatusForbidden, "AuthorizationFailure", "This request is not authorized to perform this operation: the entity is outside the SAS key range.")), nil
			}
		}
	}
	status, header, out, serr := s.serve(newAnswer(req), op, target, req.Header, q, body)
	if serr != nil {
		return errorResponse(req, serr), nil
	}
	s.opts.Busy.servedTable(req, op, target, status, out)
	return response(req, status, header, out), nil
}

// target is what a request's path names.
type target struct {
	table  string
	pk, rk string
	keyed  bool // the path names an entity
}

// route parses the path: /Tables, /Tables('t'), /t, /t(), /t(PartitionKey='p',RowKey='r'), /$batch.
func route(req *http.Request) (Operation, target, *svcError) {
	p := strings.TrimPrefix(req.URL.Path, "/")
	bad := errf(http.StatusBadRequest, "InvalidUri", "The requested URI does not represent any resource on the server.")
	switch {
	case p == "$batch" && req.Method == http.MethodPost:
		return OpBatch, target{}, nil
	case p == "Tables":
		switch req.Method {
		case http.MethodPost:
			return OpCreateTable, target{}, nil
		case http.MethodGet:
			return OpQueryTables, target{}, nil
		}
	case strings.HasPrefix(p, "Tables('") && strings.HasSuffix(p, "')") && req.Method == http.MethodDelete:
		return OpDeleteTable, target{table: p[len("Tables('") : len(p)-2]}, nil
	case strings.HasPrefix(p, "Tables('") && strings.HasSuffix(p, "')") && req.Method == http.MethodGet:
		// Query Tables of one table by name.
		return OpQueryTables, target{table: p[len("Tables('") : len(p)-2], keyed: true}, nil
	}
	name, rest, _ := strings.Cut(p, "(")
	t := target{table: name}
	if rest == "" {
		if req.Method == http.MethodPost && !strings.Contains(p, "(") {
			return OpInsertEntity, t, nil
		}
		return "", t, bad
	}
	if rest == ")" {
		if req.Method == http.MethodGet {
			return OpQueryEntities, t, nil
		}
		return "", t, bad
	}
	pk, rk, ok := parseKeys("(" + rest)
	if !ok {
		return "", t, bad
	}
	t.pk, t.rk, t.keyed = pk, rk, true
	switch req.Method {
	case http.MethodGet:
		return OpGetEntity, t, nil
	case http.MethodPut:
		return OpUpdateEntity, t, nil
	case http.MethodPatch, "MERGE":
		return OpMergeEntity, t, nil
	case http.MethodDelete:
		return OpDeleteEntity, t, nil
	}
	return "", t, bad
}

// parseKeys reads (PartitionKey='p',RowKey='r'), in which a doubled quote stands for one.
func parseKeys(s string) (pk, rk string, ok bool) {
	read := func(prefix string) (string, bool) {
		if !strings.HasPrefix(s, prefix) {
			return "", false
		}
		s = s[len(prefix):]
		var b strings.Builder
		for i := 0; i < len(s); i++ {
			if s[i] == '\'' {
				if i+1 < len(s) && s[i+1] == '\'' {
					b.WriteByte('\'')
					i++
					continue
				}
				s = s[i+1:]
				return b.String(), true
			}
			b.WriteByte(s[i])
		}
		return "", false
	}
	if pk, ok = read("(PartitionKey='"); !ok {
		return
	}
	if rk, ok = read(",RowKey='"); !ok {
		return
	}
	return pk, rk, s == ")"
}

func (s *TableService) table(name string) (*tableData, *svcError) {
	t := s.tables[strings.ToLower(name)]
	if t == nil {
		return nil, errf(http.StatusNotFound, "TableNotFound", "The table specified does not exist.")
	}
	return t, nil
}

// tick is a fresh write time: strictly after every earlier one, so ETags
// are unique and increase.
func (s *TableService) tick() time.Time {
	now := s.opts.Now().UTC().Truncate(100)
	if !now.After(s.lastTick) {
		now = s.lastTick.Add(100)
	}
	s.lastTick = now
	return now
}

// edmDateTimeFormat is how the service writes a DateTime, in ETags,
// Timestamps and properties: to 100 ns, without trailing zeros
// ("2020-04-30T22:03:13.037766Z", "2020-01-01T01:02:00Z" as recorded).
const edmDateTimeFormat = "2006-01-02T15:04:05.9999999Z"

func etagOf(ts time.Time) string {
	return `W/"datetime'` + strings.ReplaceAll(ts.Format(edmDateTimeFormat), ":", "%3A") + `'"`
}

// answer is what shapes a response besides its data: the service's base
// URL as the request named it (for odata.metadata, Location and
// odata.id), the account, and the metadata level the request asked for.
type answer struct {
	base    string // https://account.table.core.windows.net/
	account string
	level   metadataLevel
}

// metadataLevel is the odata= parameter of a JSON answer.
type metadataLevel string

const (
	noMetadata      metadataLevel = "nometadata"
	minimalMetadata metadataLevel = "minimalmetadata"
	fullMetadata    metadataLevel = "fullmetadata"
)

// newAnswer reads the base URL and the metadata level of req: $format
// wins over Accept, and JSON without an odata parameter is minimal
// metadata (Payload format for Table service operations).
func newAnswer(req *http.Request) answer {
	a := answer{base: tableURL, level: minimalMetadata}
	if req.URL != nil && req.URL.Host != "" {
		scheme := req.URL.Scheme
		if scheme == "" {
			scheme = "https"
		}
		a.base = scheme + "://" + req.URL.Host + "/"
	}
	host := strings.TrimPrefix(strings.TrimPrefix(a.base, "https://"), "http://")
	a.account, _, _ = strings.Cut(host, ".")
	accept := req.Header.Get("Accept")
	if req.URL != nil {
		if f := req.URL.Query().Get("$format"); f != "" {
			accept = f
		}
	}
	for _, l := range []metadataLevel{noMetadata, fullMetadata, minimalMetadata} {
		if strings.Contains(accept, "odata="+string(l)) {
			a.level = l
			break
		}
	}
	return a
}

// contentType is the Content-Type of a JSON answer at a's level.
func (a answer) contentType() string {
	return "application/json;odata=" + string(a.level) + ";streaming=true;charset=utf-8"
}

// open starts a JSON object: with odata.metadata (whose fragment is
// what, "Tables/@Element" say) unless the level is none.
func (a answer) open(what string) []byte {
	if a.level == noMetadata {
		return []byte("{")
	}
	b := append([]byte(`{"odata.metadata":`), appendString(nil, a.base+"$metadata#"+what)...)
	return append(b, ',')
}

// entityPath is an entity's address relative to the service, as
// Location, odata.id and odata.editLink give it.
func entityPath(table, pk, rk string) string {
	return table + "(PartitionKey='" + strings.ReplaceAll(pk, "'", "''") + "',RowKey='" + strings.ReplaceAll(rk, "'", "''") + "')"
}

// serve runs one non-batch request under s.mu.
func (s *TableService) serve(a answer, op Operation, tg target, h http.Header, q url.Values, body []byte) (int, http.Header, []byte, *svcError) {
	switch op {
	case OpCreateTable:
		return s.createTable(a, h, body)
	case OpDeleteTable:
		return s.deleteTable(tg.table)
	case OpQueryTables:
		if tg.keyed {
			return s.queryTable(a, tg.table)
		}
		return s.queryTables(a, q)
	case OpQueryEntities:
		return s.queryEntities(a, tg.table, q)
	case OpGetEntity:
		t, err := s.table(tg.table)
		if err != nil {
			return 0, nil, nil, err
		}
		e := t.rows.get(tg.pk, tg.rk)
		if e == nil {
			return 0, nil, nil, errf(http.StatusNotFound, "ResourceNotFound", "The specified resource does not exist.")
		}
		sel, serr := parseSelect(q.Get("$select"))
		if serr != nil {
			return 0, nil, nil, serr
		}
		hdr := http.Header{}
		hdr.Set("ETag", e.etag)
		hdr.Set("Content-Type", a.contentType())
		out := append(a.open(t.name+"/@Element"), a.entityJSON(t.name, e, sel)[1:]...)
		return http.StatusOK, hdr, out, nil
	}
	// Writes: one entity.
	t, err := s.table(tg.table)
	if err != nil {
		return 0, nil, nil, err
	}
	st, etag, e, serr := s.write(t, op, tg, h, body)
	if serr != nil {
		return 0, nil, nil, serr
	}
	hdr := http.Header{}
	if etag != "" {
		hdr.Set("ETag", etag)
	}
	if op == OpInsertEntity {
		s.inserted(a, hdr, h, t.name, e, st)
		if st == http.StatusCreated {
			hdr.Set("Content-Type", a.contentType())
			out := append(a.open(t.name+"/@Element"), a.entityJSON(t.name, e, nil)[1:]...)
			return st, hdr, out, nil
		}
	}
	return st, hdr, nil, nil
}

// inserted adds the headers the service sends on a created entity (alone
// or in a batch): Location, and with Prefer return-no-content
// DataServiceId and Preference-Applied; with return-content
// Preference-Applied.
func (s *TableService) inserted(a answer, hdr, reqHeader http.Header, table string, e *entity, status int) {
	loc := a.base + entityPath(table, e.pk, e.rk)
	hdr.Set("Location", loc)
	if status == http.StatusNoContent {
		hdr.Set("DataServiceId", loc)
		hdr.Set("Preference-Applied", "return-no-content")
	} else if strings.Contains(reqHeader.Get("Prefer"), "return-content") {
		hdr.Set("Preference-Applied", "return-content")
	}
}

// write applies one entity write to t and returns the status and new ETag.
func (s *TableService) write(t *tableData, op Operation, tg target, h http.Header, body []byte) (int, string, *entity, *svcError) {
	var in *entity
	if op != OpDeleteEntity {
		var err *svcError
		if in, err = parseEntity(body); err != nil {
			return 0, "", nil, err
		}
		if tg.keyed && (in.pk != tg.pk || in.rk != tg.rk) {
			if in.pk == "" && in.rk == "" {
				in.pk, in.rk = tg.pk, tg.rk
			} else if in.pk != tg.pk || in.rk != tg.rk {
				return 0, "", nil, errf(http.StatusBadRequest, "InvalidInput", "The keys in the body do not match the keys in the URI.")
			}
		}
		if err := in.validate(); err != nil {
			return 0, "", nil, err
		}
	}
	pk, rk := tg.pk, tg.rk
	if in != nil {
		pk, rk = in.pk, in.rk
	}
	cur := t.rows.get(pk, rk)
	ifMatch := h.Get("If-Match")
	notFound := errf(http.StatusNotFound, "ResourceNotFound", "The specified resource does not exist.")
	mismatch := errf(http.StatusPreconditionFailed, "UpdateConditionNotSatisfied", "The update condition specified in the request was not satisfied.")
	switch op {
	case OpInsertEntity:
		if cur != nil {
			return 0, "", nil, errf(http.StatusConflict, "EntityAlreadyExists", "The specified entity already exists.")
		}
	case OpDeleteEntity:
		if ifMatch == "" {
			return 0, "", nil, errf(http.StatusBadRequest, "MissingRequiredHeader", "An HTTP header that's mandatory for this request is not specified.")
		}
		if cur == nil {
			return 0, "", nil, notFound
		}
		if ifMatch != "*" && ifMatch != cur.etag {
			return 0, "", nil, mismatch
		}
		t.rows.remove(pk, rk)
		return http.StatusNoContent, "", nil, nil
	case OpUpdateEntity, OpMergeEntity:
		if ifMatch != "" {
			if cur == nil {
				return 0, "", nil, notFound
			}
			if ifMatch != "*" && ifMatch != cur.etag {
				return 0, "", nil, mismatch
			}
		}
		if op == OpMergeEntity && cur != nil {
			merged := make(map[string]value, len(cur.props)+len(in.props))
			for _, p := range cur.props {
				merged[p.name] = p.v
			}
			for _, p := range in.props {
				merged[p.name] = p.v
			}
			in.props = propsOf(merged)
			if err := in.validate(); err != nil {
				return 0, "", nil, err
			}
		}
	}
	in.ts = s.batchTime
	if in.ts.IsZero() {
		in.ts = s.tick()
	}
	in.etag = etagOf(in.ts)
	t.rows.put(in)
	if op == OpInsertEntity && !strings.Contains(h.Get("Prefer"), "return-no-content") {
		return http.StatusCreated, in.etag, in, nil
	}
	return http.StatusNoContent, in.etag, in, nil
}

// entityJSON renders the entity of table at a's metadata level (sel, when
// non-nil, lists the properties to include; missing ones come back as
// null): none has
// no odata.* names and no type annotations; minimal has odata.etag and
// annotates the types JSON cannot tell apart, but not Timestamp; full adds
// odata.type, odata.id and odata.editLink, and annotates Timestamp.
func (a answer) entityJSON(table string, e *entity, sel []string) []byte {
	b := []byte{'{'}
	switch a.level {
	case fullMetadata:
		path := entityPath(table, e.pk, e.rk)
		b = append(b, `"odata.type":`...)
		b = appendString(b, a.account+"."+table)
		b = append(b, `,"odata.id":`...)
		b = appendString(b, a.base+path)
		b = append(b, `,"odata.etag":`...)
		b = appendString(b, e.etag)
		b = append(b, `,"odata.editLink":`...)
		b = appendString(b, path)
	case minimalMetadata:
		b = append(b, `"odata.etag":`...)
		b = appendString(b, e.etag)
	}
	annotate := a.level != noMetadata
	first := a.level == noMetadata
	sep := func() {
		if !first {
			b = append(b, ',')
		}
		first = false
	}
	want := func(n string) bool { return sel == nil || slices.Contains(sel, n) }
	if want("PartitionKey") {
		sep()
		b = append(b, `"PartitionKey":`...)
		b = appendString(b, e.pk)
	}
	if want("RowKey") {
		sep()
		b = append(b, `"RowKey":`...)
		b = appendString(b, e.rk)
	}
	if want("Timestamp") {
		sep()
		// Only full metadata annotates Timestamp: its type is known.
		b = value{typ: edmDateTime, t: e.ts}.appendJSON(b, "Timestamp", a.level == fullMetadata)
	}
	if sel == nil {
		for _, p := range e.props {
			sep()
			b = p.v.appendJSON(b, p.name, annotate)
		}
		return append(b, '}')
	}
	for _, n := range sel {
		if n == "PartitionKey" || n == "RowKey" || n == "Timestamp" {
			continue
		}
		sep()
		v, ok := e.props.get(n)
		if !ok {
			b = appendString(b, n)
			b = append(b, ":null"...)
			continue
		}
		b = v.appendJSON(b, n, annotate)
	}
	return append(b, '}')
}

func parseSelect(s string) ([]string, *svcError) {
	if s == "" || s == "*" {
		return nil, nil
	}
	var out []string
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			return nil, errf(http.StatusBadRequest, "InvalidInput", "Empty name in $select.")
		}
		out = append(out, p)
	}
	return out, nil
}

// parseEntity reads a request body into an entity, typing every property.
func parseEntity(body []byte) (*entity, *svcError) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, errf(http.StatusBadRequest, "InvalidInput", "The request body is not a JSON object: %v", err)
	}
	e := &entity{}
	props := map[string]value{}
	for name, r := range raw {
		if strings.HasSuffix(name, "@odata.type") || strings.HasPrefix(name, "odata.") {
			continue
		}
		var ann string
		if a, ok := raw[name+"@odata.type"]; ok {
			if json.Unmarshal(a, &ann) != nil {
				return nil, errf(http.StatusBadRequest, "InvalidInput", "Bad type annotation for %q.", name)
			}
		}
		switch name {
		case "PartitionKey", "RowKey":
			var s string
			if json.Unmarshal(r, &s) != nil {
				return nil, errf(http.StatusBadRequest, "PrimaryKeyPropertyIsInvalidType", "The type of %s is invalid.", name)
			}
			if name == "PartitionKey" {
				e.pk = s
			} else {
				e.rk = s
			}
			continue
		case "Timestamp":
			continue // set by the service
		}
		if string(bytes.TrimSpace(r)) == "null" {
			continue // the service stores no nulls
		}
		v, ok := parseValue(r, ann)
		if !ok {
			return nil, errf(http.StatusBadRequest, "InvalidInput", "The value of property %q is not a valid %s.", name, orString(ann))
		}
		props[name] = v
	}
	e.props = propsOf(props)
	if _, ok := raw["PartitionKey"]; !ok {
		return nil, errf(http.StatusBadRequest, "PropertiesNeedValue", "PartitionKey is missing.")
	}
	if _, ok := raw["RowKey"]; !ok {
		return nil, errf(http.StatusBadRequest, "PropertiesNeedValue", "RowKey is missing.")
	}
	return e, nil
}

func orString(ann string) string {
	if ann == "" {
		return "value"
	}
	return ann
}

// Limits of the service that the fake enforces.
const (
	maxUserProperties = 252
	maxEntityBytes    = 1 << 20
	maxStringUTF16    = 32 * 1024
	maxBinaryBytes    = 64 * 1024
	maxBatchOps       = 100
	maxBatchBytes     = 4 << 20
)

func (e *entity) validate() *svcError {
	for _, k := range []string{e.pk, e.rk} {
		if err := keyrules.ValidateRowKey(k); err != nil {
			if strings.Contains(err.Error(), "too long") {
				return errf(http.StatusBadRequest, "KeyValueTooLarge", "The key is larger than 1 KiB.")
			}
			return errf(http.StatusBadRequest, "OutOfRangeInput", "One of the request inputs is out of range: %v", err)
		}
	}
	if len(e.props) > maxUserProperties {
		return errf(http.StatusBadRequest, "TooManyProperties", "The entity has %d properties; at most %d are allowed.", len(e.props), maxUserProperties)
	}
	size := 4 + 2*keyrules.UTF16Len(e.pk) + 2*keyrules.UTF16Len(e.rk) + 8 + 2*len("Timestamp") + 8
	for _, p := range e.props {
		name, v := p.name, p.v
		if err := keyrules.ValidatePropertyName(name); err != nil {
			if keyrules.UTF16Len(name) > 255 {
				return errf(http.StatusBadRequest, "PropertyNameTooLong", "The property name %q is too long.", name)
			}
			return errf(http.StatusBadRequest, "PropertyNameInvalid", "The property name %q is invalid.", name)
		}
		if (v.typ == edmString && keyrules.UTF16Len(v.s) > maxStringUTF16) || (v.typ == edmBinary && len(v.bin) > maxBinaryBytes) {
			return errf(http.StatusBadRequest, "PropertyValueTooLarge", "The value of property %q is larger than 64 KiB.", name)
		}
		size += 8 + 2*keyrules.UTF16Len(name) + v.size()
	}
	if size > maxEntityBytes {
		return errf(http.StatusBadRequest, "EntityTooLarge", "The entity is %d bytes; at most %d are allowed.", size, maxEntityBytes)
	}
	return nil
}

func (e *entity) get(name string) (value, bool) {
	switch name {
	case "PartitionKey":
		return value{typ: edmString, s: e.pk}, true
	case "RowKey":
		return value{typ: edmString, s: e.rk}, true
	case "Timestamp":
		return value{typ: edmDateTime, t: e.ts}, true
	}
	return e.props.get(name)
}

// prop is one stored property.
type prop struct {
	name string
	v    value
}

// props are an entity's properties sorted by name: a slice holds what
// it holds, where a map of a few entries takes a group of eight slots.
type props []prop

// propsOf is m's properties, sorted.
func propsOf(m map[string]value) props {
	ps := make(props, 0, len(m))
	for n, v := range m {
		ps = append(ps, prop{name: n, v: v})
	}
	slices.SortFunc(ps, func(a, b prop) int { return strings.Compare(a.name, b.name) })
	return ps
}

// get is the property named name.
func (ps props) get(name string) (value, bool) {
	if i, ok := slices.BinarySearchFunc(ps, name, func(p prop, n string) int { return strings.Compare(p.name, n) }); ok {
		return ps[i].v, true
	}
	return value{}, false
}

// Continuation tokens are opaque to clients; these are base64 of the key.
func encodeCont(s string) string { return "1!" + base64.RawURLEncoding.EncodeToString([]byte(s)) }

func decodeCont(s string) (string, bool) {
	raw, ok := strings.CutPrefix(s, "1!")
	if !ok {
		return "", false
	}
	b, err := base64.RawURLEncoding.DecodeString(raw)
	return string(b), err == nil
}

func (s *TableService) queryEntities(a answer, name string, q url.Values) (int, http.Header, []byte, *svcError) {
	t, err := s.table(name)
	if err != nil {
		return 0, nil, nil, err
	}
	var filter expr
	if f := q.Get("$filter"); f != "" {
		var perr error
		if filter, perr = parseFilter(f); perr != nil {
			return 0, nil, nil, errf(http.StatusBadRequest, "InvalidInput", "%v", perr)
		}
	}
	sel, serr := parseSelect(q.Get("$select"))
	if serr != nil {
		return 0, nil, nil, serr
	}
	paging := s.pagingOf(strings.ToLower(name))
	limit := paging.PageSize
	if top := q.Get("$top"); top != "" {
		n, err := strconv.Atoi(top)
		if err != nil || n < 1 || n > maxPageEntities {
			return 0, nil, nil, errf(http.StatusBadRequest, "InvalidInput", "$top must be 1 to 1000, got %q.", top)
		}
		limit = min(limit, n)
	}
	// A filter that names one partition (or one entity) is served from
	// the index: only that key range is read, and only it costs budget.
	// A continuation token moves the start on, never back.
	bounds := boundsOf(filter)
	fromPK, fromRK := bounds.loPK, bounds.loRK
	if bounds.loAfter {
		// The first key after every key of partition loPK.
		fromPK, fromRK = fromPK+"\x00", ""
	}
	inRange := bounds.holds
	// partition: the filter names one whole partition, not one entity.
	partition := bounds.loSet && bounds.hiSet && !bounds.loAfter && bounds.hiPKIncl && bounds.loPK == bounds.hiPK && bounds.loRK == "" && !bounds.hiRKSet
	if npk, nrk := q.Get("NextPartitionKey"), q.Get("NextRowKey"); npk != "" || nrk != "" {
		pk, ok1 := decodeCont(npk)
		rk, ok2 := decodeCont(nrk)
		if !ok1 || !ok2 {
			return 0, nil, nil, errf(http.StatusBadRequest, "InvalidInput", "Bad continuation token.")
		}
		if c := keyrules.Compare(pk, fromPK); c > 0 || c == 0 && keyrules.Compare(rk, fromRK) > 0 {
			fromPK, fromRK = pk, rk
		}
	}
	t.pages++
	hdr := http.Header{}
	hdr.Set("Content-Type", a.contentType())
	b := append(a.open(t.name), `"value":[`...)
	empty := paging.EmptyPageEvery > 0 && t.pages%paging.EmptyPageEvery == 0
	// The server budget: what the examined entities cost, or what the
	// clock says passed, whichever is more.
	began := s.opts.Now()
	clockGone := func() bool { return s.opts.Now().Sub(began) >= serverTimeBudget }
	budgetGone := func(examined int) bool {
		return time.Duration(examined)*paging.ScanCost >= serverTimeBudget || clockGone()
	}
	keep := func(e *entity) bool { return q.Get("sig") == "" || inSASRange(q, e.pk, e.rk) }
	var page []*entity
	var next *entity
	if pk, keys, ok := rowKeys(filter); ok && partition && pk == fromPK && !s.scanOnly {
		// A batched read's RowKeys are looked up, not scanned for: the
		// same page, without examining the entities between them.
		page, next = t.rows.keyedPage(pk, fromRK, keys, limit, empty, paging.ScanCost, clockGone, keep)
	} else {
		page, next = t.scanPage(filter, fromPK, fromRK, inRange, paging, limit, empty, budgetGone, keep)
	}
	for i, e := range page {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, a.entityJSON(t.name, e, sel)...)
	}
	b = append(b, "]}"...)
	// After a page that ran out of time, the service cannot know whether
	// anything further matches: it hands back where it stopped. Otherwise
	// there is more to come only if some later entity matches.
	if next != nil {
		hdr.Set("X-Ms-Continuation-Nextpartitionkey", encodeCont(next.pk))
		hdr.Set("X-Ms-Continuation-Nextrowkey", encodeCont(next.rk))
	}
	return http.StatusOK, hdr, b, nil
}

// scanPage is a query's page, from (fromPK, fromRK) on, over the entities
// inRange admits (nil: all), examining each in turn: the entities that
// match filter and keep admits, and next, the entity the continuation
// token names, if any. The page ends after limit entities, where a
// partition ends if paging splits there, when examining the next entity
// would spend the server's budget (next is then that entity: the service
// cannot know whether anything further matches), or at the range's end,
// and next is the first entity after the page that matches filter; an
// empty page ends where it begins.
func (t *tableData) scanPage(filter expr, fromPK, fromRK string, inRange func(*entity) bool, paging Paging, limit int, empty bool,
	budgetGone func(examined int) bool, keep func(*entity) bool) (page []*entity, next *entity) {
	// at is the entity at c if the query's range holds it, else nil.
	at := func(c cursor) *entity {
		if e := t.rows.at(c); e != nil && (inRange == nil || inRange(e)) {
			return e
		}
		return nil
	}
	c := t.rows.seek(fromPK, fromRK)
	var lastPK string
	for examined := 0; !empty; c = t.rows.next(c) {
		e := at(c)
		if e == nil {
			break
		}
		if !paging.AcrossPartitions && len(page) > 0 && e.pk != lastPK {
			break
		}
		if len(page) == limit {
			break
		}
		if examined > 0 && budgetGone(examined) {
			return page, e
		}
		examined++
		if filter != nil && !filter.eval(e.get) {
			continue
		}
		if !keep(e) {
			continue
		}
		page = append(page, e)
		lastPK = e.pk
	}
	for e := at(c); e != nil; e = at(c) {
		if filter == nil || filter.eval(e.get) {
			return page, e
		}
		c = t.rows.next(c)
	}
	return page, nil
}

func (s *TableService) createTable(a answer, h http.Header, body []byte) (int, http.Header, []byte, *svcError) {
	var in struct{ TableName string }
	if err := json.Unmarshal(body, &in); err != nil {
		return 0, nil, nil, errf(http.StatusBadRequest, "InvalidInput", "Bad table creation body.")
	}
	if err := keyrules.ValidateTableName(in.TableName); err != nil {
		return 0, nil, nil, errf(http.StatusBadRequest, "InvalidResourceName", "The specifed resource name contains invalid characters: %v", err)
	}
	lower := strings.ToLower(in.TableName)
	if _, ok := s.tables[lower]; ok {
		return 0, nil, nil, errf(http.StatusConflict, "TableAlreadyExists", "The table specified already exists.")
	}
	if at, ok := s.deleted[lower]; ok {
		if s.opts.DeletedTableWindow > 0 && s.opts.Now().Before(at.Add(s.opts.DeletedTableWindow)) {
			return 0, nil, nil, errf(http.StatusConflict, "TableBeingDeleted", "The specified table is being deleted. Try operation later.")
		}
		delete(s.deleted, lower)
	}
	s.tables[lower] = &tableData{name: in.TableName}
	hdr := http.Header{}
	loc := a.base + "Tables('" + in.TableName + "')"
	hdr.Set("Location", loc)
	if strings.Contains(h.Get("Prefer"), "return-no-content") {
		hdr.Set("DataServiceId", loc)
		hdr.Set("Preference-Applied", "return-no-content")
		return http.StatusNoContent, hdr, nil, nil
	}
	if strings.Contains(h.Get("Prefer"), "return-content") {
		hdr.Set("Preference-Applied", "return-content")
	}
	hdr.Set("Content-Type", a.contentType())
	out := append(a.open("Tables/@Element"), a.tableJSON(in.TableName)[1:]...)
	return http.StatusCreated, hdr, out, nil
}

func (s *TableService) deleteTable(name string) (int, http.Header, []byte, *svcError) {
	lower := strings.ToLower(name)
	if _, ok := s.tables[lower]; !ok {
		return 0, nil, nil, errf(http.StatusNotFound, "ResourceNotFound", "The specified resource does not exist.")
	}
	delete(s.tables, lower)
	s.deleted[lower] = s.opts.Now()
	return http.StatusNoContent, nil, nil, nil
}

func (s *TableService) queryTables(a answer, q url.Values) (int, http.Header, []byte, *svcError) {
	var filter expr
	if f := q.Get("$filter"); f != "" {
		var perr error
		if filter, perr = parseFilter(f); perr != nil {
			return 0, nil, nil, errf(http.StatusBadRequest, "InvalidInput", "%v", perr)
		}
	}
	names := make([]string, 0, len(s.tables))
	for _, t := range s.tables {
		names = append(names, t.name)
	}
	sort.Slice(names, func(i, j int) bool { return strings.ToLower(names[i]) < strings.ToLower(names[j]) })
	limit := 1000
	if top := q.Get("$top"); top != "" {
		n, err := strconv.Atoi(top)
		if err != nil || n < 1 || n > 1000 {
			return 0, nil, nil, errf(http.StatusBadRequest, "InvalidInput", "$top must be 1 to 1000.")
		}
		limit = n
	}
	start := 0
	if next := q.Get("NextTableName"); next != "" {
		name, ok := decodeCont(next)
		if !ok {
			return 0, nil, nil, errf(http.StatusBadRequest, "InvalidInput", "Bad continuation token.")
		}
		start = sort.Search(len(names), func(i int) bool { return strings.ToLower(names[i]) >= strings.ToLower(name) })
	}
	out := []byte{}
	n := 0
	hdr := http.Header{}
	for i := start; i < len(names); i++ {
		get := func(p string) (value, bool) {
			if p == "TableName" {
				return value{typ: edmString, s: names[i]}, true
			}
			return value{}, false
		}
		if filter != nil && !filter.eval(get) {
			continue
		}
		if n == limit {
			hdr.Set("X-Ms-Continuation-Nexttablename", encodeCont(names[i]))
			break
		}
		if n > 0 {
			out = append(out, ',')
		}
		out = append(out, a.tableJSON(names[i])...)
		n++
	}
	hdr.Set("Content-Type", a.contentType())
	b := append(a.open("Tables"), `"value":[`...)
	b = append(append(b, out...), "]}"...)
	return http.StatusOK, hdr, b, nil
}

// queryTable answers Query Tables for one table by name
// (GET /Tables('name')).
func (s *TableService) queryTable(a answer, name string) (int, http.Header, []byte, *svcError) {
	t, err := s.table(name)
	if err != nil {
		return 0, nil, nil, errf(http.StatusNotFound, "ResourceNotFound", "The specified resource does not exist.")
	}
	hdr := http.Header{}
	hdr.Set("Content-Type", a.contentType())
	return http.StatusOK, hdr, append(a.open("Tables/@Element"), a.tableJSON(t.name)[1:]...), nil
}

// tableJSON renders one table of a listing at a's metadata level.
func (a answer) tableJSON(name string) []byte {
	b := []byte{'{'}
	if a.level == fullMetadata {
		path := "Tables('" + name + "')"
		b = append(b, `"odata.type":`...)
		b = appendString(b, a.account+".Tables")
		b = append(b, `,"odata.id":`...)
		b = appendString(b, a.base+path)
		b = append(b, `,"odata.editLink":`...)
		b = appendString(b, path)
		b = append(b, ',')
	}
	b = append(b, `"TableName":`...)
	b = appendString(b, name)
	return append(b, '}')
}
