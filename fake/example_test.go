package fake_test

import (
	"context"
	"fmt"
	"net/http"

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
