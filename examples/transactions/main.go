// Command transactions writes the guide's employees with entity group
// transactions (package batch): up to 100 operations on one partition of one
// table commit together or not at all, and a bulk load costs one request
// per transaction instead of one per entity. Every rule of a transaction
// (one PartitionKey, each RowKey once, at most 100 operations and 4 MiB) is
// checked before anything is sent, and a refused transaction names the
// operation that failed.
//
// Run it:
//
//	go run ./examples/transactions                    # in memory, no setup
//	go run ./examples/transactions -conn "$CONN"      # Azurite or Azure, by connection string
//	go run ./examples/transactions -account NAME      # Azure, signed in by azidentity
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
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"

	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/accounts"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/ledger"
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
		fmt.Fprintln(os.Stderr, "transactions: -conn and -account name two accounts: give one")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, *conn, *account)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "transactions:", err)
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
	client := tables.NewClient(name)
	step("create the table %s", name)

	var ops []batch.Op
	for _, dept := range []string{"Sales", "Marketing"} {
		for i := range 150 {
			id, err := keys.FixedUint(uint64(i), 6)
			if err != nil {
				return err
			}
			ops = append(ops, batch.Add(&Employee{Meta: table.Meta{PartitionKey: dept, RowKey: "empid_" + id}, LastName: "Employee " + id}))
		}
	}
	plan, err := batch.Plan(ops, nil)
	if err != nil {
		return err
	}
	step("plan 300 adds over 2 departments: %d transactions of at most 100 operations, one partition each", len(plan))
	sum, err := batch.NewWriter(client, nil).Write(ctx, slices.Values(ops), nil)
	if err != nil {
		return err
	}
	if sum.Operations != 300 || sum.Transactions != len(plan) {
		return fmt.Errorf("the writer committed %d operations in %d transactions", sum.Operations, sum.Transactions)
	}
	step("bulk-write them with batch.Writer: %d operations in %d transactions, partitions in parallel", sum.Operations, sum.Transactions)

	fresh := &Employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: "empid_000999"}, LastName: "New"}
	taken := &Employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: "empid_000001"}, LastName: "Again"}
	_, err = batch.Submit(ctx, client, []batch.Op{batch.Add(fresh), batch.Add(taken)}, nil)
	var txErr *batch.TransactionError
	if !errors.As(err, &txErr) || txErr.Index != 1 {
		return fmt.Errorf("a transaction whose second add exists: want a *batch.TransactionError at index 1, got %v", err)
	}
	step("a transaction whose 2nd add exists fails: operation %d, %d %s", txErr.Index, txErr.StatusCode, txErr.ErrorCode)
	employees, err := table.New[Employee](client, nil)
	if err != nil {
		return err
	}
	if _, err := employees.Get(ctx, "Sales", "empid_000999", nil); !table.Is(err, table.ErrNotFound) {
		return fmt.Errorf("the first add of the failed transaction: want not found, got %v", err)
	}
	step("get its 1st add, empid_000999: not found, the transaction was all or nothing")

	_, err = batch.Submit(ctx, client, []batch.Op{batch.Add(fresh), batch.Add(&Employee{Meta: table.Meta{PartitionKey: "Marketing", RowKey: "empid_000999"}})}, nil)
	if err == nil || requests.Total() != seen {
		return fmt.Errorf("a transaction over two partitions was sent or accepted: %v", err)
	}
	step("a transaction over two partitions: refused before sending: %v", err)
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
