package batch

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit/internal/redact"
	"github.com/tablekit/tablekit/table"
)

// Limits of an entity group transaction ("Performing entity group
// transactions"), checked before anything is sent.
const (
	// MaxOperations is the most operations one transaction may hold.
	MaxOperations = 100
	// MaxRequestBytes is the largest request body of a transaction.
	MaxRequestBytes = 4 << 20
)

// Errors of a transaction refused before sending. An *OpError carries one
// and names the operation.
var (
	ErrEmpty             = errors.New("empty transaction")
	ErrTooManyOperations = errors.New("more than 100 operations")
	ErrTooLarge          = errors.New("request over 4 MiB")
	ErrMixedPartitions   = errors.New("operations on more than one PartitionKey")
	ErrDuplicateRowKey   = errors.New("RowKey appears twice")
	// ErrQuoteInKey: a batch update or upsert on keys with a single quote
	// (O'Brien), submitted through a client without tablekit's policy.
	// The SDK cannot send it (see Submit); clients built with
	// table.ClientOptions can.
	ErrQuoteInKey   = errors.New("single quote in a key of a batch update or upsert: the SDK cannot send it; build the client with table.ClientOptions")
	ErrBadOperation = errors.New("bad operation")
	// ErrBadOption: an option is outside its documented range (see
	// WriterOptions); returned before any request instead of
	// silently using a default.
	ErrBadOption = errors.New("option out of range")
)

// OpError is an operation refused before sending: which one, and why.
type OpError struct {
	Index        int // the operation's position in the transaction or list
	Kind         Kind
	PartitionKey string
	RowKey       string
	Err          error // a rule above, or a *table.InputError from encoding
}

// Error names the operation and the rule it broke.
func (e *OpError) Error() string {
	return fmt.Sprintf("batch: operation %d (%s %q/%q): %v", e.Index, e.Kind, e.PartitionKey, e.RowKey, e.Err)
}

// Unwrap returns the rule or encoding error.
func (e *OpError) Unwrap() error { return e.Err }

// TransactionError is a transaction the service refused. Nothing of it was
// written: the service applies all of a transaction or none of it.
type TransactionError struct {
	// Index is the failed operation's position, parsed from the service's
	// answer ("k:" at the start of its message); -1 when the service did
	// not say (the whole request was refused, or it never arrived).
	Index int
	// Op is the failed operation, Ops[Index], when Index >= 0.
	Op Op
	// Ops are the transaction's operations in the order sent, so that a
	// caller handed the error alone (a Writer's WriteError) can resend or
	// report them.
	Ops []Op
	// StatusCode and ErrorCode are the failed operation's own status and
	// code, not the 202 of the envelope.
	StatusCode int
	ErrorCode  string
	Message    string
	// Err is what the SDK returned: an *azcore.ResponseError (202 with the
	// multipart body for a failed operation) or a transport error.
	Err error
}

// Error names the failed operation and the service's answer to it, or the
// transport's failure with any credential in it (a SAS signature in the
// request URL) redacted; Unwrap still returns the error as it came.
func (e *TransactionError) Error() string {
	if e.Index < 0 {
		return "batch: transaction failed: " + redact.Line(e.Err)
	}
	return fmt.Sprintf("batch: transaction failed at operation %d (%s %q/%q): %d %s: %s",
		e.Index, e.Op.Kind, e.Op.PartitionKey(), e.Op.RowKey(), e.StatusCode, e.ErrorCode, e.Message)
}

// Unwrap returns what the SDK returned (the 202 *azcore.ResponseError).
func (e *TransactionError) Unwrap() error { return e.Err }

// Is classifies the failed operation's answer like table's errors
// (table.Is): errors.Is(err, table.ErrAlreadyExists) and the others hold by
// the inner status and code, or by the whole response's when the service
// refused the request as a whole.
func (e *TransactionError) Is(target error) bool {
	s, c := e.OperationStatus()
	return s != 0 && table.Is(operationAnswer{s, c}, target)
}

// operationAnswer carries one operation's status and code to table.Is,
// which classifies any error that reports them (OperationStatus) without a
// response of the operation's own to hold them.
type operationAnswer struct {
	statusCode int
	errorCode  string
}

func (a operationAnswer) Error() string {
	return fmt.Sprintf("batch: operation answered %d %s", a.statusCode, a.errorCode)
}

func (a operationAnswer) OperationStatus() (statusCode int, errorCode string) {
	return a.statusCode, a.errorCode
}

// OperationStatus is the service's status and error code for the failed
// operation (table.Is classifies by these), or for
// the whole request when the service refused it as a whole; 0 and "" when
// the service did not answer, or answered 202 without naming a failure.
func (e *TransactionError) OperationStatus() (statusCode int, errorCode string) {
	if e.StatusCode == http.StatusAccepted {
		return 0, ""
	}
	return e.StatusCode, e.ErrorCode
}

// throttledInside reports a transaction worth sending again by tablekit:
// the service answered the request with 202 Accepted, so the SDK's retry
// policy saw a success and did not retry, but the failed operation's own
// status inside that answer is 408, 429, 500, 502, 503 or 504 (the
// partition was busy or timed out). Nothing of the transaction was written,
// so sending it again is safe. Every other failure is final here: a
// whole-request 408, 429 or 5xx and a transport failure were already
// retried by the SDK's policy (policy.RetryOptions), and a 400-class answer
// would fail the same way again.
func (e *TransactionError) throttledInside() bool {
	var re *azcore.ResponseError
	if !errors.As(e.Err, &re) || re.StatusCode != http.StatusAccepted {
		return false
	}
	switch e.StatusCode {
	case http.StatusRequestTimeout, http.StatusTooManyRequests, http.StatusInternalServerError,
		http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}
