package table_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/tablekit/tablekit/internal/keyrules"
	"github.com/tablekit/tablekit/internal/svcanswer"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/table"
)

// serviceAnswer is the SDK's error for a service answer of status and
// code, made the way the SDK makes it from a response.
func serviceAnswer(status int, code string) error {
	h := http.Header{}
	if code != "" {
		h.Set("x-ms-error-code", code)
	}
	u, _ := url.Parse("https://account.table.core.windows.net/events")
	return runtime.NewResponseError(&http.Response{
		StatusCode: status, Status: fmt.Sprint(status), Header: h,
		Body:    io.NopCloser(strings.NewReader("")),
		Request: &http.Request{Method: http.MethodGet, URL: u},
	})
}

// Each class holds for exactly its statuses and codes.
func TestHasClassBoundaries(t *testing.T) {
	for _, c := range []struct {
		status int
		code   string
		class  error
		want   bool
	}{
		{404, "ResourceNotFound", table.ErrNotFound, true},
		{404, "", table.ErrNotFound, true},
		{404, "TableNotFound", table.ErrNotFound, false},
		{404, "QueueNotFound", table.ErrNotFound, false},
		{404, "ContainerNotFound", table.ErrNotFound, false},
		{410, "ResourceNotFound", table.ErrNotFound, false},
		{404, "TableNotFound", table.ErrTableNotFound, true},
		{404, "ResourceNotFound", table.ErrTableNotFound, false},
		{400, "TableNotFound", table.ErrTableNotFound, false},
		{404, "QueueNotFound", table.ErrQueueNotFound, true},
		{404, "ContainerNotFound", table.ErrQueueNotFound, false},
		{404, "ContainerNotFound", table.ErrContainerNotFound, true},
		{404, "BlobNotFound", table.ErrContainerNotFound, false},
		{400, "ContainerNotFound", table.ErrContainerNotFound, false},
		{409, "EntityAlreadyExists", table.ErrAlreadyExists, true},
		{409, "TableAlreadyExists", table.ErrAlreadyExists, true},
		{409, "TableBeingDeleted", table.ErrAlreadyExists, false},
		{412, "EntityAlreadyExists", table.ErrAlreadyExists, false},
		{409, "TableBeingDeleted", table.ErrTableBeingDeleted, true},
		{409, "EntityAlreadyExists", table.ErrTableBeingDeleted, false},
		{400, "TableBeingDeleted", table.ErrTableBeingDeleted, false},
		{412, "UpdateConditionNotSatisfied", table.ErrPreconditionFailed, true},
		{409, "UpdateConditionNotSatisfied", table.ErrPreconditionFailed, false},
		{503, "", table.ErrThrottled, true},
		{429, "", table.ErrThrottled, true},
		{500, "OperationTimedOut", table.ErrThrottled, true},
		{500, "ServerBusy", table.ErrThrottled, true},
		{500, "InternalError", table.ErrThrottled, false},
		{502, "", table.ErrThrottled, false},
		{400, "InvalidInput", table.ErrBadRequest, true},
		{404, "InvalidInput", table.ErrBadRequest, false},
		{400, "InvalidInput", errors.New("not a class"), false},
	} {
		if got := table.Is(serviceAnswer(c.status, c.code), c.class); got != c.want {
			t.Errorf("Is(answer %d %q, %v) = %v, want %v", c.status, c.code, c.class, got, c.want)
		}
	}
}

// IsRetryable: throttling, 408, 500, 502, 504 and a transport failure are
// worth a later retry; other 400-class answers, refused input and the
// caller's own cancellation are not.
func TestIsRetryable(t *testing.T) {
	for _, s := range []int{408, 429, 500, 502, 503, 504} {
		if err := serviceAnswer(s, ""); !table.IsRetryable(err) {
			t.Errorf("%d is not retryable", s)
		}
	}
	for _, s := range []int{400, 403, 404, 409, 412, 413, 501} {
		if err := serviceAnswer(s, ""); table.IsRetryable(err) {
			t.Errorf("%d is retryable", s)
		}
	}
	reset := errors.New("connection reset by peer")
	for _, c := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{reset, true},
		{fmt.Errorf("send: %w", reset), true},
		{context.Canceled, false},
		{fmt.Errorf("send: %w", context.DeadlineExceeded), false},
		{&table.InputError{Op: "Add", Rule: table.ErrInvalidValue}, false},
		{&table.InputError{Op: "Add", Rule: serviceAnswer(503, "")}, false},
	} {
		if got := table.IsRetryable(c.err); got != c.want {
			t.Errorf("IsRetryable(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

// opStatus knows the status of the one operation that failed, as a
// *batch.TransactionError does.
type opStatus struct {
	status int
	code   string
	err    error
}

func (e *opStatus) Error() string                  { return "operation failed" }
func (e *opStatus) Unwrap() error                  { return e.err }
func (e *opStatus) OperationStatus() (int, string) { return e.status, e.code }

// StatusCode and ErrorCode report the failed operation's answer when an
// error in the chain knows it, the response's otherwise, and 0 and "" when
// the service did not answer.
func TestStatusAndCodeOfAnError(t *testing.T) {
	inner := &opStatus{status: 409, code: "EntityAlreadyExists", err: serviceAnswer(202, "")}
	if s, c := svcanswer.StatusCode(inner), svcanswer.ErrorCode(inner); s != 409 || c != "EntityAlreadyExists" || !table.Is(inner, table.ErrAlreadyExists) {
		t.Errorf("an operation's 409 inside a 202: %d %q", s, c)
	}
	unnamed := &opStatus{err: serviceAnswer(400, "InvalidInput")}
	if s, c := svcanswer.StatusCode(unnamed), svcanswer.ErrorCode(unnamed); s != 400 || c != "InvalidInput" {
		t.Errorf("no operation status, the response's: %d %q", s, c)
	}
	none := errors.New("dial tcp: connection refused")
	if s, c := svcanswer.StatusCode(none), svcanswer.ErrorCode(none); s != 0 || c != "" || table.Is(none, table.ErrNotFound) {
		t.Errorf("no answer: %d %q", s, c)
	}
	wrapped := &table.ServiceError{Op: "Get", Table: "events", Err: serviceAnswer(404, "ResourceNotFound")}
	if !errors.Is(wrapped, table.ErrNotFound) || errors.Is(wrapped, table.ErrTableNotFound) || svcanswer.StatusCode(wrapped) != 404 {
		t.Errorf("ServiceError of a 404 ResourceNotFound: %v", wrapped)
	}
}

// Error() of InputError and ServiceError is one line naming what failed,
// and leaves out what is not known.
func TestTableErrorTexts(t *testing.T) {
	reset := errors.New("connection reset")
	keyErr := keyrules.ValidateRowKey("a/b")
	for _, c := range []struct {
		err  error
		want string
	}{
		{&table.InputError{Op: "encode", Type: "main.Order", Field: "Total", Rule: table.ErrValueOutOfRange, Detail: "at most 2^53"},
			"table: encode main.Order.Total: out of range (at most 2^53)"},
		{&table.InputError{Op: "Add", Rule: table.ErrNilValue}, "table: Add: nil value"},
		{&table.InputError{Op: "Add", Field: "RowKey", Rule: keyErr}, "table: Add.RowKey: " + keyErr.Error()},
		{&table.InputError{Op: "decode", Type: "main.Order", Rule: table.ErrNoMeta, Detail: "embed table.Meta"},
			"table: decode main.Order: struct does not embed table.Meta (embed table.Meta)"},
		{&table.ServiceError{Op: "Get", Table: "events", PartitionKey: "p", RowKey: "r", Err: reset}, `table: Get events("p", "r"): connection reset`},
		{&table.ServiceError{Op: "Get", Table: "events", PartitionKey: "", RowKey: "r", Err: reset}, `table: Get events("", "r"): connection reset`},
		{&table.ServiceError{Op: "CreateTable", Table: "events", Err: reset}, "table: CreateTable events: connection reset"},
		{&table.ServiceError{Op: "ListTables", Err: reset}, "table: ListTables: connection reset"},
		{&table.ServiceError{Op: "Get", PartitionKey: "p", RowKey: "r", Err: reset}, `table: Get ("p", "r"): connection reset`},
	} {
		if got := c.err.Error(); got != c.want {
			t.Errorf("Error() = %q\nwant      %q", got, c.want)
		}
	}
	// A refused key stays reachable with errors.Is through the InputError.
	if err := (&table.InputError{Op: "Add", Field: "RowKey", Rule: keyErr}); !errors.Is(err, keys.ErrInvalidKey) || !errors.Is(err, keys.ErrForbiddenChar) {
		t.Errorf("InputError hides the key's rule: %v", err)
	}
}
