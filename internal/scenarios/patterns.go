package scenarios

import (
	"context"
	"fmt"
	"io"

	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/table"
)

func tourBatch(ctx context.Context, w io.Writer, e *env) error {
	client, err := e.newTable(ctx, "Batch")
	if err != nil {
		return err
	}
	step := e.step(w)
	var ops []batch.Op
	for _, dept := range []string{"Sales", "Marketing"} {
		for i := 0; i < 150; i++ {
			ops = append(ops, batch.Add(&Employee{Meta: table.Meta{PartitionKey: dept, RowKey: "empid_" + keys.Uint64(uint64(i))[14:]}, LastName: "Emp"}))
		}
	}
	sum, err := batch.NewWriter(client, nil).Write(ctx, batch.Slice(ops))
	if err != nil {
		return err
	}
	step(fmt.Sprintf("bulk-write 300 employees over 2 departments: %d transactions", sum.Transactions))
	a := &Employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: "empid_000999"}}
	dup := &Employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: "empid_000001"}}
	_, err = batch.Submit(ctx, client, batch.Add(a), batch.Add(dup))
	step(fmt.Sprintf("a transaction whose 2nd add exists fails whole: %v", err))
	_, err = batch.Submit(ctx, client, batch.Add(a), batch.Add(&Employee{Meta: table.Meta{PartitionKey: "Marketing", RowKey: "x"}}))
	step(fmt.Sprintf("refused before sending: %v", err))
	return nil
}

// tourEmployees indexes employees by email within the partition (one EGT)
// and across partitions (through a queue).
func tourEmployees(ctx context.Context, w io.Writer, e *env) error {
	if err := tourIntraPartitionIndex(ctx, w, e); err != nil {
		return err
	}
	return tourInterPartition(ctx, w, e)
}

func tourIntraPartitionIndex(ctx context.Context, w io.Writer, e *env) error {
	client, err := e.newTable(ctx, "Index")
	if err != nil {
		return err
	}
	idx, err := patterns.NewIntraPartitionIndex[Employee](client, "empid_", []patterns.IndexDef[Employee]{
		{Name: "email", Prefix: "email_", Unique: true, Value: func(v *Employee) string { return v.Email }},
	})
	if err != nil {
		return err
	}
	step := e.step(w)
	don := &Employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: "empid_000123"}, FirstName: "Don", LastName: "Hall", Email: "donh@contoso.com"}
	if err := idx.Add(ctx, don, nil); err != nil {
		return err
	}
	step("Add empid_000123 and its copy email_donh@contoso.com in one transaction")
	v, err := idx.Lookup(ctx, "email", "Sales", "donh@contoso.com")
	if err != nil {
		return err
	}
	step(fmt.Sprintf("Lookup email donh@contoso.com -> %s %s", v.RowKey, v.LastName))
	next := *don
	next.Email = "don.hall@contoso.com"
	if err := idx.Put(ctx, &next, &patterns.PutOptions[Employee]{Current: don}); err != nil {
		return err
	}
	step("change the email: entity, old copy deleted, new copy, one transaction")
	rep, err := idx.Verify(ctx, "Sales")
	if err != nil {
		return err
	}
	step(fmt.Sprintf("Verify the partition: %d primaries, %d copies, consistent = %v", rep.Primaries, rep.Copies, rep.OK()))
	return nil
}

func tourIndexEntities(ctx context.Context, w io.Writer, e *env) error {
	client, err := e.newTable(ctx, "IndexEnt")
	if err != nil {
		return err
	}
	byLast, err := patterns.NewIndexEntities[Employee](client, "lname_", func(v *Employee) string { return v.LastName }, nil)
	if err != nil {
		return err
	}
	step := e.step(w)
	for _, id := range []string{"000152", "000223"} {
		if _, err := byLast.Add(ctx, &Employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: id}, LastName: "Jones"}, nil); err != nil {
			return err
		}
	}
	step("add employees 000152 and 000223 (Jones): each a read and one transaction")
	ids, err := byLast.Lookup(ctx, "Sales", "Jones")
	if err != nil {
		return err
	}
	step(fmt.Sprintf("EmployeeIDs of Jones in Sales: %v", ids))
	return nil
}

type Department struct {
	table.Meta
	EntityType   string
	ManagerName  string
	ManagerEmail string
}

type Review struct {
	table.Meta
	EntityType    string
	ManagerRating int
	PeerRating    int
}

type Person struct {
	table.Meta
	EntityType string
	FirstName  string
	LastName   string
	Email      string
}

func tourDenormalizedAndRelated(ctx context.Context, w io.Writer, e *env) error {
	client, err := e.newTable(ctx, "Related")
	if err != nil {
		return err
	}
	step := e.step(w)
	deps, _ := table.New[Department](client, nil)
	if err := deps.Add(ctx, &Department{Meta: table.Meta{PartitionKey: "Sales", RowKey: "department"}, EntityType: "Department"}, nil); err != nil {
		return err
	}
	d, err := patterns.NewDenormalized[Person, Department](client, []string{"ManagerName", "ManagerEmail"}, func(p *Person, dep *Department) {
		dep.ManagerName, dep.ManagerEmail = p.FirstName+" "+p.LastName, p.Email
	})
	if err != nil {
		return err
	}
	mgr := &Person{Meta: table.Meta{PartitionKey: "Sales", RowKey: "000123"}, EntityType: "Employee", FirstName: "Don", LastName: "Hall", Email: "donh@contoso.com"}
	step = e.step(w)
	if err := d.Update(ctx, mgr, "department"); err != nil {
		return err
	}
	dep, err := deps.Get(ctx, "Sales", "department", nil)
	if err != nil {
		return err
	}
	step(fmt.Sprintf("manager + department's copy in one transaction, then one point query: %s <%s>", dep.ManagerName, dep.ManagerEmail))

	reg := table.NewRegistry(nil)
	_ = table.Register[Person](reg, "Employee")
	_ = table.Register[Review](reg, "Review")
	rr := patterns.NewRelatedRows(client, reg, "")
	var reviews []any
	for _, year := range []string{"2011", "2012"} {
		rk, _ := rr.Key("000123", year)
		reviews = append(reviews, &Review{Meta: table.Meta{PartitionKey: "Sales", RowKey: rk}, EntityType: "Review", ManagerRating: 4, PeerRating: 5})
	}
	if err := rr.Write(ctx, mgr, reviews...); err != nil {
		return err
	}
	step("write employee 000123 with reviews 000123_2011 and 000123_2012 in one transaction")
	rows, err := rr.Read(ctx, "Sales", "000123")
	if err != nil {
		return err
	}
	kinds := ""
	for _, r := range rows {
		kinds += fmt.Sprintf(" %T", r)
	}
	step(fmt.Sprintf("read the employee and its reviews with one range query:%s", kinds))

	cache := patterns.NewReferenceCache(deps, nil)
	for i := 0; i < 100; i++ {
		if _, _, err := cache.Get(ctx, "Sales", "department"); err != nil {
			return err
		}
	}
	step("join in the client: 100 department lookups from a cache loaded once")
	return nil
}
