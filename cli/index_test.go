package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/internal/testenv"
	"github.com/tablekit/tablekit/ledger"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/table"
)

// The index kinds with a per-partition Verify and Repair are Indexers.
var (
	_ Indexer = (*patterns.IntraPartitionIndex[member])(nil)
	_ Indexer = (*patterns.IndexEntities[member])(nil)
	_ Indexer = (*patterns.InterPartitionIndex[member])(nil)
	_ Indexer = (*patterns.EventualIndexEntities[member])(nil)
	_ Indexer = (*patterns.Model[member])(nil)
)

type member struct {
	table.Meta
	Email string
}

// damagedIndex is an email index over two partitions, each with one
// primary whose copy was lost.
func damagedIndex(t *testing.T, client *aztables.Client) *patterns.IntraPartitionIndex[member] {
	ctx := t.Context()
	idx, err := patterns.NewIntraPartitionIndex[member](client, "emp_", []patterns.IndexDef[member]{
		{Name: "email", Prefix: "email_", Unique: true, Value: func(m *member) string { return m.Email }},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, pk := range []string{"Sales", "HR"} {
		for _, id := range []string{"1", "2"} {
			if err := idx.Add(ctx, &member{Meta: table.Meta{PartitionKey: pk, RowKey: "emp_" + id}, Email: pk + id + "@x"}, nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := idx.Table().Entities().Delete(ctx, pk, "email_"+pk+"1@x", nil); err != nil {
			t.Fatal(err)
		}
	}
	return idx
}

// failOnce fails the first Repair of one partition, as a crash would.
type failOnce struct {
	Indexer
	partition string
	failed    bool
	verified  []string // the partitions verified, in order
}

func (f *failOnce) Verify(ctx context.Context, o *patterns.VerifyOptions) (*patterns.IndexReport, error) {
	f.verified = append(f.verified, o.Partition)
	return f.Indexer.Verify(ctx, o)
}

func (f *failOnce) Repair(ctx context.Context, r *patterns.IndexReport, o *patterns.RepairOptions) (patterns.RepairSummary, error) {
	if !f.failed && len(r.Missing) > 0 && r.Missing[0].PartitionKey == f.partition {
		f.failed = true
		return patterns.RepairSummary{}, errors.New("interrupted")
	}
	return f.Indexer.Repair(ctx, r, o)
}

func testIndex(t *testing.T, client *aztables.Client, l *ledger.Ledger) {
	idx := damagedIndex(t, client)
	flaky := &failOnce{Indexer: idx, partition: "HR"}
	tk := func(args ...string) (string, string, int) {
		var out, errOut bytes.Buffer
		l.Reset()
		code := run(t.Context(), args, &out, &errOut, func(string) string { return "" }, nil, l, Index("emails", flaky))
		return out.String(), errOut.String(), code
	}
	type result struct {
		Partitions []partitionResult
	}
	parse := func(out string) result {
		var r result
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		return r
	}

	out, errOut, code := tk("-json", "index", "verify", "-index", "emails", "-partition", "Sales", "-partition", "HR")
	if r := parse(out); code != exitProblems || len(r.Partitions) != 2 || len(r.Partitions[0].Missing) != 1 || len(r.Partitions[1].Missing) != 1 {
		t.Fatalf("verify: exit %d, %s%s", code, out, errOut)
	}
	ckpt := filepath.Join(t.TempDir(), "repair.ckpt")
	out, errOut, code = tk("-json", "index", "repair", "-index", "emails", "-partition", "Sales", "-partition", "HR", "-checkpoint", ckpt)
	if r := parse(out); code != exitProblems || r.Partitions[0].Repaired == nil || r.Partitions[0].Repaired.Written != 1 || r.Partitions[1].Error == "" {
		t.Fatalf("repair interrupted on HR: exit %d, %s%s", code, out, errOut)
	}
	if b, _ := os.ReadFile(ckpt); string(b) != "\"Sales\"\n" {
		t.Fatalf("checkpoint after the interruption: %q", b)
	}
	// The rerun skips Sales (not even verified) and repairs HR.
	flaky.verified = nil
	out, errOut, code = tk("-stats", "index", "repair", "-index", "emails", "-partition", "Sales", "-partition", "HR", "-checkpoint", ckpt)
	if code != exitOK || !strings.Contains(out, "Sales: skipped") || !strings.Contains(out, "HR: 2 primaries") || !strings.Contains(errOut, "total") {
		t.Fatalf("resumed repair: exit %d, %s%s", code, out, errOut)
	}
	if strings.Join(flaky.verified, ",") != "HR" {
		t.Errorf("the resumed run verified %q, want only HR", flaky.verified)
	}
	out, errOut, code = tk("index", "verify", "-index", "emails", "-partition", "Sales", "-partition", "HR")
	if code != exitOK || strings.Count(out, "0 missing, 0 orphans, 0 stale") != 2 {
		t.Fatalf("verify after repair: exit %d, %s%s", code, out, errOut)
	}
}

func TestIndexOnFake(t *testing.T) {
	l := ledger.New()
	o := &aztables.ClientOptions{}
	l.Attach(&o.ClientOptions, ledger.Table)
	svc := fake.NewTableService(nil)
	if _, err := svc.NewServiceClient(nil).CreateTable(t.Context(), "people", nil); err != nil {
		t.Fatal(err)
	}
	testIndex(t, svc.NewClient("people", o), l)
}

func TestIndexOnAzurite(t *testing.T) {
	conn := testenv.ConnectionString(t)
	l := ledger.New()
	o := &aztables.ClientOptions{}
	l.Attach(&o.ClientOptions, ledger.Table)
	svc, err := aztables.NewServiceClientFromConnectionString(conn, o)
	if err != nil {
		t.Fatal(err)
	}
	name := testenv.UniqueName("cliidx")
	if _, err := svc.CreateTable(t.Context(), name, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = svc.DeleteTable(context.Background(), name, nil) })
	testIndex(t, svc.NewClient(name), l)
}

func TestIndexUsage(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run(t.Context(), []string{"index", "verify", "-index", "emails", "-partition", "Sales"}, &out, &errOut, func(string) string { return "" }, nil, nil)
	if code != exitUsage || !strings.Contains(errOut.String(), "no index is registered") {
		t.Errorf("no index registered: exit %d, %s", code, errOut.String())
	}
	errOut.Reset()
	out.Reset()
	if code := run(t.Context(), []string{"index", "verify", "-help"}, &out, &errOut, func(string) string { return "" }, nil, nil); code != exitOK || !strings.Contains(out.String(), "registers no index") || !strings.Contains(out.String(), "examples:") {
		t.Errorf("index verify -help: exit %d, %s", code, out.String())
	}
	l := ledger.New()
	idx := Index("emails", &failOnce{})
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"index", "verify", "-partition", "Sales"}, "-index is required: one of emails"},
		{[]string{"index", "verify", "-index", "phones", "-partition", "Sales"}, `"phones" is not registered`},
		{[]string{"index", "repair", "-index", "emails"}, "at least one -partition"},
		{[]string{"index", "repair", "-index", "emails", "-partitions", "/nonexistent/file"}, "-partitions"},
	} {
		errOut.Reset()
		if code := run(t.Context(), c.args, &out, &errOut, func(string) string { return "" }, nil, l, idx); code != exitUsage || !strings.Contains(errOut.String(), c.says) {
			t.Errorf("%q: exit %d, want 2 saying %q: %s", c.args, code, c.says, errOut.String())
		}
	}
}

// TestIndexProgressOnATerminal runs the progress bar path: /dev/null is a
// character device, as a terminal is, so the bar is drawn (into nothing)
// and must finish and release the run, not hang it.
func TestIndexProgressOnATerminal(t *testing.T) {
	tty, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Skip(err)
	}
	defer tty.Close()
	svc := fake.NewTableService(nil)
	if _, err := svc.NewServiceClient(nil).CreateTable(t.Context(), "people", nil); err != nil {
		t.Fatal(err)
	}
	idx := damagedIndex(t, svc.NewClient("people", nil))
	c := &cli{errOut: tty}
	if p := c.progress(t.Context(), "verify", 2); p.bar == nil {
		t.Fatal("no bar on a character device")
	} else {
		p.step(time.Now())
		p.done()
	}
	var out bytes.Buffer
	code := run(t.Context(), []string{"index", "repair", "-index", "emails", "-partition", "Sales", "-partition", "HR"}, &out, tty, func(string) string { return "" }, nil, nil, Index("emails", idx))
	if code != exitOK || strings.Count(out.String(), "repaired: 1 written") != 2 {
		t.Fatalf("repair with a bar: exit %d, %s", code, out.String())
	}
	c.flags.json = true
	if p := c.progress(t.Context(), "verify", 2); p.bar != nil {
		t.Fatal("a bar with -json")
	}
}
