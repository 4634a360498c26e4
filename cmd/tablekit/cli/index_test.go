package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/internal/testenv"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/table"
)

// memIndex is an in-memory verifier: per partition, the index
// rows that are missing, orphaned or stale. Verify of one partition
// reports that partition; of "" every partition. Repair fixes what its
// report names. It counts its calls, so tests can prove what ran.
type memIndex struct {
	mu       sync.Mutex
	name     string
	missing  map[string][]string // partition -> copy RowKeys missing
	orphans  map[string][]string
	stale    map[string][]string
	verified []string // the scopes verified, in order
	repairs  int
	// failRepairOf fails the first Repair of that partition, as a crash would.
	failRepairOf string
}

var _ verifier = (*memIndex)(nil)

// damaged has one missing copy in Sales and HR, and an orphan in Ops, a
// partition with no primary left.
func damaged() *memIndex {
	return &memIndex{name: "emails",
		missing: map[string][]string{"Sales": {"email_s1"}, "HR": {"email_h1"}},
		orphans: map[string][]string{"Ops": {"email_o9"}},
		stale:   map[string][]string{}}
}

// issues are the issues of partition p, in the order Verify finds them.
func (m *memIndex) issues(p string) []patterns.IndexIssue {
	var out []patterns.IndexIssue
	for _, rk := range m.missing[p] {
		out = append(out, patterns.IndexIssue{Kind: patterns.IssueMissing, Index: m.name, PartitionKey: p, PrimaryPartitionKey: p, Primary: "emp_" + rk[len(rk)-2:], Copy: rk})
	}
	for _, rk := range m.orphans[p] {
		out = append(out, patterns.IndexIssue{Kind: patterns.IssueOrphan, Index: m.name, PartitionKey: p, Copy: rk})
	}
	for _, rk := range m.stale[p] {
		out = append(out, patterns.IndexIssue{Kind: patterns.IssueStale, Index: m.name, PartitionKey: p, PrimaryPartitionKey: p, Primary: "emp_x", Copy: rk})
	}
	return out
}

// scope streams the issues of o's scope to o.Issue and sums them up,
// repairing each partition after it when fix is set.
func (m *memIndex) scope(o *patterns.VerifyOptions, fix func(p string, is []patterns.IndexIssue, sum *patterns.RepairSummary) error) (patterns.RepairSummary, error) {
	var opts patterns.VerifyOptions
	if o != nil {
		opts = *o
	}
	m.verified = append(m.verified, opts.Partition)
	sum := patterns.RepairSummary{VerifySummary: patterns.VerifySummary{Partition: opts.Partition}}
	ps := []string{opts.Partition}
	if opts.Partition == "" {
		ps = []string{"HR", "Ops", "Sales"}
	}
	for _, p := range ps {
		is := m.issues(p)
		sum.Primaries += 2
		sum.IndexRows += 2 - len(m.missing[p]) + len(m.orphans[p])
		for _, i := range is {
			switch i.Kind {
			case patterns.IssueMissing:
				sum.Missing++
			case patterns.IssueOrphan:
				sum.Orphans++
			case patterns.IssueStale:
				sum.Stale++
			}
			if opts.Issue != nil {
				if err := opts.Issue(i); err != nil {
					return sum, err
				}
			}
		}
		if fix != nil && len(is) > 0 {
			if err := fix(p, is, &sum); err != nil {
				return sum, err
			}
		}
	}
	return sum, nil
}

func (m *memIndex) Verify(ctx context.Context, o *patterns.VerifyOptions) (patterns.VerifySummary, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	sum, err := m.scope(o, nil)
	return sum.VerifySummary, err
}

func (m *memIndex) Repair(ctx context.Context, o *patterns.RepairOptions) (patterns.RepairSummary, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var vo *patterns.VerifyOptions
	if o != nil {
		vo = &o.VerifyOptions
	}
	return m.scope(vo, func(p string, is []patterns.IndexIssue, sum *patterns.RepairSummary) error {
		if m.failRepairOf != "" && p == m.failRepairOf {
			m.failRepairOf = ""
			return errors.New("interrupted")
		}
		m.repairs++
		for _, i := range is {
			if i.Kind == patterns.IssueOrphan {
				sum.Deleted++
			} else {
				sum.Written++
			}
			for _, rows := range []map[string][]string{m.missing, m.stale, m.orphans} {
				rows[p] = slices.DeleteFunc(rows[p], func(s string) bool { return s == i.Copy })
			}
		}
		sum.Transactions++
		return nil
	})
}

// runIndex runs the CLI with idx registered as "emails".
func runIndex(t *testing.T, idx verifier, args ...string) (string, string, int) {
	var out, errOut bytes.Buffer
	code := run(t.Context(), args, &out, &errOut, func(string) string { return "" }, nil, nil, indexOf("emails", idx))
	return out.String(), errOut.String(), code
}

// jsonLines is the -json output of an index command: its issue lines and
// its summary lines, in order.
type jsonLines struct {
	issues    []issueLine
	summaries []summaryLine
}

func parseIndex(t *testing.T, out string) jsonLines {
	t.Helper()
	var r jsonLines
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var probe map[string]json.RawMessage
		if err := json.Unmarshal([]byte(l), &probe); err != nil {
			t.Fatalf("%v: %q in %s", err, l, out)
		}
		if _, ok := probe["issue"]; ok {
			var i issueLine
			if err := json.Unmarshal([]byte(l), &i); err != nil {
				t.Fatal(err)
			}
			r.issues = append(r.issues, i)
			continue
		}
		var sl summaryLine
		if err := json.Unmarshal([]byte(l), &sl); err != nil {
			t.Fatal(err)
		}
		r.summaries = append(r.summaries, sl)
	}
	return r
}

// An operator's session: verify the whole table and partitions (exit 3
// on findings), look at the repair's dry run (nothing changes), repair
// with -yes (each change listed), verify again (exit 0).
func TestIndexVerifyAndRepair(t *testing.T) {
	idx := damaged()
	out, errOut, code := runIndex(t, idx, "-json", "index", "verify", "-index", "emails")
	r := parseIndex(t, out)
	if code != exitFindings || len(r.summaries) != 1 || r.summaries[0].Partition != "" || r.summaries[0].Summary.Missing != 2 || r.summaries[0].Summary.Orphans != 1 || len(r.issues) != 3 {
		t.Fatalf("whole-table verify: exit %d, %s%s", code, out, errOut)
	}
	// One line per issue, as found, then the summary: the last line.
	if i := r.issues[0]; i.Partition != "" || i.Issue.Kind != patterns.IssueMissing || i.Issue.PartitionKey != "HR" || i.Issue.Copy != "email_h1" || i.Issue.PrimaryPartitionKey != "HR" || i.Issue.Primary != "emp_h1" {
		t.Fatalf("first issue line: %+v", i)
	}
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 4 || !strings.Contains(lines[3], `"summary"`) {
		t.Fatalf("verify's lines: %q; want three issues, then the summary", lines)
	}
	if strings.Contains(out, `"PartitionKey"`) || !strings.Contains(out, `"partitionKey"`) {
		t.Errorf("-json keys are not lowerCamelCase: %s", out)
	}
	out, errOut, code = runIndex(t, idx, "index", "verify", "-index", "emails", "-partition", "Sales", "-partition", "HR")
	if code != exitFindings || !strings.Contains(out, "Sales: missing emails row Sales/email_s1 (of Sales/emp_s1)\nSales: 2 primaries, 1 index rows; 1 missing") || !strings.Contains(out, "HR: 2 primaries") {
		t.Fatalf("partition verify: exit %d, %s%s", code, out, errOut)
	}
	// The dry run lists each row it would write and delete; nothing changes.
	out, errOut, code = runIndex(t, idx, "index", "repair", "-index", "emails")
	for _, want := range []string{"write missing emails row Sales/email_s1", "write missing emails row HR/email_h1", "delete orphan emails row Ops/email_o9", "(whole table): would write 2 and delete 1"} {
		if !strings.Contains(out, want) {
			t.Errorf("repair dry run does not say %q:\n%s", want, out)
		}
	}
	if code != exitOK || !strings.Contains(errOut, "add -yes") || idx.repairs != 0 {
		t.Fatalf("repair dry run: exit %d, %d repairs; %s%s", code, idx.repairs, out, errOut)
	}
	out, errOut, code = runIndex(t, idx, "-json", "index", "repair", "-index", "emails", "-yes")
	r = parseIndex(t, out)
	if rp := r.summaries[0].Repair; code != exitOK || rp == nil || rp.DryRun || rp.Written != 2 || rp.Deleted != 1 || len(r.issues) != 3 {
		t.Fatalf("repair -yes: exit %d, %s%s", code, out, errOut)
	}
	out, errOut, code = runIndex(t, idx, "index", "verify", "-index", "emails")
	if code != exitOK || out != "(whole table): 6 primaries, 6 index rows; 0 missing, 0 orphans, 0 stale\n" {
		t.Fatalf("verify after repair: exit %d, %s%s", code, out, errOut)
	}
}

// A repair interrupted on one partition records the others in its
// checkpoint; the rerun skips them (not even verified) and finishes.
func TestIndexRepairCheckpoint(t *testing.T) {
	idx := damaged()
	idx.failRepairOf = "HR"
	ckpt := filepath.Join(t.TempDir(), "repair.ckpt")
	out, errOut, code := runIndex(t, idx, "-json", "index", "repair", "-index", "emails", "-partition", "Sales", "-partition", "HR", "-checkpoint", ckpt, "-yes")
	r := parseIndex(t, out)
	if code != exitFailed || len(r.summaries) != 2 || r.summaries[0].Repair == nil || r.summaries[0].Repair.Written != 1 || r.summaries[1].Error == "" {
		t.Fatalf("repair interrupted on HR: exit %d, %s%s", code, out, errOut)
	}
	if b, _ := os.ReadFile(ckpt); string(b) != "\"Sales\"\n" {
		t.Fatalf("checkpoint after the interruption: %q", b)
	}
	idx.verified = nil
	out, errOut, code = runIndex(t, idx, "index", "repair", "-index", "emails", "-partition", "Sales", "-partition", "HR", "-checkpoint", ckpt, "-yes")
	if code != exitOK || !strings.Contains(out, "Sales: skipped") || !strings.Contains(out, "HR: repair missing emails row HR/email_h1") || !strings.Contains(out, "HR: repaired: 1 written, 0 deleted in 1 transactions") {
		t.Fatalf("resumed repair: exit %d, %s%s", code, out, errOut)
	}
	if strings.Join(idx.verified, ",") != "HR" {
		t.Errorf("the resumed run verified %q, want only HR", idx.verified)
	}
}

// The index commands use the program's clients: -conn and -account,
// before or after the command, are refused before any Verify, as are the
// other mistakes.
func TestIndexUsage(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run(t.Context(), []string{"index", "verify", "-index", "emails", "-partition", "Sales"}, &out, &errOut, func(string) string { return "" }, nil, nil)
	if code != exitUsage || !strings.Contains(errOut.String(), "no index is registered") {
		t.Errorf("no index registered: exit %d, %s", code, errOut.String())
	}
	out.Reset()
	if code := run(t.Context(), []string{"index", "verify", "-help"}, &out, &errOut, func(string) string { return "" }, nil, nil); code != exitOK || !strings.Contains(out.String(), "registers no index") || !strings.Contains(out.String(), "examples:") {
		t.Errorf("index verify -help: exit %d, %s", code, out.String())
	}
	idx := damaged()
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"index", "verify", "-partition", "Sales"}, "-index is required: one of emails"},
		{[]string{"index", "verify", "-index", "phones", "-partition", "Sales"}, `"phones" is not registered`},
		{[]string{"index", "repair", "-index", "emails", "-partitions", "/nonexistent/file"}, "-partitions"},
		{[]string{"index", "repair", "-index", "emails", "-checkpoint", "x.ckpt"}, "-checkpoint records repairs: it needs -yes"},
		{[]string{"index", "verify", "-index", "emails", "-conn", "UseDevelopmentStorage=true"}, "flag provided but not defined: -conn"},
		{[]string{"index", "repair", "-index", "emails", "-account", "prodacct", "-yes"}, "flag provided but not defined: -account"},
		{[]string{"-account", "prodacct", "index", "verify", "-index", "emails"}, "the index reads and writes through the clients the program registered it with"},
		{[]string{"-conn", "UseDevelopmentStorage=true", "index", "repair", "-index", "emails", "-yes"}, "-conn and -account do not apply"},
	} {
		out, errOut, code := runIndex(t, idx, c.args...)
		if code != exitUsage || !strings.Contains(errOut, c.says) {
			t.Errorf("%q: exit %d, want 2 saying %q: %s%s", c.args, code, c.says, out, errOut)
		}
	}
	if len(idx.verified) != 0 || idx.repairs != 0 {
		t.Errorf("usage errors ran %d verifies and %d repairs", len(idx.verified), idx.repairs)
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
	c := &cli{errOut: tty}
	if p := c.progress(t.Context(), "verify", 2); p.bar == nil {
		t.Fatal("no bar on a character device")
	} else {
		p.step(time.Now())
		p.done()
	}
	var out bytes.Buffer
	code := run(t.Context(), []string{"index", "repair", "-index", "emails", "-partition", "Sales", "-partition", "HR", "-yes"}, &out, tty, func(string) string { return "" }, nil, nil, indexOf("emails", damaged()))
	if code != exitOK || strings.Count(out.String(), ": repaired: 1 written") != 2 {
		t.Fatalf("repair with a bar: exit %d, %s", code, out.String())
	}
	c.flags.json = true
	if p := c.progress(t.Context(), "verify", 2); p.bar != nil {
		t.Fatal("a bar with -json")
	}
}

// The entity model fits the index commands.
var _ verifier = (*patterns.Model[member])(nil)

type member struct {
	table.Meta
	Email string
}

// testRealIndex runs the operator's session on a real index over a
// table: two partitions, each with one primary whose copy was lost.
func testRealIndex(t *testing.T, client *aztables.Client) {
	ctx := t.Context()
	idx, err := patterns.OpenModel(ctx, tableOf(table.New[member](client, nil)), &patterns.ModelOptions[member]{Name: "members", Primary: "emp_", Copies: []patterns.IndexDef[member]{
		{Name: "email", Prefix: "email_", Unique: true, Value: func(m *member) string { return m.Email }},
	}})
	if err != nil {
		t.Fatal(err)
	}
	for _, pk := range []string{"Sales", "HR"} {
		for _, id := range []string{"1", "2"} {
			if err := idx.Add(ctx, &member{Meta: table.Meta{PartitionKey: pk, RowKey: "emp_" + id}, Email: pk + id + "@x"}, nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := tableOf(table.New[table.Entity](client, nil)).Delete(ctx, pk, "email_"+pk+"1@x", nil); err != nil {
			t.Fatal(err)
		}
	}
	out, errOut, code := runIndex(t, idx, "index", "verify", "-index", "emails")
	if code != exitFindings || !strings.Contains(out, "2 missing") {
		t.Fatalf("verify: exit %d, %s%s", code, out, errOut)
	}
	out, errOut, code = runIndex(t, idx, "index", "repair", "-index", "emails", "-partition", "Sales", "-partition", "HR")
	if code != exitOK || strings.Count(out, "write missing email row") != 2 {
		t.Fatalf("repair dry run: exit %d, %s%s", code, out, errOut)
	}
	if out, _, code = runIndex(t, idx, "index", "verify", "-index", "emails"); code != exitFindings {
		t.Fatalf("the dry run repaired: exit %d, %s", code, out)
	}
	out, errOut, code = runIndex(t, idx, "index", "repair", "-index", "emails", "-partition", "Sales", "-partition", "HR", "-yes")
	if code != exitOK || strings.Count(out, "repair missing email row") != 2 || strings.Count(out, "repaired: 1 written") != 2 {
		t.Fatalf("repair: exit %d, %s%s", code, out, errOut)
	}
	if out, errOut, code = runIndex(t, idx, "index", "verify", "-index", "emails"); code != exitOK {
		t.Fatalf("verify after repair: exit %d, %s%s", code, out, errOut)
	}
}

func TestRealIndexOnFake(t *testing.T) {
	svc := fake.NewTableService(nil)
	if _, err := svc.NewServiceClient(nil).CreateTable(t.Context(), "people", nil); err != nil {
		t.Fatal(err)
	}
	testRealIndex(t, svc.NewClient("people", nil))
}

func TestRealIndexOnAzurite(t *testing.T) {
	svc := testenv.TableService(t)
	name := testenv.UniqueName("cliidx")
	if _, err := svc.CreateTable(t.Context(), name, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = svc.DeleteTable(context.Background(), name, nil) })
	testRealIndex(t, svc.NewClient(name))
}
