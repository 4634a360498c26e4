// Command keys shows key design, the first topic of the Table Storage design
// guide: every efficient query is a point or a range over PartitionKey,
// RowKey order, and that order is ordinal string order, so keys must be
// strings that sort the way the data should. Package keys builds them; this
// program writes them to a table and reads them back to show the service
// sorts them as intended.
//
// Run it:
//
//	go run ./examples/keys                    # in memory, no setup
//	go run ./examples/keys -conn "$CONN"      # Azurite or Azure, by connection string
//	go run ./examples/keys -account NAME      # Azure, signed in by azidentity
//
// The connection string may also come from TABLEKIT_CONNECTION_STRING.
// It prints each step with the storage requests it cost, then the request
// ledger, and exits non-zero on any failure. Against an account it creates a
// table with a new name and deletes it at the end.
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
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/accounts"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/ledger"
	"github.com/tablekit/tablekit/table"
)

// Reading is a measurement stored under a key built by package keys.
type Reading struct {
	table.Meta
	Value int64
}

func main() {
	conn := flag.String("conn", os.Getenv("TABLEKIT_CONNECTION_STRING"), "storage connection string, Azurite or Azure (default: in memory)")
	account := flag.String("account", "", "storage account name, signed in with azidentity.DefaultAzureCredential (instead of -conn)")
	flag.Parse()
	// -conn and -account name two accounts: refuse rather than pick one.
	given := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if given["conn"] && given["account"] {
		fmt.Fprintln(os.Stderr, "keys: -conn and -account name two accounts: give one")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, *conn, *account)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "keys:", err)
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
	name := "Keys" + newSuffix()
	if _, err := tables.CreateTable(ctx, name, nil); err != nil {
		return err
	}
	// Clean-up is best effort: a failure leaves a uniquely named table.
	defer tables.DeleteTable(context.Background(), name, nil)
	readings, err := table.New[Reading](tables.NewClient(name), nil)
	if err != nil {
		return err
	}
	step("create the table %s", name)

	// Compound keys: the guide's review of employee 000123 for 2012.
	emp, err := keys.FixedUint(123, 6)
	if err != nil {
		return err
	}
	review, err := keys.Compound{}.Join(emp, "2012")
	if err != nil {
		return err
	}
	if review != "000123_2012" {
		return fmt.Errorf("Compound.Join = %q", review)
	}
	_, err = keys.Compound{}.Join("a_b", "c")
	if !errors.Is(err, keys.ErrInvalidKey) {
		return fmt.Errorf("Compound.Join of a part holding the separator: want keys.ErrInvalidKey, got %v", err)
	}
	step("compound key keys.Compound{}.Join(%q, \"2012\") = %s; a part holding the separator is refused: %v", emp, review, err)
	for _, rk := range []string{review, emp + "_2011", "000124_2012"} {
		if err := readings.Add(ctx, &Reading{Meta: table.Meta{PartitionKey: "reviews", RowKey: rk}}, nil); err != nil {
			return err
		}
	}
	step("add the reviews 000123_2012, 000123_2011 and 000124_2012")
	// Prefixes: every key starting with a prefix, as one range query.
	prefix := table.RowPrefix("reviews", emp+"_")
	var ofEmp []*Reading
	for r, err := range readings.Query(ctx, &table.QueryOptions{Filter: prefix}) {
		if err != nil {
			return err
		}
		ofEmp = append(ofEmp, r)
	}
	if len(ofEmp) != 2 || ofEmp[0].RowKey != emp+"_2011" {
		return fmt.Errorf("the reviews of %s: got %d", emp, len(ofEmp))
	}
	step("the reviews of 000123: table.RowPrefix(\"reviews\", \"000123_\") = %s, one range query: %s, %s", prefix, ofEmp[0].RowKey, ofEmp[1].RowKey)

	// Numbers: fixed width and an offset sign make string order numeric.
	numbers := []int64{1000, -42, 7, -1, 0}
	for _, n := range numbers {
		if err := readings.Add(ctx, &Reading{Meta: table.Meta{PartitionKey: "numbers", RowKey: keys.Int64(n)}, Value: n}, nil); err != nil {
			return err
		}
	}
	step("add %v under RowKeys keys.Int64(n), e.g. keys.Int64(-42) = %s", numbers, keys.Int64(-42))
	var order []int64
	for r, err := range readings.Query(ctx, &table.QueryOptions{Filter: table.Partition("numbers")}) {
		if err != nil {
			return err
		}
		n, err := keys.ParseInt64(r.RowKey)
		if err != nil {
			return err
		}
		order = append(order, n)
	}
	if !slices.IsSorted(order) || len(order) != len(numbers) {
		return fmt.Errorf("the service returned %v, not in numeric order", order)
	}
	step("query the partition: the service returns %v, numeric order", order)

	// Inverted ticks: the newest entry first, as .NET writes it.
	base := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	for h := range 3 {
		at := base.Add(time.Duration(h) * time.Hour)
		if err := readings.Add(ctx, &Reading{Meta: table.Meta{PartitionKey: "log", RowKey: keys.InvertedTicks(at)}, Value: int64(h)}, nil); err != nil {
			return err
		}
	}
	step("add readings at 09:00, 10:00, 11:00 under keys.InvertedTicks(t), e.g. %s", keys.InvertedTicks(base))
	var latest []*Reading
	for r, err := range readings.Query(ctx, &table.QueryOptions{Filter: table.Partition("log"), Top: 1}) {
		if err != nil {
			return err
		}
		latest = append(latest, r)
	}
	if len(latest) != 1 {
		return fmt.Errorf("top 1 returned %d readings", len(latest))
	}
	at, err := keys.ParseInvertedTicks(latest[0].RowKey)
	if err != nil {
		return err
	}
	if !at.Equal(base.Add(2 * time.Hour)) {
		return fmt.Errorf("the first reading is from %s, not the newest", at)
	}
	step("query the partition with $top=1: the newest reading, %s", at.Format(time.Kitchen))

	// Tuples: any strings, even characters a key may not hold, in an
	// order-preserving encoding.
	tuple, err := keys.EncodeTuple("Sales", "a/b?")
	if err != nil {
		return err
	}
	if err := readings.Add(ctx, &Reading{Meta: table.Meta{PartitionKey: "tuples", RowKey: tuple}}, nil); err != nil {
		return err
	}
	back, err := readings.Get(ctx, "tuples", tuple, nil)
	if err != nil {
		return err
	}
	parts, err := keys.DecodeTuple(back.RowKey)
	if err != nil {
		return err
	}
	if !slices.Equal(parts, []string{"Sales", "a/b?"}) {
		return fmt.Errorf("keys.DecodeTuple = %q", parts)
	}
	step("keys.EncodeTuple(\"Sales\", \"a/b?\") = %s, stored, read back and decoded to %q", tuple, parts)

	// Tables per period are names, built with no request.
	day, err := keys.PeriodTable("Logins", keys.Daily, base, 0)
	if err != nil {
		return err
	}
	step("keys.PeriodTable(\"Logins\", keys.Daily, …) = %s", day)

	// Bad keys are refused before any request.
	err = readings.Add(ctx, &Reading{Meta: table.Meta{PartitionKey: "numbers", RowKey: "a/b"}}, nil)
	if err == nil || requests.Total() != seen {
		return fmt.Errorf("a RowKey holding '/' was sent or accepted: %v", err)
	}
	step("add a RowKey holding '/': refused before sending: %v", err)
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

// newSuffix returns 8 random hex digits, valid in table names.
func newSuffix() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
