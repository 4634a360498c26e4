package fake_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/tablekit/tablekit/fake"
)

func TestRetryDelaysAreAVisibleOption(t *testing.T) {
	svc := fake.NewTableService(nil)
	if d, m := svc.RetryDelays(); d != time.Millisecond || m != 4*time.Millisecond {
		t.Fatalf("default delays %v, %v", d, m)
	}
	if _, err := svc.NewClient("delays", nil).CreateTable(t.Context(), nil); err != nil {
		t.Fatal(err)
	}

	// With the SDK's own delays the retry after a 503 waits far longer
	// than this context lasts: the one request is all the service sees.
	svc.SetRetryDelays(time.Hour, time.Hour)
	slow := svc.NewClient("delays", nil)
	svc.ResetCounts()
	svc.FailNext(fake.OpGetEntity, 1, http.StatusServiceUnavailable, "ServerBusy")
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if _, err := slow.GetEntity(ctx, "p", "r", nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want the context to end during the retry's wait, got %v", err)
	}
	if n := svc.Count(fake.OpGetEntity); n != 1 {
		t.Fatalf("%d requests, want 1", n)
	}

	// The default again: the SDK's retry comes at once and finds the entity missing.
	svc.SetRetryDelays(time.Millisecond, 4*time.Millisecond)
	fast := svc.NewClient("delays", nil)
	svc.ResetCounts()
	svc.FailNext(fake.OpGetEntity, 1, http.StatusServiceUnavailable, "ServerBusy")
	if _, err := fast.GetEntity(t.Context(), "p", "r", nil); err == nil {
		t.Fatal("found an entity that was never added")
	}
	if n := svc.Count(fake.OpGetEntity); n != 2 {
		t.Fatalf("%d requests, want 2 (the 503 and the SDK's retry)", n)
	}
	if d, m := (func() (time.Duration, time.Duration) { svc.SetRetryDelays(0, 0); return svc.RetryDelays() })(); d != 0 || m != 0 {
		t.Fatalf("SetRetryDelays(0, 0) left %v, %v", d, m)
	}
}
