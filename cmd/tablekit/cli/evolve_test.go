package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/table"
)

type evoStaff struct {
	table.Meta
	Email string
}

// evoModel is a model over the fakes whose email index is not built yet,
// 120 primaries stored, and the worker that serves its queue.
func evoModel(t *testing.T) (*patterns.Model[evoStaff], *consistency.Worker) {
	t.Helper()
	ctx := t.Context()
	tables, queues := fake.NewTableService(nil), fake.NewQueueService(nil)
	client := tables.NewClient("Staff", nil)
	if _, err := client.CreateTable(ctx, nil); err != nil {
		t.Fatal(err)
	}
	q, poison := queues.NewQueueClient("staff", nil), queues.NewQueueClient("staff-poison", nil)
	if _, err := q.Create(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := poison.Create(ctx, nil); err != nil {
		t.Fatal(err)
	}
	open := func(withEmail bool) *patterns.Model[evoStaff] {
		tbl, err := table.New[evoStaff](client, nil)
		if err != nil {
			t.Fatal(err)
		}
		o := &patterns.ModelOptions[evoStaff]{Name: "staff", Primary: "emp_", Queue: q, StateRefresh: 500 * time.Millisecond, RangeSize: 50}
		if withEmail {
			o.Copies = []patterns.IndexDef[evoStaff]{{Name: "email", Prefix: "email_", Unique: true, Value: func(s *evoStaff) string { return s.Email }}}
		}
		m, err := patterns.OpenModel(ctx, tbl, o)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	old := open(false)
	for i := range 120 {
		if err := old.Add(ctx, &evoStaff{Meta: table.Meta{PartitionKey: "Sales", RowKey: fmt.Sprintf("emp_%04d", i)}, Email: fmt.Sprintf("e%d@x", i)}, nil); err != nil {
			t.Fatal(err)
		}
	}
	m := open(true)
	w := consistency.NewWorker(q, poison, &consistency.WorkerOptions{Visibility: time.Second, Backoff: func(int64) time.Duration { return 0 },
		PollInterval: 20 * time.Millisecond, MaxPollInterval: 100 * time.Millisecond})
	if err := w.Handle(m.MessageType(), m.Process); err != nil {
		t.Fatal(err)
	}
	return m, w
}

func runEvolve(t *testing.T, m *patterns.Model[evoStaff], args ...string) (statusJSON, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(t.Context(), args, &out, &errOut, func(string) string { return "" }, nil, nil, Index("staff", m))
	var s statusJSON
	if code == exitOK && strings.HasPrefix(strings.TrimSpace(out.String()), "{") {
		dec := json.NewDecoder(&out)
		for dec.More() { // -watch: the last sample
			if err := dec.Decode(&s); err != nil {
				t.Fatalf("%v: %v", args, err)
			}
		}
		return s, errOut.String(), code
	}
	return s, out.String() + errOut.String(), code
}

func TestIndexBuildStatusPauseResume(t *testing.T) {
	m, w := evoModel(t)
	s, msg, code := runEvolve(t, m, "-json", "index", "build", "-index", "staff", "-name", "email")
	if code != exitOK || s.State != "building" || s.Build == "" {
		t.Fatalf("build: %d %+v %s", code, s, msg)
	}
	s, msg, code = runEvolve(t, m, "-json", "index", "pause", "-index", "staff", "-name", "email")
	if code != exitOK || !s.Paused {
		t.Fatalf("pause: %d %+v %s", code, s, msg)
	}
	// Paused: the planner and ranges wait, re-sent hidden.
	time.Sleep(1200 * time.Millisecond)
	if _, err := w.Drain(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	s, msg, code = runEvolve(t, m, "-json", "index", "status", "-index", "staff", "-name", "email")
	if code != exitOK || s.State != "building" || s.Entities != 0 {
		t.Fatalf("status while paused: %d %+v %s", code, s, msg)
	}
	s, msg, code = runEvolve(t, m, "-json", "index", "resume", "-index", "staff", "-name", "email")
	if code != exitOK || s.Paused {
		t.Fatalf("resume: %d %+v %s", code, s, msg)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			_, _ = w.Drain(t.Context(), nil)
			p, err := m.IndexStatus(t.Context(), "email", nil)
			if err != nil || p.State == patterns.IndexActive {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	s, msg, code = runEvolve(t, m, "-json", "index", "status", "-index", "staff", "-name", "email", "-watch", "-every", "100ms")
	<-done
	if code != exitOK || s.State != "active" || !s.Planned || s.Entities != 120 || s.Ranges != 3 || s.RangesDone != 3 || len(s.RangeList) != 3 {
		t.Fatalf("watch: %d %+v %s", code, s, msg)
	}
	_, text, code := runEvolve(t, m, "index", "status", "-index", "staff", "-name", "email", "-ranges")
	if code != exitOK || !strings.Contains(text, "email: active  ranges 3/3  entities 120/120") || strings.Count(text, " done ") != 3 {
		t.Fatalf("text status: %d\n%s", code, text)
	}
	r, err := m.Verify(t.Context(), nil)
	if err != nil || !r.OK() {
		t.Fatalf("Verify after the build: %v %+v", err, r)
	}
}

func TestIndexEvolutionUsage(t *testing.T) {
	m, _ := evoModel(t)
	for _, args := range [][]string{
		{"index", "build", "-index", "staff"},
		{"index", "build", "-name", "email"},
		{"index", "drop", "-index", "nope", "-name", "email"},
		{"index", "status", "-index", "staff", "-name", "email", "extra"},
	} {
		if _, msg, code := runEvolve(t, m, args...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d; %s", args, code, exitUsage, msg)
		}
	}
	if _, msg, code := runEvolve(t, m, "index", "build", "-index", "staff", "-name", "nope"); code != exitFailed || !strings.Contains(msg, "declares no index") {
		t.Errorf("build of an undeclared index: exit %d; %s", code, msg)
	}
}
