package fake_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/fake"
)

// do sends one raw request to svc and returns the status, headers and body.
func do(t *testing.T, svc interface {
	Do(*http.Request) (*http.Response, error)
}, method, url string, header map[string]string, body string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := svc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// The answers' shapes the recordings do not all show, as the service's
// documentation gives them ("Payload format for Table service
// operations", "Query Tables", "Performing entity group transactions").
func TestServiceAnswerShapes(t *testing.T) {
	svc := fake.NewTableService(nil)
	base := "https://acct.table.core.windows.net/"
	json3 := map[string]string{"Content-Type": "application/json", "DataServiceVersion": "3.0"}
	with := func(m map[string]string, kv ...string) map[string]string {
		out := map[string]string{}
		for k, v := range m {
			out[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}

	t.Run("an empty listing is an empty array", func(t *testing.T) {
		st, _, body := do(t, svc, "GET", base+"Tables", map[string]string{"Accept": "application/json;odata=minimalmetadata"}, "")
		if st != 200 || !strings.Contains(body, `"value":[]`) {
			t.Fatalf("%d %s", st, body)
		}
	})

	t.Run("create table with return-no-content", func(t *testing.T) {
		st, h, body := do(t, svc, "POST", base+"Tables", with(json3, "Prefer", "return-no-content"), `{"TableName":"shapes"}`)
		if st != 204 || body != "" || h.Get("Preference-Applied") != "return-no-content" ||
			h.Get("Location") != base+"Tables('shapes')" || h.Get("DataServiceId") != base+"Tables('shapes')" {
			t.Fatalf("%d %v %q", st, h, body)
		}
	})

	t.Run("query table by name", func(t *testing.T) {
		st, _, body := do(t, svc, "GET", base+"Tables('shapes')", map[string]string{"Accept": "application/json;odata=minimalmetadata"}, "")
		if st != 200 || body != `{"odata.metadata":"`+base+`$metadata#Tables/@Element","TableName":"shapes"}` {
			t.Fatalf("%d %s", st, body)
		}
		if st, _, body := do(t, svc, "GET", base+"Tables('nosuch')", nil, ""); st != 404 || !strings.Contains(body, "ResourceNotFound") {
			t.Fatalf("a missing table: %d %s", st, body)
		}
	})

	entity := `{"PartitionKey":"p","RowKey":"r","N":"5","N@odata.type":"Edm.Int64","When":"2020-01-01T01:02:00Z","When@odata.type":"Edm.DateTime","S":"x"}`
	if st, _, body := do(t, svc, "POST", base+"shapes", with(json3, "Prefer", "return-no-content"), entity); st != 204 {
		t.Fatalf("insert: %d %s", st, body)
	}

	t.Run("metadata levels", func(t *testing.T) {
		for _, c := range []struct {
			accept     string
			has, lacks []string
		}{
			{"application/json;odata=nometadata", []string{`"N":"5"`, `"Timestamp":"`}, []string{"odata.", "@odata.type"}},
			{"application/json;odata=minimalmetadata", []string{`"odata.metadata":`, `"odata.etag":`, `"N@odata.type":"Edm.Int64"`, `"When@odata.type":"Edm.DateTime"`}, []string{"Timestamp@odata.type", "odata.id", `"odata.type"`, "odata.editLink"}},
			{"application/json;odata=fullmetadata", []string{`"odata.type":"acct.shapes"`, `"odata.id":"` + base + `shapes(PartitionKey='p',RowKey='r')"`, `"odata.editLink":"shapes(PartitionKey='p',RowKey='r')"`, `"Timestamp@odata.type":"Edm.DateTime"`, `"N@odata.type":"Edm.Int64"`}, nil},
		} {
			for _, url := range []string{base + "shapes()", base + "shapes(PartitionKey='p',RowKey='r')"} {
				st, h, body := do(t, svc, "GET", url, map[string]string{"Accept": c.accept}, "")
				if st != 200 || !json.Valid([]byte(body)) {
					t.Fatalf("%s %s: %d %s", c.accept, url, st, body)
				}
				if want := "application/json;odata=" + strings.TrimPrefix(c.accept, "application/json;odata="); !strings.HasPrefix(h.Get("Content-Type"), want) {
					t.Errorf("%s: Content-Type %q", c.accept, h.Get("Content-Type"))
				}
				for _, s := range c.has {
					if !strings.Contains(body, s) {
						t.Errorf("%s %s: no %s in %s", c.accept, url, s, body)
					}
				}
				for _, s := range c.lacks {
					if strings.Contains(body, s) {
						t.Errorf("%s %s: %s in %s", c.accept, url, s, body)
					}
				}
			}
		}
	})

	t.Run("a signed identifier without a policy", func(t *testing.T) {
		xml := `<?xml version="1.0" encoding="utf-8"?><SignedIdentifiers><SignedIdentifier><Id>bare</Id></SignedIdentifier></SignedIdentifiers>`
		if st, _, body := do(t, svc, "PUT", base+"shapes?comp=acl", nil, xml); st != 204 {
			t.Fatalf("%d %s", st, body)
		}
		if _, _, body := do(t, svc, "GET", base+"shapes?comp=acl", nil, ""); body != xml {
			t.Fatalf("got %s\nwant %s", body, xml)
		}
	})

	batch := func(changeset string) (int, string) {
		body := "--batch_b\r\nContent-Type: multipart/mixed; boundary=changeset_c\r\n\r\n" + changeset + "--changeset_c--\r\n\r\n--batch_b--\r\n"
		st, _, out := do(t, svc, "POST", base+"$batch", map[string]string{"Content-Type": "multipart/mixed; boundary=batch_b"}, body)
		return st, out
	}
	t.Run("an empty changeset", func(t *testing.T) {
		if st, out := batch(""); st != 202 || strings.Contains(out, "HTTP/1.1") {
			t.Fatalf("%d %s", st, out)
		}
	})
	t.Run("a body-less operation without its blank line", func(t *testing.T) {
		op := "--changeset_c\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n" +
			"DELETE " + base + "shapes(PartitionKey='p',RowKey='r') HTTP/1.1\r\nIf-Match: *\r\nDataServiceVersion: 3.0\r\n"
		if st, out := batch(op); st != 202 || !strings.Contains(out, "HTTP/1.1 204") {
			t.Fatalf("%d %s", st, out)
		}
		if svc.Len("shapes") != 0 {
			t.Fatal("the delete did not happen")
		}
	})
	t.Run("an insert without return-no-content in a batch", func(t *testing.T) {
		op := "--changeset_c\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n" +
			"POST " + base + "shapes HTTP/1.1\r\nAccept: application/json;odata=minimalmetadata\r\nContent-Type: application/json\r\n\r\n" +
			`{"PartitionKey":"b","RowKey":"1","S":"x"}` + "\r\n"
		st, out := batch(op)
		if st != 202 || !strings.Contains(out, "HTTP/1.1 201 Created") || !strings.Contains(out, `"S":"x"`) ||
			!strings.Contains(out, "Location: "+base+"shapes(PartitionKey='b',RowKey='1')") {
			t.Fatalf("%d %s", st, out)
		}
	})
}
