package table

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
)

// cannedEntity answers every request with one entity.
type cannedEntity struct{ body []byte }

func (c cannedEntity) Do(req *http.Request) (*http.Response, error) {
	h := http.Header{}
	h.Set("Content-Type", "application/json;odata=minimalmetadata")
	h.Set("ETag", `W/"datetime'2026-11-23T12%3A00%3A00Z'"`)
	return &http.Response{StatusCode: http.StatusOK, Header: h, Body: io.NopCloser(bytes.NewReader(c.body)), Request: req, ContentLength: int64(len(c.body))}, nil
}

const oneEntity = `{"odata.metadata":"http://127.0.0.1/devstoreaccount1/$metadata#Bench/@Element","odata.etag":"W/\"datetime'2026-11-23T12%3A00%3A00Z'\"","PartitionKey":"Sales","RowKey":"1","Timestamp":"2026-11-23T12:00:00Z","D":2.0,"Name":"Don","Salary@odata.type":"Edm.Int64","Salary":"123456789012"}`

func entityClient(tb testing.TB, wire bool) *aztables.Client {
	opts := &aztables.ClientOptions{}
	opts.Transport = cannedEntity{[]byte(oneEntity)}
	if wire {
		opts = ClientOptions(opts)
	}
	c, err := aztables.NewClientWithNoCredential("http://127.0.0.1/devstoreaccount1/Bench", opts)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// getEntity hands back the service's bytes with the policy (taken by the
// policy) and without it (read from the captured response), never the
// SDK's re-marshalled map, which would turn 2.0 into an Int32.
func TestGetEntityWire(t *testing.T) {
	for _, wire := range []bool{false, true} {
		resp, body, err := getEntity(t.Context(), entityClient(t, wire), &wirePath{}, "Sales", "1", nil)
		if err != nil || resp.ETag == "" {
			t.Fatalf("wire=%v: %v %v", wire, resp, err)
		}
		if !bytes.Equal(body, []byte(oneEntity)) {
			t.Errorf("wire=%v: the body is not the service's bytes: %s", wire, body)
		}
		var e Entity
		var c codec
		if err := c.Unmarshal(body, &e); err != nil || e.RowKey != "1" || e.Properties["Salary"] != int64Value(123456789012) {
			t.Errorf("wire=%v: %+v %v", wire, e, err)
		}
	}
}

// BenchmarkGetEntityWire is the client's CPU per point read decoded into a
// struct (canned transport): the SDK's GetEntity + tablekit's decoder, the
// own path + tablekit's decoder, and GetEntity + encoding/json.
func BenchmarkGetEntityWire(b *testing.B) {
	type row struct {
		Meta
		Name   string
		Salary int64
		D      float64
	}
	for _, wire := range []bool{false, true} {
		name := "sdk-path"
		if wire {
			name = "own-path"
		}
		b.Run(name, func(b *testing.B) {
			client := entityClient(b, wire)
			var c codec
			w := &wirePath{} // as a Table holds it: known after the first read
			b.ReportAllocs()
			for b.Loop() {
				_, body, err := getEntity(b.Context(), client, w, "Sales", "1", nil)
				if err != nil {
					b.Fatal(err)
				}
				var v row
				if err := c.Unmarshal(body, &v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("raw-GetEntity+encoding/json", func(b *testing.B) {
		client := entityClient(b, false)
		b.ReportAllocs()
		for b.Loop() {
			resp, err := client.GetEntity(b.Context(), "Sales", "1", nil)
			if err != nil {
				b.Fatal(err)
			}
			var v struct {
				PartitionKey, RowKey, Name string
				Salary                     int64 `json:",string"`
				D                          float64
			}
			if err := json.Unmarshal(resp.Value, &v); err != nil {
				b.Fatal(err)
			}
		}
	})
}
