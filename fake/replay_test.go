package fake_test

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/internal/fakedev"
)

// A recording is the exchanges of one test of an Azure SDK with the real
// service, as its SDK published them (testdata/recordings/LICENSE-* carry
// their licences; source says where each file came from). The files keep
// the recorded values, trimmed to what the replay compares: the method,
// the URI, the request headers that shape the answer, the body, and the
// status, the headers named in replayedHeaders and the body of the answer.
type recording struct {
	Source struct {
		Repo, Path, Commit string
	} `json:"source"`
	Service   string     `json:"service"` // table, queue or blob
	Trimmed   string     `json:"trimmed,omitempty"`
	Exchanges []exchange `json:"exchanges"`
}

type exchange struct {
	Method             string            `json:"method"`
	URI                string            `json:"uri"`
	RequestHeaders     map[string]string `json:"requestHeaders"`
	RequestBody        json.RawMessage   `json:"requestBody"`
	RequestBodyBase64  string            `json:"requestBodyBase64,omitempty"`
	Status             int               `json:"status"`
	ResponseHeaders    map[string]string `json:"responseHeaders"`
	ResponseBody       json.RawMessage   `json:"responseBody"`
	ResponseBodyBase64 string            `json:"responseBodyBase64,omitempty"`
}

// replayedHeaders are the answer headers compared by presence: a
// recording lists every one of them the service sent.
var replayedHeaders = []string{
	"Location", "DataServiceId", "Preference-Applied", "ETag",
	"X-Ms-Continuation-Nextpartitionkey", "X-Ms-Continuation-Nextrowkey", "X-Ms-Continuation-Nexttablename",
	"X-Ms-Popreceipt", "X-Ms-Time-Next-Visible", "X-Ms-Approximate-Messages-Count", "X-Ms-Error-Code",
	"Last-Modified", "Content-MD5", "X-Ms-Blob-Type", "X-Ms-Lease-Id", "X-Ms-Lease-State", "X-Ms-Lease-Status", "X-Ms-Lease-Time", "Content-Range", "X-Ms-Blob-Content-Md5", "Content-Encoding", "Content-Language", "Content-Disposition",
}

// generated are the service's own values, which the fake makes its own:
// the replay maps the recorded ones to the fake's (ETags, message IDs, pop
// receipts, continuation tokens) or compares them by presence (times,
// request IDs, error messages).
var (
	mappedHeaders = []string{"ETag", "X-Ms-Popreceipt", "X-Ms-Continuation-Nextpartitionkey", "X-Ms-Continuation-Nextrowkey", "X-Ms-Continuation-Nexttablename"}
	mappedXML     = []string{"MessageId", "PopReceipt", "NextMarker"}
	timeXML       = []string{"InsertionTime", "ExpirationTime", "TimeNextVisible", "Message", "message", "Last-Modified", "Etag", "Creation-Time"}
)

// tolerated names, for each known deviation of the fake (internal/fakedev),
// the mismatches of the replay it explains. A mismatch no deviation
// explains fails the test; a deviation no recording shows fails it too,
// so the list stays true.
var tolerated = map[string]func(m mismatch) bool{}

type mismatch struct {
	file  string
	index int
	what  string // "status", "header X", "body", "code"
	got   string
	want  string
}

func (m mismatch) String() string {
	return fmt.Sprintf("%s #%d: %s: got %s, want %s", m.file, m.index, m.what, m.got, m.want)
}

// TestReplayRecordedExchanges sends every recorded request, in order, to
// a fresh fake and compares each answer with the service's: status, error
// code, the headers in replayedHeaders by presence, the Content-Type's
// media type and metadata level, the body's shape (property and element
// names, annotations) and values, and a batch's per-operation answers.
func TestReplayRecordedExchanges(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "recordings", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no recordings: %v", err)
	}
	known := map[string]bool{}
	for _, d := range fakedev.List() {
		if d.Name == "" || d.Reason == "" {
			t.Errorf("deviation %+v: a name and a reason are both needed", d)
		}
		if !d.Recorded {
			continue
		}
		known[d.Name] = true
		if tolerated[d.Name] == nil {
			t.Errorf("deviation %q: the replay has no matcher for it", d.Name)
		}
	}
	for name := range tolerated {
		if !known[name] {
			t.Errorf("the replay tolerates %q, which fakedev.List does not list as recorded", name)
		}
	}
	seen := map[string]int{}
	total := 0
	perService := map[string]int{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var rec recording
		if err := json.Unmarshal(raw, &rec); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if rec.Source.Repo == "" || rec.Source.Path == "" || len(rec.Source.Commit) != 40 {
			t.Errorf("%s: the source (repo, path, commit) is not recorded", f)
		}
		r := newReplayer(filepath.Base(f), rec.Service)
		for i, ex := range rec.Exchanges {
			for _, m := range r.replay(t, i, ex) {
				name := ""
				for n, match := range tolerated {
					if match(m) {
						name = n
						break
					}
				}
				if name == "" {
					t.Errorf("%v", m)
					continue
				}
				seen[name]++
			}
			total++
			perService[rec.Service]++
		}
	}
	for name := range known {
		if seen[name] == 0 {
			t.Errorf("deviation %q: no recorded exchange shows it; drop it from fakedev.List", name)
		}
	}
	t.Logf("replayed %d recorded exchanges from %d files (%v); known deviations seen: %v", total, len(files), perService, seen)
}

// replayer holds one recording's fake and the map from the service's
// generated values to the fake's.
type replayer struct {
	file    string
	service string
	do      func(*http.Request) (*http.Response, error)
	values  map[string]string // recorded -> the fake's
	// answer maps the values learnt from the answer being compared: a
	// value the service repeated within it must repeat in the fake's.
	answer    map[string]string
	conflicts [][2]string
}

func newReplayer(file, service string) *replayer {
	// A fixed clock that moves 1 ms a reading: the recordings' times are
	// compared by presence only.
	now := time.Date(2021, 9, 10, 14, 40, 21, 0, time.UTC)
	clock := func() time.Time { now = now.Add(time.Millisecond); return now }
	r := &replayer{file: file, service: service, values: map[string]string{}}
	switch service {
	case "table":
		r.do = fake.NewTableService(&fake.TableServiceOptions{Now: clock}).Do
	case "queue":
		r.do = fake.NewQueueService(&fake.QueueServiceOptions{Now: clock}).Do
	case "blob":
		r.do = fake.NewBlobService(&fake.BlobServiceOptions{Now: clock}).Do
	}
	return r
}

// mapped rewrites the recorded service values in s to the fake's.
func (r *replayer) mapped(s string, escaped bool) string {
	keys := make([]string, 0, len(r.values))
	for k := range r.values {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return len(keys[i]) > len(keys[j]) })
	for _, k := range keys {
		v := r.values[k]
		s = strings.ReplaceAll(s, k, v)
		if escaped {
			s = strings.ReplaceAll(s, url.QueryEscape(k), url.QueryEscape(v))
			s = strings.ReplaceAll(s, url.PathEscape(k), url.PathEscape(v))
		}
	}
	return s
}

// learn maps a value the service generated to the fake's. One recorded
// value standing for two of the fake's (the service gave two things the
// same value, the fake did not) is a difference of its own.
func (r *replayer) learn(recorded, got string) {
	if recorded == "" || got == "" || recorded == got {
		return
	}
	if r.answer != nil {
		if prev, ok := r.answer[recorded]; ok && prev != got {
			r.conflicts = append(r.conflicts, [2]string{recorded, prev + " and " + got})
		}
		r.answer[recorded] = got
	}
	r.values[recorded] = got
}

// body is a recorded body as bytes: a JSON string is the text, other
// JSON is itself, base64 is decoded.
func body(raw json.RawMessage, b64 string) []byte {
	if b64 != "" {
		b, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			panic("recording: bad base64: " + err.Error())
		}
		return b
	}
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []byte(s)
	}
	return raw
}

func (r *replayer) replay(t *testing.T, i int, ex exchange) []mismatch {
	t.Helper()
	var out []mismatch
	add := func(what, got, want string) {
		out = append(out, mismatch{file: r.file, index: i, what: what, got: got, want: want})
	}
	reqBody := body(ex.RequestBody, ex.RequestBodyBase64)
	reqBody = []byte(r.mapped(string(reqBody), false))
	req, err := http.NewRequest(ex.Method, r.mapped(ex.URI, true), bytes.NewReader(reqBody))
	if err != nil {
		t.Fatalf("%s #%d: %v", r.file, i, err)
	}
	for k, v := range ex.RequestHeaders {
		req.Header.Set(k, r.mapped(v, false))
	}
	resp, err := r.do(req)
	if err != nil {
		t.Fatalf("%s #%d: %v", r.file, i, err)
	}
	got, _ := io.ReadAll(resp.Body)
	want := body(ex.ResponseBody, ex.ResponseBodyBase64)
	if resp.StatusCode != ex.Status {
		add("status", fmt.Sprint(resp.StatusCode, " ", errorCode(resp.Header, got)), fmt.Sprint(ex.Status, " ", errorCode(http.Header{"X-Ms-Error-Code": {ex.ResponseHeaders["x-ms-error-code"]}}, want)))
		return out
	}
	wantHeader := http.Header{}
	for k, v := range ex.ResponseHeaders {
		wantHeader.Set(k, v)
	}
	// Within one answer, a value the service gave twice must be one value
	// at the fake too; across answers a value may change (an ETag after a
	// write).
	r.answer, r.conflicts = map[string]string{}, nil
	r.compareHeaders(resp.Header, wantHeader, add)
	if c, w := errorCode(resp.Header, got), errorCode(wantHeader, want); c != w {
		add("code", c, w)
	}
	r.compareBodies(resp.Header.Get("Content-Type"), got, wantHeader.Get("Content-Type"), want, add)
	for _, c := range r.conflicts {
		add("one generated value", c[1], c[0])
	}
	r.answer = nil
	return out
}

// errorCode is the answer's error code: x-ms-error-code, or the body's.
func errorCode(h http.Header, b []byte) string {
	if c := h.Get("X-Ms-Error-Code"); c != "" {
		return c
	}
	var j struct {
		E struct{ Code string } `json:"odata.error"`
	}
	if json.Unmarshal(b, &j) == nil && j.E.Code != "" {
		return j.E.Code
	}
	// <Error><Code> (queues, blobs) or <m:error><m:code> (table ACL).
	if n, err := parseXML(bytes.TrimPrefix(b, []byte("\ufeff"))); err == nil {
		for _, c := range n.children {
			if c.name == "Code" || c.name == "code" {
				return strings.TrimSpace(c.text)
			}
		}
	}
	return ""
}

func (r *replayer) compareHeaders(got, want http.Header, add func(what, got, want string)) {
	for _, h := range replayedHeaders {
		g, w := got.Get(h), want.Get(h)
		if (g == "") != (w == "") {
			add("header "+h, fmt.Sprintf("%q", g), fmt.Sprintf("%q", w))
			continue
		}
		if slices.Contains(mappedHeaders, h) {
			r.learn(w, g)
		}
		switch h {
		case "Location", "DataServiceId":
			if pathOf(g) != pathOf(r.mapped(w, false)) {
				add("header "+h, g, w)
			}
		case "Preference-Applied", "X-Ms-Error-Code", "X-Ms-Blob-Type", "X-Ms-Lease-State", "X-Ms-Lease-Status":
			if g != w {
				add("header "+h, g, w)
			}
		case "X-Ms-Lease-Id":
			if g != r.mapped(w, false) {
				add("header "+h, g, w)
			}
		}
	}
	// Metadata headers by name and value, both ways.
	for k := range want {
		if strings.HasPrefix(k, "X-Ms-Meta-") && got.Get(k) != want.Get(k) {
			add("header "+k, got.Get(k), want.Get(k))
		}
	}
	for k := range got {
		if strings.HasPrefix(k, "X-Ms-Meta-") && want.Get(k) == "" {
			add("header "+k, got.Get(k), "none")
		}
	}
	if w := want.Get("Content-Type"); w != "" {
		g := got.Get("Content-Type")
		gm, gp, _ := mime.ParseMediaType(g)
		wm, wp, _ := mime.ParseMediaType(w)
		if gm != wm || gp["odata"] != wp["odata"] {
			add("header Content-Type", g, w)
		}
	}
}

// pathOf drops scheme and host: the recordings' accounts are not the
// fake's.
func pathOf(u string) string {
	if p, err := url.Parse(u); err == nil {
		return p.Path
	}
	return u
}

func (r *replayer) compareBodies(gotType string, got []byte, wantType string, want []byte, add func(what, got, want string)) {
	want = bytes.TrimPrefix(want, []byte("\ufeff"))
	got = bytes.TrimPrefix(got, []byte("\ufeff"))
	if len(want) == 0 {
		if len(bytes.TrimSpace(got)) != 0 && !strings.HasPrefix(gotType, "multipart/") {
			add("body", string(got), "none")
		}
		return
	}
	switch {
	case strings.HasPrefix(wantType, "multipart/mixed"):
		r.compareBatch(gotType, got, wantType, want, add)
	case json.Valid(want):
		var g, w any
		if err := json.Unmarshal(got, &g); err != nil {
			add("body", string(got), string(want))
			return
		}
		_ = json.Unmarshal(want, &w)
		r.compareJSON("", g, w, add)
	default:
		gx, err1 := parseXML(got)
		wx, err2 := parseXML(want)
		if err1 != nil || err2 != nil {
			if !bytes.Equal(got, want) {
				add("body", string(got), string(want))
			}
			return
		}
		r.compareXML(gx, wx, add)
	}
}

func (r *replayer) compareJSON(path string, got, want any, add func(what, got, want string)) {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			add("body "+path, fmt.Sprint(got), fmt.Sprint(want))
			return
		}
		var gk, wk []string
		for k := range g {
			gk = append(gk, k)
		}
		for k := range w {
			wk = append(wk, k)
		}
		sort.Strings(gk)
		sort.Strings(wk)
		if !slices.Equal(gk, wk) {
			add("body names "+path, strings.Join(gk, ","), strings.Join(wk, ","))
		}
		for _, k := range wk {
			if gv, ok := g[k]; ok {
				r.compareJSON(path+"/"+k, gv, w[k], add)
			}
		}
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			add("body "+path, fmt.Sprint(got), fmt.Sprint(want))
			return
		}
		for i := range w {
			r.compareJSON(fmt.Sprintf("%s[%d]", path, i), g[i], w[i], add)
		}
	default:
		gs, ws := fmt.Sprint(got), fmt.Sprint(want)
		switch {
		case strings.HasSuffix(path, "/odata.etag"):
			r.learn(ws, gs)
		case strings.HasSuffix(path, "/odata.metadata"), strings.HasSuffix(path, "/odata.id"):
			if pathOf(gs) != pathOf(ws) || fragment(gs) != fragment(ws) {
				add("body "+path, gs, ws)
			}
		case strings.HasSuffix(path, "/Timestamp"), strings.HasSuffix(path, "/message/value"):
			// the service's clock and words
		default:
			if gs != r.mapped(ws, false) {
				add("body "+path, gs, ws)
			}
		}
	}
}

func fragment(u string) string {
	_, f, _ := strings.Cut(u, "#")
	return f
}

// node is an XML element: its name, text and children.
type node struct {
	name     string
	text     string
	children []*node
}

func parseXML(b []byte) (*node, error) {
	dec := xml.NewDecoder(bytes.NewReader(b))
	root := &node{}
	stack := []*node{root}
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		top := stack[len(stack)-1]
		switch tk := tok.(type) {
		case xml.StartElement:
			n := &node{name: tk.Name.Local}
			for _, a := range tk.Attr {
				n.children = append(n.children, &node{name: "@" + a.Name.Local, text: a.Value})
			}
			top.children = append(top.children, n)
			stack = append(stack, n)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			top.text += string(tk)
		}
	}
	if len(root.children) != 1 {
		return nil, fmt.Errorf("not one root element")
	}
	return root.children[0], nil
}

func (r *replayer) compareXML(got, want *node, add func(what, got, want string)) {
	var walk func(path string, g, w *node)
	walk = func(path string, g, w *node) {
		path += "/" + w.name
		if g.name != w.name {
			add("xml "+path, g.name, w.name)
			return
		}
		names := func(n *node) string {
			var s []string
			for _, c := range n.children {
				s = append(s, c.name)
			}
			return strings.Join(s, ",")
		}
		if names(g) != names(w) {
			add("xml names "+path, names(g), names(w))
			return
		}
		for i := range w.children {
			walk(path, g.children[i], w.children[i])
		}
		if len(w.children) > 0 {
			return
		}
		gt, wt := strings.TrimSpace(g.text), strings.TrimSpace(w.text)
		switch {
		case slices.Contains(mappedXML, w.name):
			if (gt == "") != (wt == "") {
				add("xml "+path, gt, wt)
			}
			r.learn(wt, gt)
		case slices.Contains(timeXML, w.name):
			if (gt == "") != (wt == "") {
				add("xml "+path, gt, wt)
			}
		case w.name == "@ServiceEndpoint":
		default:
			if gt != r.mapped(wt, false) {
				add("xml "+path, gt, wt)
			}
		}
	}
	walk("", got, want)
}

// batchPart is one operation's answer in a batch response.
type batchPart struct {
	status int
	header http.Header
	body   []byte
}

func parseBatchResponse(contentType string, b []byte) ([]batchPart, error) {
	_, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		return nil, err
	}
	outer := multipart.NewReader(bytes.NewReader(b), params["boundary"])
	cs, err := outer.NextPart()
	if err != nil {
		return nil, err
	}
	_, cparams, err := mime.ParseMediaType(cs.Header.Get("Content-Type"))
	if err != nil {
		return nil, err
	}
	inner := multipart.NewReader(cs, cparams["boundary"])
	var out []batchPart
	for {
		p, err := inner.NextPart()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		raw, _ := io.ReadAll(p)
		resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(raw)), nil)
		if err != nil {
			return nil, err
		}
		pb, _ := io.ReadAll(resp.Body)
		out = append(out, batchPart{status: resp.StatusCode, header: resp.Header, body: pb})
	}
}

func (r *replayer) compareBatch(gotType string, got []byte, wantType string, want []byte, add func(what, got, want string)) {
	gp, err := parseBatchResponse(gotType, got)
	if err != nil {
		add("batch", err.Error(), "a multipart answer")
		return
	}
	wp, err := parseBatchResponse(wantType, want)
	if err != nil {
		panic("recording: bad batch answer: " + err.Error())
	}
	if len(gp) != len(wp) {
		add("batch operations", fmt.Sprint(len(gp)), fmt.Sprint(len(wp)))
		return
	}
	for i := range wp {
		opAdd := func(what, g, w string) { add(fmt.Sprintf("batch op %d %s", i, what), g, w) }
		if gp[i].status != wp[i].status {
			opAdd("status", fmt.Sprint(gp[i].status), fmt.Sprint(wp[i].status))
			continue
		}
		r.compareHeaders(gp[i].header, wp[i].header, opAdd)
		if c, w := errorCode(gp[i].header, gp[i].body), errorCode(wp[i].header, wp[i].body); c != w {
			opAdd("code", c, w)
		}
		if len(bytes.TrimSpace(wp[i].body)) > 0 {
			r.compareBodies(gp[i].header.Get("Content-Type"), gp[i].body, wp[i].header.Get("Content-Type"), wp[i].body, opAdd)
		}
	}
}
