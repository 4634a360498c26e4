package fake_test

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/fake"
)

// Your own plain aztables client against the fake, exactly as your program
// builds it (no tablekit policy, the SDK's own retry delays): the fake is
// its transport and the fake's URL its endpoint. NewClient and
// NewServiceClient give clients that carry tablekit's per-call policy and
// short retry delays instead.
func ExampleTableService_plainClient() {
	ctx := context.Background()
	svc := fake.NewTableService(nil)
	opts := &aztables.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: svc}}
	service, err := aztables.NewServiceClientWithNoCredential(svc.URL(), opts)
	if err != nil {
		panic(err)
	}
	client := service.NewClient("Employees")
	if _, err := client.CreateTable(ctx, nil); err != nil {
		panic(err)
	}
	_, err = client.AddEntity(ctx, []byte(`{"PartitionKey":"Sales","RowKey":"000123","Name":"Don"}`), nil)
	fmt.Println("added:", err == nil)
	got, err := client.GetEntity(ctx, "Sales", "000123", nil)
	fmt.Println("read:", err == nil, strings.Contains(string(got.Value), `"Name":"Don"`))
	// A missing entity is the service's answer: an *azcore.ResponseError.
	_, err = client.GetEntity(ctx, "Sales", "000999", nil)
	var re *azcore.ResponseError
	fmt.Println("missing:", errors.As(err, &re) && re.StatusCode == 404, re.ErrorCode)
	fmt.Println(svc.Count(fake.OpGetEntity), "reads reached the service")
	// Output:
	// added: true
	// read: true true
	// missing: true ResourceNotFound
	// 2 reads reached the service
}
