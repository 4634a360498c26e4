package batch_test

import (
	"encoding/json"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/internal/benchkit"
	"github.com/tablekit/tablekit/table"
)

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
			b.ReportAllocs()
			for b.Loop() {
				tx := batch.NewTransaction(nil)
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
