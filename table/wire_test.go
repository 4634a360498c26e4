package table_test

import (
	"net/http"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/internal/http11"
	"github.com/tablekit/tablekit/table"
)

// With table.ClientOptions, a query page is decoded from the service's own
// bytes: an unannotated integral Double written "2.0" stays a Double,
// which the SDK's map round trip turns into "2" (an Int32). Without the
// policy, the SDK path is unchanged. Continuation headers reach the token
// on both paths.
func TestWirePathQueryReadsTheRawPage(t *testing.T) {
	page := cannedPage{body: []byte(`{"value":[{"odata.etag":"W/\"x\"","PartitionKey":"p","RowKey":"r","D":2.0,"S":"a"}]}`)}
	for _, wire := range []bool{false, true} {
		opts := &aztables.ClientOptions{}
		opts.Transport = continued{page}
		if wire {
			opts = table.ClientOptions(opts)
		}
		c, err := aztables.NewClientWithNoCredential("http://127.0.0.1/devstoreaccount1/Bench", opts)
		if err != nil {
			t.Fatal(err)
		}
		tb, _ := table.New[table.Entity](c, nil)
		p, err := tb.QueryPage(t.Context(), "", nil)
		if err != nil || len(p.Items) != 1 || p.Next == "" {
			t.Fatalf("wire=%v: %v, %v", wire, p, err)
		}
		d, _ := p.Items[0].Get("D")
		if got := d.Type() == table.EdmDouble && !d.Inferred(); got != wire {
			t.Errorf("wire=%v: D is %s (inferred %v)", wire, d.Type(), d.Inferred())
		}
		if p.Items[0].ETag != `W/"x"` || p.Items[0].RowKey != "r" {
			t.Errorf("wire=%v: meta %+v", wire, p.Items[0].Meta)
		}
	}
}

// continued adds continuation headers to a canned page.
type continued struct{ cannedPage }

func (c continued) Do(req *http.Request) (*http.Response, error) {
	resp, err := c.cannedPage.Do(req)
	resp.Header.Set("x-ms-continuation-NextPartitionKey", "p")
	resp.Header.Set("x-ms-continuation-NextRowKey", "s")
	return resp, err
}

// ClientOptions gives a client tablekit's transport unless the caller set
// one, and leaves the caller's options as they were.
func TestClientOptionsTransport(t *testing.T) {
	mine := &aztables.ClientOptions{}
	got := table.ClientOptions(mine)
	if _, ok := got.Transport.(*http11.Transport); !ok {
		t.Errorf("ClientOptions gave transport %T, want tablekit's", got.Transport)
	}
	if mine.Transport != nil || len(mine.PerCallPolicies) != 0 {
		t.Errorf("the caller's options changed: %+v", mine.ClientOptions)
	}
	if again := table.ClientOptions(got); again.Transport != got.Transport {
		t.Error("ClientOptions on its own result replaced the transport")
	}
	own := &aztables.ClientOptions{}
	own.Transport = &continued{}
	if got := table.ClientOptions(own); got.Transport != own.Transport {
		t.Errorf("ClientOptions replaced the caller's transport with %T", got.Transport)
	}
}
