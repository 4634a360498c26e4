package ledger_test

import (
	"fmt"
	"net/http"
	"slices"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/ledger"
)

// A Snapshot puts each retry under the operation and resource it repeated,
// sums partitions away, and adds up to the ledger's totals; Entries keeps
// the partitions the requests name, each with its own retries (an insert
// names its partition in its body only).
func TestSnapshotAttributesRetries(t *testing.T) {
	ctx := t.Context()
	l := ledger.New()
	opts := &aztables.ClientOptions{}
	l.Attach(&opts.ClientOptions, ledger.Table)
	svc := fake.NewTableService(nil)
	c := svc.NewClient("Employees", opts)
	if _, err := c.CreateTable(ctx, nil); err != nil {
		t.Fatal(err)
	}
	for _, pk := range []string{"Sales", "HR"} {
		if _, err := c.AddEntity(ctx, []byte(`{"PartitionKey":"`+pk+`","RowKey":"1"}`), nil); err != nil {
			t.Fatal(err)
		}
	}
	svc.FailNext(fake.OpGetEntity, 2, http.StatusServiceUnavailable, "ServerBusy")
	if _, err := c.GetEntity(ctx, "Sales", "1", nil); err != nil {
		t.Fatal(err)
	}
	snap := l.Snapshot()
	var get, insert ledger.Count
	sumReq, sumRetries := 0, 0
	for _, n := range snap.Counts {
		sumReq += n.Requests
		sumRetries += n.Retries
		switch n.Operation {
		case "GetEntity":
			get = n
		case "InsertEntity":
			insert = n
		}
	}
	if get.Requests != 3 || get.Retries != 2 || get.Resource != "Employees" || insert.Requests != 2 || insert.Retries != 0 {
		t.Errorf("GetEntity %+v, InsertEntity %+v: want 3 requests / 2 retries, and 2 (both partitions) / 0", get, insert)
	}
	if snap.Requests != l.Total() || snap.Retries != l.Retries() || sumReq != snap.Requests || sumRetries != snap.Retries || snap.Requests != 6 {
		t.Errorf("snapshot %+v does not add up to the ledger's %d requests, %d retries", snap, l.Total(), l.Retries())
	}
	var entries []string
	for _, e := range l.Entries() {
		if e.Service == ledger.Table && e.Operation != "CreateTable" {
			entries = append(entries, fmt.Sprintf("%s %s/%s %d %d", e.Operation, e.Resource, e.Partition, e.Requests, e.Retries))
		}
	}
	if want := []string{"GetEntity Employees/Sales 3 2", "InsertEntity Employees/ 2 0"}; !slices.Equal(entries, want) {
		t.Errorf("entries %q, want %q", entries, want)
	}
	for _, c := range snap.Counts {
		if c.Partition != "" {
			t.Errorf("snapshot count %+v names a partition", c)
		}
	}
	l.Reset()
	if s := l.Snapshot(); s.Requests != 0 || len(s.Counts) != 0 {
		t.Errorf("after Reset: %+v", s)
	}
}
