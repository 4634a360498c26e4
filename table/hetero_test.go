package table_test

import (
	"errors"
	"testing"

	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/internal/seqs"
	"github.com/tablekit/tablekit/table"
)

type empV1 struct {
	table.Meta
	EntityType string
	Name       string
}

type empV2 struct {
	table.Meta
	EntityType string
	First      string
	Last       string
}

type department struct {
	table.Meta
	Manager string
}

func TestRegistry(t *testing.T) {
	ctx := t.Context()
	svc := fake.NewTableService(nil)
	sc := svc.NewServiceClient(nil)
	if _, err := sc.CreateTable(ctx, "mixed", nil); err != nil {
		t.Fatal(err)
	}
	client := sc.NewClient("mixed")
	v1, _ := table.New[empV1](client, nil)
	v2, _ := table.New[empV2](client, nil)
	dept, _ := table.New[department](client, nil)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(v1.Add(ctx, &empV1{Meta: table.Meta{PartitionKey: "Sales", RowKey: "empid_000123"}, EntityType: "Employee.v1", Name: "Don Hall"}, nil))
	must(v2.Add(ctx, &empV2{Meta: table.Meta{PartitionKey: "Sales", RowKey: "empid_000152"}, EntityType: "Employee.v2", First: "Ann", Last: "Jones"}, nil))
	must(dept.Add(ctx, &department{Meta: table.Meta{PartitionKey: "Sales", RowKey: "dept_Sales"}, Manager: "Ann"}, nil))
	must(v1.Add(ctx, &empV1{Meta: table.Meta{PartitionKey: "Sales", RowKey: "zzz"}, EntityType: "Robot", Name: "?"}, nil))

	r := table.NewRegistry(nil)
	must(table.Register[empV1](r, "Employee.v1"))
	must(table.Register[empV2](r, "Employee.v2"))
	must(table.RegisterPrefix[department](r, "dept_"))
	if err := table.Register[int](r, "x"); !errors.Is(err, table.ErrNotStructPointer) {
		t.Fatalf("Register[int]: %v", err)
	}

	var kinds []string
	var unknown *table.UnknownTypeError
	for v, err := range r.Query(ctx, client, &table.QueryOptions{Filter: table.Partition("Sales")}) {
		if err != nil {
			if !errors.As(err, &unknown) {
				t.Fatal(err)
			}
			break
		}
		switch e := v.(type) {
		case *department:
			kinds = append(kinds, "dept:"+e.Manager)
		case *empV1:
			kinds = append(kinds, "v1:"+e.Name)
		case *empV2:
			kinds = append(kinds, "v2:"+e.Last)
		}
	}
	want := []string{"dept:Ann", "v1:Don Hall", "v2:Jones"}
	if len(kinds) != 3 || kinds[0] != want[0] || kinds[1] != want[1] || kinds[2] != want[2] {
		t.Fatalf("decoded %q, want %q", kinds, want)
	}
	if unknown == nil || unknown.Type != "Robot" || unknown.RowKey != "zzz" {
		t.Fatalf("unknown type error: %v", unknown)
	}

	g := table.NewRegistry(&table.RegistryOptions{Generic: true})
	all, err := seqs.Collect(func(yield func(*any, error) bool) {
		for v, err := range g.Query(ctx, client, nil) {
			if !yield(&v, err) {
				return
			}
		}
	})
	if err != nil || len(all) != 4 {
		t.Fatalf("generic: %d %v", len(all), err)
	}
	ge, ok := (*all[3]).(*table.Entity)
	if !ok {
		t.Fatalf("generic entity = %#v", *all[3])
	}
	if ty, _ := ge.Properties["EntityType"].AsString(); ge.RowKey != "zzz" || ty != "Robot" {
		t.Fatalf("generic entity = %#v", *all[3])
	}
}
