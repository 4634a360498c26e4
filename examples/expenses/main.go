// Command expenses shows the ten most recent expense claims of an employee,
// the guide's log tail pattern: each claim's RowKey is the inverted tick
// count of its time (.NET's DateTime.MaxValue.Ticks minus its ticks, as 19
// digits), so the service, which returns a partition in RowKey order,
// returns the newest claim first, and the latest n are one request.
//
// Run it:
//
//	go run ./examples/expenses                    # in memory, no setup
//	go run ./examples/expenses -conn "$CONN"      # Azurite or Azure, by connection string
//	go run ./examples/expenses -account NAME      # Azure, signed in by azidentity
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

// Expense is the guide's expense claim.
type Expense struct {
	table.Meta
	Amount float64
}

func main() {
	conn := flag.String("conn", os.Getenv("TABLEKIT_CONNECTION_STRING"), "storage connection string, Azurite or Azure (default: in memory)")
	account := flag.String("account", "", "storage account name, signed in with azidentity.DefaultAzureCredential (instead of -conn)")
	flag.Parse()
	// -conn and -account name two accounts: refuse rather than pick one.
	given := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if given["conn"] && given["account"] {
		fmt.Fprintln(os.Stderr, "expenses: -conn and -account name two accounts: give one")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, *conn, *account)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "expenses:", err)
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
	name := "Expenses" + newSuffix()
	if _, err := tables.CreateTable(ctx, name, nil); err != nil {
		return err
	}
	// Clean-up is best effort: a failure leaves a uniquely named table.
	defer tables.DeleteTable(context.Background(), name, nil)
	claimsTable, err := table.New[Expense](tables.NewClient(name), nil)
	if err != nil {
		return err
	}
	claims, err := patterns.NewLogTail[Expense](claimsTable, nil)
	if err != nil {
		return err
	}
	step("create the table %s", name)

	base := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	for i := range 25 {
		if err := claims.AppendAt(ctx, "empid_000123", base.Add(time.Duration(i)*time.Hour), &Expense{Amount: float64(10*i) + 0.5}, nil); err != nil {
			return err
		}
	}
	step("25 expense claims of employee 000123, one an hour from %s, under inverted-tick RowKeys", base.Format(time.RFC3339))
	latest, err := claims.Latest(ctx, "empid_000123", 10, nil)
	if err != nil {
		return err
	}
	if len(latest) != 10 {
		return fmt.Errorf("latest 10: got %d", len(latest))
	}
	var times []time.Time
	for _, c := range latest {
		at, err := keys.ParseInvertedTicks(c.RowKey)
		if err != nil {
			return err
		}
		times = append(times, at)
	}
	for i := 1; i < len(times); i++ {
		if !times[i].Before(times[i-1]) {
			return fmt.Errorf("claims out of order: %s before %s", times[i-1], times[i])
		}
	}
	if newest := base.Add(24 * time.Hour); !times[0].Equal(newest) || latest[0].Amount != 240.5 {
		return fmt.Errorf("the newest claim: %s %.1f, want %s 240.5", times[0], latest[0].Amount, newest)
	}
	step("the ten most recent claims, newest first, one query: %s (%.1f) back to %s (%.1f)",
		times[0].Format(time.RFC3339), latest[0].Amount, times[9].Format(time.RFC3339), latest[9].Amount)
	since := base.Add(22 * time.Hour)
	n := 0
	for _, err := range claims.Since(ctx, "empid_000123", since, nil) {
		if err != nil {
			return err
		}
		n++
	}
	if n != 3 {
		return fmt.Errorf("claims since %s: %d, want 3", since, n)
	}
	step("the claims since %s: %d, one range query that stops at that time's key", since.Format(time.RFC3339), n)
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
