package reqclass_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/internal/reqclass"
	"github.com/tablekit/tablekit/ledger"
)

func TestClassify(t *testing.T) {
	const (
		tables = "https://acct.table.core.windows.net"
		queues = "https://acct.queue.core.windows.net"
		blobs  = "https://acct.blob.core.windows.net"
		// Emulators put the account first in the path.
		azurite = "http://127.0.0.1:10002/devstoreaccount1"
		local   = "http://localhost:10001/devstoreaccount1"
	)
	for _, tc := range []struct {
		s           reqclass.Service
		method, url string
		want        reqclass.Request
	}{
		{reqclass.Table, "POST", tables + "/Tables", reqclass.Request{Operation: "CreateTable"}},
		{reqclass.Table, "GET", tables + "/Tables?$filter=TableName%20eq%20'x'", reqclass.Request{Operation: "QueryTables"}},
		{reqclass.Table, "DELETE", tables + "/Tables('Employees')", reqclass.Request{Operation: "DeleteTable", Resource: "Employees"}},
		{reqclass.Table, "GET", tables + "/Employees()?$filter=PartitionKey%20eq%20'Sales'%20and%20RowKey%20ge%20'1'", reqclass.Request{Operation: "QueryEntities", Resource: "Employees", Partition: "Sales"}},
		{reqclass.Table, "GET", tables + "/Employees()?$filter=(PartitionKey%20eq%20'Sales')", reqclass.Request{Operation: "QueryEntities", Resource: "Employees", Partition: "Sales"}},
		{reqclass.Table, "GET", tables + "/Employees()?$filter=RowKey%20eq%20'1'", reqclass.Request{Operation: "QueryEntities", Resource: "Employees"}},
		{reqclass.Table, "GET", tables + "/Employees(PartitionKey='O%27%27Brien',RowKey='1')", reqclass.Request{Operation: "GetEntity", Resource: "Employees", Partition: "O'Brien"}},
		{reqclass.Table, "PUT", tables + "/Employees(PartitionKey='Sales',RowKey='1')", reqclass.Request{Operation: "UpdateEntity", Resource: "Employees", Partition: "Sales"}},
		{reqclass.Table, "PATCH", tables + "/Employees(PartitionKey='Sales',RowKey='1')", reqclass.Request{Operation: "MergeEntity", Resource: "Employees", Partition: "Sales"}},
		{reqclass.Table, "DELETE", azurite + "/Employees(PartitionKey='Sales',RowKey='1')", reqclass.Request{Operation: "DeleteEntity", Resource: "Employees", Partition: "Sales"}},
		{reqclass.Table, "POST", azurite + "/Employees", reqclass.Request{Operation: "InsertEntity", Resource: "Employees"}},
		{reqclass.Table, "POST", azurite + "/$batch", reqclass.Request{Operation: "Batch"}},
		{reqclass.Table, "GET", tables + "/", reqclass.Request{Operation: "GET"}},

		{reqclass.Queue, "PUT", queues + "/work", reqclass.Request{Operation: "CreateQueue", Resource: "work"}},
		{reqclass.Queue, "DELETE", queues + "/work", reqclass.Request{Operation: "DeleteQueue", Resource: "work"}},
		{reqclass.Queue, "GET", queues + "/work?comp=metadata", reqclass.Request{Operation: "GetQueueProperties", Resource: "work"}},
		{reqclass.Queue, "POST", local + "/work/messages", reqclass.Request{Operation: "EnqueueMessage", Resource: "work"}},
		{reqclass.Queue, "GET", local + "/work/messages?peekonly=true", reqclass.Request{Operation: "PeekMessages", Resource: "work"}},
		{reqclass.Queue, "GET", local + "/work/messages?numofmessages=32", reqclass.Request{Operation: "DequeueMessages", Resource: "work"}},
		{reqclass.Queue, "DELETE", queues + "/work/messages", reqclass.Request{Operation: "ClearMessages", Resource: "work"}},
		{reqclass.Queue, "PUT", queues + "/work/messages/id1?popreceipt=p&visibilitytimeout=30", reqclass.Request{Operation: "UpdateMessage", Resource: "work"}},
		{reqclass.Queue, "DELETE", queues + "/work/messages/id1?popreceipt=p", reqclass.Request{Operation: "DeleteMessage", Resource: "work"}},

		{reqclass.Blob, "GET", blobs + "/logs?restype=container&comp=list&prefix=app%2F", reqclass.Request{Operation: "ListBlobs", Resource: "logs"}},
		{reqclass.Blob, "PUT", blobs + "/logs?restype=container", reqclass.Request{Operation: "CreateContainer", Resource: "logs"}},
		{reqclass.Blob, "DELETE", blobs + "/logs?restype=container", reqclass.Request{Operation: "DeleteContainer", Resource: "logs"}},
		{reqclass.Blob, "PUT", azurite + "/logs/app/2014/07/31/1800/w-000001.log", reqclass.Request{Operation: "PutBlob", Resource: "logs"}},
		{reqclass.Blob, "GET", azurite + "/logs/a.log", reqclass.Request{Operation: "GetBlob", Resource: "logs"}},
		{reqclass.Blob, "HEAD", blobs + "/logs/a.log", reqclass.Request{Operation: "GetBlob", Resource: "logs"}},
		{reqclass.Blob, "DELETE", blobs + "/logs/a.log", reqclass.Request{Operation: "DeleteBlob", Resource: "logs"}},

		{reqclass.Service("file"), "PUT", blobs + "/share/f", reqclass.Request{Operation: "PUT"}},
	} {
		r, err := http.NewRequest(tc.method, tc.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := reqclass.Classify(tc.s, r); got != tc.want {
			t.Errorf("%s %s %s: %+v, want %+v", tc.s, tc.method, tc.url, got, tc.want)
		}
	}
}

// TestClassifyKeepsNoSecret: a SAS token in the query names nothing.
func TestClassifyKeepsNoSecret(t *testing.T) {
	const sig = "tkSECRETsig"
	for _, s := range []reqclass.Service{reqclass.Table, reqclass.Queue, reqclass.Blob} {
		r, _ := http.NewRequest("GET", "https://acct.core.windows.net/res(PartitionKey='p',RowKey='r')?sv=2023-11-03&sig="+sig, nil)
		if got := reqclass.Classify(s, r); strings.Contains(got.Operation+got.Resource+got.Partition, sig) {
			t.Errorf("%s: %+v holds the signature", s, got)
		}
	}
}

// TestServicesAreLedgers: ledger passes its Service to Classify as it is,
// so the values must be the same.
func TestServicesAreLedgers(t *testing.T) {
	for _, p := range [][2]string{
		{string(ledger.Table), string(reqclass.Table)},
		{string(ledger.Queue), string(reqclass.Queue)},
		{string(ledger.Blob), string(reqclass.Blob)},
	} {
		if p[0] != p[1] {
			t.Errorf("ledger's %q is reqclass's %q", p[0], p[1])
		}
	}
}
