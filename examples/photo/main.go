// Command photo stores the guide's employee with a photo too large for an
// entity (1 MiB in all, 64 KiB per property), with the large entities
// pattern: the photo goes to a blob first, then the entity with the blob's
// name and hash. A reader never sees an entity whose blob is missing; a
// crash between the two writes, or a new photo, leaves a blob no entity
// names, which a sweep deletes.
//
// Run it:
//
//	go run ./examples/photo                    # in memory, no setup
//	go run ./examples/photo -conn "$CONN"      # Azurite or Azure, by connection string
//	go run ./examples/photo -account NAME      # Azure, signed in by azidentity
//
// The connection string may also come from TABLEKIT_CONNECTION_STRING.
// It prints each step with the storage requests it cost, then the request
// ledger, and exits non-zero on any failure. Against an account it creates
// a table and a blob container with new names and deletes them at the end.
//
// This file is the whole program: copy it into your own module and run it.
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"os/signal"

	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/tablekit/tablekit/accounts"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/ledger"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/table"
)

// Employee is the guide's employee, with a photo.
type Employee struct {
	table.Meta
	Name  string
	Photo []byte
}

func main() {
	conn := flag.String("conn", os.Getenv("TABLEKIT_CONNECTION_STRING"), "storage connection string, Azurite or Azure (default: in memory)")
	account := flag.String("account", "", "storage account name, signed in with azidentity.DefaultAzureCredential (instead of -conn)")
	flag.Parse()
	// -conn and -account name two accounts: refuse rather than pick one.
	given := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if given["conn"] && given["account"] {
		fmt.Fprintln(os.Stderr, "photo: -conn and -account name two accounts: give one")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, *conn, *account)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "photo:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, conn, account string) error {
	requests := ledger.New()
	tables, blobs, err := connect(conn, account, requests)
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
	name, container := "Employees"+suffix, "photos-"+suffix
	if _, err := tables.CreateTable(ctx, name, nil); err != nil {
		return err
	}
	// Clean-up is best effort: a failure leaves uniquely named resources.
	defer tables.DeleteTable(context.Background(), name, nil)
	if _, err := blobs.CreateContainer(ctx, container, nil); err != nil {
		return err
	}
	defer blobs.DeleteContainer(context.Background(), container, nil)
	step("create the table %s and the container %s", name, container)

	employeesTable, err := table.New[Employee](tables.NewClient(name), nil)
	if err != nil {
		return err
	}
	employees, err := patterns.NewLargeEntity[Employee](employeesTable, blobs, container, []string{"Photo"}, 0, nil)
	if err != nil {
		return err
	}
	photo := bytes.Repeat([]byte{0xff, 0xd8, 0xff, 0xe0}, 64*1024) // a 256 KiB "JPEG"
	don := &Employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: "000123"}, Name: "Don Hall", Photo: photo}
	if err := employees.Put(ctx, don, nil); err != nil {
		return err
	}
	step("store employee 000123 with a %d KiB photo: the photo to a blob, then the entity naming it", len(photo)/1024)
	back, err := employees.Get(ctx, "Sales", "000123", nil)
	if err != nil {
		return err
	}
	if back.Name != "Don Hall" || !bytes.Equal(back.Photo, photo) {
		return fmt.Errorf("read back %s with a photo of %d bytes", back.Name, len(back.Photo))
	}
	step("read it back: %s, photo of %d KiB checked against its SHA-256", back.Name, len(back.Photo)/1024)

	don.Photo = bytes.Repeat([]byte{0xff, 0xd8, 0xff, 0xe1}, 32*1024)
	if err := employees.Put(ctx, don, nil); err != nil {
		return err
	}
	step("a new %d KiB photo: a new blob, then the entity; the old blob is left behind", len(don.Photo)/1024)
	swept, err := employees.Sweep(ctx, 0, nil)
	if err != nil {
		return err
	}
	if swept != 1 {
		return fmt.Errorf("the sweep deleted %d blobs, want the old photo's 1", swept)
	}
	step("sweep the blobs no entity names: %d deleted, the old photo", swept)
	back, err = employees.Get(ctx, "Sales", "000123", nil)
	if err != nil {
		return err
	}
	if !bytes.Equal(back.Photo, don.Photo) {
		return fmt.Errorf("after the sweep the photo has %d bytes", len(back.Photo))
	}
	step("read it again: the new photo of %d KiB is intact", len(back.Photo)/1024)
	return nil
}

// connect returns the table and blob services to run against, each
// request counted by l: in memory by default, the account of a connection
// string, or a named account signed in with Microsoft Entra ID.
func connect(conn, account string, l *ledger.Ledger) (*aztables.ServiceClient, *azblob.Client, error) {
	topts, bopts := &aztables.ClientOptions{}, &azblob.ClientOptions{}
	l.Attach(&topts.ClientOptions, ledger.Table)
	l.Attach(&bopts.ClientOptions, ledger.Blob)
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
		blobs, err := azblob.NewClient("https://"+account+".blob.core.windows.net/", cred, bopts)
		return tables, blobs, err
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
		blobs, err := c.BlobService(bopts)
		return tables, blobs, err
	default:
		fmt.Println("in memory (package fake); -conn or -account runs it against storage")
		return fake.NewTableService(nil).NewServiceClient(topts), fake.NewBlobService(nil).NewClient(bopts), nil
	}
}

// newSuffix returns 8 random hex digits, valid in any storage name.
func newSuffix() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
