// Package svcanswer finds the service's answer in an error's chain: the
// HTTP status and error code of the operation that failed. table classifies
// errors by it (table.Is), and the maintenance command and the test suites
// report it; the one reading lives here so that all of them agree,
// a failed transaction's inner status included.
package svcanswer

import (
	"errors"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
)

// operationStatus is an error that knows the service's answer to the one
// operation that failed, when the response's own status says less: a
// *batch.TransactionError, whose response is a 202 with the failed
// operation's status and code inside.
type operationStatus interface {
	OperationStatus() (statusCode int, errorCode string)
}

// Of is the service's status and code for err: the failed operation's
// when an error in the chain knows it, else the first
// *azcore.ResponseError's; ok is false when the service did not answer.
func Of(err error) (statusCode int, errorCode string, ok bool) {
	var st operationStatus
	if errors.As(err, &st) {
		if s, c := st.OperationStatus(); s != 0 {
			return s, c, true
		}
	}
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return re.StatusCode, re.ErrorCode, true
	}
	return 0, "", false
}

// StatusCode is the HTTP status of the service's answer in err's chain, or
// 0 when the service did not answer. For a failed transaction it is the
// failed operation's status, not the 202 of the whole response.
func StatusCode(err error) int {
	s, _, _ := Of(err)
	return s
}

// ErrorCode is the service's error code in err's chain, or "". For a
// failed transaction it is the failed operation's code (the whole
// response, a 202, has none).
func ErrorCode(err error) string {
	_, c, _ := Of(err)
	return c
}
