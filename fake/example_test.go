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
