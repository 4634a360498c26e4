package table_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/internal/benchkit"
	"github.com/tablekit/tablekit/table"
)

// cannedPage answers every request with one query page of n entities, so
// the query benchmarks measure the client's CPU alone.
type cannedPage struct{ body []byte }

func newCannedPage(n int) cannedPage {
	var b bytes.Buffer
	b.WriteString(`{"odata.metadata":"http://127.0.0.1/devstoreaccount1/$metadata#Bench","value":[`)
	one := benchkit.ServiceJSON()
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(one)
	}
	b.WriteString("]}")
	return cannedPage{body: b.Bytes()}
}

func (c cannedPage) Do(req *http.Request) (*http.Response, error) {
	h := http.Header{}
	h.Set("Content-Type", "application/json;odata=minimalmetadata")
	return &http.Response{StatusCode: http.StatusOK, Header: h, Body: io.NopCloser(bytes.NewReader(c.body)), Request: req, ContentLength: int64(len(c.body))}, nil
}

const benchPage = 1000

func benchClient(b *testing.B, wire bool) *aztables.Client {
	opts := &aztables.ClientOptions{}
	opts.Transport = newCannedPage(benchPage)
	if wire {
		opts = table.ClientOptions(opts)
	}
	c, err := aztables.NewClientWithNoCredential("http://127.0.0.1/devstoreaccount1/Bench", opts)
	if err != nil {
		b.Fatal(err)
	}
	return c
}

func perEntity(b *testing.B, n int) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/entity")
}

// BenchmarkQueryPageWire is the client's CPU per queried entity (pages of
// 1,000 TenFields from a canned transport, no network): tablekit on the
// SDK path, on its own path (table.ClientOptions), and hand-written code over
// the SDK's pager with encoding/json into a struct.
func BenchmarkQueryPageWire(b *testing.B) {
	for _, side := range []struct {
		name string
		wire bool
	}{{"tablekit-sdk-path", false}, {"tablekit-own-path", true}} {
		b.Run(side.name, func(b *testing.B) {
			tb, err := table.New[benchkit.TenFields](benchClient(b, side.wire), nil)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				p, err := tb.QueryPage(b.Context(), "", nil)
				if err != nil || len(p.Items) != benchPage {
					b.Fatalf("%d items, %v", len(p.Items), err)
				}
			}
			perEntity(b, benchPage)
		})
	}
	b.Run("raw-pager+encoding/json", func(b *testing.B) {
		client := benchClient(b, false)
		b.ReportAllocs()
		for b.Loop() {
			page, err := client.NewListEntitiesPager(nil).NextPage(b.Context())
			if err != nil || len(page.Entities) != benchPage {
				b.Fatal(err)
			}
			out := make([]*handTen, len(page.Entities))
			for i, e := range page.Entities {
				out[i] = new(handTen)
				if err := json.Unmarshal(e, out[i]); err != nil {
					b.Fatal(err)
				}
			}
		}
		perEntity(b, benchPage)
	})
}

// handTen is TenFields as hand-written code declares it for encoding/json.
type handTen struct {
	PartitionKey string
	RowKey       string
	Timestamp    time.Time
	FirstName    string
	LastName     string
	Email        string
	Department   string
	Age          int64 `json:"Age,string"`
	Salary       int64 `json:"Salary,string"`
	Rating       float64
	Active       bool
	Hired        time.Time
	Level        int32
}
