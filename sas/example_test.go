package sas_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/sas"
)

// devKey is Azurite's public development key: the examples' fakes check
// signatures with it.
const devKey = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="

func errCode(err error) string {
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return fmt.Sprint(re.StatusCode, " ", re.ErrorCode)
	}
	return fmt.Sprint(err)
}

// A token that reaches only alice's partition of a table: give it to
// alice's device instead of the account key.
func ExampleTable() {
	ctx := context.Background()
	svc := fake.NewTableService(&fake.TableServiceOptions{AccountName: "devstoreaccount1", AccountKey: devKey})
	admin := svc.NewClient("Notes", nil)
	_, _ = admin.CreateTable(ctx, nil)
	_, _ = admin.AddEntity(ctx, []byte(`{"PartitionKey":"bob","RowKey":"1"}`), nil)

	cred, err := sas.NewCredential("devstoreaccount1", devKey)
	if err != nil {
		panic(err)
	}
	token, err := sas.Table{
		Table:       "Notes",
		Permissions: sas.TablePermissions{Read: true, Add: true},
		Expiry:      time.Now().Add(time.Hour),
		KeyRange:    sas.KeyRange{StartPartitionKey: "alice", EndPartitionKey: "alice"},
		HTTPSOnly:   true,
	}.Sign(cred)
	if err != nil {
		panic(err)
	}
	opts := &aztables.ClientOptions{}
	opts.Transport = svc // with Azure: no transport, and the table's real URL
	alice, _ := aztables.NewClientWithNoCredential(svc.URL()+"Notes?"+token, opts)

	_, err = alice.AddEntity(ctx, []byte(`{"PartitionKey":"alice","RowKey":"1"}`), nil)
	fmt.Println("add to alice:", err == nil)
	_, err = alice.GetEntity(ctx, "bob", "1", nil)
	fmt.Println("read bob:", errCode(err))
	// Output:
	// add to alice: true
	// read bob: 403 AuthorizationFailure
}

// A producer's token: it may put messages on one queue, from one network,
// and nothing else.
func ExampleQueue() {
	ctx := context.Background()
	svc := fake.NewQueueService(&fake.QueueServiceOptions{AccountName: "devstoreaccount1", AccountKey: devKey})
	_, _ = svc.NewQueueClient("jobs", nil).Create(ctx, nil)

	cred, _ := sas.NewCredential("devstoreaccount1", devKey)
	token, err := sas.Queue{
		Queue:       "jobs",
		Permissions: sas.QueuePermissions{Add: true},
		Expiry:      time.Now().Add(time.Hour),
		IPRange:     sas.IPRange{Start: netip.MustParseAddr("127.0.0.1")}, // the fake sees loopback
	}.Sign(cred)
	if err != nil {
		panic(err)
	}
	opts := &azqueue.ClientOptions{}
	opts.Transport = svc
	producer, _ := azqueue.NewQueueClientWithNoCredential(svc.URL()+"jobs?"+token, opts)

	_, err = producer.EnqueueMessage(ctx, "resize photo 42", nil)
	fmt.Println("enqueue:", err == nil)
	_, err = producer.DequeueMessage(ctx, nil)
	fmt.Println("dequeue:", errCode(err))
	// Output:
	// enqueue: true
	// dequeue: 403 AuthorizationPermissionMismatch
}

// A read-only link to one blob; and what a bad request gets: an error
// before anything is signed.
func ExampleBlob() {
	ctx := context.Background()
	svc := fake.NewBlobService(&fake.BlobServiceOptions{AccountName: "devstoreaccount1", AccountKey: devKey})
	admin := svc.NewClient(nil)
	_, _ = admin.CreateContainer(ctx, "reports", nil)
	_, _ = admin.UploadBuffer(ctx, "reports", "2026-11.csv", []byte("a,b\n1,2\n"), nil)

	cred, _ := sas.NewCredential("devstoreaccount1", devKey)
	token, err := sas.Blob{Container: "reports", Blob: "2026-11.csv", Permissions: sas.BlobPermissions{Read: true}, Expiry: time.Now().Add(time.Hour)}.Sign(cred)
	if err != nil {
		panic(err)
	}
	opts := &azblob.ClientOptions{}
	opts.Transport = svc
	reader, _ := azblob.NewClientWithNoCredential(svc.URL()+"?"+token, opts)
	resp, err := reader.DownloadStream(ctx, "reports", "2026-11.csv", nil)
	fmt.Println("download:", err == nil, *resp.ContentLength, "bytes")

	_, err = sas.Blob{Container: "reports", Blob: "2026-11.csv", Permissions: sas.BlobPermissions{List: true}, Expiry: time.Now().Add(time.Hour)}.Sign(cred)
	fmt.Println(errors.Is(err, sas.ErrBadSAS))
	// Output:
	// download: true 8 bytes
	// true
}

// One token across services: read entities and blobs, nothing else.
func ExampleAccount() {
	ctx := context.Background()
	tables := fake.NewTableService(&fake.TableServiceOptions{AccountName: "devstoreaccount1", AccountKey: devKey})
	admin := tables.NewClient("Notes", nil)
	_, _ = admin.CreateTable(ctx, nil)
	_, _ = admin.AddEntity(ctx, []byte(`{"PartitionKey":"p","RowKey":"1"}`), nil)

	cred, _ := sas.NewCredential("devstoreaccount1", devKey)
	token, err := sas.Account{
		Services:      sas.Services{Table: true, Blob: true},
		ResourceTypes: sas.ResourceTypes{Object: true},
		Permissions:   sas.AccountPermissions{Read: true},
		Expiry:        time.Now().Add(time.Hour),
	}.Sign(cred)
	if err != nil {
		panic(err)
	}
	opts := &aztables.ClientOptions{}
	opts.Transport = tables
	svc, _ := aztables.NewServiceClientWithNoCredential(tables.URL()+"?"+token, opts)
	_, err = svc.NewClient("Notes").GetEntity(ctx, "p", "1", nil)
	fmt.Println("read:", err == nil)
	_, err = svc.CreateTable(ctx, "Other", nil)
	fmt.Println("create a table:", errCode(err))
	// Output:
	// read: true
	// create a table: 403 AuthorizationResourceTypeMismatch
}

// A stored access policy: tokens name it instead of carrying their own
// grant, and revoking it stops them all at once.
func ExamplePolicies() {
	ctx := context.Background()
	svc := fake.NewBlobService(&fake.BlobServiceOptions{AccountName: "devstoreaccount1", AccountKey: devKey})
	admin := svc.NewClient(nil).ServiceClient().NewContainerClient("shared")
	_, _ = admin.Create(ctx, nil)

	policies := sas.NewContainerPolicies(admin)
	err := policies.Create(ctx, sas.Policy[sas.BlobPermissions]{ID: "partners", Expiry: time.Now().Add(24 * time.Hour), Permissions: sas.BlobPermissions{Read: true, List: true}}, nil)
	if err != nil {
		panic(err)
	}
	list, _ := policies.List(ctx, nil)
	fmt.Println(list[0].ID, list[0].Permissions)

	cred, _ := sas.NewCredential("devstoreaccount1", devKey)
	token, _ := sas.Blob{Container: "shared", Identifier: "partners"}.Sign(cred)
	opts := &container.ClientOptions{}
	opts.Transport = svc
	partner, _ := container.NewClientWithNoCredential(svc.URL()+"shared?"+token, opts)
	_, err = partner.NewListBlobsFlatPager(nil).NextPage(ctx)
	fmt.Println("list:", err == nil)

	revoked, _ := policies.Revoke(ctx, "partners", nil)
	_, err = partner.NewListBlobsFlatPager(nil).NextPage(ctx)
	fmt.Println("revoked:", revoked, errCode(err))
	// Output:
	// partners rl
	// list: true
	// revoked: true 403 AuthenticationFailed
}
