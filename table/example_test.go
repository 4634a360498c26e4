package table_test

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/table"
)

type Employee struct {
	table.Meta
	FirstName string
	LastName  string
	Age       int
}

func Example() {
	ctx := context.Background()
	svc := fake.NewTableService(nil) // or aztables.NewServiceClientFromConnectionString
	client := svc.NewClient("Employees", nil)
	if _, err := client.CreateTable(ctx, nil); err != nil {
		panic(err)
	}
	employees, err := table.New[Employee](client, nil)
	if err != nil {
		panic(err)
	}

	e := &Employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: "000123"}, FirstName: "Don", LastName: "Hall", Age: 34}
	if err := employees.Add(ctx, e, nil); err != nil {
		panic(err)
	}
	err = employees.Add(ctx, e, nil)
	fmt.Println("second Add already exists:", table.Is(err, table.ErrAlreadyExists))

	// Change it with optimistic concurrency: read, change, write with the
	// ETag. The change sets a value, so running it again is harmless.
	updated, err := employees.Modify(ctx, "Sales", "000123", func(e *Employee) error {
		e.Age = 35
		return nil
	}, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println("age:", updated.Age)

	f := table.Partition("Sales").And(table.Prop("RowKey").Ge("000100"), table.Prop("RowKey").Le("000199"))
	fmt.Printf("%v: %v\n", f.Kind(), f)
	for e, err := range employees.Query(ctx, &table.QueryOptions{Filter: f}) {
		if err != nil {
			panic(err)
		}
		fmt.Println(e.RowKey, e.FirstName, e.LastName)
	}
	fmt.Println("requests:", svc.Total())
	// Output:
	// second Add already exists: true
	// age: 35
	// range query: (PartitionKey eq 'Sales') and (RowKey ge '000100') and (RowKey le '000199')
	// 000123 Don Hall
	// requests: 6
}

func ExampleFilter() {
	f := table.And(table.Partition("Sales"), table.Prop("LastName").Eq("O'Brien"), table.Prop("Age").Ge(30))
	fmt.Println(f)
	fmt.Println(f.Kind())
	// Output:
	// (PartitionKey eq 'Sales') and (LastName eq 'O''Brien') and (Age ge 30L)
	// partition scan
}

type Review struct {
	table.Meta
	EntityType string
	Rating     int
}

// Employees and their reviews in one table: each entity's EntityType
// property picks its Go type.
func ExampleRegistry() {
	ctx := context.Background()
	svc := fake.NewTableService(nil)
	client := svc.NewClient("Employees", nil)
	_, _ = client.CreateTable(ctx, nil)
	_, _ = client.AddEntity(ctx, []byte(`{"PartitionKey":"Sales","RowKey":"000123","EntityType":"Employee","FirstName":"Don"}`), nil)
	_, _ = client.AddEntity(ctx, []byte(`{"PartitionKey":"Sales","RowKey":"000123_2012","EntityType":"Review","Rating":4}`), nil)

	reg := table.NewRegistry(nil)
	_ = table.Register[Employee](reg, "Employee")
	_ = table.Register[Review](reg, "Review")
	for v, err := range reg.Query(ctx, client, &table.QueryOptions{Filter: table.Partition("Sales")}) {
		if err != nil {
			panic(err)
		}
		switch v := v.(type) {
		case *Employee:
			fmt.Println("employee", v.RowKey, v.FirstName)
		case *Review:
			fmt.Println("review", v.RowKey, v.Rating)
		}
	}
	// Output:
	// employee 000123 Don
	// review 000123_2012 4
}

// Pages with a resumable token: store Next, continue after a restart.
func ExampleTable_QueryPage() {
	ctx := context.Background()
	svc := fake.NewTableService(nil)
	client := svc.NewClient("Employees", nil)
	_, _ = client.CreateTable(ctx, nil)
	employees, _ := table.New[Employee](client, nil)
	for i := 0; i < 5; i++ {
		_ = employees.Add(ctx, &Employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: fmt.Sprintf("%06d", i)}}, nil)
	}
	token := ""
	for {
		page, err := employees.QueryPage(ctx, token, &table.QueryOptions{Filter: table.Partition("Sales"), Top: 2})
		if err != nil {
			panic(err)
		}
		fmt.Println(len(page.Items), page.Next != "")
		if token = page.Next; token == "" {
			break
		}
	}
	// The service may send an empty page with a token: keep going while
	// there is a token, whatever a page holds.

	// Output:
	// 2 true
	// 2 true
	// 1 false
}

// A social security number encrypted on the client: the service stores
// ciphertext, reads decrypt.
func ExampleEncryption() {
	ctx := context.Background()
	svc := fake.NewTableService(nil)
	client := svc.NewClient("Employees", nil)
	_, _ = client.CreateTable(ctx, nil)
	type Employee struct {
		table.Meta
		Name string
		SSN  string `table:",encrypt"`
	}
	kek := make([]byte, 32) // in production: a key vault key behind a KeyWrapper
	employees, err := table.New[Employee](client, &table.Options{
		Encryption: &table.Encryption{KeyID: "kek-2026", Keys: table.LocalKeys{"kek-2026": kek}},
	})
	if err != nil {
		panic(err)
	}
	_ = employees.Add(ctx, &Employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: "000123"}, Name: "Don", SSN: "078-05-1120"}, nil)

	e, _ := employees.Get(ctx, "Sales", "000123", nil)
	raw, _ := client.GetEntity(ctx, "Sales", "000123", nil)
	fmt.Println(e.SSN, strings.Contains(string(raw.Value), "078-05-1120"))
	err = employees.Upsert(ctx, e, nil) // Replace, the default for a type with encrypted fields
	fmt.Println(err)
	err = employees.Upsert(ctx, e, &table.UpsertOptions{Mode: aztables.UpdateModeMerge}) // refused before any request
	fmt.Println(errors.Is(err, table.ErrMergeEncrypted))
	// Output:
	// 078-05-1120 false
	// <nil>
	// true
}
