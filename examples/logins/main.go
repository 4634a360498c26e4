// Command logins keeps login attempts for a limited time, the guide's
// high-volume delete pattern: deleting old entities one by one costs a
// request per entity (or per 100 in a transaction), so each day's attempts
// go to a table of their own ("Logins20261121"), and expiring a day is one
// request that drops its table. The guide keeps attempts 60 days; this
// program keeps them one day after the day ends, over three days.
//
// Run it:
//
//	go run ./examples/logins                    # in memory, no setup
//	go run ./examples/logins -conn "$CONN"      # Azurite or Azure, by connection string
//	go run ./examples/logins -account NAME      # Azure, signed in by azidentity
//
// The connection string may also come from TABLEKIT_CONNECTION_STRING.
// It prints each step with the storage requests it cost, then the request
// ledger, and exits non-zero on any failure. Against an account it creates
// a table per day with new names and deletes them at the end.
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
	"github.com/tablekit/tablekit/accounts"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/ledger"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/table"
)

// LoginAttempt is one attempt to sign in.
type LoginAttempt struct {
	table.Meta
	Succeeded bool
}

func main() {
	conn := flag.String("conn", os.Getenv("TABLEKIT_CONNECTION_STRING"), "storage connection string, Azurite or Azure (default: in memory)")
	account := flag.String("account", "", "storage account name, signed in with azidentity.DefaultAzureCredential (instead of -conn)")
	flag.Parse()
	// -conn and -account name two accounts: refuse rather than pick one.
	given := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if given["conn"] && given["account"] {
		fmt.Fprintln(os.Stderr, "logins: -conn and -account name two accounts: give one")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, *conn, *account)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "logins:", err)
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

	// A new prefix on every run: a dropped table's name stays unusable for
	// a while (409 TableBeingDeleted), and parallel runs must not meet.
	prefix := "Logins" + newSuffix()
	base := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	days := []time.Time{base, base.AddDate(0, 0, 1), base.AddDate(0, 0, 2)}
	var names []string // the day tables not dropped yet
	for _, day := range days {
		name, err := keys.PeriodTable(prefix, keys.Daily, day, 0)
		if err != nil {
			return err
		}
		names = append(names, name)
	}
	// Clean-up is best effort: a failure leaves uniquely named tables.
	defer func() {
		for _, name := range names {
			_, _ = tables.DeleteTable(context.Background(), name, nil)
		}
	}()
	// The clock says it is the fourth day: the first two days are more
	// than one day past their end.
	now := base.AddDate(0, 0, 3)
	logins, err := patterns.NewRollingTables[LoginAttempt](tables, prefix, keys.Daily, &patterns.RollingTablesOptions{
		Retention: 24 * time.Hour,
		Now:       func() time.Time { return now },
	})
	if err != nil {
		return err
	}
	for d, day := range days {
		for i := range 2 {
			rk, err := keys.FixedUint(uint64(i), 4)
			if err != nil {
				return err
			}
			v := &LoginAttempt{Meta: table.Meta{PartitionKey: "user" + fmt.Sprint(d), RowKey: rk}, Succeeded: i == 0}
			if err := logins.Add(ctx, day.Add(time.Duration(i)*time.Minute), v, nil); err != nil {
				return err
			}
		}
	}
	step("6 login attempts over 3 days, each in its day's table %s…, created on first use", prefix)
	dropped, err := logins.Expire(ctx, nil)
	if err != nil {
		return err
	}
	slices.Sort(dropped)
	if !slices.Equal(dropped, names[:2]) {
		return fmt.Errorf("expired %v, want %v", dropped, names[:2])
	}
	names = names[2:]
	step("expire the days more than a day past their end: %v dropped, a listing and one request each", dropped)
	n := 0
	for _, err := range logins.Query(ctx, days[0], now, nil) {
		if err != nil {
			return err
		}
		n++
	}
	if n != 2 {
		return fmt.Errorf("attempts left: %d, want the last day's 2", n)
	}
	step("query the three days: %d attempts left, the last day's", n)
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
