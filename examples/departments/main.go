// Command departments keeps related data where one query finds it, with
// four patterns of the guide, in one Sales partition of one table:
//
//   - denormalization: the department entity carries its manager's name and
//     email, written in the same transaction as the manager, so showing a
//     department with its manager is one point query;
//   - compound keys and related rows: an employee's reviews sit under the
//     RowKeys "000123_2011", "000123_2012", next to the employee
//     "000123", and one range query returns the employee and its reviews;
//   - heterogeneous entity types: employees, reviews and departments share
//     the table, told apart by their EntityType property (table.Registry);
//   - join in the client: a small reference table (the departments) is
//     read once into a cache and joined in memory.
//
// Run it:
//
//	go run ./examples/departments                    # in memory, no setup
//	go run ./examples/departments -conn "$CONN"      # Azurite or Azure, by connection string
//	go run ./examples/departments -account NAME      # Azure, signed in by azidentity
//
// The connection string may also come from TABLEKIT_CONNECTION_STRING.
// It prints each step with the storage requests it cost, then the request
// ledger, and exits non-zero on any failure. Against an account it creates
// a table with new names and deletes them at the end.
//
// This file is the whole program: copy it into your own module and run it.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"os/signal"

	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/accounts"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/ledger"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/table"
)

// Department is the guide's department, with its manager's details copied in.
type Department struct {
	table.Meta
	EntityType   string
	ManagerName  string
	ManagerEmail string
}

// Employee is the guide's employee.
type Employee struct {
	table.Meta
	EntityType string
	FirstName  string
	LastName   string
	Email      string
}

// Review is a yearly review, related to its employee by its RowKey.
type Review struct {
	table.Meta
	EntityType    string
	ManagerRating int
	PeerRating    int
}

func main() {
	conn := flag.String("conn", os.Getenv("TABLEKIT_CONNECTION_STRING"), "storage connection string, Azurite or Azure (default: in memory)")
	account := flag.String("account", "", "storage account name, signed in with azidentity.DefaultAzureCredential (instead of -conn)")
	flag.Parse()
	// -conn and -account name two accounts: refuse rather than pick one.
	given := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if given["conn"] && given["account"] {
		fmt.Fprintln(os.Stderr, "departments: -conn and -account name two accounts: give one")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, *conn, *account)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "departments:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, conn, account string) error {
	requests := ledger.New()
	tables, err := connect(conn, account, requests)
	if err != nil {
		return err
	}
	// step prints what was done and the storage requests it sent.
	seen := 0
	step := func(format string, args ...any) {
		fmt.Printf("  %3d  %s\n", requests.Total()-seen, fmt.Sprintf(format, args...))
		seen = requests.Total()
	}
	fmt.Println("  requests  step")
	defer func() { fmt.Printf("\nrequests (package ledger), clean-up included:\n%s", requests) }()

	// A new name on every run: the guide advises against reusing the name
	// of a table just deleted, and parallel runs must not meet.
	name := "Sales" + newSuffix()
	if _, err := tables.CreateTable(ctx, name, nil); err != nil {
		return err
	}
	// Clean-up is best effort: a failure leaves a uniquely named table.
	defer tables.DeleteTable(context.Background(), name, nil)
	client := tables.NewClient(name)
	departments, err := table.New[Department](client, nil)
	if err != nil {
		return err
	}
	step("create the table %s", name)

	if err := departments.Add(ctx, &Department{Meta: table.Meta{PartitionKey: "Sales", RowKey: "department"}, EntityType: "Department"}, nil); err != nil {
		return err
	}
	step("add the Sales department")
	employees, err := table.New[Employee](client, nil)
	if err != nil {
		return err
	}
	managers, err := patterns.NewDenormalized[Employee, Department](employees, departments, []string{"ManagerName", "ManagerEmail"}, func(e *Employee, d *Department) {
		d.ManagerName, d.ManagerEmail = e.FirstName+" "+e.LastName, e.Email
	})
	if err != nil {
		return err
	}
	don := &Employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: "000123"}, EntityType: "Employee", FirstName: "Don", LastName: "Hall", Email: "donh@contoso.com"}
	if err := managers.Update(ctx, don, []string{"department"}, nil); err != nil {
		return err
	}
	step("write manager 000123 and the department's copy of his name and email in one transaction")
	sales, err := departments.Get(ctx, "Sales", "department", nil)
	if err != nil {
		return err
	}
	if sales.ManagerName != "Don Hall" || sales.ManagerEmail != "donh@contoso.com" {
		return fmt.Errorf("the department's manager: %q <%s>", sales.ManagerName, sales.ManagerEmail)
	}
	step("the department with its manager, one point query: %s <%s>", sales.ManagerName, sales.ManagerEmail)

	// Each type registered under its EntityType: reads decode each row
	// into its own Go type.
	types := table.NewRegistry(nil)
	for _, err := range []error{
		table.Register[Employee](types, "Employee"),
		table.Register[Review](types, "Review"),
		table.Register[Department](types, "Department"),
	} {
		if err != nil {
			return err
		}
	}
	// The employee and its reviews share the partition, so one transaction
	// writes them all; employee IDs have a fixed width, so the RowKeys
	// that start with "000123" are the employee's and its reviews'.
	related := []batch.Op{batch.Upsert(don, aztables.UpdateModeReplace)}
	for _, year := range []string{"2011", "2012"} {
		review := &Review{Meta: table.Meta{PartitionKey: "Sales", RowKey: "000123_" + year}, EntityType: "Review", ManagerRating: 4, PeerRating: 5}
		related = append(related, batch.Upsert(review, aztables.UpdateModeReplace))
	}
	if _, err := batch.Submit(ctx, client, related, nil); err != nil {
		return err
	}
	step("write employee 000123 with reviews 000123_2011 and 000123_2012 in one transaction")
	kinds, rows := "", 0
	for r, err := range types.Query(ctx, client, &table.QueryOptions{Filter: table.RowPrefix("Sales", "000123")}) {
		if err != nil {
			return err
		}
		switch r := r.(type) {
		case *Employee:
			kinds += " employee " + r.RowKey
		case *Review:
			kinds += " review " + r.RowKey
		default:
			return fmt.Errorf("related rows of 000123: unexpected %T", r)
		}
		rows++
	}
	if rows != 3 {
		return fmt.Errorf("related rows of 000123: %d, want 3", rows)
	}
	step("the employee and its reviews with one range query, each its own type:%s", kinds)

	cache := patterns.NewReferenceCache(departments, nil)
	for range 100 {
		d, ok, err := cache.Get(ctx, "Sales", "department", nil)
		if err != nil {
			return err
		}
		if !ok || d.ManagerName != "Don Hall" {
			return fmt.Errorf("the cached department: %v %+v", ok, d)
		}
	}
	step("join in the client: 100 department lookups from a cache loaded once")
	return nil
}

// connect returns the table service to run against, each request counted
// by l: in memory by default, the account of a connection string, or a
// named account signed in with Microsoft Entra ID.
func connect(conn, account string, l *ledger.Ledger) (*aztables.ServiceClient, error) {
	opts := &aztables.ClientOptions{}
	l.Attach(&opts.ClientOptions, ledger.Table)
	switch {
	case account != "":
		fmt.Printf("against the account %s, signed in with azidentity\n", account)
		cred, err := azidentity.NewDefaultAzureCredential(nil)
		if err != nil {
			return nil, err
		}
		return aztables.NewServiceClient("https://"+account+".table.core.windows.net/", cred, table.ClientOptions(opts))
	case conn != "":
		fmt.Println("against the account of the connection string")
		c, err := accounts.ParseConnectionString(conn)
		if err != nil {
			return nil, err
		}
		return c.TableService(table.ClientOptions(opts))
	default:
		fmt.Println("in memory (package fake); -conn or -account runs it against storage")
		return fake.NewTableService(nil).NewServiceClient(opts), nil
	}
}

// newSuffix returns 8 random hex digits, valid in any storage name.
func newSuffix() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
