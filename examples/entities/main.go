// Command entities stores the guide's employees as Go structs (package
// table): typed Add, Get, Modify and Update, optimistic concurrency with the
// entity's ETag, and the cheapest query that answers the question. The
// guide's advice: a point query (PartitionKey and RowKey) is the cheapest,
// then a range query within one partition; a query on other properties
// scans, so index those instead (see examples/employees).
//
// Run it:
//
//	go run ./examples/entities                    # in memory, no setup
//	go run ./examples/entities -conn "$CONN"      # Azurite or Azure, by connection string
//	go run ./examples/entities -account NAME      # Azure, signed in by azidentity
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
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/ledger"
	"github.com/tablekit/tablekit/table"
)

// Employee is the guide's employee entity: embed table.Meta for the keys,
// the ETag and the Timestamp; the other exported fields are its properties.
type Employee struct {
	table.Meta
	FirstName string
	LastName  string
	Age       int
	Email     string
}

func main() {
	conn := flag.String("conn", os.Getenv("TABLEKIT_CONNECTION_STRING"), "storage connection string, Azurite or Azure (default: in memory)")
	account := flag.String("account", "", "storage account name, signed in with azidentity.DefaultAzureCredential (instead of -conn)")
	flag.Parse()
	// -conn and -account name two accounts: refuse rather than pick one.
	given := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if given["conn"] && given["account"] {
		fmt.Fprintln(os.Stderr, "entities: -conn and -account name two accounts: give one")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, *conn, *account)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "entities:", err)
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
	employees, err := table.New[Employee](tables.NewClient(name), nil)
	if err != nil {
		return err
	}
	step("create the table %s", name)

	for _, e := range []*Employee{
		{Meta: table.Meta{PartitionKey: "Sales", RowKey: "empid_000123"}, FirstName: "Don", LastName: "Hall", Age: 34, Email: "donh@contoso.com"},
		{Meta: table.Meta{PartitionKey: "Sales", RowKey: "empid_000152"}, FirstName: "Jun", LastName: "Cao", Age: 47, Email: "junc@contoso.com"},
		{Meta: table.Meta{PartitionKey: "Sales", RowKey: "empid_000223"}, FirstName: "Ben", LastName: "Jones", Age: 65, Email: "jonesj@contoso.com"},
	} {
		if err := employees.Add(ctx, e, nil); err != nil {
			return err
		}
	}
	step("add 3 employees: Sales / empid_000123, empid_000152, empid_000223")
	don, err := employees.Get(ctx, "Sales", "empid_000123", nil)
	if err != nil {
		return err
	}
	if don.FirstName != "Don" || don.Age != 34 || don.ETag == "" {
		return fmt.Errorf("read back %+v", don)
	}
	step("get Sales / empid_000123 (a point query): %s %s, %d, ETag %s", don.FirstName, don.LastName, don.Age, don.ETag)

	// Modify reads, changes and writes with the ETag it read, retrying if
	// another writer got in between. The change sets a value, so applying
	// it again after a lost response is harmless.
	changed, err := employees.Modify(ctx, "Sales", "empid_000123", func(e *Employee) error {
		e.Email = "don.hall@contoso.com"
		return nil
	}, nil)
	if err != nil {
		return err
	}
	step("modify: read, set the email to %s, write guarded by the ETag", changed.Email)
	stale := *don
	stale.Age = 35
	err = employees.Update(ctx, &stale, nil)
	if !table.Is(err, table.ErrPreconditionFailed) {
		return fmt.Errorf("an update with a stale ETag: want precondition failed, got %v", err)
	}
	step("update with the ETag read before the change: refused (412 precondition failed), nothing lost")

	f := table.Partition("Sales").And(table.Prop("RowKey").Ge("empid_000100"), table.Prop("RowKey").Le("empid_000199"))
	var found []string
	for e, err := range employees.Query(ctx, &table.QueryOptions{Filter: f}) {
		if err != nil {
			return err
		}
		found = append(found, e.RowKey)
	}
	if len(found) != 2 {
		return fmt.Errorf("%s found %v", f, found)
	}
	step("%v %s: %v", f.Kind(), f, found)
	scan := table.Prop("LastName").Eq("Jones")
	step("not sent, it would be a %v: %s (index it instead: examples/employees)", scan.Kind(), scan)

	bad := &Employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: "empid/000999"}}
	err = employees.Add(ctx, bad, nil)
	if err == nil || requests.Total() != seen {
		return fmt.Errorf("a RowKey holding '/' was sent or accepted: %v", err)
	}
	step("add a RowKey holding '/': refused before sending: %v", err)

	current, err := employees.Get(ctx, "Sales", "empid_000223", nil)
	if err != nil {
		return err
	}
	if err := employees.Delete(ctx, "Sales", "empid_000223", &table.DeleteOptions{IfMatch: &current.ETag}); err != nil {
		return err
	}
	if _, err := employees.Get(ctx, "Sales", "empid_000223", nil); !table.Is(err, table.ErrNotFound) {
		return fmt.Errorf("get after delete: want not found, got %v", err)
	}
	step("delete Sales / empid_000223 guarded by the ETag just read, then get it: not found")
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
