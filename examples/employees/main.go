// Command employees looks the guide's employees up by email, through the
// two secondary indexes of the Table Storage design guide, both declared on
// one entity model (patterns.Model):
//
//   - the intra-partition secondary index (Copies): a copy of each employee
//     under the RowKey "email_<address>" in its own partition, written in
//     the same entity group transaction as the employee, so the two never
//     disagree;
//   - the inter-partition secondary index (CrossCopies): a copy under the
//     PartitionKey "email_<department>", which no transaction can reach,
//     kept eventually consistent by a queue and a worker.
//
// Run it:
//
//	go run ./examples/employees                    # in memory, no setup
//	go run ./examples/employees -conn "$CONN"      # Azurite or Azure, by connection string
//	go run ./examples/employees -account NAME      # Azure, signed in by azidentity
//
// The connection string may also come from TABLEKIT_CONNECTION_STRING.
// It prints each step with the storage requests it cost, then the request
// ledger, and exits non-zero on any failure. Against an account it creates a
// table and two queues with new names and deletes them at the end.
//
// This file is the whole program: copy it into your own module and run it.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
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
	Department string
	FirstName  string
	LastName   string
	Email      string
}

func main() {
	conn := flag.String("conn", os.Getenv("TABLEKIT_CONNECTION_STRING"), "storage connection string, Azurite or Azure (default: in memory)")
	account := flag.String("account", "", "storage account name, signed in with azidentity.DefaultAzureCredential (instead of -conn)")
	flag.Parse()
	// -conn and -account name two accounts: refuse rather than pick one.
	given := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if given["conn"] && given["account"] {
		fmt.Fprintln(os.Stderr, "employees: -conn and -account name two accounts: give one")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, *conn, *account)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "employees:", err)
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
	name := "Employees" + suffix
	if _, err := tables.CreateTable(ctx, name, nil); err != nil {
		return err
	}
	// Clean-up is best effort: a failure leaves a uniquely named table.
	defer tables.DeleteTable(context.Background(), name, nil)
	work, poison := queues.NewQueueClient("employees-"+suffix), queues.NewQueueClient("employees-poison-"+suffix)
	for _, q := range []*azqueue.QueueClient{work, poison} {
		if _, err := q.Create(ctx, nil); err != nil {
			return err
		}
		defer q.Delete(context.Background(), nil)
	}
	client := tables.NewClient(name)
	step("create the table %s and two queues", name)

	fmt.Println("\nthe entity model: an intra-partition index (Sales / email_…) and an inter-partition one (email_Sales / …)")
	employees, err := table.New[Employee](client, nil)
	if err != nil {
		return err
	}
	model, err := patterns.OpenModel(ctx, employees, &patterns.ModelOptions[Employee]{
		Name:    "employees",
		Primary: "empid_",
		Copies: []patterns.IndexDef[Employee]{
			{Name: "email", Prefix: "email_", Unique: true, Value: func(e *Employee) string { return e.Email }},
		},
		CrossCopies: []patterns.IndexDef[Employee]{{
			Name:         "dept-email",
			PartitionKey: func(e *Employee) string { return "email_" + e.Department },
			Value:        func(e *Employee) string { return e.Email },
		}},
		Queue: work,
	})
	if err != nil {
		return err
	}
	worker := consistency.NewWorker(work, poison, &consistency.WorkerOptions{PollInterval: 10 * time.Millisecond})
	if err := worker.Handle(model.MessageType(), model.Process); err != nil {
		return err
	}
	don := &Employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: "empid_000123"}, Department: "Sales", FirstName: "Don", LastName: "Hall", Email: "donh@contoso.com"}
	if err := model.Add(ctx, don, nil); err != nil {
		return err
	}
	step("add empid_000123 and its copy email_donh@contoso.com in one transaction, a hidden message around it")
	found, err := model.Lookup(ctx, "email", "Sales", "donh@contoso.com", nil)
	if err != nil {
		return err
	}
	if found.RowKey != "empid_000123" || found.LastName != "Hall" {
		return fmt.Errorf("lookup of donh@contoso.com found %s %s", found.RowKey, found.LastName)
	}
	step("look up donh@contoso.com: %s %s %s, one point query", found.RowKey, found.FirstName, found.LastName)
	changed := *don
	changed.Email = "don.hall@contoso.com"
	if err := model.Update(ctx, &changed, &table.UpdateOptions{Mode: aztables.UpdateModeReplace}); err != nil {
		return err
	}
	step("change the email: a read, then the employee, the old copy's delete and the new copy in one transaction")
	jun := &Employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: "empid_000152"}, Department: "Sales", FirstName: "Jun", LastName: "Cao", Email: "don.hall@contoso.com"}
	var taken *patterns.ValueTakenError
	if err := model.Add(ctx, jun, nil); !errors.As(err, &taken) {
		return fmt.Errorf("adding a second employee with Don's email: want *patterns.ValueTakenError, got %v", err)
	}
	step("add empid_000152 with Don's new email: refused whole (%s), no employee written", taken.Value)
	if _, err := model.Lookup(ctx, "dept-email", "email_Sales", "don.hall@contoso.com", nil); !table.Is(err, table.ErrNotFound) {
		return fmt.Errorf("the copy in email_Sales exists before the worker ran: %v", err)
	}
	step("look up don.hall@contoso.com in email_Sales at once: not found yet (the window of inconsistency)")
	stats, err := worker.Drain(ctx, nil)
	if err != nil {
		return err
	}
	if stats.Processed != 2 {
		return fmt.Errorf("the worker processed %d messages, want 2", stats.Processed)
	}
	step("the worker handles the two messages: reads the employee, makes email_Sales match it")
	found, err = model.Lookup(ctx, "dept-email", "email_Sales", "don.hall@contoso.com", nil)
	if err != nil {
		return err
	}
	if found.PartitionKey != "Sales" || found.RowKey != "empid_000123" {
		return fmt.Errorf("lookup of don.hall@contoso.com found %s / %s", found.PartitionKey, found.RowKey)
	}
	step("look up don.hall@contoso.com in email_Sales again: %s / %s %s %s", found.PartitionKey, found.RowKey, found.FirstName, found.LastName)
	report, err := model.Verify(ctx, &patterns.VerifyOptions{Partition: "Sales"})
	if err != nil {
		return err
	}
	if !report.OK() {
		return fmt.Errorf("the indexes disagree with their employees: %+v", report)
	}
	step("verify the partition's employees and every index row of theirs: %d employee, %d copies, consistent = %v", report.Primaries, report.IndexRows, report.OK())
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

// newSuffix returns 8 random hex digits, valid in table and queue names.
func newSuffix() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
