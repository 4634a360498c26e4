package fake_test

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"
	"github.com/tablekit/tablekit/fake"
)

func ExampleTableService() {
	ctx := context.Background()
	svc := fake.NewTableService(nil)
	client := svc.NewClient("Employees", nil) // a real *aztables.Client
	if _, err := client.CreateTable(ctx, nil); err != nil {
		panic(err)
	}
	body := []byte(`{"PartitionKey":"Sales","RowKey":"000123","LastName":"Jones"}`)
	if _, err := client.AddEntity(ctx, body, nil); err != nil {
		panic(err)
	}
	// Make the next read fail as a busy service would.
	svc.FailNext(fake.OpGetEntity, 1, http.StatusNotFound, "ResourceNotFound")
	_, err := client.GetEntity(ctx, "Sales", "000123", nil)
	fmt.Println("injected:", err != nil)
	got, err := client.GetEntity(ctx, "Sales", "000123", nil)
	fmt.Println(err == nil, len(got.ETag) > 0)
	fmt.Println(svc.Count(fake.OpGetEntity), "reads,", svc.Total(), "requests")
	// Output:
	// injected: true
	// true true
	// 2 reads, 4 requests
}

// A real *azqueue.QueueClient served in memory.
func ExampleQueueService() {
	ctx := context.Background()
	svc := fake.NewQueueService(nil)
	q := svc.NewQueueClient("archive", nil)
	_, _ = q.Create(ctx, nil)
	_, _ = q.EnqueueMessage(ctx, "move 000456", nil)
	resp, err := q.DequeueMessage(ctx, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println(*resp.Messages[0].MessageText, svc.Len("archive"))
	_, _ = q.DeleteMessage(ctx, *resp.Messages[0].MessageID, *resp.Messages[0].PopReceipt, nil)
	fmt.Println(svc.Len("archive"))
	// Output:
	// move 000456 1
	// 0
}

// A real *azblob.Client served in memory.
func ExampleBlobService() {
	ctx := context.Background()
	svc := fake.NewBlobService(nil)
	client := svc.NewClient(nil)
	_, _ = client.CreateContainer(ctx, "photos", nil)
	_, _ = client.UploadBuffer(ctx, "photos", "Sales/000123.jpg", []byte("jpeg bytes"), nil)
	fmt.Println(svc.Names("photos"))
	// Output: [Sales/000123.jpg]
}

// A blob lease taken by the official lease client, expiring on the fake's
// clock: the way a worker claims a partition, and loses it if it stops
// renewing.
func ExampleBlobService_lease() {
	ctx := context.Background()
	now := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	svc := fake.NewBlobService(&fake.BlobServiceOptions{Now: func() time.Time { return now }})
	client := svc.NewClient(nil)
	_, _ = client.CreateContainer(ctx, "owners", nil)
	_, _ = client.UploadBuffer(ctx, "owners", "partition-07", nil, nil)
	bc := client.ServiceClient().NewContainerClient("owners").NewBlockBlobClient("partition-07")
	worker1, _ := lease.NewBlobClient(bc, &lease.BlobClientOptions{LeaseID: to.Ptr("11111111-1111-4111-8111-111111111111")})
	worker2, _ := lease.NewBlobClient(bc, &lease.BlobClientOptions{LeaseID: to.Ptr("22222222-2222-4222-8222-222222222222")})
	_, err := worker1.AcquireLease(ctx, 15, nil)
	fmt.Println("worker1 acquires:", err == nil)
	_, err = worker2.AcquireLease(ctx, 15, nil)
	fmt.Println("worker2 refused:", bloberror.HasCode(err, bloberror.LeaseAlreadyPresent))
	now = now.Add(16 * time.Second) // worker1 stopped renewing
	_, err = worker2.AcquireLease(ctx, 15, nil)
	fmt.Println("worker2 after expiry:", err == nil)
	// Output:
	// worker1 acquires: true
	// worker2 refused: true
	// worker2 after expiry: true
}
