package table

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/tablekit/tablekit/internal/redact"
	"github.com/tablekit/tablekit/internal/svcanswer"
	"github.com/tablekit/tablekit/keys"
)

// Errors of bad input, raised before any request is sent. Each is matched by
// errors.Is on the *InputError that carries it.
var (
	ErrNilValue          = errors.New("nil value")
	ErrNotStructPointer  = errors.New("not a pointer to a struct")
	ErrUnsupportedType   = errors.New("unsupported field type")
	ErrNoMeta            = errors.New("struct does not embed table.Meta")
	ErrTooManyProperties = errors.New("too many properties")
	ErrEntityTooLarge    = errors.New("entity too large")
	ErrStringTooLong     = errors.New("string too long")
	ErrBinaryTooLong     = errors.New("binary too long")
	// ErrValueOutOfRange is keys.ErrOutOfRange, the one error for a number
	// or time its property or key component cannot hold: either name
	// matches both a value's and a key's.
	ErrValueOutOfRange = keys.ErrOutOfRange
	ErrInvalidValue    = errors.New("invalid value")
	ErrNoETag          = errors.New("no ETag")
	ErrBadOption       = errors.New("bad option")
	ErrBadFilter       = errors.New("bad filter")
	ErrBadToken        = errors.New("bad continuation token")
	// ErrDuplicateProperty: an Extra entry has the name of a property the
	// struct already writes; one of the two would be lost.
	ErrDuplicateProperty = errors.New("property named twice")
	// ErrPartialValue: a write of a value read without some of the
	// properties its entity stores (a $select projection, an index copy
	// that lacks encrypted or unprojected fields); it would store zeros
	// over them. Read the entity whole (Get), change that, and write it.
	ErrPartialValue = errors.New("value read without all its properties")
	// ErrOtherRowKind: a RowKey outside the one row kind a Table reads and
	// writes (an entity model's Table holds its primaries only), such as
	// an index row beside an entity model's primaries; or, from Get and
	// Modify of any Table but the raw view (Entities), a stored row of
	// another kind than the Table's (an index copy or list, a model's
	// control row, a pattern's row; for the Table a pattern was built
	// over, every row but that pattern's), which is never decoded as T.
	ErrOtherRowKind = errors.New("RowKey of another row kind")
)

// InputError is a bad input refused before any request: which type and
// field broke which rule. It also wraps a *keys.ValidationError for bad keys
// and names, so errors.Is(err, keys.ErrInvalidKey) works.
type InputError struct {
	Op     string // "encode", "decode", "Add", "Query", ...
	Type   string // the Go type, when there is one
	Field  string // the field or property, when there is one
	Rule   error  // one of the Err* sentinels above, or a *keys.ValidationError
	Detail string
}

// Error names the operation, type, field and rule.
func (e *InputError) Error() string {
	var b strings.Builder
	b.WriteString("table: ")
	b.WriteString(e.Op)
	if e.Type != "" {
		b.WriteString(" ")
		b.WriteString(e.Type)
	}
	if e.Field != "" {
		b.WriteString(".")
		b.WriteString(e.Field)
	}
	b.WriteString(": ")
	b.WriteString(e.Rule.Error())
	if e.Detail != "" {
		b.WriteString(" (")
		b.WriteString(e.Detail)
		b.WriteString(")")
	}
	return b.String()
}

// Unwrap returns the rule, so errors.Is matches it.
func (e *InputError) Unwrap() error { return e.Rule }

func inputErr(op, typ, field string, rule error, format string, args ...any) *InputError {
	d := format
	if len(args) > 0 {
		d = fmt.Sprintf(format, args...)
	}
	return &InputError{Op: op, Type: typ, Field: field, Rule: rule, Detail: d}
}

// Classes of service error, tested with Is: Is(err, table.ErrNotFound)
// holds when the service answered with that class, for an error returned by
// tablekit (where errors.Is gives the same answer) and for the
// *azcore.ResponseError an SDK client returned (which errors.Is cannot
// classify). errors.As still finds the *azcore.ResponseError the service
// returned.
var (
	// ErrNotFound: the entity (or blob, or message) addressed does not
	// exist, while its table (queue, container) does: 404 with any code but
	// TableNotFound, QueueNotFound and ContainerNotFound.
	ErrNotFound = errors.New("not found")
	// ErrTableNotFound: the table itself does not exist (404
	// TableNotFound). It is not ErrNotFound: a missing table is a
	// deployment fault, not an absent entity, and code such as
	// Delete(IfExists) or Modify(Create) must not treat it as one.
	ErrTableNotFound = errors.New("table not found")
	// ErrQueueNotFound and ErrContainerNotFound: the queue (404
	// QueueNotFound) or blob container (404 ContainerNotFound) does not
	// exist; like ErrTableNotFound, a deployment fault: create it, or fix
	// its name.
	ErrQueueNotFound      = errors.New("queue not found")
	ErrContainerNotFound  = errors.New("container not found")
	ErrAlreadyExists      = errors.New("already exists")
	ErrPreconditionFailed = errors.New("precondition failed")
	ErrThrottled          = errors.New("throttled")
	ErrBadRequest         = errors.New("bad request")
	ErrTableBeingDeleted  = errors.New("table being deleted")
)

// Error codes of a 404 that names a missing container rather than the
// item addressed in it (Table, Queue and Blob service error codes).
const (
	codeTableNotFound     = "TableNotFound"
	codeQueueNotFound     = "QueueNotFound"
	codeContainerNotFound = "ContainerNotFound"
)

// ServiceError is an error the service returned for an operation. It keeps
// the *azcore.ResponseError in the chain, which gives the service's HTTP
// status and error code:
//
//	var re *azcore.ResponseError
//	if errors.As(err, &re) {
//		log.Println(re.StatusCode, re.ErrorCode)
//	}
//
// A failed transaction's response is a 202 that holds the failed
// operation's status and code: read those from the *batch.TransactionError
// (its StatusCode and ErrorCode). Is classifies either.
type ServiceError struct {
	Op           string // "Get", "Add", ...
	Table        string
	PartitionKey string
	RowKey       string
	// Err is what the SDK returned: the service's *azcore.ResponseError,
	// or a transport error when no answer came.
	Err error
}

// Error names the operation and entity and, on one line, the service's
// answer (status, error code, the first line of its message), or the
// transport's failure with any credential in it (a SAS signature in the
// request URL) redacted; Unwrap still returns the error as it came.
func (e *ServiceError) Error() string {
	where := e.Table
	if e.PartitionKey != "" || e.RowKey != "" {
		where += fmt.Sprintf("(%q, %q)", e.PartitionKey, e.RowKey)
	}
	if where != "" {
		where = " " + where
	}
	return "table: " + e.Op + where + ": " + redact.Line(e.Err)
}

// Unwrap returns the SDK's error (an *azcore.ResponseError from the service).
func (e *ServiceError) Unwrap() error { return e.Err }

// Is classifies the service's answer; see the ErrNotFound group.
func (e *ServiceError) Is(target error) bool { return classIs(e.Err, target) }

// hasClass reports whether a service answer with this HTTP status and
// error code belongs to class, one of ErrNotFound, ErrTableNotFound,
// ErrQueueNotFound, ErrContainerNotFound, ErrAlreadyExists,
// ErrPreconditionFailed, ErrLostRace (412, or 409 EntityAlreadyExists or
// TableAlreadyExists), ErrThrottled, ErrBadRequest and
// ErrTableBeingDeleted: the one classification behind Is and errors.Is on
// tablekit's errors.
func hasClass(statusCode int, errorCode string, class error) bool {
	switch class {
	case ErrNotFound:
		return statusCode == http.StatusNotFound && errorCode != codeTableNotFound &&
			errorCode != codeQueueNotFound && errorCode != codeContainerNotFound
	case ErrTableNotFound:
		return statusCode == http.StatusNotFound && errorCode == codeTableNotFound
	case ErrQueueNotFound:
		return statusCode == http.StatusNotFound && errorCode == codeQueueNotFound
	case ErrContainerNotFound:
		return statusCode == http.StatusNotFound && errorCode == codeContainerNotFound
	case ErrAlreadyExists:
		return statusCode == http.StatusConflict && (errorCode == "EntityAlreadyExists" || errorCode == "TableAlreadyExists")
	case ErrTableBeingDeleted:
		return statusCode == http.StatusConflict && errorCode == "TableBeingDeleted"
	case ErrPreconditionFailed:
		return statusCode == http.StatusPreconditionFailed
	case ErrLostRace:
		return hasClass(statusCode, errorCode, ErrPreconditionFailed) || hasClass(statusCode, errorCode, ErrAlreadyExists)
	case ErrThrottled:
		return statusCode == http.StatusServiceUnavailable || statusCode == http.StatusTooManyRequests ||
			errorCode == "ServerBusy" || errorCode == "OperationTimedOut"
	case ErrBadRequest:
		return statusCode == http.StatusBadRequest
	}
	return false
}

// classIs classifies the service's answer in err's chain (svcanswer.Of:
// the failed operation's inside a transaction, else the first
// *azcore.ResponseError's).
func classIs(err, target error) bool {
	s, c, ok := svcanswer.Of(err)
	return ok && hasClass(s, c, target)
}

// Is reports whether err belongs to class, one of the classes of service
// error (ErrNotFound and the others of its group) or ErrLostRace: by
// errors.Is, which tablekit's own errors answer from the status of the
// operation that failed (inside a transaction too), or by the first
// *azcore.ResponseError in err's chain, so it also classifies the raw
// errors of the SDK's clients (aztables, azqueue, azblob). It is the one
// way to ask what the service answered; errors.Is gives the same answer on
// tablekit's errors only.
func Is(err, class error) bool { return errors.Is(err, class) || classIs(err, class) }

// IsRetryable reports an error worth retrying later, with back-off:
// throttling, 500, 502, 504, 408, or a transport failure (no answer at
// all); for a failed transaction, by the failed operation's own status. By
// the time tablekit returns such an error the client's retry policy has
// already retried it (policy.RetryOptions.MaxRetries): tablekit itself does
// not retry it again, so this is for the caller's own, slower loop (a
// queue message's redelivery, a job's next run). 400-class answers other
// than 408 and 429 are never retryable: the same request would fail the
// same way.
func IsRetryable(err error) bool {
	if err == nil {
		return false
	}
	var ie *InputError
	if errors.As(err, &ie) {
		return false
	}
	status, _, answered := svcanswer.Of(err)
	if !answered {
		// No answer from the service: connection refused, reset, timeout;
		// but not the caller giving up.
		return !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
	}
	switch status {
	case http.StatusRequestTimeout, http.StatusTooManyRequests, http.StatusInternalServerError,
		http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}
