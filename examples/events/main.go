// Command events fixes the guide's prepend/append anti-pattern: writing
// every new event at the end of one partition (RowKeys in time order) sends
// all writes to one partition server, which caps the throughput. Here each
// event goes to one of 4 partitions (events_0 … events_3) chosen by a
// stable hash of its source, and a reader queries the partitions in parallel
// and merges them back into one stream in RowKey, that is time, order.
//
// Run it:
//
//	go run ./examples/events                    # in memory, no setup
//	go run ./examples/events -conn "$CONN"      # Azurite or Azure, by connection string
//	go run ./examples/events -account NAME      # Azure, signed in by azidentity
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
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/accounts"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/ledger"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/table"
)

// Event is something that happened at the time its RowKey records.
type Event struct {
	table.Meta
	Source string
}

func main() {
	conn := flag.String("conn", os.Getenv("TABLEKIT_CONNECTION_STRING"), "storage connection string, Azurite or Azure (default: in memory)")
	account := flag.String("account", "", "storage account name, signed in with azidentity.DefaultAzureCredential (instead of -conn)")
	flag.Parse()
	// -conn and -account name two accounts: refuse rather than pick one.
	given := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if given["conn"] && given["account"] {
		fmt.Fprintln(os.Stderr, "events: -conn and -account name two accounts: give one")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, *conn, *account)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "events:", err)
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
	name := "Events" + newSuffix()
	if _, err := tables.CreateTable(ctx, name, nil); err != nil {
		return err
	}
	// Clean-up is best effort: a failure leaves a uniquely named table.
	defer tables.DeleteTable(context.Background(), name, nil)
	step("create the table %s", name)

	eventsTable, err := table.New[Event](tables.NewClient(name), nil)
	if err != nil {
		return err
	}
	sharded, err := patterns.NewSharded[Event](eventsTable, "events", 4)
	if err != nil {
		return err
	}
	base := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	for i := range 12 {
		source := fmt.Sprintf("sensor%02d", i)
		// keys.Ticks sorts by time; a source writes one event per instant.
		e := &Event{Meta: table.Meta{RowKey: keys.Ticks(base.Add(time.Duration(i) * time.Minute))}, Source: source}
		if err := sharded.Append(ctx, source, e, nil); err != nil {
			return err
		}
	}
	used := map[string]int{}
	for e, err := range sharded.Read(ctx, nil) {
		if err != nil {
			return err
		}
		used[e.PartitionKey]++
	}
	step("append 12 events from 12 sources and read them back: a stable hash of the source spread them over %v: %v", sharded.Partitions(), used)

	var order []time.Time
	for e, err := range sharded.Read(ctx, &patterns.ShardedReadOptions{From: keys.Ticks(base.Add(3 * time.Minute))}) {
		if err != nil {
			return err
		}
		at, err := keys.ParseTicks(e.RowKey)
		if err != nil {
			return err
		}
		if len(order) > 0 && !at.After(order[len(order)-1]) {
			return fmt.Errorf("the merged stream is out of order at %s", at)
		}
		order = append(order, at)
	}
	if len(order) != 9 || !order[0].Equal(base.Add(3*time.Minute)) {
		return fmt.Errorf("events from 09:03: %d, first %v", len(order), order)
	}
	step("the events from 09:03 on, merged from 4 parallel range queries: %d in time order, %s to %s",
		len(order), order[0].Format(time.Kitchen), order[len(order)-1].Format(time.Kitchen))
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
