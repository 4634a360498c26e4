package batch_test

import (
	"bytes"
	"io"
	"net/http"
	"strconv"
)

// cannedBatch answers every $batch with 202 and one 204 per operation,
// with its ETag (the request's operations are counted), so the
// transaction benchmarks measure the client's CPU alone. It is kept out of
// the benchmark files because tests use it too (tools/mutate leaves
// benchmark-only files out of a mutant's build).
type cannedBatch struct{}

func (cannedBatch) Do(req *http.Request) (*http.Response, error) {
	body, _ := io.ReadAll(req.Body)
	n := bytes.Count(body, []byte(" HTTP/1.1\r\n"))
	var b bytes.Buffer
	b.WriteString("--batchresponse_1\r\nContent-Type: multipart/mixed; boundary=changesetresponse_1\r\n\r\n")
	for i := range n {
		b.WriteString("--changesetresponse_1\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\nHTTP/1.1 204 No Content\r\nX-Content-Type-Options: nosniff\r\nCache-Control: no-cache\r\nDataServiceVersion: 3.0;\r\nETag: W/\"datetime'2026-11-23T12%3A00%3A00." + strconv.Itoa(1000000+i) + "Z'\"\r\n\r\n\r\n")
	}
	b.WriteString("--changesetresponse_1--\r\n--batchresponse_1--\r\n")
	h := http.Header{}
	h.Set("Content-Type", "multipart/mixed; boundary=batchresponse_1")
	return &http.Response{StatusCode: http.StatusAccepted, Header: h, Body: io.NopCloser(bytes.NewReader(b.Bytes())), Request: req, ContentLength: int64(b.Len())}, nil
}
