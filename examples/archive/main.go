// Command archive moves employee #456 from the Current table to the Archive
// table, the guide's example of the eventually consistent transactions
// pattern: no transaction spans two tables, so the client puts a message on a
// queue and a worker role copies the entity, deletes the original and only
// then deletes the message. Each step is idempotent and converges on the
// current state of the source, so a message delivered twice (or a worker
// that dies half way and is retried) moves the entity exactly once.
//
// Run it:
//
//	go run ./examples/archive                    # in memory, no setup
//	go run ./examples/archive -conn "$CONN"      # Azurite or Azure, by connection string
//	go run ./examples/archive -account NAME      # Azure, signed in by azidentity
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
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/accounts"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/ledger"
	"github.com/tablekit/tablekit/table"
)

// Employee is the guide's employee entity.
type Employee struct {
	table.Meta
	Name string
}

func main() {
	conn := flag.String("conn", os.Getenv("TABLEKIT_CONNECTION_STRING"), "storage connection string, Azurite or Azure (default: in memory)")
	account := flag.String("account", "", "storage account name, signed in with azidentity.DefaultAzureCredential (instead of -conn)")
	flag.Parse()
	// -conn and -account name two accounts: refuse rather than pick one.
	given := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if given["conn"] && given["account"] {
		fmt.Fprintln(os.Stderr, "archive: -conn and -account name two accounts: give one")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, *conn, *account)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "archive:", err)
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
	typed := map[string]*table.Table[Employee]{}
	for _, base := range []string{"Current", "Archive"} {
		name := base + suffix
		if _, err := tables.CreateTable(ctx, name, nil); err != nil {
			return err
		}
		// Clean-up is best effort: a failure leaves uniquely named tables.
		defer tables.DeleteTable(context.Background(), name, nil)
		if typed[base], err = table.New[Employee](tables.NewClient(name), nil); err != nil {
			return err
		}
	}
	current, archive := typed["Current"], typed["Archive"]
	work, poison := queues.NewQueueClient("archive-"+suffix), queues.NewQueueClient("archive-poison-"+suffix)
	for _, q := range []*azqueue.QueueClient{work, poison} {
		if _, err := q.Create(ctx, nil); err != nil {
			return err
		}
		defer q.Delete(context.Background(), nil)
	}
	step("create the tables Current%s and Archive%s and two queues", suffix, suffix)

	if err := current.Add(ctx, &Employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: "000456"}, Name: "Employee 456"}, nil); err != nil {
		return err
	}
	step("employee #456 is in the Current table")
	mover := consistency.NewMover(current, archive, consistency.NewSender(work, nil), nil)
	for range 2 {
		if err := mover.Request(ctx, "Sales", "000456", nil); err != nil {
			return err
		}
	}
	step("the client asks for the move twice (a retry after a lost answer): two messages with the keys")

	worker := consistency.NewWorker(work, poison, &consistency.WorkerOptions{PollInterval: 10 * time.Millisecond})
	if err := worker.Handle(mover.MessageType(), mover.Process); err != nil {
		return err
	}
	stats, err := worker.Drain(ctx, nil)
	if err != nil {
		return err
	}
	if stats.Processed != 2 || stats.Poisoned != 0 {
		return fmt.Errorf("the worker processed %d and poisoned %d messages", stats.Processed, stats.Poisoned)
	}
	step("the worker handles both: read, copy to Archive, delete from Current, delete the message")
	moved, err := archive.Get(ctx, "Sales", "000456", nil)
	if err != nil {
		return err
	}
	if _, err := current.Get(ctx, "Sales", "000456", nil); !table.Is(err, table.ErrNotFound) {
		return fmt.Errorf("employee #456 in Current after the move: want not found, got %v", err)
	}
	step("in Archive: %s; in Current: not found; moved once though asked twice", moved.Name)
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
