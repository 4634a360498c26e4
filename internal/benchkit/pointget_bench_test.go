package benchkit

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/internal/tableio"
	"github.com/tablekit/tablekit/table"
)

// cannedGet answers every request with one entity as the service sends
// it, so BenchmarkPointGetClient measures the client's own CPU: no
// network, no kernel, no scheduler waits.
type cannedGet struct{ body []byte }

func (c cannedGet) Do(req *http.Request) (*http.Response, error) {
	h := http.Header{}
	h.Set("Content-Type", "application/json;odata=minimalmetadata;streaming=true;charset=utf-8")
	h.Set("ETag", `W/"datetime'2026-11-21T21%3A15%3A46.9047177Z'"`)
	h.Set("Date", "Fri, 27 Nov 2026 00:00:00 GMT")
	h.Set("x-ms-version", "2019-02-02")
	h.Set("x-ms-request-id", "6b1f2c3e-0000-0000-0000-000000000000")
	return &http.Response{StatusCode: http.StatusOK, Header: h, Body: io.NopCloser(bytes.NewReader(c.body)),
		Request: req, ContentLength: int64(len(c.body))}, nil
}

// The entities as the service returns them (minimal metadata; an Int64
// and a DateTime carry their annotations, a Double is written with a
// fraction or as 2.0).
const (
	rowJSON = `{"odata.metadata":"http://127.0.0.1:10002/devstoreaccount1/$metadata#bench/@Element",` +
		`"odata.etag":"W/\"datetime'2026-11-21T21%3A15%3A46.9047177Z'\"","PartitionKey":"p00","RowKey":"0000000000000000007",` +
		`"Timestamp":"2026-11-21T21:15:46.9047177Z","Payload":"the quick brown fox jumps over the lazy dog","N@odata.type":"Edm.Int64","N":"7"}`
	employeeJSON = `{"odata.metadata":"http://127.0.0.1:10002/devstoreaccount1/$metadata#bench/@Element",` +
		`"odata.etag":"W/\"datetime'2026-11-21T21%3A15%3A46.9047177Z'\"","PartitionKey":"p00","RowKey":"0000000000000000007",` +
		`"Timestamp":"2026-11-21T21:15:46.9047177Z","EmployeeID@odata.type":"Edm.Int64","EmployeeID":"100007",` +
		`"FirstName":"Jane","LastName":"Jones7","Email":"jane.jones7@contoso.com","Phone":"+44 20 7946 0000",` +
		`"Department":"Sales","Title":"Account manager","Manager":"empid_000123","Office":"Building 4, floor 2",` +
		`"City":"London","Country":"United Kingdom","Age":32,"Salary":52007.5,` +
		`"Hired@odata.type":"Edm.DateTime","Hired":"2019-04-08T09:00:00Z","Active":true}`
)

// customerJSON is Customers' eighth as the service returns it: tablekit's
// encoding of it (the annotations the service writes) with the
// service's metadata, ETag and Timestamp in front.
func customerJSON(b *testing.B) string {
	body, err := tableio.Marshal(Customers(8)[7])
	if err != nil {
		b.Fatal(err)
	}
	return `{"odata.metadata":"http://127.0.0.1:10002/devstoreaccount1/$metadata#bench/@Element",` +
		`"odata.etag":"W/\"datetime'2026-11-21T21%3A15%3A46.9047177Z'\"","Timestamp":"2026-11-21T21:15:46.9047177Z",` + string(body[1:])
}

// devKey is the storage emulator's published account key.
const devKey = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="

// cannedClient is a shared-key client (signing is part of every real
// read) whose transport is canned; kit: built with table.ClientOptions;
// floor: with dropBody in front of the SDK's decoding.
func cannedClient(b *testing.B, body string, kit, floor bool) *aztables.Client {
	cred, err := aztables.NewSharedKeyCredential("devstoreaccount1", devKey)
	if err != nil {
		b.Fatal(err)
	}
	opts := &aztables.ClientOptions{}
	opts.Transport = cannedGet{[]byte(body)}
	if floor {
		opts.PerCallPolicies = []policy.Policy{dropBody{}}
	}
	if kit {
		opts = table.ClientOptions(opts)
	}
	c, err := aztables.NewClientWithSharedKey("http://127.0.0.1:10002/devstoreaccount1/bench", cred, opts)
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// BenchmarkPointGetClient is the client's CPU for one point read with the
// network taken away (canned transport, shared-key signing kept), for the
// benchmark's two-property Row, the 15-property Employee and the
// 40-property Customer, three ways:
// GetEntity + encoding/json into the hand-written struct (raw), table.Get
// on a client built with table.ClientOptions (kit), and GetEntity on a
// client whose policy drops the body undecoded (floor: what any read
// through GetEntity's pipeline costs before decoding). tools/bench's
// "point Get" rows measure the same three over Azurite, where each read
// also pays the round trip's system calls and scheduling.
func BenchmarkPointGetClient(b *testing.B) {
	ctx := context.Background()
	for _, e := range []struct {
		name, body string
		raw        func(c *aztables.Client) error
		kit        func(c *aztables.Client) (func() error, error)
	}{
		{"Row", rowJSON, rawGet[HandRow], kitGet[Row]},
		{"Employee", employeeJSON, rawGet[HandEmployee], kitGet[Employee]},
		{"Customer", customerJSON(b), rawGet[HandCustomer], kitGet[Customer]},
	} {
		b.Run(e.name+"/raw", func(b *testing.B) {
			c := cannedClient(b, e.body, false, false)
			b.ReportAllocs()
			for b.Loop() {
				if err := e.raw(c); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(e.name+"/kit", func(b *testing.B) {
			get, err := e.kit(cannedClient(b, e.body, true, false))
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if err := get(); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(e.name+"/floor", func(b *testing.B) {
			c := cannedClient(b, e.body, false, true)
			b.ReportAllocs()
			for b.Loop() {
				resp, err := c.GetEntity(ctx, "p00", "0000000000000000007", nil)
				if err != nil || string(resp.Value) != "{}" {
					b.Fatalf("%q %v", resp.Value, err)
				}
			}
		})
	}
}

func rawGet[H any](c *aztables.Client) error {
	resp, err := c.GetEntity(context.Background(), "p00", "0000000000000000007", nil)
	if err != nil {
		return err
	}
	var h H
	return json.Unmarshal(resp.Value, &h)
}

func kitGet[T any](c *aztables.Client) (func() error, error) {
	tb, err := table.New[T](c, nil)
	if err != nil {
		return nil, err
	}
	return func() error {
		_, err := tb.Get(context.Background(), "p00", "0000000000000000007", nil)
		return err
	}, nil
}
