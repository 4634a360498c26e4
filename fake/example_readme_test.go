package fake_test

import (
	"context"
	"fmt"
	"net/http"

	"github.com/tablekit/tablekit/fake"
)

// Your own unit test: a real *aztables.Client served in memory, a fault
// that outlasts the SDK's retries, and a count of what reached the service.
// (A single 503 would show nothing: the SDK's retry policy absorbs it.)
func ExampleTableService_faults() {
	ctx := context.Background()
	svc := fake.NewTableService(nil)          // in memory, behaves like the service
	client := svc.NewClient("Employees", nil) // a real *aztables.Client
	if _, err := client.CreateTable(ctx, nil); err != nil {
		panic(err)
	}
	if _, err := client.AddEntity(ctx, []byte(`{"PartitionKey":"Sales","RowKey":"000123"}`), nil); err != nil {
		panic(err)
	}
	// The next four reads fail: the SDK's first try and its three retries.
	svc.FailNext(fake.OpGetEntity, 4, http.StatusServiceUnavailable, "ServerBusy")
	_, err := client.GetEntity(ctx, "Sales", "000123", nil)
	fmt.Println("failed after the SDK's retries:", err != nil)
	_, err = client.GetEntity(ctx, "Sales", "000123", nil)
	fmt.Println("the next read succeeds:", err == nil)
	fmt.Println(svc.Count(fake.OpGetEntity), "reads reached the service")
	// Output:
	// failed after the SDK's retries: true
	// the next read succeeds: true
	// 5 reads reached the service
}
