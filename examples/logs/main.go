// Command logs writes application logs the way the guide's log data
// anti-pattern recommends: not as entities of a table (whose time-ordered
// keys make a hot partition, and whose listing by time is awkward), but
// buffered and written as blobs named by the hour they cover
// ("applog/2014/07/31/1700/…"), so reading an interval lists the blobs of its
// hours and reads only those that overlap it.
//
// Run it:
//
//	go run ./examples/logs                    # in memory, no setup
//	go run ./examples/logs -conn "$CONN"      # Azurite or Azure, by connection string
//	go run ./examples/logs -account NAME      # Azure, signed in by azidentity
//
// The connection string may also come from TABLEKIT_CONNECTION_STRING.
// It prints each step with the storage requests it cost, then the request
// ledger, and exits non-zero on any failure. Against an account it creates
// a blob container with new names and deletes them at the end.
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
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/tablekit/tablekit/accounts"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/ledger"
	"github.com/tablekit/tablekit/patterns"
)

func main() {
	conn := flag.String("conn", os.Getenv("TABLEKIT_CONNECTION_STRING"), "storage connection string, Azurite or Azure (default: in memory)")
	account := flag.String("account", "", "storage account name, signed in with azidentity.DefaultAzureCredential (instead of -conn)")
	flag.Parse()
	// -conn and -account name two accounts: refuse rather than pick one.
	given := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if given["conn"] && given["account"] {
		fmt.Fprintln(os.Stderr, "logs: -conn and -account name two accounts: give one")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, *conn, *account)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "logs:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, conn, account string) error {
	requests := ledger.New()
	blobs, err := connect(conn, account, requests)
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

	// A new name on every run, so parallel runs never meet.
	container := "logs-" + newSuffix()
	if _, err := blobs.CreateContainer(ctx, container, nil); err != nil {
		return err
	}
	// Clean-up is best effort: a failure leaves a uniquely named container.
	defer blobs.DeleteContainer(context.Background(), container, nil)
	step("create the container %s", container)

	base := time.Date(2014, 7, 31, 17, 55, 0, 0, time.UTC)
	log, err := patterns.NewBlobLog(blobs, container, "applog", &patterns.BlobLogOptions{
		Writer: "web1",
		Now:    func() time.Time { return base }, // a fixed clock: nothing is flushed for age
	})
	if err != nil {
		return err
	}
	for i := range 600 {
		if err := log.AppendAt(ctx, base.Add(time.Duration(i)*time.Second), fmt.Sprintf("GET /employees/%06d 200", i), nil); err != nil {
			return err
		}
	}
	if err := log.Close(ctx, nil); err != nil {
		return err
	}
	step("600 entries from 17:55 to 18:05, buffered and written on Close as one blob per hour")
	var names []string
	pager := blobs.NewListBlobsFlatPager(container, nil)
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return err
		}
		for _, b := range page.Segment.BlobItems {
			names = append(names, *b.Name)
		}
	}
	if len(names) != 2 {
		return fmt.Errorf("the log's blobs: %v, want one per hour", names)
	}
	step("list the container: %v", names)

	from, until := base.Add(4*time.Minute), base.Add(6*time.Minute)
	n := 0
	for entry, err := range log.Read(ctx, from, until, nil) {
		if err != nil {
			return err
		}
		if entry.Time.Before(from) || !entry.Time.Before(until) {
			return fmt.Errorf("an entry of %s outside [%s, %s)", entry.Time, from, until)
		}
		n++
	}
	if n != 120 {
		return fmt.Errorf("entries from 17:59 to 18:01: %d, want 120", n)
	}
	step("read 17:59 to 18:01 back: list each hour's blobs, read those that overlap: %d entries", n)
	return nil
}

// connect returns the blob service to run against, each request counted
// by l: in memory by default, the account of a connection string, or a
// named account signed in with Microsoft Entra ID.
func connect(conn, account string, l *ledger.Ledger) (*azblob.Client, error) {
	opts := &azblob.ClientOptions{}
	l.Attach(&opts.ClientOptions, ledger.Blob)
	switch {
	case account != "":
		fmt.Printf("against the account %s, signed in with azidentity\n", account)
		cred, err := azidentity.NewDefaultAzureCredential(nil)
		if err != nil {
			return nil, err
		}
		return azblob.NewClient("https://"+account+".blob.core.windows.net/", cred, opts)
	case conn != "":
		fmt.Println("against the account of the connection string")
		c, err := accounts.ParseConnectionString(conn)
		if err != nil {
			return nil, err
		}
		return c.BlobService(opts)
	default:
		fmt.Println("in memory (package fake); -conn or -account runs it against storage")
		return fake.NewBlobService(nil).NewClient(opts), nil
	}
}

// newSuffix returns 8 random hex digits, valid in any storage name.
func newSuffix() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
