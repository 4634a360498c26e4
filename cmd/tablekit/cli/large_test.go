package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/consistency/blobstore"
	"github.com/tablekit/tablekit/internal/testenv"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/table"
)

type photo struct {
	table.Meta
	Photo []byte
}

// testLarge is an operator's session: one orphan blob (its entity deleted
// around tablekit) beside a named one. With a long grace both are left as
// too young, and the listing says so; the dry run (no -yes) lists the
// orphan and deletes nothing; -yes deletes it and lists it; a second
// sweep finds nothing. Every run exits 0: an orphan is not a failure.
func testLarge(t *testing.T, a *account) {
	ctx := t.Context()
	name, container := testenv.UniqueName("clilarge"), strings.ToLower(testenv.UniqueName("clilarge"))
	svc, err := a.tables()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.CreateTable(ctx, name, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = svc.DeleteTable(context.Background(), name, nil) })
	blobs, err := a.blobs()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := blobs.CreateContainer(ctx, container, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = blobs.DeleteContainer(context.Background(), container, nil) })
	open := func(tc *aztables.Client, b blobstore.Client) (*patterns.LargeEntity[photo], error) {
		return patterns.NewLargeEntity[photo](tableOf(table.New[photo](tc, nil)), b, container, []string{"Photo"}, 1024, nil)
	}
	tc, _ := a.table(name)
	le, err := patterns.NewLargeEntity[photo](tableOf(table.New[photo](tc, nil)), blobs, container, []string{"Photo"}, 1024, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, rk := range []string{"kept", "gone"} {
		if err := le.Put(ctx, &photo{Meta: table.Meta{PartitionKey: "emp", RowKey: rk}, Photo: bytes.Repeat([]byte("x"), 4096)}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tc.DeleteEntity(ctx, "emp", "gone", nil); err != nil {
		t.Fatal(err)
	}
	tk := func(args ...string) (string, string, int) {
		var out, errOut bytes.Buffer
		a.ledger.Reset()
		code := run(ctx, args, &out, &errOut, func(string) string { return "" }, func() (*account, error) { return a, nil }, nil, Large("photos", name, container, open))
		return out.String(), errOut.String(), code
	}
	var res largeOutput
	out, errOut, code := tk("large", "sweep", "-large", "photos", "-grace", "1h")
	if code != exitOK || !strings.Contains(out, "0 orphan blobs found, 2 left as too young") || strings.Count(out, ": younger than -grace") != 2 {
		t.Fatalf("dry run with a long grace: exit %d, %s%s", code, out, errOut)
	}
	out, errOut, code = tk("-json", "large", "sweep", "-large", "photos", "-grace", "0s")
	if code != exitOK || json.Unmarshal([]byte(out), &res) != nil || !res.DryRun || len(res.Deleted) != 1 || !strings.Contains(res.Deleted[0], "/lg/") {
		t.Fatalf("dry run: exit %d, %s%s", code, out, errOut)
	}
	if n := a.ledger.Operation("blob", "DeleteBlob"); n != 0 {
		t.Fatalf("the dry run sent %d DeleteBlob", n)
	}
	orphan := res.Deleted[0]
	out, errOut, code = tk("-stats", "-json", "large", "sweep", "-large", "photos", "-grace", "0s", "-yes")
	if code != exitOK || json.Unmarshal([]byte(out), &res) != nil || res.DryRun || len(res.Deleted) != 1 || res.Deleted[0] != orphan {
		t.Fatalf("sweep: exit %d, %s%s", code, out, errOut)
	}
	if n := a.ledger.Operation("blob", "DeleteBlob"); n != 1 { // the dry run's check counts the right thing
		t.Fatalf("the sweep sent %d DeleteBlob, want 1; %s", n, errOut)
	}
	out, errOut, code = tk("large", "sweep", "-large", "photos", "-grace", "0s", "-yes")
	if code != exitOK || !strings.Contains(out, "0 orphan blobs deleted") {
		t.Fatalf("second sweep: exit %d, %s%s", code, out, errOut)
	}
	if _, err := le.Get(ctx, "emp", "kept", nil); err != nil {
		t.Fatalf("the named blob was swept: %v", err)
	}
}

func TestLargeOnFake(t *testing.T) {
	a, _ := fakeAccount()
	testLarge(t, a)
}

func TestLargeOnAzurite(t *testing.T) {
	a, err := connAccount(testenv.ConnectionString(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	testLarge(t, a)
}

func TestLargeUsage(t *testing.T) {
	a, _ := fakeAccount()
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"large", "sweep", "-large", "photos"}, "no large entity is registered"},
	} {
		var out, errOut bytes.Buffer
		if code := run(t.Context(), c.args, &out, &errOut, func(string) string { return "" }, func() (*account, error) { return a, nil }, nil); code != exitUsage || !strings.Contains(errOut.String(), c.says) {
			t.Errorf("%q: exit %d, want 2 saying %q: %s", c.args, code, c.says, errOut.String())
		}
	}
	reg := Large("photos", "Employees", "photos", func(*aztables.Client, blobstore.Client) (*patterns.LargeEntity[photo], error) { return nil, nil })
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"large", "sweep", "-large", "videos"}, `-large "videos": want one of photos`},
		{[]string{"large", "sweep", "-large", "photos", "-grace", "-1s"}, "-grace"},
		{[]string{"large", "sweep", "-large", "photos", "-dry-run", "-yes"}, "contradict"},
	} {
		var out, errOut bytes.Buffer
		if code := run(t.Context(), c.args, &out, &errOut, func(string) string { return "" }, func() (*account, error) { return a, nil }, nil, reg); code != exitUsage || !strings.Contains(errOut.String(), c.says) {
			t.Errorf("%q: exit %d, want 2 saying %q: %s", c.args, code, c.says, errOut.String())
		}
	}
	if n := a.ledger.Total(); n != 0 {
		t.Errorf("usage errors sent %d requests", n)
	}
}

// TestLargeOpenReturningNothingFails: an open function that returns
// neither a large entity nor an error is a failure that names the
// registration, before any blob is read (a nil *LargeEntity would
// otherwise pass for one).
func TestLargeOpenReturningNothingFails(t *testing.T) {
	a, _ := fakeAccount()
	var out, errOut bytes.Buffer
	reg := Large("photos", "Employees", "photos", func(*aztables.Client, blobstore.Client) (*patterns.LargeEntity[photo], error) { return nil, nil })
	code := run(t.Context(), []string{"large", "sweep", "-large", "photos", "-grace", "0s", "-yes"}, &out, &errOut, func(string) string { return "" },
		func() (*account, error) { return a, nil }, nil, reg)
	if code != exitFailed || !strings.Contains(errOut.String(), "-large photos: its open function returned no large entity") {
		t.Fatalf("exit %d: %s%s; want a failure naming the registration", code, out.String(), errOut.String())
	}
	if n := a.ledger.Operation("blob", "ListBlobs") + a.ledger.Operation("blob", "DeleteBlob"); n != 0 {
		t.Fatalf("%d blob requests; want none", n)
	}
}
