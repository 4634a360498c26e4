package fake

import (
	"bufio"
	"bytes"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strconv"
	"strings"
	"time"
)

type batchOp struct {
	op     Operation
	tg     target
	header http.Header
	body   []byte
	answer answer // the operation's base URL, for Location
	pk, rk string
}

const (
	batchBoundary     = "batchresponse_00000000-0000-0000-0000-000000000000"
	changesetBoundary = "changesetresponse_00000000-0000-0000-0000-000000000000"
)

// batch runs an entity group transaction under s.mu: every operation or none.
func (s *TableService) batch(req *http.Request, body []byte) *http.Response {
	if len(body) > maxBatchBytes {
		return errorResponse(req, errf(http.StatusRequestEntityTooLarge, "RequestBodyTooLarge", "The request body is %d bytes; a batch may be at most %d.", len(body), maxBatchBytes))
	}
	ops, perr := parseBatch(req.Header.Get("Content-Type"), body)
	if perr != nil {
		return errorResponse(req, perr)
	}
	fail := func(index int, e *svcError) *http.Response {
		// The failed operation's answer applies the response preference
		// it asked for, as the service's does (recorded).
		var h http.Header
		if index >= 0 && index < len(ops) {
			if p := preference(ops[index].header); p != "" {
				h = http.Header{"Preference-Applied": {p}}
			}
		}
		return batchResponse(req, []batchResult{{header: h}}, index, e)
	}
	if len(ops) == 0 {
		// An empty changeset: the service accepts it and changes nothing.
		return batchResponse(req, nil, -1, nil)
	}
	if q := req.URL.Query(); q.Get("sig") != "" {
		if serr := s.checkBatchSAS(req, ops); serr != nil {
			return errorResponse(req, serr)
		}
	}
	if len(ops) > maxBatchOps {
		return fail(maxBatchOps, errf(http.StatusBadRequest, "InvalidInput", "The batch request operation exceeds the maximum 100 changes per change set."))
	}
	seen := map[string]bool{}
	for i, o := range ops {
		if o.op == "" {
			return fail(i, errf(http.StatusBadRequest, "InvalidInput", "The batch request contains an unsupported operation."))
		}
		if !strings.EqualFold(o.tg.table, ops[0].tg.table) {
			return fail(i, errf(http.StatusBadRequest, "InvalidInput", "All commands in a batch must operate on the same table."))
		}
		if o.pk != ops[0].pk {
			return fail(i, errf(http.StatusBadRequest, "CommandsInBatchActOnDifferentPartitions", "All commands in a batch must operate on same entity group."))
		}
		if seen[o.rk] {
			return fail(i, errf(http.StatusBadRequest, "InvalidDuplicateRow", "A command with RowKey '%s' is already present in the batch. An entity can appear only once in a batch.", o.rk))
		}
		seen[o.rk] = true
	}
	t, terr := s.table(ops[0].tg.table)
	if terr != nil {
		return fail(0, terr)
	}
	if index, ferr := s.transactionFault(len(ops)); ferr != nil {
		return fail(index, ferr)
	}
	// The transaction writes a copy of its partition, which replaces the
	// stored one only once every operation succeeded.
	scratch := &tableData{name: t.name, rows: *t.rows.partitionCopy(ops[0].pk)}
	s.batchTime = s.tick()
	defer func() { s.batchTime = time.Time{} }()
	results := make([]batchResult, len(ops))
	for i, o := range ops {
		st, etag, e, err := s.write(scratch, o.op, o.tg, o.header, o.body)
		if err != nil {
			return fail(i, err)
		}
		h := http.Header{}
		var body []byte
		if o.op == OpInsertEntity {
			s.inserted(o.answer, h, o.header, t.name, e, st)
			if st == http.StatusCreated {
				// An insert without return-no-content answers 201 with the
				// entity, as alone.
				h.Set("Content-Type", o.answer.contentType())
				body = append(o.answer.open(t.name+"/@Element"), o.answer.entityJSON(t.name, e, nil)[1:]...)
			}
		}
		if etag != "" {
			h.Set("ETag", etag)
		}
		results[i] = batchResult{status: st, header: h, body: body}
	}
	t.rows.adopt(ops[0].pk, &scratch.rows)
	return batchResponse(req, results, -1, nil)
}

// parseBatch reads the SDK's multipart/mixed batch: one changeset of
// application/http requests.
func parseBatch(contentType string, body []byte) ([]batchOp, *svcError) {
	bad := func(why string) *svcError {
		return errf(http.StatusBadRequest, "InvalidInput", "Malformed batch request: %s.", why)
	}
	_, params, err := mime.ParseMediaType(contentType)
	if err != nil || params["boundary"] == "" {
		return nil, bad("no multipart boundary")
	}
	outer := multipart.NewReader(bytes.NewReader(body), params["boundary"])
	part, err := outer.NextPart()
	if err != nil {
		return nil, bad("no changeset")
	}
	_, cparams, err := mime.ParseMediaType(part.Header.Get("Content-Type"))
	if err != nil || cparams["boundary"] == "" {
		return nil, bad("no changeset boundary")
	}
	inner := multipart.NewReader(part, cparams["boundary"])
	var ops []batchOp
	for {
		p, err := inner.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, bad(err.Error())
		}
		raw, err := io.ReadAll(p)
		if err != nil {
			return nil, bad(err.Error())
		}
		// A body-less operation (a delete) may end at its last header,
		// without the blank line before the boundary; the service takes it.
		if !bytes.Contains(raw, []byte("\r\n\r\n")) && !bytes.Contains(raw, []byte("\n\n")) {
			raw = append(bytes.TrimRight(raw, "\r\n"), "\r\n\r\n"...)
		}
		r, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(raw)))
		if err != nil {
			return nil, bad(err.Error())
		}
		b, _ := io.ReadAll(r.Body)
		if r.Header.Get("Content-Length") == "" {
			// Without Content-Length the body is the rest of the part.
			if _, rest, ok := bytes.Cut(raw, []byte("\r\n\r\n")); ok {
				b = bytes.TrimRight(rest, "\r\n")
			}
		}
		op, tg, rerr := route(r)
		o := batchOp{tg: tg, header: r.Header, body: b, answer: newAnswer(r)}
		if rerr == nil && op != OpBatch && op != OpGetEntity && op != OpQueryEntities && op != OpCreateTable && op != OpDeleteTable && op != OpQueryTables {
			o.op = op
		}
		o.pk, o.rk = tg.pk, tg.rk
		if op == OpInsertEntity {
			if e, perr := parseEntity(b); perr == nil {
				o.pk, o.rk = e.pk, e.rk
			}
		}
		ops = append(ops, o)
	}
	return ops, nil
}

// batchResult is one operation's answer in a batch response.
type batchResult struct {
	status int
	header http.Header
	body   []byte
}

// batchResponse writes the service's 202 multipart answer: per operation
// its status (204, or 201 with the entity for an insert without
// return-no-content) and headers (ETag; Location, DataServiceId and
// Preference-Applied for an insert), or one error response that names the
// failed operation as "index:" at the start of its message.
func batchResponse(req *http.Request, results []batchResult, index int, e *svcError) *http.Response {
	var b bytes.Buffer
	b.WriteString("--" + batchBoundary + "\r\nContent-Type: multipart/mixed; boundary=" + changesetBoundary + "\r\n\r\n")
	if e != nil {
		// The failed operation alone, named by the "index:" prefix of its
		// message (the service sends no Content-ID here).
		b.WriteString("--" + changesetBoundary + "\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n")
		b.WriteString("HTTP/1.1 " + strconv.Itoa(e.status) + " " + http.StatusText(e.status) + "\r\nX-Content-Type-Options: nosniff\r\nCache-Control: no-cache\r\n")
		if len(results) == 1 && results[0].header.Get("Preference-Applied") != "" {
			b.WriteString("Preference-Applied: " + results[0].header.Get("Preference-Applied") + "\r\n")
		}
		b.WriteString("DataServiceVersion: 3.0;\r\nContent-Type: application/json;odata=minimalmetadata;streaming=true;charset=utf-8\r\n\r\n")
		b.Write(e.body(index))
		b.WriteString("\r\n")
		results = nil
	}
	for _, r := range results {
		h := r.header
		b.WriteString("--" + changesetBoundary + "\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n")
		b.WriteString("HTTP/1.1 " + strconv.Itoa(r.status) + " " + http.StatusText(r.status) + "\r\nX-Content-Type-Options: nosniff\r\nCache-Control: no-cache\r\n")
		if v := h.Get("Preference-Applied"); v != "" {
			b.WriteString("Preference-Applied: " + v + "\r\n")
		}
		b.WriteString("DataServiceVersion: 3.0;\r\n")
		for _, k := range []string{"Content-Type", "Location", "DataServiceId", "ETag"} {
			if v := h.Get(k); v != "" {
				b.WriteString(k + ": " + v + "\r\n")
			}
		}
		b.WriteString("\r\n")
		b.Write(r.body)
		b.WriteString("\r\n")
	}
	b.WriteString("--" + changesetBoundary + "--\r\n--" + batchBoundary + "--\r\n")
	h := http.Header{}
	h.Set("Content-Type", "multipart/mixed; boundary="+batchBoundary)
	return response(req, http.StatusAccepted, h, b.Bytes())
}
