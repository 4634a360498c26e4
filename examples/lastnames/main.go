// Command lastnames finds the guide's employees by last name, a value many
// employees share, with the index entities pattern (option 2 of the guide):
// next to the employees of a department, an index entity per last name
// ("lname_Jones") holds the list of their IDs. The entity and its index
// entity change in one entity group transaction, guarded by ETags, so the
// list is never wrong; finding every Jones is one point query.
//
// Run it:
//
//	go run ./examples/lastnames                    # in memory, no setup
//	go run ./examples/lastnames -conn "$CONN"      # Azurite or Azure, by connection string
//	go run ./examples/lastnames -account NAME      # Azure, signed in by azidentity
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
	"slices"

	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/ledger"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/table"
)

// Employee is the guide's employee entity.
type Employee struct {
	table.Meta
	FirstName string
	LastName  string
}

func main() {
	conn := flag.String("conn", os.Getenv("TABLEKIT_CONNECTION_STRING"), "storage connection string, Azurite or Azure (default: in memory)")
	account := flag.String("account", "", "storage account name, signed in with azidentity.DefaultAzureCredential (instead of -conn)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, *conn, *account)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "lastnames:", err)
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
	name := "Employees" + newSuffix()
	if _, err := tables.CreateTable(ctx, name, nil); err != nil {
		return err
	}
	// Clean-up is best effort: a failure leaves a uniquely named table.
	defer tables.DeleteTable(context.Background(), name, nil)
	byLastName, err := patterns.NewIndexEntities[Employee](tables.NewClient(name), "lname_", func(e *Employee) string { return e.LastName }, nil)
	if err != nil {
		return err
	}
	step("create the table %s", name)

	staff := []*Employee{
		{Meta: table.Meta{PartitionKey: "Sales", RowKey: "000123"}, FirstName: "Don", LastName: "Hall"},
		{Meta: table.Meta{PartitionKey: "Sales", RowKey: "000152"}, FirstName: "Jun", LastName: "Jones"},
		{Meta: table.Meta{PartitionKey: "Sales", RowKey: "000223"}, FirstName: "Ben", LastName: "Jones"},
	}
	for _, e := range staff {
		if _, err := byLastName.Add(ctx, e, nil); err != nil {
			return err
		}
	}
	step("add 3 employees, each with its ID added to lname_<LastName>: a read and one transaction each")
	ids, err := byLastName.Lookup(ctx, "Sales", "Jones")
	if err != nil {
		return err
	}
	if !slices.Equal(ids, []string{"000152", "000223"}) {
		return fmt.Errorf("the Joneses of Sales: %v", ids)
	}
	step("EmployeeIDs of Jones in Sales: %v, one point query on lname_Jones", ids)
	joneses, err := byLastName.LookupEntities(ctx, "Sales", "Jones")
	if err != nil {
		return err
	}
	step("the Joneses themselves: %s %s and %s %s, one more point query each", joneses[0].FirstName, joneses[0].LastName, joneses[1].FirstName, joneses[1].LastName)

	married := *staff[2]
	married.LastName = "Smith"
	if _, err := byLastName.Change(ctx, staff[2], &married); err != nil {
		return err
	}
	jones, err := byLastName.Lookup(ctx, "Sales", "Jones")
	if err != nil {
		return err
	}
	smith, err := byLastName.Lookup(ctx, "Sales", "Smith")
	if err != nil {
		return err
	}
	if !slices.Equal(jones, []string{"000152"}) || !slices.Equal(smith, []string{"000223"}) {
		return fmt.Errorf("after the change: Jones %v, Smith %v", jones, smith)
	}
	step("Ben Jones becomes Ben Smith: read both lists, write employee and lists in one transaction; look up Jones %v, Smith %v", jones, smith)

	if _, err := byLastName.Remove(ctx, staff[1]); err != nil {
		return err
	}
	jones, err = byLastName.Lookup(ctx, "Sales", "Jones")
	if err != nil {
		return err
	}
	if len(jones) != 0 {
		return fmt.Errorf("Jones after the last one left: %v", jones)
	}
	step("remove Jun Jones: read the list, delete the employee and its ID in one transaction; Jones now %v", jones)
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
		return aztables.NewServiceClient("https://"+account+".table.core.windows.net/", cred, opts)
	case conn != "":
		fmt.Println("against the account of the connection string")
		return aztables.NewServiceClientFromConnectionString(conn, opts)
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
