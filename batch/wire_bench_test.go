package batch_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/internal/benchkit"
	"github.com/tablekit/tablekit/table"
)

// cannedBatch answers every $batch with 202 and one 204 per operation,
// with its ETag (the request's operations are counted), so the
// transaction benchmarks measure the client's CPU alone.
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

func cannedClient(b *testing.B, wire bool) *aztables.Client {
	opts := &aztables.ClientOptions{}
	opts.Transport = cannedBatch{}
	if wire {
		opts = table.ClientOptions(opts)
	}
	c, err := aztables.NewClientWithNoCredential("http://127.0.0.1/devstoreaccount1/Bench", opts)
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// handRow is benchkit.Row as hand-written code declares it for
// encoding/json, with the Int64 annotation beside it.
type handRow struct {
	PartitionKey string
	RowKey       string
	Payload      string
	NType        string `json:"N@odata.type"`
	N            int64  `json:"N,string"`
}

// BenchmarkSubmitWire is the client's CPU and allocations per bulk entity
// (100-operation Add transactions of benchkit.Row, canned transport, no
// network, the canned answer's cost included on every side): tablekit on
// the SDK path, on its own path (table.ClientOptions), hand-written
// SubmitTransaction encoding each row with encoding/json, and a raw
// SubmitTransaction loop over entities encoded beforehand.
func BenchmarkSubmitWire(b *testing.B) {
	const n = 100
	rows := benchkit.Rows(n, 1)
	perEntity := func(b *testing.B) {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/entity")
	}
	for _, side := range []struct {
		name string
		wire bool
	}{{"tablekit-sdk-path", false}, {"tablekit-own-path", true}} {
		b.Run(side.name, func(b *testing.B) {
			client := cannedClient(b, side.wire)
			codec := &table.Codec{}
			b.ReportAllocs()
			for b.Loop() {
				tx := batch.NewTransaction(&batch.TransactionOptions{Codec: codec})
				for _, r := range rows {
					if err := tx.Append(batch.Add(r)); err != nil {
						b.Fatal(err)
					}
				}
				res, err := tx.Submit(b.Context(), client, nil)
				if err != nil || res.ETags[n-1] == "" {
					b.Fatalf("%v %v", res, err)
				}
			}
			perEntity(b)
		})
	}
	b.Run("hand-SubmitTransaction+encoding/json", func(b *testing.B) {
		client := cannedClient(b, false)
		b.ReportAllocs()
		for b.Loop() {
			actions := make([]aztables.TransactionAction, n)
			for i, r := range rows {
				body, err := json.Marshal(handRow{PartitionKey: r.PartitionKey, RowKey: r.RowKey, Payload: r.Payload, NType: "Edm.Int64", N: int64(r.N)})
				if err != nil {
					b.Fatal(err)
				}
				actions[i] = aztables.TransactionAction{ActionType: aztables.TransactionTypeAdd, Entity: body}
			}
			if _, err := client.SubmitTransaction(b.Context(), actions, nil); err != nil {
				b.Fatal(err)
			}
		}
		perEntity(b)
	})
	b.Run("raw-SubmitTransaction-pre-encoded", func(b *testing.B) {
		client := cannedClient(b, false)
		actions := make([]aztables.TransactionAction, n)
		for i, r := range rows {
			body, _ := json.Marshal(handRow{PartitionKey: r.PartitionKey, RowKey: r.RowKey, Payload: r.Payload, NType: "Edm.Int64", N: int64(r.N)})
			actions[i] = aztables.TransactionAction{ActionType: aztables.TransactionTypeAdd, Entity: body}
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := client.SubmitTransaction(b.Context(), actions, nil); err != nil {
				b.Fatal(err)
			}
		}
		perEntity(b)
	})
}
