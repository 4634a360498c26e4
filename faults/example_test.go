package faults_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/faults"
)

// A lost response: the service adds the entity, the client sees an error.
// Code that retries such an Add must expect EntityAlreadyExists.
func Example() {
	inj := faults.New(42, &faults.Options{Fraction: 1, Kinds: []faults.Kind{faults.After}})
	opts := &aztables.ClientOptions{}
	opts.PerRetryPolicies = append(opts.PerRetryPolicies, inj)
	opts.Retry.MaxRetries = -1 // one try, so the example shows the raw fault
	svc := fake.NewTableService(nil)
	_, _ = svc.NewClient("Employees", nil).CreateTable(context.Background(), nil)
	client := svc.NewClient("Employees", opts)

	_, err := client.AddEntity(context.Background(), []byte(`{"PartitionKey":"Sales","RowKey":"000123"}`), nil)
	fmt.Println(errors.Is(err, faults.ErrInjected), svc.Len("Employees"), inj.Stats().After)
	// Output: true 1 1
}

// One chosen response lost: the SDK retries the insert and meets the
// entity its first attempt stored. table.AddOptions.Idempotent settles it.
func ExampleLoseResponse() {
	svc := fake.NewTableService(nil)
	_, _ = svc.NewClient("Employees", nil).CreateTable(context.Background(), nil)
	opts := &aztables.ClientOptions{}
	opts.PerRetryPolicies = append(opts.PerRetryPolicies, faults.LoseResponse(1))
	opts.Retry.RetryDelay = time.Millisecond
	client := svc.NewClient("Employees", opts)

	_, err := client.AddEntity(context.Background(), []byte(`{"PartitionKey":"Sales","RowKey":"000123"}`), nil)
	var re *azcore.ResponseError
	fmt.Println(errors.As(err, &re) && re.ErrorCode == "EntityAlreadyExists", svc.Len("Employees"))
	// Output: true 1
}
