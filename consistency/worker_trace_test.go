package consistency_test

import (
	"context"
	"errors"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/tracing"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/internal/trace"
)

// spansNamed returns the indexes of the spans named name, checking that
// each has the SDK's HTTP spans of its requests among its descendants.
func spansNamed(t *testing.T, spans []trace.Span, name string) []int {
	t.Helper()
	var out []int
	for i, s := range spans {
		if s.Name != name {
			continue
		}
		out = append(out, i)
		children := 0
		for _, c := range spans[i+1:] {
			p := c.Parent
			for p > i {
				p = spans[p].Parent
			}
			if p == i {
				children++
			}
		}
		if children == 0 || !s.Ended {
			t.Errorf("%s span %d %+v: %d children, ended %v; want the SDK's HTTP spans under it, ended", name, i, s, children, s.Ended)
		}
	}
	return out
}

func TestWorkerHandleSpans(t *testing.T) {
	var rec trace.Recorder
	svc := fake.NewQueueService(nil)
	qo := &azqueue.ClientOptions{}
	qo.TracingProvider = rec.Provider()
	q, p := svc.NewQueueClient("work", qo), svc.NewQueueClient("poison", qo)
	for _, c := range []*azqueue.QueueClient{q, p} {
		if _, err := c.Create(t.Context(), nil); err != nil {
			t.Fatal(err)
		}
	}
	s := consistency.NewSender(q, nil)
	if err := s.Send(t.Context(), "ok.v1", "a", 1, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Send(t.Context(), "fails.v1", "b", 2, nil); err != nil {
		t.Fatal(err)
	}
	w := consistency.NewWorker(q, p, &consistency.WorkerOptions{TracingProvider: rec.Provider(), Logger: quiet, MaxDequeues: 1})
	_ = w.Handle("ok.v1", func(context.Context, *consistency.Message) error { return nil })
	_ = w.Handle("fails.v1", func(context.Context, *consistency.Message) error { return errors.New("boom") })
	before := len(rec.Spans())
	if _, err := w.Drain(t.Context(), nil); err == nil {
		t.Fatal("Drain reported no failure; the fails.v1 handler failed")
	}
	spans := rec.Spans()
	got := map[string]trace.Span{}
	for _, i := range spansNamed(t, spans, "Worker.handle") {
		if i < before {
			continue
		}
		got[spans[i].Attributes[trace.AttrMessage].(string)+"/"+spans[i].Attributes["tablekit.disposition"].(string)] = spans[i]
	}
	ok, failed := got["ok.v1/processed"], got["fails.v1/retried"]
	if ok.Name == "" || ok.Status == tracing.SpanStatusError || ok.Attributes[trace.AttrOutcome] != "ok" || ok.Attributes[trace.AttrQueue] != "work" {
		t.Errorf("processed message's span %+v (all: %v): want ok, queue work", ok, got)
	}
	if failed.Name == "" || failed.Status != tracing.SpanStatusError || failed.Attributes[trace.AttrOutcome] != "error" {
		t.Errorf("failed message's span %+v (all: %v): want error status", failed, got)
	}
}
