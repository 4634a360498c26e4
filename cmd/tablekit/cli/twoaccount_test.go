package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/consistency/blobstore"
	"github.com/tablekit/tablekit/internal/testenv"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/table"
)

// TestLargeSweepTwoAccounts reproduces a defect once found: the program's large
// entity reads its entities from its own account (A) while -conn names
// another (B); sweeping B then took every blob of B for an orphan.
func TestLargeSweepTwoAccounts(t *testing.T) {
	a, _ := fakeAccount()
	b, _ := fakeAccount()
	testTwoAccounts(t, a, b)
}

// On Azurite, B is the emulator's account (the one swept) and A the
// in-memory one the program reads its entities from.
func TestLargeSweepTwoAccountsOnAzurite(t *testing.T) {
	a, _ := fakeAccount()
	b, err := connAccount(testenv.ConnectionString(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	testTwoAccounts(t, a, b)
}

func testTwoAccounts(t *testing.T, a, b *account) {
	ctx := t.Context()
	name, container := testenv.UniqueName("twoacct"), strings.ToLower(testenv.UniqueName("twoacct"))
	for _, acct := range []*account{a, b} {
		svc, _ := acct.tables()
		if _, err := svc.CreateTable(ctx, name, nil); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = svc.DeleteTable(context.Background(), name, nil) })
		bl, _ := acct.blobs()
		if _, err := bl.CreateContainer(ctx, container, nil); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = bl.DeleteContainer(context.Background(), container, nil) })
	}
	b.ledger.Reset()
	// B holds a healthy large entity: its entity names its blob.
	btc, _ := b.table(name)
	bbl, _ := b.blobs()
	le, err := patterns.NewLargeEntity[photo](tableOf(table.New[photo](btc, nil)), bbl, container, []string{"Photo"}, 1024, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := le.Put(ctx, &photo{Meta: table.Meta{PartitionKey: "emp", RowKey: "1"}, Photo: bytes.Repeat([]byte("x"), 4096)}, nil); err != nil {
		t.Fatal(err)
	}
	// The program's registration reads entities from A, its own account,
	// whatever client the command gives it.
	open := func(_ *aztables.Client, blobs blobstore.Client) (*patterns.LargeEntity[photo], error) {
		atc, _ := a.table(name)
		return patterns.NewLargeEntity[photo](tableOf(table.New[photo](atc, nil)), blobs, container, []string{"Photo"}, 1024, nil)
	}
	var out, errOut bytes.Buffer
	code := run(ctx, []string{"large", "sweep", "-large", "photos", "-grace", "0s", "-yes"}, &out, &errOut, func(string) string { return "" },
		func() (*account, error) { return b, nil }, nil, Large("photos", name, container, open))
	if _, err := le.Get(ctx, "emp", "1", nil); err != nil {
		t.Fatalf("the sweep of B (exit %d: %s%s) deleted B's named blob: %v", code, out.String(), errOut.String(), err)
	}
	if code != exitFailed || !strings.Contains(errOut.String(), "reads another account's entities") || b.ledger.Operation("blob", "DeleteBlob") != 0 {
		t.Errorf("exit %d, %d DeleteBlob: want a refusal naming the account mismatch and nothing deleted: %s%s", code, b.ledger.Operation("blob", "DeleteBlob"), out.String(), errOut.String())
	}
	// Built over the client it is given, the same registration sweeps B
	// and leaves its named blob.
	good := func(tc *aztables.Client, blobs blobstore.Client) (*patterns.LargeEntity[photo], error) {
		return patterns.NewLargeEntity[photo](tableOf(table.New[photo](tc, nil)), blobs, container, []string{"Photo"}, 1024, nil)
	}
	out.Reset()
	errOut.Reset()
	code = run(ctx, []string{"large", "sweep", "-large", "photos", "-grace", "0s", "-yes"}, &out, &errOut, func(string) string { return "" },
		func() (*account, error) { return b, nil }, nil, Large("photos", name, container, good))
	if _, err := le.Get(ctx, "emp", "1", nil); err != nil || code != exitOK || !strings.Contains(out.String(), "0 orphan blobs deleted") {
		t.Fatalf("sweep of B with B's entities: exit %d, %v: %s%s", code, err, out.String(), errOut.String())
	}
}
