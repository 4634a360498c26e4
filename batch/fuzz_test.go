package batch

import "testing"

// FuzzParseMultipart: the batch response parser never panics, whatever the
// body.
func FuzzParseMultipart(f *testing.F) {
	f.Add([]byte("--batchresponse_1\r\nContent-Type: multipart/mixed; boundary=changesetresponse_1\r\n\r\n--changesetresponse_1\r\nContent-Type: application/http\r\n\r\nHTTP/1.1 204 No Content\r\nETag: W/\"x\"\r\n\r\n\r\n--changesetresponse_1--\r\n--batchresponse_1--\r\n"))
	f.Add([]byte("--b\r\n\r\nHTTP/1.1 409 Conflict\r\n\r\n{\"odata.error\":{}}\r\n--b--"))
	f.Add([]byte("{}"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, body []byte) {
		parts, err := parseMultipart(body)
		if err == nil {
			for _, p := range parts {
				_ = p.status
			}
		}
		tx := NewTransaction(nil)
		_ = tx
	})
}
