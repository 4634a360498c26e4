package integration

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/internal/reqclass"
	"github.com/tablekit/tablekit/internal/reqcount"
	"github.com/tablekit/tablekit/internal/svcanswer"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/table"
)

// failure is a way a request fails in RunRetries.
type failure int

const (
	failNone failure = iota
	// fail500 and fail503: the service answers 500 InternalError or 503
	// ServerBusy, which the SDK's retry policy retries.
	fail500
	fail503
	// failTimeout: the request gets no answer in time (a network timeout),
	// which the SDK retries too.
	failTimeout
	// failLost: the service does the request and its answer is lost; the
	// SDK retries, and the retry meets the first attempt's work.
	failLost
	// failInner503: a transaction's 202 answer names its operation as
	// throttled (503 ServerBusy): the SDK sees a 202 and cannot retry it.
	failInner503
)

// scriptedFaults fails the requests of chosen operations (by the ledger's
// names) one way, the first n of them or, with n < 0, every one. It sits
// after the counter, so every attempt the SDK makes is counted.
type scriptedFaults struct {
	svc  reqclass.Service // the service whose operation names ops are
	mu   sync.Mutex
	ops  map[string]bool
	kind failure
	n    int
}

func (s *scriptedFaults) set(kind failure, n int, ops ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.kind, s.n, s.ops = kind, n, map[string]bool{}
	for _, op := range ops {
		s.ops[op] = true
	}
}

// errTimedOut is what a read that timed out returns: a net.Error whose
// Timeout() is true, and not the caller's context ending.
var errTimedOut = &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}

func (s *scriptedFaults) Do(req *policy.Request) (*http.Response, error) {
	s.mu.Lock()
	kind := failNone
	if s.n != 0 && s.ops[reqclass.Classify(s.svc, req.Raw()).Operation] {
		kind = s.kind
		if s.n > 0 {
			s.n--
		}
	}
	s.mu.Unlock()
	status, code := 0, ""
	switch kind {
	case failNone:
		return req.Next()
	case fail500:
		status, code = http.StatusInternalServerError, "InternalError"
	case fail503:
		status, code = http.StatusServiceUnavailable, "ServerBusy"
	case failTimeout:
		return nil, errTimedOut
	case failLost:
		resp, err := req.Next()
		if err == nil {
			resp.Body.Close()
		}
		return nil, errTimedOut
	case failInner503:
		resp := innerThrottled(req.Raw())
		// Buffer the body as the pipeline does for a real answer, so the
		// SDK and tablekit can both read it.
		_, _ = runtime.Payload(resp)
		return resp, nil
	}
	body := []byte(`{"odata.error":{"code":"` + code + `","message":{"lang":"en-US","value":"scripted fault"}}}`)
	h := http.Header{}
	h.Set("Content-Type", "application/json;odata=minimalmetadata;streaming=true;charset=utf-8")
	h.Set("x-ms-error-code", code)
	return &http.Response{Status: strconv.Itoa(status) + " " + http.StatusText(status), StatusCode: status,
		Header: h, Request: req.Raw(), Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body))}, nil
}

// innerThrottled is the service's 202 answer to a transaction whose first
// operation was throttled.
func innerThrottled(req *http.Request) *http.Response {
	const bb, cb = "batchresponse_1", "changesetresponse_1"
	var b bytes.Buffer
	b.WriteString("--" + bb + "\r\nContent-Type: multipart/mixed; boundary=" + cb + "\r\n\r\n")
	b.WriteString("--" + cb + "\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n")
	b.WriteString("HTTP/1.1 503 Server Unavailable\r\nContent-ID: 1\r\nDataServiceVersion: 3.0;\r\nContent-Type: application/json;odata=minimalmetadata;charset=utf-8\r\n\r\n")
	b.WriteString(`{"odata.error":{"code":"ServerBusy","message":{"lang":"en-US","value":"0:The server is busy."}}}` + "\r\n")
	b.WriteString("--" + cb + "--\r\n--" + bb + "--\r\n")
	h := http.Header{}
	h.Set("Content-Type", "multipart/mixed; boundary="+bb)
	return &http.Response{Status: "202 Accepted", StatusCode: http.StatusAccepted, Header: h, Request: req,
		Body: io.NopCloser(bytes.NewReader(b.Bytes())), ContentLength: int64(b.Len())}
}

// RunRetries counts the requests that reach the service (every attempt,
// the SDK's retries included) when one call of table, batch, consistency
// or a pattern meets each
// kind of failure: 500, 503, a timeout, a lost response, 409 and 412. The
// rule: the SDK's retry policy is the only transport retry, so a call
// costs at most the SDK's tries per request it needs, plus the documented
// reads that settle an ambiguous answer, plus the documented rounds of an
// ETag loop; batch.Writer alone resends a transaction, and only when the
// failed operation inside its 202 answer was throttled, which the SDK
// cannot see.
func RunRetries(t *testing.T, env Env) {
	ctx := t.Context()
	faults := &scriptedFaults{svc: reqclass.Table}
	c := &reqcount.Counter{Faults: faults}
	client := env.NewTable(t, c)
	qfaults := &scriptedFaults{svc: reqclass.Queue}
	qc := &reqcount.Counter{Faults: qfaults}
	queue := env.NewQueue(t, qc)
	sender := consistency.NewSender(queue, nil)
	idx, err := patterns.OpenModel(ctx, tableOf(table.New[Staff](client, nil)), &patterns.ModelOptions[Staff]{Name: "idx", Primary: "empid_", Copies: staffIndexes()})
	if err != nil {
		t.Fatal(err)
	}
	tb, err := table.New[Employee](client, nil)
	if err != nil {
		t.Fatal(err)
	}
	staffSeq := 0
	newStaff := func() *Staff {
		staffSeq++
		id := strconv.Itoa(staffSeq)
		return staff("r"+id, "Ann", "Lee"+id, "ann"+id+"@contoso.com", 30)
	}
	writes := []string{"InsertEntity", "UpdateEntity", "MergeEntity"}

	// sdk is how many tries the SDK's policy makes on its own for one
	// request that keeps failing: MaxRetries+1.
	faults.set(fail500, -1, "GetEntity")
	c.Reset()
	if _, err := client.GetEntity(ctx, "probe", "probe", nil); err == nil {
		t.Fatal("the scripted 500 did not fail the SDK's GetEntity")
	}
	sdk := c.N()
	faults.set(failNone, 0)
	if sdk < 2 {
		t.Fatalf("the SDK tried a 500 %d times; the case needs retries on", sdk)
	}

	seq := 0
	fresh := func(name string) *Employee {
		seq++
		return &Employee{Meta: table.Meta{PartitionKey: "retries", RowKey: name + strconv.Itoa(seq)}, FirstName: name}
	}
	stored := func(t *testing.T, name string) *Employee {
		t.Helper()
		e := fresh(name)
		if err := tb.Add(ctx, e, nil); err != nil {
			t.Fatal(err)
		}
		return e
	}
	writer := func(opts *batch.WriterOptions) *batch.Writer {
		o := batch.WriterOptions{BaseDelay: time.Millisecond, MaxDelay: 2 * time.Millisecond}
		if opts != nil {
			o.MaxAttempts, o.IdempotentAdds = opts.MaxAttempts, opts.IdempotentAdds
		}
		return batch.NewWriter(client, &o)
	}
	write := func(w *batch.Writer, ops ...batch.Op) error {
		_, err := w.Write(ctx, slices.Values(ops), nil)
		return err
	}

	type call struct {
		name string
		// run prepares what it needs fault-free through prepare, then
		// makes the one call under test.
		run  func(t *testing.T, prepare func()) error
		want func(sdk int) int // the requests the call may send
		ok   bool              // the call ends well despite the failure
	}
	kinds := []struct {
		name  string
		kind  failure
		calls []call
	}{}
	for _, k := range []struct {
		name string
		kind failure
	}{{"500", fail500}, {"503", fail503}, {"timeout", failTimeout}} {
		persistent := func(ops ...string) func() { return func() { faults.set(k.kind, -1, ops...) } }
		kinds = append(kinds, struct {
			name  string
			kind  failure
			calls []call
		}{k.name, k.kind, []call{
			{name: "table Get", want: func(sdk int) int { return sdk }, run: func(t *testing.T, arm func()) error {
				e := stored(t, "get")
				persistent("GetEntity")()
				arm()
				_, err := tb.Get(ctx, e.PartitionKey, e.RowKey, nil)
				return err
			}},
			{name: "table Add", want: func(sdk int) int { return sdk }, run: func(t *testing.T, arm func()) error {
				persistent(writes...)()
				arm()
				return tb.Add(ctx, fresh("add"), nil)
			}},
			{name: "table Update", want: func(sdk int) int { return sdk }, run: func(t *testing.T, arm func()) error {
				e := stored(t, "update")
				persistent(writes...)()
				arm()
				return tb.Update(ctx, e, nil)
			}},
			// One read, then the write's tries; a 5xx is not a lost race.
			{name: "table Modify", want: func(sdk int) int { return 1 + sdk }, run: func(t *testing.T, arm func()) error {
				e := stored(t, "modify")
				persistent(writes...)()
				arm()
				_, err := tb.Modify(ctx, e.PartitionKey, e.RowKey, func(e *Employee) error { e.Age++; return nil }, nil)
				return err
			}},
			{name: "batch Submit", want: func(sdk int) int { return sdk }, run: func(t *testing.T, arm func()) error {
				persistent("Batch")()
				arm()
				_, err := batch.Submit(ctx, client, []batch.Op{batch.Add(fresh("submit"))}, nil)
				return err
			}},
			{name: "batch Writer", want: func(sdk int) int { return sdk }, run: func(t *testing.T, arm func()) error {
				persistent("Batch")()
				arm()
				return write(writer(nil), batch.Add(fresh("writer")))
			}},
			{name: "consistency Sender.Send", want: func(sdk int) int { return sdk }, run: func(t *testing.T, arm func()) error {
				qfaults.set(k.kind, -1, "EnqueueMessage")
				arm()
				return sender.Send(ctx, "retries.v1", "k", map[string]int{"n": 1}, nil)
			}},
			// One transaction: the entity and its index copies.
			{name: "patterns IntraPartitionIndex.Add", want: func(sdk int) int { return sdk }, run: func(t *testing.T, arm func()) error {
				persistent("Batch")()
				arm()
				return idx.Add(ctx, newStaff(), nil)
			}},
		}})
	}
	lostOnce := func(ops ...string) { faults.set(failLost, 1, ops...) }
	kinds = append(kinds, struct {
		name  string
		kind  failure
		calls []call
	}{"lost response", failLost, []call{
		{name: "table Get", want: func(int) int { return 2 }, ok: true, run: func(t *testing.T, arm func()) error {
			e := stored(t, "get")
			lostOnce("GetEntity")
			arm()
			_, err := tb.Get(ctx, e.PartitionKey, e.RowKey, nil)
			return err
		}},
		// The SDK's retry meets 409: an error without Idempotent ...
		{name: "table Add", want: func(int) int { return 2 }, run: func(t *testing.T, arm func()) error {
			lostOnce(writes...)
			arm()
			return tb.Add(ctx, fresh("add"), nil)
		}},
		// ... and one settling read with it.
		{name: "table Add Idempotent", want: func(int) int { return 2 + 1 }, ok: true, run: func(t *testing.T, arm func()) error {
			lostOnce(writes...)
			arm()
			return tb.Add(ctx, fresh("add"), &table.AddOptions{Idempotent: true})
		}},
		// The retry meets 412: the ETag moved on with the first attempt.
		{name: "table Update", want: func(int) int { return 2 }, run: func(t *testing.T, arm func()) error {
			e := stored(t, "update")
			lostOnce(writes...)
			arm()
			return tb.Update(ctx, e, nil)
		}},
		// Read, write (lost), its retry (412); the ETag loop's second
		// round: read, write.
		{name: "table Modify", want: func(int) int { return 5 }, ok: true, run: func(t *testing.T, arm func()) error {
			e := stored(t, "modify")
			lostOnce(writes...)
			arm()
			_, err := tb.Modify(ctx, e.PartitionKey, e.RowKey, func(e *Employee) error { e.FirstName = "set"; return nil }, nil)
			return err
		}},
		{name: "batch Submit", want: func(int) int { return 2 }, run: func(t *testing.T, arm func()) error {
			lostOnce("Batch")
			arm()
			_, err := batch.Submit(ctx, client, []batch.Op{batch.Add(fresh("submit"))}, nil)
			return err
		}},
		{name: "batch Writer", want: func(int) int { return 2 }, run: func(t *testing.T, arm func()) error {
			lostOnce("Batch")
			arm()
			return write(writer(nil), batch.Add(fresh("writer")))
		}},
		{name: "batch Writer IdempotentAdds", want: func(int) int { return 2 + 1 }, ok: true, run: func(t *testing.T, arm func()) error {
			lostOnce("Batch")
			arm()
			return write(writer(&batch.WriterOptions{IdempotentAdds: true}), batch.Add(fresh("writer")))
		}},
		// The SDK's retry enqueues the message a second time: delivery is
		// at least once, which the worker's idempotent handlers absorb.
		{name: "consistency Sender.Send", want: func(int) int { return 2 }, ok: true, run: func(t *testing.T, arm func()) error {
			qfaults.set(failLost, 1, "EnqueueMessage")
			arm()
			return sender.Send(ctx, "retries.v1", "k", map[string]int{"n": 1}, nil)
		}},
		{name: "patterns Model.Add Idempotent", want: func(int) int { return 2 + 1 }, ok: true, run: func(t *testing.T, arm func()) error {
			lostOnce("Batch")
			arm()
			return idx.Add(ctx, newStaff(), &table.AddOptions{Idempotent: true})
		}},
	}})
	kinds = append(kinds, struct {
		name  string
		kind  failure
		calls []call
	}{"409", failNone, []call{
		{name: "table Add", want: func(int) int { return 1 }, run: func(t *testing.T, arm func()) error {
			e := stored(t, "add")
			arm()
			return tb.Add(ctx, e, nil)
		}},
		{name: "table Add Idempotent, stored differently", want: func(int) int { return 1 + 1 }, run: func(t *testing.T, arm func()) error {
			e := stored(t, "add")
			arm()
			e.Age = 99
			return tb.Add(ctx, e, &table.AddOptions{Idempotent: true})
		}},
		{name: "batch Submit", want: func(int) int { return 1 }, run: func(t *testing.T, arm func()) error {
			e := stored(t, "submit")
			arm()
			_, err := batch.Submit(ctx, client, []batch.Op{batch.Add(e)}, nil)
			return err
		}},
		{name: "batch Writer", want: func(int) int { return 1 }, run: func(t *testing.T, arm func()) error {
			e := stored(t, "writer")
			arm()
			return write(writer(nil), batch.Add(e))
		}},
		{name: "batch Writer IdempotentAdds, stored differently", want: func(int) int { return 1 + 1 }, run: func(t *testing.T, arm func()) error {
			e := stored(t, "writer")
			arm()
			e.Age = 99
			return write(writer(&batch.WriterOptions{IdempotentAdds: true}), batch.Add(e))
		}},
	}})
	kinds = append(kinds, struct {
		name  string
		kind  failure
		calls []call
	}{"412", failNone, []call{
		{name: "table Update", want: func(int) int { return 1 }, run: func(t *testing.T, arm func()) error {
			e := stored(t, "update")
			e.ETag = staleETag(t, tb, e)
			arm()
			return tb.Update(ctx, e, nil)
		}},
		// Read; another writer's update (counted too); the write (412);
		// the loop's second round: read, write.
		{name: "table Modify", want: func(int) int { return 5 }, ok: true, run: func(t *testing.T, arm func()) error {
			e := stored(t, "modify")
			arm()
			raced := false
			_, err := tb.Modify(ctx, e.PartitionKey, e.RowKey, func(v *Employee) error {
				if !raced {
					raced = true
					other := *v
					other.LastName = "other writer"
					if err := tb.Update(ctx, &other, nil); err != nil {
						return err
					}
				}
				v.FirstName = "set"
				return nil
			}, nil)
			return err
		}},
		{name: "batch Submit", want: func(int) int { return 1 }, run: func(t *testing.T, arm func()) error {
			e := stored(t, "submit")
			e.ETag = staleETag(t, tb, e)
			arm()
			_, err := batch.Submit(ctx, client, []batch.Op{batch.Update(e, aztables.UpdateModeReplace)}, nil)
			return err
		}},
		{name: "batch Writer", want: func(int) int { return 1 }, run: func(t *testing.T, arm func()) error {
			e := stored(t, "writer")
			e.ETag = staleETag(t, tb, e)
			arm()
			return write(writer(nil), batch.Update(e, aztables.UpdateModeReplace))
		}},
	}})
	kinds = append(kinds, struct {
		name  string
		kind  failure
		calls []call
	}{"throttled inside a transaction", failInner503, []call{
		// The one resend tablekit makes: the SDK saw a 202.
		{name: "batch Submit", want: func(int) int { return 1 }, run: func(t *testing.T, arm func()) error {
			faults.set(failInner503, -1, "Batch")
			arm()
			_, err := batch.Submit(ctx, client, []batch.Op{batch.Add(fresh("submit"))}, nil)
			if !table.Is(err, table.ErrThrottled) || !table.IsRetryable(err) || svcanswer.StatusCode(err) != http.StatusServiceUnavailable {
				t.Errorf("an operation throttled inside a transaction: Is ErrThrottled %v, IsRetryable %v, StatusCode %d",
					table.Is(err, table.ErrThrottled), table.IsRetryable(err), svcanswer.StatusCode(err))
			}
			return err
		}},
		{name: "batch Writer MaxAttempts 3", want: func(int) int { return 3 }, run: func(t *testing.T, arm func()) error {
			faults.set(failInner503, -1, "Batch")
			arm()
			return write(writer(&batch.WriterOptions{MaxAttempts: 3}), batch.Add(fresh("writer")))
		}},
	}})

	for _, k := range kinds {
		for _, cl := range k.calls {
			t.Run(k.name+"/"+cl.name, func(t *testing.T) {
				faults.set(failNone, 0)
				qfaults.set(failNone, 0)
				defer faults.set(failNone, 0)
				defer qfaults.set(failNone, 0)
				err := cl.run(t, func() { c.Reset(); qc.Reset() })
				got, want := c.N()+qc.N(), cl.want(sdk)
				faults.set(failNone, 0)
				qfaults.set(failNone, 0)
				if cl.ok && err != nil {
					t.Errorf("failed: %v", err)
				}
				if !cl.ok && err == nil {
					t.Errorf("succeeded despite the %s", k.name)
				}
				if got != want {
					t.Errorf("%d requests sent (every attempt counted), want %d (the SDK tries a request %d times): %v", got, want, sdk, err)
				}
			})
		}
	}
	if errors.Is(ctx.Err(), context.Canceled) {
		t.Fatal("the test's context ended")
	}
}

// staleETag returns e's ETag as it was before another write moved it on.
func staleETag(t *testing.T, tb *table.Table[Employee], e *Employee) (old azcore.ETag) {
	t.Helper()
	old = e.ETag
	moved := *e
	moved.LastName = "moved on"
	if err := tb.Update(t.Context(), &moved, nil); err != nil {
		t.Fatal(err)
	}
	return old
}
