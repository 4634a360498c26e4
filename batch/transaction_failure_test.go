package batch_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/internal/svcanswer"
	"github.com/tablekit/tablekit/table"
)

// fourEvents is one transaction of four adds on partition "p".
func fourEvents() []batch.Op {
	return []batch.Op{batch.Add(ev("p", 1)), batch.Add(ev("p", 2)), batch.Add(ev("p", 3)), batch.Add(ev("p", 4))}
}

// A failed operation of any status class is attributed to its index: the
// TransactionError names it, its status and code (not the 202 of the
// envelope), the service's message without the index prefix and RequestId
// lines, and classifies by that status.
func TestTransactionFailureNamesTheFailedOperation(t *testing.T) {
	for _, c := range []struct {
		status int
		code   string
		class  error
	}{
		{http.StatusBadRequest, "InvalidInput", table.ErrBadRequest},
		{http.StatusNotFound, "ResourceNotFound", table.ErrNotFound},
		{http.StatusConflict, "EntityAlreadyExists", table.ErrAlreadyExists},
		{http.StatusPreconditionFailed, "UpdateConditionNotSatisfied", table.ErrPreconditionFailed},
		{http.StatusRequestEntityTooLarge, "EntityTooLarge", nil},
	} {
		svc, client := newFake(t, nil)
		svc.FailTransactionOperation(2, 1, c.status, c.code)
		ops := fourEvents()
		_, err := batch.Submit(t.Context(), client, ops, nil)
		var te *batch.TransactionError
		if !errors.As(err, &te) {
			t.Fatalf("%d: %v is not a *TransactionError", c.status, err)
		}
		msg := "The operation failed: " + http.StatusText(c.status) + "."
		if te.Index != 2 || te.Op.Kind != batch.KindAdd || te.Op.RowKey() != ops[2].RowKey() || te.Op.PartitionKey() != "p" ||
			te.StatusCode != c.status || te.ErrorCode != c.code || te.Message != msg {
			t.Fatalf("%d: %+v, want operation 2, %d %s %q", c.status, te, c.status, c.code, msg)
		}
		want := fmt.Sprintf("batch: transaction failed at operation 2 (Add \"p\"/%q): %d %s: %s", ops[2].RowKey(), c.status, c.code, msg)
		if te.Error() != want {
			t.Fatalf("Error() = %q\nwant      %q", te.Error(), want)
		}
		if s, code := te.OperationStatus(); s != c.status || code != c.code {
			t.Fatalf("%d: OperationStatus %d %s", c.status, s, code)
		}
		if svcanswer.StatusCode(err) != c.status || svcanswer.ErrorCode(err) != c.code {
			t.Fatalf("%d: StatusCode %d, ErrorCode %q", c.status, svcanswer.StatusCode(err), svcanswer.ErrorCode(err))
		}
		if c.class != nil && !errors.Is(err, c.class) {
			t.Fatalf("%d: errors.Is(err, %v) is false", c.status, c.class)
		}
		if errors.Is(err, table.ErrThrottled) {
			t.Fatalf("%d classified as throttled", c.status)
		}
		var re *azcore.ResponseError
		if !errors.As(err, &re) || re.StatusCode != http.StatusAccepted {
			t.Fatalf("%d: the SDK's 202 *azcore.ResponseError is not in the chain: %v", c.status, err)
		}
		if n := storedRows(t, svc, "p"); n != 0 {
			t.Fatalf("%d: %d entities stored; a failed transaction writes none", c.status, n)
		}
	}
}

// Real refusals by the service, not injected ones, name their operation too:
// an Add of an entity that exists (409) and an update of one that does not
// (404), each the second of its transaction.
func TestTransactionRefusalsNameTheirOperation(t *testing.T) {
	_, client := newFake(t, nil)
	if _, err := batch.Submit(t.Context(), client, []batch.Op{batch.Add(ev("p", 2))}, nil); err != nil {
		t.Fatal(err)
	}
	_, err := batch.Submit(t.Context(), client, []batch.Op{batch.Add(ev("p", 1)), batch.Add(ev("p", 2)), batch.Add(ev("p", 3))}, nil)
	var te *batch.TransactionError
	if !errors.As(err, &te) || te.Index != 1 || te.StatusCode != http.StatusConflict || te.Op.RowKey() != ev("p", 2).RowKey || !table.Is(err, table.ErrAlreadyExists) {
		t.Fatalf("add of an existing entity: %v", err)
	}
	_, err = batch.Submit(t.Context(), client, []batch.Op{batch.Add(ev("p", 5)), batch.Update(ev("p", 6), aztables.UpdateModeMerge).IfMatch(azcore.ETagAny)}, nil)
	if !errors.As(err, &te) || te.Index != 1 || te.StatusCode != http.StatusNotFound || te.Op.Kind != batch.KindUpdateMerge || !table.Is(err, table.ErrNotFound) {
		t.Fatalf("update of a missing entity: %v", err)
	}
}

// cannedAnswer answers every $batch request with a 202 whose one failed
// part is given: a service answer the fake does not produce.
type cannedAnswer struct{ part string }

func (c cannedAnswer) Do(req *policy.Request) (*http.Response, error) {
	if !strings.HasSuffix(req.Raw().URL.Path, "$batch") {
		return req.Next()
	}
	body := "--batchresponse_1\r\nContent-Type: multipart/mixed; boundary=changesetresponse_1\r\n\r\n" +
		"--changesetresponse_1\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n" +
		c.part + "\r\n--changesetresponse_1--\r\n--batchresponse_1--\r\n"
	h := http.Header{}
	h.Set("Content-Type", "multipart/mixed; boundary=batchresponse_1")
	resp := &http.Response{
		StatusCode: http.StatusAccepted, Status: "202 Accepted", Header: h,
		Body: io.NopCloser(strings.NewReader(body)), Request: req.Raw(), ContentLength: int64(len(body)),
	}
	// As the pipeline's body download would: the body stays readable for
	// the SDK's error and for tablekit.
	_, err := runtime.Payload(resp)
	return resp, err
}

func failedPart(status int, contentID, message string) string {
	s := fmt.Sprintf("HTTP/1.1 %d %s\r\n", status, http.StatusText(status))
	if contentID != "" {
		s += "Content-ID: " + contentID + "\r\n"
	}
	return s + "Content-Type: application/json;odata=minimalmetadata;charset=utf-8\r\n\r\n" +
		`{"odata.error":{"code":"InvalidInput","message":{"lang":"en-US","value":"` + message + `"}}}` + "\r\n"
}

// A failure whose answer names no operation (no "k:" prefix, no Content-ID)
// or names one the transaction does not have is reported with Index -1 and
// the rest of the answer, without a panic; with a single operation the
// failure can only be that one.
func TestTransactionFailureWithoutAnOperationIndex(t *testing.T) {
	for _, c := range []struct {
		name      string
		part      string
		ops       int
		wantIndex int
		wantMsg   string
	}{
		{"no index, two operations", failedPart(400, "", "Bad value."), 2, -1, "Bad value."},
		{"no index, one operation", failedPart(400, "", "Bad value."), 1, 0, "Bad value."},
		{"Content-ID only", failedPart(400, "2", "Bad value."), 2, 1, "Bad value."},
		{"index past the end", failedPart(400, "", "7:Bad value."), 2, -1, "Bad value."},
		{"Content-ID past the end", failedPart(400, "9", "Bad value."), 2, -1, "Bad value."},
		{"index prefix that is not a number", failedPart(400, "", "x:Bad value."), 2, -1, "x:Bad value."},
		{"RequestId lines dropped", failedPart(400, "", `1:Bad value.\nRequestId:abc\nTime:2026`), 2, 1, "Bad value."},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, client := newFake(t, &aztables.ClientOptions{ClientOptions: azcore.ClientOptions{PerCallPolicies: []policy.Policy{cannedAnswer{c.part}}}})
			ops := fourEvents()[:c.ops]
			_, err := batch.Submit(t.Context(), client, ops, nil)
			var te *batch.TransactionError
			if !errors.As(err, &te) {
				t.Fatalf("%v is not a *TransactionError", err)
			}
			if te.Index != c.wantIndex || te.StatusCode != 400 || te.ErrorCode != "InvalidInput" || te.Message != c.wantMsg {
				t.Fatalf("%+v, want index %d, 400 InvalidInput %q", te, c.wantIndex, c.wantMsg)
			}
			if c.wantIndex >= 0 && te.Op.RowKey() != ops[c.wantIndex].RowKey() {
				t.Fatalf("Op %+v, want operation %d", te.Op, c.wantIndex)
			}
			if c.wantIndex < 0 && (te.Op.Kind != 0 || !strings.HasPrefix(te.Error(), "batch: transaction failed: ")) {
				t.Fatalf("no operation named, yet Op %+v and Error() %q", te.Op, te.Error())
			}
		})
	}
}

// Error() of each batch error is one line naming what failed.
func TestBatchErrorTexts(t *testing.T) {
	op := batch.Add(ev("p", 1))
	rk := op.RowKey()
	cause := errors.New("connection reset")
	cases := []struct {
		err  error
		want string
	}{
		{&batch.TransactionError{Index: -1, Err: cause}, "batch: transaction failed: connection reset"},
		{&batch.TransactionError{Index: 3, Op: op, StatusCode: 409, ErrorCode: "EntityAlreadyExists", Message: "The specified entity already exists."},
			`batch: transaction failed at operation 3 (Add "p"/"` + rk + `"): 409 EntityAlreadyExists: The specified entity already exists.`},
		{&batch.OpError{Index: 7, Kind: batch.KindUpsertMerge, PartitionKey: "p", RowKey: "r", Err: batch.ErrDuplicateRowKey},
			`batch: operation 7 (UpsertMerge "p"/"r"): RowKey appears twice`},
	}
	one := &batch.TransactionError{Index: -1, Err: cause}
	cases = append(cases,
		struct {
			err  error
			want string
		}{&batch.WriteError{Failures: []*batch.TransactionError{one}}, "batch: transaction failed: connection reset"},
		struct {
			err  error
			want string
		}{&batch.WriteError{Failures: []*batch.TransactionError{one, one, one}}, "batch: transaction failed: connection reset (and 2 more failed transactions)"},
	)
	for _, c := range cases {
		if got := c.err.Error(); got != c.want {
			t.Errorf("Error() = %q\nwant      %q", got, c.want)
		}
	}
	// WriteError exposes every failure to errors.Is and As.
	lost := errors.New("connection lost")
	other := &batch.TransactionError{Index: -1, Err: lost}
	we := &batch.WriteError{Failures: []*batch.TransactionError{one, other}}
	if !errors.Is(we, cause) || !errors.Is(we, lost) {
		t.Errorf("WriteError hides a failure from errors.Is")
	}
}

// Kind.String names each kind as the constant does, and an unknown one by
// its number.
func TestKindNames(t *testing.T) {
	for k, want := range map[batch.Kind]string{
		batch.KindAdd: "Add", batch.KindUpsertMerge: "UpsertMerge", batch.KindUpsertReplace: "UpsertReplace",
		batch.KindUpdateMerge: "UpdateMerge", batch.KindUpdateReplace: "UpdateReplace", batch.KindDelete: "Delete",
		batch.Kind(0): "Kind(0)", batch.Kind(9): "Kind(9)",
	} {
		if got := k.String(); got != want {
			t.Errorf("Kind(%d).String() = %q, want %q", int(k), got, want)
		}
	}
}

// A 202 answer that names no failed operation (one tablekit could not
// read) leaves the operation's status unknown: OperationStatus is 0 and
// "", so svcanswer.StatusCode and table.Is fall back to the whole response's
// status, the 202, and classify it as no class of failure.
func TestOperationStatusOfAnAnswerNamingNoFailure(t *testing.T) {
	te := &batch.TransactionError{Index: -1, StatusCode: http.StatusAccepted,
		Err: &azcore.ResponseError{StatusCode: http.StatusAccepted}}
	if s, c := te.OperationStatus(); s != 0 || c != "" {
		t.Fatalf("OperationStatus = %d %q, want 0 \"\" (no operation's answer is known)", s, c)
	}
	if s := svcanswer.StatusCode(te); s != http.StatusAccepted {
		t.Fatalf("StatusCode = %d, want the response's 202", s)
	}
	for _, class := range []error{table.ErrBadRequest, table.ErrThrottled, table.ErrAlreadyExists, table.ErrNotFound} {
		if table.Is(te, class) {
			t.Errorf("table.Is(%v) is true for an answer that names no failure", class)
		}
	}
}

// failingTransport fails every request without an answer, as a reset
// connection does.
type failingTransport struct{}

func (failingTransport) Do(*http.Request) (*http.Response, error) {
	return nil, errors.New("connection reset by peer")
}

// A transaction the service never answered blames no operation: its
// TransactionError has Index -1, no operation, no status, and its text
// says only that the transaction failed and why.
func TestTransactionWithoutAnAnswerBlamesNoOperation(t *testing.T) {
	opts := &aztables.ClientOptions{}
	opts.Transport = failingTransport{}
	opts.Retry.MaxRetries = -1 // one try: the failure, not the SDK's retries, is under test
	client, err := aztables.NewClientWithNoCredential("http://127.0.0.1/devstoreaccount1/events", table.ClientOptions(opts))
	if err != nil {
		t.Fatal(err)
	}
	_, err = batch.Submit(t.Context(), client, fourEvents(), nil)
	var te *batch.TransactionError
	if !errors.As(err, &te) {
		t.Fatalf("%v is not a *TransactionError", err)
	}
	if te.Index != -1 || te.Op.Kind != 0 || te.StatusCode != 0 || len(te.Ops) != 4 {
		t.Fatalf("%+v: want Index -1, no operation and no status, with the transaction's 4 operations", te)
	}
	if msg := te.Error(); !strings.HasPrefix(msg, "batch: transaction failed: ") || strings.Contains(msg, "operation") || !strings.Contains(msg, "connection reset by peer") {
		t.Fatalf("Error() = %q, want the failure without an operation", msg)
	}
}
