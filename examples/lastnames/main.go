// Command lastnames finds the guide's employees by last name, a value many
// employees share, with the index entities pattern, declared on an entity
// model (patterns.Model): an index entity per last name ("lname_Jones")
// holds the list of their IDs, so finding every Jones is one point query.
// Two of the guide's options:
//
//   - option 2, in the employees' own partition: the employee and its index
//     entity change in one entity group transaction, guarded by ETags, so
//     the list is never wrong;
//   - option 3, in another partition (here, one list across departments):
//     no transaction reaches it, so a queue and a worker keep it eventually
//     consistent with the employees.
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
// two tables and two queues with new names and deletes them at the end.
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
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/accounts"
	"github.com/tablekit/tablekit/consistency"
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
	// -conn and -account name two accounts: refuse rather than pick one.
	given := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if given["conn"] && given["account"] {
		fmt.Fprintln(os.Stderr, "lastnames: -conn and -account name two accounts: give one")
		os.Exit(2)
	}
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
	tables, queues, err := connect(conn, account, requests)
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

	// New names on every run: the guide advises against reusing the name
	// of a table just deleted, and parallel runs must not meet.
	suffix := newSuffix()
	name, other := "Employees"+suffix, "Staff"+suffix
	for _, n := range []string{name, other} {
		if _, err := tables.CreateTable(ctx, n, nil); err != nil {
			return err
		}
		// Clean-up is best effort: a failure leaves uniquely named tables.
		defer tables.DeleteTable(context.Background(), n, nil)
	}
	work, poison := queues.NewQueueClient("lastnames-"+suffix), queues.NewQueueClient("lastnames-poison-"+suffix)
	for _, q := range []*azqueue.QueueClient{work, poison} {
		if _, err := q.Create(ctx, nil); err != nil {
			return err
		}
		defer q.Delete(context.Background(), nil)
	}
	step("create the tables %s and %s and two queues", name, other)

	fmt.Println("\noption 2: index entities in the employees' partition (an entity model's Lists)")
	employees, err := table.New[Employee](tables.NewClient(name), nil)
	if err != nil {
		return err
	}
	model, err := patterns.OpenModel(ctx, employees, &patterns.ModelOptions[Employee]{
		Name:    "employees",
		Primary: "empid_",
		Lists:   []patterns.ListDef[Employee]{{Name: "lastname", Prefix: "lname_", Value: func(e *Employee) string { return e.LastName }}},
	})
	if err != nil {
		return err
	}
	staff := []*Employee{
		{Meta: table.Meta{PartitionKey: "Sales", RowKey: "empid_000123"}, FirstName: "Don", LastName: "Hall"},
		{Meta: table.Meta{PartitionKey: "Sales", RowKey: "empid_000152"}, FirstName: "Jun", LastName: "Jones"},
		{Meta: table.Meta{PartitionKey: "Sales", RowKey: "empid_000223"}, FirstName: "Ben", LastName: "Jones"},
	}
	for _, e := range staff {
		if err := model.Add(ctx, e, nil); err != nil {
			return err
		}
	}
	step("add 3 employees, each with its ID added to lname_<LastName>: a read and one transaction each")
	rowKeys := func(index, pk, value string) ([]string, error) {
		ids, err := model.IDs(ctx, index, pk, value, nil)
		var out []string
		for _, id := range ids {
			out = append(out, id.RowKey)
		}
		return out, err
	}
	ids, err := rowKeys("lastname", "Sales", "Jones")
	if err != nil {
		return err
	}
	if !slices.Equal(ids, []string{"empid_000152", "empid_000223"}) {
		return fmt.Errorf("the Joneses of Sales: %v", ids)
	}
	step("EmployeeIDs of Jones in Sales: %v, one point query on lname_Jones", ids)
	joneses, err := model.LookupEntities(ctx, "lastname", "Sales", "Jones", nil)
	if err != nil {
		return err
	}
	step("the Joneses themselves: %s %s and %s %s, the list again and one point query each", joneses[0].FirstName, joneses[0].LastName, joneses[1].FirstName, joneses[1].LastName)
	if _, err := model.Modify(ctx, "Sales", "empid_000223", func(e *Employee) error { e.LastName = "Smith"; return nil }, nil); err != nil {
		return err
	}
	step("Ben Jones becomes Ben Smith: read him and both lists (lname_Jones, lname_Smith), write him and both lists in one transaction")
	jones, err := rowKeys("lastname", "Sales", "Jones")
	if err != nil {
		return err
	}
	smith, err := rowKeys("lastname", "Sales", "Smith")
	if err != nil {
		return err
	}
	if !slices.Equal(jones, []string{"empid_000152"}) || !slices.Equal(smith, []string{"empid_000223"}) {
		return fmt.Errorf("after the change: Jones %v, Smith %v", jones, smith)
	}
	step("both lists, one point query each: Jones %v, Smith %v", jones, smith)
	if err := model.Delete(ctx, "Sales", "empid_000152", nil); err != nil {
		return err
	}
	step("delete Jun Jones: read him and the list, delete the employee and its ID in one transaction")
	jones, err = rowKeys("lastname", "Sales", "Jones")
	if err != nil {
		return err
	}
	if len(jones) != 0 {
		return fmt.Errorf("after the last one left, Jones still lists %v", jones)
	}
	step("the list, one point query: Jones now %v", jones)

	fmt.Println("\noption 3: one list per last name across departments, kept by a queue (an entity model's RemoteLists)")
	directory, err := table.New[Employee](tables.NewClient(other), nil)
	if err != nil {
		return err
	}
	listsTable, err := table.New[table.Entity](tables.NewClient(other), nil)
	if err != nil {
		return err
	}
	everywhere, err := patterns.OpenModel(ctx, directory, &patterns.ModelOptions[Employee]{
		Name:        "directory",
		RemoteLists: []patterns.ListDef[Employee]{{Name: "lastname", Value: func(e *Employee) string { return e.LastName }, Table: listsTable, Partition: "lastnames", Prefix: "lname_"}},
		Queue:       work,
	})
	if err != nil {
		return err
	}
	worker := consistency.NewWorker(work, poison, &consistency.WorkerOptions{PollInterval: 10 * time.Millisecond})
	if err := worker.Handle(everywhere.MessageType(), everywhere.Process); err != nil {
		return err
	}
	for _, e := range []*Employee{
		{Meta: table.Meta{PartitionKey: "Sales", RowKey: "000152"}, FirstName: "Jun", LastName: "Jones"},
		{Meta: table.Meta{PartitionKey: "Marketing", RowKey: "000301"}, FirstName: "Ana", LastName: "Jones"},
	} {
		// The write runs between the message's enqueue and its showing, so
		// a crash in between still updates the list.
		if err := everywhere.Add(ctx, e, nil); err != nil {
			return err
		}
	}
	step("add Jun Jones (Sales) and Ana Jones (Marketing): a hidden message, the employee, the message shown")
	if ids, err := everywhere.IDs(ctx, "lastname", "", "Jones", nil); err != nil || len(ids) != 0 {
		return fmt.Errorf("the Jones list before the worker ran: %v, %v", ids, err)
	}
	step("the Jones list at once: empty (the window of inconsistency)")
	stats, err := worker.Drain(ctx, nil)
	if err != nil {
		return err
	}
	if stats.Processed != 2 {
		return fmt.Errorf("the worker processed %d messages, want 2", stats.Processed)
	}
	step("the worker handles both messages: three dequeues (the first gets both; the others find none, while the handlers run and after), and each message's employee read, lname_Jones read, one transaction adding the ID, the message deleted; when both handlers write lname_Jones at once, the one whose ETag is stale reads it again and retries (2 more)")
	owners, err := everywhere.IDs(ctx, "lastname", "", "Jones", nil)
	if err != nil {
		return err
	}
	var shown []string
	for _, o := range owners {
		shown = append(shown, o.PartitionKey+"/"+o.RowKey)
	}
	slices.Sort(shown) // a list keeps the order the worker added the IDs in
	if !slices.Equal(shown, []string{"Marketing/000301", "Sales/000152"}) {
		return fmt.Errorf("the Jones list after the worker: %v", shown)
	}
	step("the Jones list, one point query: %v", shown)
	return nil
}

// connect returns the table and queue services to run against, each
// request counted by l: in memory by default, the account of a connection
// string, or a named account signed in with Microsoft Entra ID.
func connect(conn, account string, l *ledger.Ledger) (*aztables.ServiceClient, *azqueue.ServiceClient, error) {
	topts, qopts := &aztables.ClientOptions{}, &azqueue.ClientOptions{}
	l.Attach(&topts.ClientOptions, ledger.Table)
	l.Attach(&qopts.ClientOptions, ledger.Queue)
	switch {
	case account != "":
		fmt.Printf("against the account %s, signed in with azidentity\n", account)
		cred, err := azidentity.NewDefaultAzureCredential(nil)
		if err != nil {
			return nil, nil, err
		}
		tables, err := aztables.NewServiceClient("https://"+account+".table.core.windows.net/", cred, table.ClientOptions(topts))
		if err != nil {
			return nil, nil, err
		}
		queues, err := azqueue.NewServiceClient("https://"+account+".queue.core.windows.net/", cred, qopts)
		return tables, queues, err
	case conn != "":
		fmt.Println("against the account of the connection string")
		c, err := accounts.ParseConnectionString(conn)
		if err != nil {
			return nil, nil, err
		}
		tables, err := c.TableService(table.ClientOptions(topts))
		if err != nil {
			return nil, nil, err
		}
		queues, err := c.QueueService(qopts)
		return tables, queues, err
	default:
		fmt.Println("in memory (package fake); -conn or -account runs it against storage")
		return fake.NewTableService(nil).NewServiceClient(topts), fake.NewQueueService(nil).NewServiceClient(qopts), nil
	}
}

// newSuffix returns 8 random hex digits, valid in any storage name.
func newSuffix() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
