package integration

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/internal/reqcount"
)

// RunWorkerLatency runs the worker under a slow service: every Update
// Message (a renewal) is held for 3 s before it is sent, on the fake
// (virtual time) and on Azurite alike, since the delay is a pipeline
// policy of the queue client.
func RunWorkerLatency(t *testing.T, env Env) {
	const latency = 3 * time.Second

	t.Run("6 s visibility, 3 s renewal latency, 8 s handlers", func(t *testing.T) {
		t.Parallel()
		const vis = 6 * time.Second
		rec := inTime(env, t, func(t *testing.T) *latencyRecord {
			return latencyScenario(t, env, latencyCase{
				messages: 20, workers: 1, latency: latency, handler: 8 * time.Second,
				opts: consistency.WorkerOptions{Visibility: vis, Concurrency: 20},
			})
		})
		if rec == nil {
			t.FailNow()
		}
		t.Run("no message is handled twice", func(t *testing.T) {
			if slowest := rec.slowestRenewal(); slowest >= 2*vis/3 {
				// The machine added its own delay: a renewal reached the
				// queue after the visibility lapsed, and no worker can
				// prevent the second handling then. It must still be told.
				checkTold(t, rec)
				t.Skipf("not checked: a renewal took %v on this machine, over the %v (two thirds of the visibility) that let it arrive in time; the handlings that were taken over were told", slowest, 2*vis/3)
			}
			for key, hs := range rec.byKey() {
				if len(hs) != 1 {
					t.Errorf("message %s handled %d times", key, len(hs))
				}
			}
			if len(rec.byKey()) != 20 || rec.stats[0].Processed != 20 || rec.stats[0].ClaimsLost != 0 {
				t.Errorf("%d messages handled; stats %+v; want 20 processed, no claim lost", len(rec.byKey()), rec.stats[0])
			}
			for _, h := range rec.handlings {
				if !slices.ContainsFunc(rec.updates[h.id], func(r request) bool { return r.status == http.StatusNoContent }) {
					t.Errorf("message %s was never renewed", h.id)
				}
			}
		})
		// The timeline checks follow one claim: a message handled twice
		// (see above) has two, whose renewals may overlap.
		once := rec.handledOnce()
		t.Run("renewals of a message never overlap and each starts a third of the visibility after the previous answer", func(t *testing.T) {
			for id, us := range rec.updates {
				if !once[id] {
					continue
				}
				for i := 1; i < len(us); i++ {
					if us[i].start.Before(us[i-1].end) {
						t.Errorf("message %s: renewal %d started while renewal %d was in flight", id, i+1, i)
					} else if gap := us[i].start.Sub(us[i-1].end); gap < vis/3-50*time.Millisecond {
						t.Errorf("message %s: renewal %d started %v after the previous answer; want %v", id, i+1, gap, vis/3)
					}
				}
			}
		})
		t.Run("no renewal starts after its handler returned, and the delete is sent within 1 s of it", func(t *testing.T) {
			for _, h := range rec.handlings {
				if !once[h.id] {
					continue
				}
				for i, u := range rec.updates[h.id] {
					if u.startSeq > h.endSeq {
						t.Errorf("message %s: renewal %d started %v after its handler returned", h.id, i+1, u.start.Sub(h.end))
					}
				}
				ds := rec.deletes[h.id]
				if len(ds) != 1 {
					t.Errorf("message %s: %d deletes", h.id, len(ds))
					continue
				}
				if d := ds[0].start.Sub(h.end); d > time.Second {
					t.Errorf("message %s: delete sent %v after its handler returned", h.id, d)
				}
			}
		})
		t.Run("the worker warns once that renewals take over a quarter of the visibility", func(t *testing.T) {
			if n := rec.logs.count("latency"); n != 1 {
				t.Errorf("%d warnings about renewal latency; want 1", n)
			}
		})
	})

	t.Run("6 s visibility, renewals answered 2 s after the queue applied them", func(t *testing.T) {
		t.Parallel()
		// The handler returns while a renewal's answer, with the newest
		// receipt, is still on its way (renewals at 2 s and 6 s, answered
		// at 4 s and 8 s; the handler returns at 7 s): the delete with the
		// receipt before it is refused, and the worker must wait for that
		// answer and delete with its receipt rather than give the message
		// up.
		rec := inTime(env, t, func(t *testing.T) *latencyRecord {
			return latencyScenario(t, env, latencyCase{
				messages: 20, workers: 1, latency: 2 * time.Second, lateAnswers: true, handler: 7 * time.Second,
				opts: consistency.WorkerOptions{Visibility: 6 * time.Second, Concurrency: 20},
			})
		})
		if rec == nil {
			t.FailNow()
		}
		// Each renewal reaches the queue 2 s before the visibility lapses,
		// less the queue's own round trip.
		if slowest := rec.slowestRenewal(); slowest >= 2*time.Second {
			checkTold(t, rec)
			t.Skipf("not checked: the queue took %v to answer a renewal on this machine, over the 2 s margin each renewal has; the handlings that were taken over were told", slowest)
		}
		for key, hs := range rec.byKey() {
			if len(hs) != 1 || hs[0].cause != nil {
				t.Errorf("message %s handled %d times (first cancelled: %v)", key, len(hs), hs[0].cause)
			}
		}
		if st := rec.stats[0]; len(rec.byKey()) != 20 || st.Processed != 20 || st.ClaimsLost != 0 || st.Renewed < 20 {
			t.Errorf("%d messages handled; stats %+v; want 20 renewed and processed, no claim lost", len(rec.byKey()), st)
		}
		retried := 0
		for id, ds := range rec.deletes {
			if len(ds) == 0 || ds[len(ds)-1].status != http.StatusNoContent {
				t.Errorf("message %s: deletes %+v; want the last one answered 204", id, ds)
			}
			if len(ds) > 1 {
				retried++
			}
		}
		if retried == 0 {
			t.Errorf("no delete was refused for a receipt a renewal had replaced: the case did not happen")
		}
	})

	t.Run("3 s visibility, 3 s renewal latency, two workers", func(t *testing.T) {
		t.Parallel()
		rec := inTime(env, t, func(t *testing.T) *latencyRecord {
			return latencyScenario(t, env, latencyCase{
				messages: 20, workers: 2, latency: latency, handler: 8 * time.Second,
				opts: consistency.WorkerOptions{Visibility: 3 * time.Second, Concurrency: 20, MaxDequeues: 2},
			})
		})
		if rec == nil {
			t.FailNow()
		}
		t.Run("every handling whose claim another worker took is told, counted and logged once", func(t *testing.T) {
			if checkTold(t, rec) == 0 {
				t.Fatalf("no message was handled twice: the case did not happen")
			}
			// A claim is lost while its handler runs (the handler is told)
			// or, when the handler returned just as its visibility lapsed,
			// at the delete that follows: that handler cannot be told, and
			// the loss is counted and logged all the same. So per message
			// ID: the warnings are the handlings told plus at most the
			// handlings that returned untold, and Stats counts every one.
			told, untold := map[string]int{}, map[string]int{}
			for _, h := range rec.handlings {
				if h.cause != nil {
					told[h.id]++
				} else {
					untold[h.id]++
				}
			}
			perID := rec.logs.ids("claim")
			logged := 0
			for id, n := range perID {
				logged += n
				if n < told[id] || n > told[id]+untold[id] {
					t.Errorf("message %s: %d claim-lost warnings for %d handlings told and %d that returned untold", id, n, told[id], untold[id])
				}
			}
			for id, n := range told {
				if perID[id] == 0 {
					t.Errorf("message %s: %d lost claims told to handlers were not logged with its ID", id, n)
				}
			}
			var counted int64
			for _, st := range rec.stats {
				counted += st.ClaimsLost
			}
			if counted != int64(logged) {
				t.Errorf("Stats count %d lost claims; %d were logged", counted, logged)
			}
		})
	})
}

// checkTold checks that every handling of a message but its last (by
// start) had its context cancelled with consistency.ErrClaimLost, and
// returns how many messages were handled more than once.
func checkTold(t *testing.T, rec *latencyRecord) int {
	t.Helper()
	twice := 0
	for key, hs := range rec.byKey() {
		if len(hs) > 1 {
			twice++
		}
		for i, h := range hs[:len(hs)-1] {
			if !errors.Is(h.cause, consistency.ErrClaimLost) {
				t.Errorf("message %s: handling %d (worker %d) was taken over by handling %d and its context ended with %v, not ErrClaimLost", key, i+1, h.worker, i+2, h.cause)
			}
		}
	}
	return twice
}

// slowestRenewal is the longest round trip of an answered renewal.
func (r *latencyRecord) slowestRenewal() time.Duration {
	var d time.Duration
	for _, us := range r.updates {
		for _, u := range us {
			if u.status != 0 {
				d = max(d, u.end.Sub(u.start))
			}
		}
	}
	return d
}

// handledOnce is the set of message IDs whose handler ran once.
func (r *latencyRecord) handledOnce() map[string]bool {
	n := map[string]int{}
	for _, h := range r.handlings {
		n[h.id]++
	}
	out := map[string]bool{}
	for id, c := range n {
		out[id] = c == 1
	}
	return out
}

// latencyCase is one run of RunWorkerLatency: messages handled by workers
// whose renewals are held latency each, handlers that take handler (or
// return when their context ends). With lateAnswers, a renewal reaches the
// queue at once and its answer comes latency later instead.
type latencyCase struct {
	messages, workers int
	latency, handler  time.Duration
	lateAnswers       bool
	opts              consistency.WorkerOptions
}

// handling is one handler run.
type handling struct {
	key, id    string
	worker     int
	start, end time.Time
	endSeq     int64
	cause      error // the context's cause when the handler returned, nil if not cancelled
}

// latencyRecord is what a latencyCase did, for the checks.
type latencyRecord struct {
	handlings []handling
	updates   map[string][]request // renewals by message ID, in start order
	deletes   map[string][]request
	stats     []consistency.Stats
	logs      *recordedLogs
}

func (r *latencyRecord) byKey() map[string][]handling {
	out := map[string][]handling{}
	for _, h := range r.handlings {
		out[h.key] = append(out[h.key], h)
	}
	for _, hs := range out {
		slices.SortFunc(hs, func(a, b handling) int { return a.start.Compare(b.start) })
	}
	return out
}

// inTime runs f in virtual time on the fake (a synctest bubble, whose clock
// the fake's follows) and as it is on a real service.
func inTime[R any](env Env, t *testing.T, f func(t *testing.T) R) R {
	var r R
	if env.Name != "fake" {
		return f(t)
	}
	synctest.Test(t, func(t *testing.T) { r = f(t) })
	return r
}

func latencyScenario(t *testing.T, env Env, c latencyCase) *latencyRecord {
	ctx := t.Context()
	var seq atomic.Int64
	slow := &slowUpdates{delay: c.latency, seq: &seq, updates: map[string][]request{}, deletes: map[string][]request{}}
	q := env.NewQueue(t, &reqcount.Counter{Faults: slow})
	var wq consistency.Queue = q
	if c.lateAnswers {
		slow.delay = 0
		wq = lateAnswers{Queue: q, delay: c.latency}
	}
	poison := env.NewQueue(t, nil)
	sender := consistency.NewSender(q, nil)
	for i := range c.messages {
		if err := sender.Send(ctx, "slow.v1", fmt.Sprint("k", i), i, nil); err != nil {
			t.Fatal(err)
		}
	}
	rec := &latencyRecord{logs: &recordedLogs{}}
	var mu sync.Mutex
	var running atomic.Int64
	workers := make([]*consistency.Worker, c.workers)
	for i := range workers {
		opts := c.opts
		opts.PollInterval, opts.MaxPollInterval = 20*time.Millisecond, 100*time.Millisecond
		opts.Backoff = func(int64) time.Duration { return 0 }
		opts.Logger = slog.New(rec.logs)
		w := consistency.NewWorker(wq, poison, &opts)
		_ = w.Handle("slow.v1", func(ctx context0, m *consistency.Message) error {
			running.Add(1)
			defer running.Add(-1)
			h := handling{key: m.Key, id: m.ID, worker: i, start: time.Now()}
			var err error
			select {
			case <-time.After(c.handler):
			case <-ctx.Done():
				err = ctx.Err()
			}
			if ctx.Err() != nil {
				h.cause = context.Cause(ctx)
			}
			h.end, h.endSeq = time.Now(), seq.Add(1)
			mu.Lock()
			rec.handlings = append(rec.handlings, h)
			mu.Unlock()
			return err
		})
		workers[i] = w
	}
	// Run the workers until the queue is empty and no handler runs.
	rctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Add(1)
		go func() { defer wg.Done(); _ = w.Run(rctx, nil) }()
	}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		time.Sleep(250 * time.Millisecond)
		if running.Load() == 0 && queueLen(t, q) == 0 {
			break
		}
	}
	stop()
	wg.Wait()
	for _, w := range workers {
		rec.stats = append(rec.stats, w.Stats())
	}
	slow.mu.Lock()
	defer slow.mu.Unlock()
	rec.updates, rec.deletes = slow.updates, slow.deletes
	return rec
}

// lateAnswers delays the answer to every Update Message by delay after
// the queue applied it (a slow way back); a cancelled wait loses the
// answer, as a cancelled request would.
type lateAnswers struct {
	consistency.Queue
	delay time.Duration
}

func (q lateAnswers) UpdateMessage(ctx context0, id, pop, text string, o *azqueue.UpdateMessageOptions) (azqueue.UpdateMessageResponse, error) {
	resp, err := q.Queue.UpdateMessage(ctx, id, pop, text, o)
	select {
	case <-time.After(q.delay):
		return resp, err
	case <-ctx.Done():
		return azqueue.UpdateMessageResponse{}, ctx.Err()
	}
}

// request is one Update Message or Delete Message as the client saw it.
type request struct {
	start, end time.Time
	startSeq   int64
	status     int // 0 when no answer came (cancelled)
}

// slowUpdates is a per-attempt pipeline policy that holds every Update
// Message request for delay before sending it (a slow service: the update
// reaches it delay late), and records when each Update Message and Delete
// Message of a message started and was answered.
type slowUpdates struct {
	delay   time.Duration
	seq     *atomic.Int64
	mu      sync.Mutex
	updates map[string][]request
	deletes map[string][]request
}

func (s *slowUpdates) Do(req *policy.Request) (*http.Response, error) {
	raw := req.Raw()
	parts := strings.Split(strings.Trim(raw.URL.Path, "/"), "/")
	if len(parts) < 2 || parts[len(parts)-2] != "messages" || !raw.URL.Query().Has("popreceipt") {
		return req.Next()
	}
	id := parts[len(parts)-1]
	log := s.deletes
	if raw.Method == http.MethodPut {
		log = s.updates
	}
	r := request{start: time.Now(), startSeq: s.seq.Add(1)}
	var resp *http.Response
	var err error
	func() {
		if raw.Method == http.MethodPut {
			select {
			case <-time.After(s.delay):
			case <-raw.Context().Done():
				err = raw.Context().Err()
				return
			}
		}
		resp, err = req.Next()
	}()
	r.end = time.Now()
	if resp != nil {
		r.status = resp.StatusCode
	}
	s.mu.Lock()
	log[id] = append(log[id], r)
	slices.SortFunc(log[id], func(a, b request) int { return a.start.Compare(b.start) })
	s.mu.Unlock()
	return resp, err
}

// recordedLogs is a slog.Handler that keeps the Warn records: their
// message and their "id" attribute.
type recordedLogs struct {
	mu   sync.Mutex
	recs []struct{ msg, id string }
}

func (h *recordedLogs) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (h *recordedLogs) Handle(_ context.Context, r slog.Record) error {
	var id string
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "id" {
			id = a.Value.String()
		}
		return true
	})
	h.mu.Lock()
	h.recs = append(h.recs, struct{ msg, id string }{r.Message, id})
	h.mu.Unlock()
	return nil
}
func (h *recordedLogs) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *recordedLogs) WithGroup(string) slog.Handler      { return h }

// count is how many Warn records mention word.
func (h *recordedLogs) count(word string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, r := range h.recs {
		if strings.Contains(r.msg, word) {
			n++
		}
	}
	return n
}

// ids counts the Warn records that mention word, by their "id" attribute.
func (h *recordedLogs) ids(word string) map[string]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[string]int{}
	for _, r := range h.recs {
		if strings.Contains(r.msg, word) {
			out[r.id]++
		}
	}
	return out
}
