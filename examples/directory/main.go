// Command directory is the design guide's running example built on one
// entity model: employees in their department's partition under
// "empid_000123", an email index beside them ("email_…", in the same
// transaction), a last-name index across departments (index entities in a
// table of their own, kept through a queue), logins in a log tail of the
// same partitions, and departed employees moved to an archive with every
// index row. The model is declared once; every write, the bulk load, the
// move, the queries and the final Verify keep all of it.
//
//	go run ./examples/directory                 # in memory, no setup
//	go run ./examples/directory -conn "$CONN"   # Azurite or Azure
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
	table.Meta // PartitionKey: the department; RowKey: "empid_" and the id
	FirstName  string
	LastName   string
	Email      string
}

// Login is one entry of a department's log tail of logins.
type Login struct {
	table.Meta
	EmployeeID string
}

func main() {
	conn := flag.String("conn", os.Getenv("TABLEKIT_CONNECTION_STRING"), "storage connection string (default: in memory)")
	account := flag.String("account", "", "storage account name, signed in with azidentity.DefaultAzureCredential (instead of -conn)")
	flag.Parse()
	// -conn and -account name two accounts: refuse rather than pick one.
	given := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if given["conn"] && given["account"] {
		fmt.Fprintln(os.Stderr, "directory: -conn and -account name two accounts: give one")
		os.Exit(2)
	}
	if err := run(context.Background(), *conn, *account); err != nil {
		fmt.Fprintln(os.Stderr, "directory:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, conn, account string) error {
	requests := ledger.New()
	topts, qopts := &aztables.ClientOptions{}, &azqueue.ClientOptions{}
	requests.Attach(&topts.ClientOptions, ledger.Table)
	requests.Attach(&qopts.ClientOptions, ledger.Queue)
	tables, queues := fake.NewTableService(nil).NewServiceClient(topts), fake.NewQueueService(nil).NewServiceClient(qopts)
	switch {
	case account != "":
		fmt.Printf("against the account %s, signed in with azidentity\n", account)
		defer func() { fmt.Printf("\nrequests (package ledger):\n%s", requests) }()
		cred, err := azidentity.NewDefaultAzureCredential(nil)
		if err != nil {
			return err
		}
		if tables, err = aztables.NewServiceClient("https://"+account+".table.core.windows.net/", cred, topts); err != nil {
			return err
		}
		if queues, err = azqueue.NewServiceClient("https://"+account+".queue.core.windows.net/", cred, qopts); err != nil {
			return err
		}
	case conn != "":
		fmt.Println("against the account of the connection string")
		c, err := accounts.ParseConnectionString(conn)
		if err != nil {
			return err
		}
		if tables, err = c.TableService(topts); err != nil {
			return err
		}
		if queues, err = c.QueueService(qopts); err != nil {
			return err
		}
	default:
		fmt.Println("in memory (package fake); -conn or -account runs it against storage")
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	suffix := hex.EncodeToString(b[:])
	client := map[string]*aztables.Client{}
	for _, name := range []string{"Employees", "LastNames", "Archive"} {
		if _, err := tables.CreateTable(ctx, name+suffix, nil); err != nil {
			return err
		}
		defer tables.DeleteTable(context.Background(), name+suffix, nil)
		client[name] = tables.NewClient(name + suffix)
	}
	work, poison := queues.NewQueueClient("directory-"+suffix), queues.NewQueueClient("directory-poison-"+suffix)
	for _, q := range []*azqueue.QueueClient{work, poison} {
		if _, err := q.Create(ctx, nil); err != nil {
			return err
		}
		defer q.Delete(context.Background(), nil)
	}
	fmt.Println("  requests  step")
	fmt.Printf("  %3d  create the tables Employees%s, LastNames%s and Archive%s and two queues\n", requests.Total(), suffix, suffix, suffix)

	// The model: declared once.
	employees, err := table.New[Employee](client["Employees"], &table.Options{Name: "Employees"})
	if err != nil {
		return err
	}
	listsTable, err := table.New[table.Entity](client["LastNames"], nil)
	if err != nil {
		return err
	}
	staff, err := patterns.OpenModel(ctx, employees, &patterns.ModelOptions[Employee]{
		Name:    "employees",
		Primary: "empid_",
		Copies: []patterns.IndexDef[Employee]{
			{Name: "email", Prefix: "email_", Unique: true, Value: func(e *Employee) string { return e.Email }},
		},
		RemoteLists: []patterns.ListDef[Employee]{
			{Name: "lastname", Value: func(e *Employee) string { return e.LastName }, Table: listsTable, Partition: "lastname", Prefix: "lastname_"},
		},
		Queue: work,
	})
	if err != nil {
		return err
	}
	archive, err := table.New[Employee](client["Archive"], nil)
	if err != nil {
		return err
	}
	mover := consistency.NewMover(staff.MoveSource(), archive, consistency.NewSender(work, nil), nil)
	worker := consistency.NewWorker(work, poison, &consistency.WorkerOptions{PollInterval: 10 * time.Millisecond})
	_ = worker.Handle(staff.MessageType(), staff.Process)
	_ = worker.Handle(mover.MessageType(), mover.Process)
	drain := func() error { _, err := worker.Drain(ctx, nil); return err }

	// Bulk load 500 employees over 5 departments, every index kept.
	depts := []string{"Sales", "Marketing", "Engineering", "Finance", "Facilities"}
	surnames := []string{"Jones", "Smith", "Hall", "Nguyen", "Garcia", "Kim", "Müller"}
	seen := requests.Total()
	sum, err := staff.Load(ctx, func(yield func(*Employee) bool) {
		for i := range 500 {
			id := fmt.Sprintf("%06d", i)
			e := &Employee{Meta: table.Meta{PartitionKey: depts[i%len(depts)], RowKey: "empid_" + id},
				FirstName: "E" + id, LastName: surnames[i%len(surnames)], Email: "e" + id + "@contoso.com"}
			if !yield(e) {
				return
			}
		}
	}, &patterns.ModelLoadOptions{Idempotent: true})
	if err != nil {
		return err
	}
	if err := drain(); err != nil {
		return err
	}
	fmt.Printf("loaded %d employees in %d transactions and %d messages; %d requests with the worker's\n", sum.Entities, sum.Transactions, sum.Messages, requests.Total()-seen)

	// Lookups by email (one request) and by last name (across departments).
	e, err := staff.Lookup(ctx, "email", "Sales", "e000005@contoso.com", nil)
	if err != nil {
		return err
	}
	fmt.Printf("email e000005@contoso.com: %s %s, %s\n", e.FirstName, e.LastName, e.RowKey)
	joneses, err := staff.LookupEntities(ctx, "lastname", "", "Jones", nil)
	if err != nil {
		return err
	}
	fmt.Printf("last name Jones: %d employees across departments\n", len(joneses))

	// Logins in a log tail of the same partitions.
	loginsTable, err := table.New[Login](client["Employees"], nil)
	if err != nil {
		return err
	}
	logins, err := patterns.NewLogTail[Login](loginsTable, nil)
	if err != nil {
		return err
	}
	for _, id := range []string{"000000", "000005", "000010"} {
		if err := logins.Append(ctx, "Sales", &Login{EmployeeID: id}, nil); err != nil {
			return err
		}
	}
	latest, err := logins.Latest(ctx, "Sales", 1, nil)
	if err != nil {
		return err
	}
	fmt.Printf("latest login in Sales: employee %s\n", latest[0].EmployeeID)

	// A partition query sees employees only: no email row, no login.
	n := 0
	for _, err := range staff.Query(ctx, &table.QueryOptions{Filter: table.Partition("Sales")}) {
		if err != nil {
			return err
		}
		n++
	}
	fmt.Printf("Sales has %d employees (the partition also holds their email rows and 3 logins)\n", n)

	// Employee 000005 leaves: to the archive with every index row.
	if err := mover.Request(ctx, "Sales", "empid_000005", nil); err != nil {
		return err
	}
	if err := drain(); err != nil {
		return err
	}
	if _, err := staff.Lookup(ctx, "email", "Sales", "e000005@contoso.com", nil); !table.Is(err, table.ErrNotFound) {
		return fmt.Errorf("the archived employee's email row: %v", err)
	}
	fmt.Println("employee 000005 archived; the email row and the last-name entry left with it")

	report, err := staff.Verify(ctx, nil)
	if err != nil {
		return err
	}
	if !report.OK() {
		return fmt.Errorf("verify: %d missing, %d orphans, %d stale", report.Missing, report.Orphans, report.Stale)
	}
	fmt.Printf("verify: %d employees, every index row agrees\n\nrequests (package ledger):\n%s", report.Primaries, requests)
	return nil
}
