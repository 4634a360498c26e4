package batch_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/internal/wirepolicy"
	"github.com/tablekit/tablekit/table"
)

// bodyRecorder keeps every request body and answers as cannedBatch.
type bodyRecorder struct {
	mu     sync.Mutex
	bodies []string
}

func (r *bodyRecorder) Do(req *http.Request) (*http.Response, error) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.bodies = append(r.bodies, string(body))
	r.mu.Unlock()
	req.Body = io.NopCloser(bytes.NewReader(body))
	return cannedBatch{}.Do(req)
}

// TestWireBodyWritesEachKindAsTheServiceReadsIt: tablekit's own $batch
// body gives each operation the request the Table service documents for
// it: an insert is a POST to the table with Prefer: return-no-content (so
// the service answers 204, not the entity); a merge is a PATCH to the
// entity's URL, and on the Cosmos DB Table API a POST tunnelling MERGE
// through X-HTTP-Method, as the SDK sends it there; a replace is a PUT; a
// delete a DELETE with If-Match: *. No other operation carries either
// header.
func TestWireBodyWritesEachKindAsTheServiceReadsIt(t *testing.T) {
	ent := func(rk string) *table.Entity { return &table.Entity{Meta: table.Meta{PartitionKey: "p", RowKey: rk}} }
	ops := []batch.Op{
		batch.Add(ent("a")),
		batch.Upsert(ent("m"), aztables.UpdateModeMerge),
		batch.Upsert(ent("r"), aztables.UpdateModeReplace),
		batch.Update(ent("um"), aztables.UpdateModeMerge).IfMatch(azcore.ETagAny),
		batch.Update(ent("ur"), aztables.UpdateModeReplace).IfMatch(azcore.ETagAny),
		batch.Delete("p", "d"),
	}
	for _, c := range []struct {
		name, url string
		merge     string // the request line's method of a merge
	}{
		{"storage", "http://127.0.0.1/devstoreaccount1/Bench", "PATCH"},
		{"cosmos", "https://acct.table.cosmos.azure.com/Bench", "POST"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := &bodyRecorder{}
			opts := &aztables.ClientOptions{}
			opts.Transport = rec
			client, err := aztables.NewClientWithNoCredential(c.url, table.ClientOptions(opts))
			if err != nil {
				t.Fatal(err)
			}
			tx := batch.NewTransaction(nil)
			for _, op := range ops {
				if err := tx.Append(op); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := tx.Submit(t.Context(), client, nil); err != nil {
				t.Fatal(err)
			}
			if len(rec.bodies) != 1 {
				t.Fatalf("%d requests, want 1", len(rec.bodies))
			}
			var parts []string
			for _, p := range strings.Split(rec.bodies[0], "--changeset") {
				if strings.Contains(p, " HTTP/1.1\r\n") {
					parts = append(parts, p)
				}
			}
			if len(parts) != len(ops) {
				t.Fatalf("%d operations in the body, want %d:\n%s", len(parts), len(ops), rec.bodies[0])
			}
			keyed := func(rk string) string { return c.url + "(PartitionKey='p',RowKey='" + rk + "') HTTP/1.1" }
			want := []struct {
				line         string
				prefer, tunl bool
			}{
				{"POST " + c.url + " HTTP/1.1", true, false},
				{c.merge + " " + keyed("m"), false, c.merge == "POST"},
				{"PUT " + keyed("r"), false, false},
				{c.merge + " " + keyed("um"), false, c.merge == "POST"},
				{"PUT " + keyed("ur"), false, false},
				{"DELETE " + keyed("d"), false, false},
			}
			for i, w := range want {
				p := parts[i]
				if !strings.Contains(p, "\r\n"+w.line+"\r\n") {
					t.Errorf("operation %d: no request line %q in\n%s", i, w.line, p)
				}
				if got := strings.Contains(p, "\r\nPrefer: return-no-content\r\n"); got != w.prefer {
					t.Errorf("operation %d: Prefer: return-no-content present %v, want %v:\n%s", i, got, w.prefer, p)
				}
				if got := strings.Contains(p, "\r\nX-HTTP-Method: MERGE\r\n"); got != w.tunl {
					t.Errorf("operation %d: X-HTTP-Method: MERGE present %v, want %v:\n%s", i, got, w.tunl, p)
				}
			}
			if !strings.Contains(parts[5], "\r\nIf-Match: *\r\n") {
				t.Errorf("the delete has no If-Match: *:\n%s", parts[5])
			}
		})
	}
}

// TestSubmitReturnsEachOperationsETagOnBothPaths: Submit's Result carries
// the ETag the service gave each operation, read from the 202's parts, on
// the SDK's path as on tablekit's own; each is the ETag a read of the
// entity returns.
func TestSubmitReturnsEachOperationsETagOnBothPaths(t *testing.T) {
	for _, sdk := range []bool{true, false} {
		t.Run(map[bool]string{true: "SDK's path", false: "wire path"}[sdk], func(t *testing.T) {
			var pcp []policy.Policy
			if sdk {
				pcp = append(pcp, wirepolicy.Off{})
			}
			_, c := newFake(t, &aztables.ClientOptions{ClientOptions: azcore.ClientOptions{PerCallPolicies: pcp}})
			tx := batch.NewTransaction(nil)
			for i := range 3 {
				if err := tx.Append(batch.Add(ev("p", i))); err != nil {
					t.Fatal(err)
				}
			}
			res, err := tx.Submit(t.Context(), c, nil)
			if err != nil || len(res.ETags) != 3 {
				t.Fatalf("submit: %+v %v", res, err)
			}
			for i, op := range tx.Ops() {
				got, err := c.GetEntity(t.Context(), op.PartitionKey(), op.RowKey(), nil)
				if err != nil {
					t.Fatal(err)
				}
				if res.ETags[i] == "" || res.ETags[i] != got.ETag {
					t.Errorf("operation %d: Result's ETag %q, the entity's %q", i, res.ETags[i], got.ETag)
				}
			}
		})
	}
}
