// Command messagestats stores message statistics with two patterns of the
// guide that put many values in one logical entity:
//
//   - the data series pattern: a day's hourly message counts as 24
//     properties (H00 … H23) of one entity, so setting one hour is one merge
//     and reading the day is one point query;
//   - the wide entities pattern: a year of daily counts is 365 properties,
//     more than the 252 an entity may hold, so they are split over several
//     entities of one partition, written in one transaction and read back
//     with one range query.
//
// Run it:
//
//	go run ./examples/messagestats                    # in memory, no setup
//	go run ./examples/messagestats -conn "$CONN"      # Azurite or Azure, by connection string
//	go run ./examples/messagestats -account NAME      # Azure, signed in by azidentity
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
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/table"
)

func main() {
	conn := flag.String("conn", os.Getenv("TABLEKIT_CONNECTION_STRING"), "storage connection string, Azurite or Azure (default: in memory)")
	account := flag.String("account", "", "storage account name, signed in with azidentity.DefaultAzureCredential (instead of -conn)")
	flag.Parse()
	// -conn and -account name two accounts: refuse rather than pick one.
	given := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if given["conn"] && given["account"] {
		fmt.Fprintln(os.Stderr, "messagestats: -conn and -account name two accounts: give one")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, *conn, *account)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "messagestats:", err)
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
	name := "MessageStats" + newSuffix()
	if _, err := tables.CreateTable(ctx, name, nil); err != nil {
		return err
	}
	// Clean-up is best effort: a failure leaves a uniquely named table.
	defer tables.DeleteTable(context.Background(), name, nil)
	client := tables.NewClient(name)
	step("create the table %s", name)

	stats, err := table.New[table.Entity](client, nil)
	if err != nil {
		return err
	}
	hourly, err := patterns.NewDataSeries[int64](stats, "H", 24)
	if err != nil {
		return err
	}
	for hour, count := range map[int]int64{9: 17, 14: 42} {
		if _, err := hourly.Set(ctx, "messages", "2026-11-21", hour, count, nil); err != nil {
			return err
		}
	}
	step("data series: the counts of 09:00 and 14:00 set with one merge each")
	day, _, err := hourly.Get(ctx, "messages", "2026-11-21", nil)
	if err != nil {
		return err
	}
	if _, set := day[10]; set || day[14] != 42 || day[9] != 17 {
		return fmt.Errorf("the day's counts: %v", day)
	}
	step("the day's 24 hourly counts with one point query: H09 = %d, H14 = %d, H10 unset", day[9], day[14])

	wide := patterns.NewWideEntity(stats)
	year := map[string]any{}
	for d := range 365 {
		year[fmt.Sprintf("Day%03d", d)] = int64(1000 + d)
	}
	v := &patterns.Wide{PartitionKey: "stats", RowKey: "2026", Properties: year}
	// Add: the entity is new, so no read before the write.
	if err := wide.Add(ctx, v, nil); err != nil {
		return err
	}
	step("wide entity: 365 daily counts in %d entities of at most 252 properties, one transaction", v.Parts)
	back, err := wide.Get(ctx, "stats", "2026", false, nil)
	if err != nil {
		return err
	}
	if len(back.Properties) != 365 || back.Properties["Day364"] != int64(1364) {
		return fmt.Errorf("read back %d properties, Day364 = %v", len(back.Properties), back.Properties["Day364"])
	}
	step("read back with one range query: %d properties, Day364 = %v", len(back.Properties), back.Properties["Day364"])
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
