package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/internal/testenv"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/ledger"
)

// fakeAccount is an account on the in-memory services.
func fakeAccount() (*account, *fake.QueueService) {
	tables, queues, blobs := fake.NewTableService(nil), fake.NewQueueService(nil), fake.NewBlobService(nil)
	l := ledger.New()
	return &account{
		ledger: l,
		table: func(name string) (*aztables.Client, error) {
			return tables.NewClient(name, tableOptions(l)), nil
		},
		tables: func() (*aztables.ServiceClient, error) { return tables.NewServiceClient(tableOptions(l)), nil },
		queue: func(name string) (*azqueue.QueueClient, error) {
			o := &azqueue.ClientOptions{}
			l.Attach(&o.ClientOptions, ledger.Queue)
			return queues.NewQueueClient(name, o), nil
		},
		blobs: func() (*azblob.Client, error) {
			o := &azblob.ClientOptions{}
			l.Attach(&o.ClientOptions, ledger.Blob)
			return blobs.NewClient(o), nil
		},
	}, queues
}

// runner runs the CLI, in process on an account or as a built binary.
type runner func(t *testing.T, args ...string) (stdout, stderr string, code int)

func inProcess(a *account) runner {
	return func(t *testing.T, args ...string) (string, string, int) {
		if a != nil {
			a.ledger.Reset() // -stats is one run's requests, as in a process of its own
		}
		var out, errOut bytes.Buffer
		code := run(t.Context(), args, &out, &errOut, func(string) string { return "" }, func() (*account, error) { return a, nil }, nil)
		return out.String(), errOut.String(), code
	}
}

func TestKeysRoundTrip(t *testing.T) {
	tk := inProcess(nil)
	for _, c := range []struct {
		as   string
		args []string
		want string // the decoded reading
	}{
		{"inverted-ticks", []string{"2026-11-23T10:00:00.1234567Z"}, "2026-11-23T10:00:00.1234567Z"},
		{"ticks", []string{"1601-01-01T00:00:00Z"}, "1601-01-01T00:00:00Z"},
		{"int64", []string{"-42"}, "-42"},
		{"desc-int64", []string{"122"}, "122"},
		{"uint64", []string{"18446744073709551615"}, "18446744073709551615"},
		{"desc-uint64", []string{"7"}, "7"},
		{"tuple", []string{"Sales", "O'Brien", ""}, `["Sales","O'Brien",""]`},
		{"compound", []string{"Sales", "000123"}, `["Sales","000123"]`},
	} {
		out, errOut, code := tk(t, append([]string{"keys", "encode", "-as", c.as, "--"}, c.args...)...)
		if code != exitOK {
			t.Fatalf("encode -as %s %q: exit %d, %s", c.as, c.args, code, errOut)
		}
		key := strings.TrimSpace(out)
		out, errOut, code = tk(t, "-json", "keys", "decode", "-as", c.as, "--", key)
		if code != exitOK {
			t.Fatalf("decode -as %s %q: exit %d, %s", c.as, key, code, errOut)
		}
		var res struct{ Keys []decoded }
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatal(err)
		}
		got := res.Keys
		if len(got) != 1 || got[0].As[c.as] != c.want {
			t.Errorf("%s: %q decodes to %+v, want %q", c.as, key, got, c.want)
		}
	}
	// auto shows every reading that parses: 19 digits are ticks both ways.
	out, _, code := tk(t, "keys", "decode", keys.InvertedTicks(mustTime(t, "2026-11-23T10:00:00Z")))
	if code != exitOK || !strings.Contains(out, "inverted-ticks\t2026-11-23T10:00:00Z") || !strings.Contains(out, "\tticks\t") {
		t.Errorf("auto decode: exit %d, %q", code, out)
	}
}

func TestExitCodes(t *testing.T) {
	tk := inProcess(nil)
	for _, c := range []struct {
		args []string
		code int
		says string
	}{
		{nil, exitUsage, "commands:"},
		{[]string{"nonsense"}, exitUsage, "unknown command"},
		{[]string{"keys", "decode", "-help"}, exitOK, "examples:"},
		{[]string{"keys", "decode"}, exitUsage, "no key given"},
		{[]string{"keys", "decode", "-as", "roman", "x"}, exitUsage, `unknown -as "roman"`},
		{[]string{"keys", "decode", "-as", "ticks", "not-a-key"}, exitFailed, "not a key"},
		{[]string{"keys", "encode", "-as", "int64", "forty"}, exitUsage, "want a whole number"},
		{[]string{"keys", "encode", "-as", "ticks", "0000-12-31T23:59:59Z"}, exitFailed, "range"},
		// keys sends no request: an account flag would be ignored, so it is refused.
		{[]string{"keys", "decode", "-conn", "UseDevelopmentStorage=true", "1"}, exitUsage, "-conn"},
		{[]string{"-account", "prodacct", "keys", "decode", "1"}, exitUsage, "-conn and -account do not apply"},
		{[]string{"poison", "list"}, exitUsage, "-queue is required"},
		{[]string{"poison", "list", "-queue", "Bad_Name"}, exitUsage, "-queue"},
		{[]string{"poison", "purge", "-queue", "archive-poison", "extra"}, exitUsage, "unexpected arguments"},
		{[]string{"poison", "replay", "-queue", "archive-poison"}, exitUsage, "-work is required"},
	} {
		out, errOut, code := tk(t, c.args...)
		if code != c.code || !strings.Contains(out+errOut, c.says) {
			t.Errorf("tablekit %q: exit %d, want %d saying %q; got:\n%s%s", c.args, code, c.code, c.says, out, errOut)
		}
	}
}

func TestNoAccountIsAUsageError(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run(t.Context(), []string{"poison", "list", "-queue", "archive-poison"}, &out, &errOut, func(string) string { return "" }, nil, nil)
	if code != exitUsage || !strings.Contains(errOut.String(), "no account") {
		t.Errorf("exit %d: %s", code, errOut.String())
	}
}

// poisonSome makes a worker poison three messages of two types on the
// account's "work" queue, into "work-poison".
func poisonSome(t *testing.T, a *account) {
	t.Helper()
	ctx := t.Context()
	work, err := a.queue("work")
	if err != nil {
		t.Fatal(err)
	}
	poison, err := a.queue("work-poison")
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []*azqueue.QueueClient{work, poison} {
		if _, err := q.Create(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
	send := consistency.NewSender(work, nil)
	for _, k := range []string{"bill.v1/b1", "ship.v1/s1", "bill.v1/b2"} {
		typ, key, _ := strings.Cut(k, "/")
		if err := send.Send(ctx, typ, key, map[string]string{"k": key}, nil); err != nil {
			t.Fatal(err)
		}
	}
	w := consistency.NewWorker(work, poison, nil)
	for _, typ := range []string{"bill.v1", "ship.v1"} {
		if err := w.Handle(typ, func(context.Context, *consistency.Message) error {
			return consistency.Permanent(errors.New("refused by the billing service"))
		}); err != nil {
			t.Fatal(err)
		}
	}
	_, _ = w.Drain(ctx, nil) // every message fails on purpose
}

func testPoison(t *testing.T, tk runner, a *account) {
	poisonSome(t, a)
	out, errOut, code := tk(t, "poison", "list", "-queue", "work-poison")
	if code != exitOK || strings.Count(out, "refused by the billing service") != 3 || !strings.Contains(out, "about 3 in the queue") {
		t.Fatalf("list: exit %d (want 0: listing is what was asked)\n%s%s", code, out, errOut)
	}
	out, _, code = tk(t, "-json", "poison", "list", "-queue", "work-poison", "-type", "bill.v1")
	var listed struct {
		Messages []poisonRow
	}
	if err := json.Unmarshal([]byte(out), &listed); code != exitOK || err != nil || len(listed.Messages) != 2 || listed.Messages[0].Payload == "" {
		t.Fatalf("list -json -type bill.v1: %v, %q", err, out)
	}
	out, _, code = tk(t, "poison", "replay", "-queue", "work-poison", "-work", "work", "-type", "bill.v1", "-dry-run")
	if code != exitOK || !strings.Contains(out, "would replay 2, kept 1") {
		t.Fatalf("replay -dry-run: exit %d, %q", code, out)
	}
	out, errOut, code = tk(t, "-stats", "poison", "replay", "-queue", "work-poison", "-work", "work", "-type", "bill.v1")
	if code != exitOK || !strings.Contains(out, "replayed 2, kept 1") || !strings.Contains(errOut, "EnqueueMessage") {
		t.Fatalf("replay: exit %d, %q, stats %q", code, out, errOut)
	}
	// Purge without -yes lists what it would delete and deletes nothing.
	out, errOut, code = tk(t, "-stats", "-json", "poison", "purge", "-queue", "work-poison")
	var dry purgeOutput
	if err := json.Unmarshal([]byte(out), &dry); code != exitOK || err != nil || !dry.DryRun || len(dry.Purged) != 1 || dry.Kept != 0 || dry.Purged[0].Type != "ship.v1" {
		t.Fatalf("purge dry run: exit %d, %v, %s%s", code, err, out, errOut)
	}
	if strings.Contains(errOut, "DeleteMessage") || strings.Contains(errOut, "ClearMessages") {
		t.Fatalf("the purge dry run deleted: %s", errOut)
	}
	out, _, code = tk(t, "poison", "purge", "-queue", "work-poison", "-yes")
	if code != exitOK || !strings.Contains(out, "purged 1") || !strings.Contains(out, "purged "+dry.Purged[0].ID) {
		t.Fatalf("purge: exit %d, %q", code, out)
	}
	if out, _, code = tk(t, "poison", "list", "-queue", "work-poison"); code != exitOK {
		t.Fatalf("list after purge: exit %d, %q", code, out)
	}
	// The two replayed bills are on the work queue again, as first sent.
	work, _ := a.queue("work")
	got, err := work.PeekMessages(t.Context(), &azqueue.PeekMessagesOptions{NumberOfMessages: toPtr(int32(32))})
	if err != nil || len(got.Messages) != 2 {
		t.Fatalf("work queue after replay: %v, %d messages; want 2", err, len(got.Messages))
	}
}

func TestPoisonOnFake(t *testing.T) {
	a, _ := fakeAccount()
	testPoison(t, inProcess(a), a)
}

// TestBinaryOnAzurite builds the command and runs it as a user would,
// against Azurite.
func TestBinaryOnAzurite(t *testing.T) {
	conn := testenv.ConnectionString(t)
	bin := filepath.Join(t.TempDir(), "tablekit")
	build := exec.Command("go", append(append([]string{"build"}, testenv.BuildFlags()...), "-o", bin, "..")...)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	suffix := strings.ToLower(testenv.UniqueName("cli"))
	tk := func(t *testing.T, args ...string) (string, string, int) {
		// Queue names are unique per run; tests name them work, work-poison.
		for i, a := range args {
			if a == "work" || a == "work-poison" {
				args[i] = a + suffix
			}
		}
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "TABLEKIT_CONNECTION_STRING="+conn)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		return out.String(), errOut.String(), cmd.ProcessState.ExitCode()
	}
	a, err := connAccount(conn, nil)
	if err != nil {
		t.Fatal(err)
	}
	inner := a.queue
	a.queue = func(name string) (*azqueue.QueueClient, error) { return inner(name + suffix) }
	t.Cleanup(func() {
		for _, n := range []string{"work", "work-poison"} {
			if q, err := a.queue(n); err == nil {
				_, _ = q.Delete(context.Background(), nil)
			}
		}
	})
	testPoison(t, tk, a)
	testPeriods(t, tk, a)
	if out, _, code := tk(t, "keys", "encode", "-as", "tuple", "Sales", "000123"); code != exitOK || strings.TrimSpace(out) == "" {
		t.Errorf("keys encode: exit %d, %q", code, out)
	}
}

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func toPtr[T any](v T) *T { return &v }

// Help that is asked for goes to stdout with exit 0; a group name alone
// lists its commands; stats explains itself.
func TestHelpAndGroups(t *testing.T) {
	tk := inProcess(nil)
	for _, c := range []struct {
		args   []string
		code   int
		stdout string
	}{
		{[]string{"-help"}, exitOK, "commands:"},
		{[]string{"poison", "-help"}, exitOK, "poison replay"},
		{[]string{"keys"}, exitUsage, ""},
		{[]string{"stats", "-help"}, exitOK, "tablekit stats COMMAND"},
		{[]string{"keys", "decode", "-help"}, exitOK, "examples:"},
	} {
		out, errOut, code := tk(t, c.args...)
		if code != c.code || !strings.Contains(out, c.stdout) {
			t.Errorf("tablekit %q: exit %d, stdout %q (stderr %q); want exit %d and %q on stdout", c.args, code, out, errOut, c.code, c.stdout)
		}
	}
	if _, errOut, _ := tk(t, "keys"); !strings.Contains(errOut, "keys decode") {
		t.Errorf("tablekit keys: %q, want the group's commands on stderr", errOut)
	}
}

// A missing queue is one sentence, not the SDK's response dump, and JSON
// under -json.
func TestMissingQueueIsASentence(t *testing.T) {
	a, _ := fakeAccount()
	tk := inProcess(a)
	_, errOut, code := tk(t, "poison", "list", "-queue", "never-made")
	if code != exitFailed || !strings.Contains(errOut, "QueueNotFound") || strings.Contains(errOut, "RESPONSE") {
		t.Errorf("missing queue: exit %d, %q", code, errOut)
	}
	// stdout stays the command's own result; the error is JSON on stderr.
	_, errOut, code = tk(t, "-json", "poison", "list", "-queue", "never-made")
	var got struct{ Error, Code string }
	if err := json.Unmarshal([]byte(errOut), &got); code != exitFailed || err != nil || got.Code != "QueueNotFound" {
		t.Errorf("missing queue -json: exit %d, %q (%v)", code, errOut, err)
	}
}
