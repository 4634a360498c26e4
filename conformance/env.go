package conformance

import (
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/internal/reqcount"
)

// backend is what the cases call, made from a Harness (Harness.backend).
type backend struct {
	Name string
	// NewTable creates a fresh, uniquely named table (dropped at the end of
	// the test) and returns a client whose every request c counts.
	NewTable func(t *testing.T, c *reqcount.Counter) *aztables.Client
	// NewServiceClient returns a client of the backend's Table service
	// built with opts (which may carry a Counter's policies and others),
	// for the suites that create, list and drop tables themselves.
	NewServiceClient func(t *testing.T, opts *aztables.ClientOptions) *aztables.ServiceClient
	// NewQueue creates a fresh, uniquely named queue (deleted at the end)
	// and returns a client whose requests c counts (nil: not counted).
	NewQueue func(t *testing.T, c *reqcount.Counter) *azqueue.QueueClient
	// NewContainer creates a fresh, uniquely named container and returns a
	// client for the account, whose requests c counts (nil: not counted),
	// and the container's name.
	NewContainer func(t *testing.T, c *reqcount.Counter) (*azblob.Client, string)
	// QueueService returns a service client of the backend's Queue service,
	// for cases that create and delete queues themselves.
	QueueService func(t *testing.T) *azqueue.ServiceClient
	// SASTable creates a fresh table and returns a client for it with the
	// account's key, and a client that carries the token sas makes for it.
	SASTable func(t *testing.T, sas func(account, key, table string) string) (admin, scoped *aztables.Client)
	// Advance lets time pass for the backend's clocks (Harness.Advance).
	Advance func(d time.Duration)
	// Lacks names the documented behaviours this backend does not have,
	// each with the reason; a case that needs one is not run here and says
	// so (see backend.Has).
	Lacks map[Capability]string

	// paging is Harness.Paging: nil on a backend without a paging model.
	paging PagingControl
	// tables maps the *aztables.Client values NewTable returned to their
	// tables' names, so that a case can switch one table's paging.
	tables *sync.Map
}

// Capability is a behaviour of the documented service that a backend may
// lack. Cases ask backend.Has before relying on one.
type Capability string

// The capabilities the cases rely on. Each constant's comment is the
// behaviour of the service, with the documentation or evidence for it.
const (
	// CapStalePopReceiptNotFound: Delete Message and Update Message with a
	// pop receipt older than the newest answer 404 MessageNotFound.
	CapStalePopReceiptNotFound Capability = "a stale pop receipt gets 404 MessageNotFound"
	// CapQueueBeingDeleted: a deleted queue's name is refused with 409
	// QueueBeingDeleted for a while (Delete Queue: "at least 40 seconds").
	CapQueueBeingDeleted Capability = "re-creating a deleted queue at once gets 409 QueueBeingDeleted"
	// CapContainerBeingDeleted: a deleted container's name is refused with
	// 409 ContainerBeingDeleted for a while (Delete Container: "at least 30 seconds").
	CapContainerBeingDeleted Capability = "re-creating a deleted container at once gets 409 ContainerBeingDeleted"
	// CapTableBeingDeleted: a deleted table's name is refused with 409
	// TableBeingDeleted for a while (Delete Table: "at least 40 seconds").
	CapTableBeingDeleted Capability = "re-creating a deleted table at once gets 409 TableBeingDeleted"
	// CapSASKeyRanges: a table SAS with spk/epk refuses entities outside
	// the range (Create a service SAS, table key ranges).
	CapSASKeyRanges Capability = "a table SAS confines requests to its key range"
	// CapBatchWithTableSAS: a $batch through a table SAS is authorized by
	// its operations.
	CapBatchWithTableSAS Capability = "a transaction through a table SAS is allowed when the token allows its operations"
	// CapSASSourceIP: a request from outside a token's signed IP range
	// answers 403 AuthorizationSourceIPMismatch ("SAS error codes").
	CapSASSourceIP Capability = "a SAS refuses a client outside its IP range with 403 AuthorizationSourceIPMismatch"
	// CapSASProtocol: a token with spr=https refuses plain HTTP with 403
	// AuthorizationProtocolMismatch ("SAS error codes").
	CapSASProtocol Capability = "a SAS with spr=https refuses HTTP with 403 AuthorizationProtocolMismatch"
	// CapSASAuthenticationFailed: a table or blob token that does not
	// authenticate (its signature does not match the request, or its
	// stored access policy was revoked) answers 403 AuthenticationFailed,
	// as a queue token does.
	CapSASAuthenticationFailed Capability = "a table or blob SAS that does not authenticate (another blob's, a revoked policy's) gets 403 AuthenticationFailed"
	// CapRangeAtEnd416: a ranged Get Blob whose range starts at the blob's
	// end, an empty blob's included, answers 416 InvalidRange.
	CapRangeAtEnd416 Capability = "a range that starts at the blob's end (an empty blob's too) gets 416 InvalidRange"
	// CapBrokenLeaseLost: a request that carries the ID of a lease that
	// was broken answers 412 LeaseLost ("A lease ID was specified, but
	// the lease for the blob has expired"), as one with an expired
	// lease's ID does.
	CapBrokenLeaseLost Capability = "a request with a broken lease's ID gets 412 LeaseLost"
	// CapLowerCaseOperators: $filter operators (eq, and, not, …) are lower
	// case; the service refuses others with 400 InvalidInput.
	CapLowerCaseOperators Capability = "a filter with an upper-case operator gets 400 InvalidInput"
	// CapExponentLiteral: a Double literal with an exponent (1e10) in a
	// filter is that Double.
	CapExponentLiteral Capability = "a filter reads a Double literal with an exponent (1e10)"
	// CapDateTime100ns: DateTimes keep 100 ns in filters, as in storage.
	CapDateTime100ns Capability = "a filter compares DateTimes to 100 ns"
	// CapTypedNumberCompare: a filter compares a number only with values of
	// its own EDM type (Whole eq 2 does not match a Double 2.0).
	CapTypedNumberCompare Capability = "a filter compares numbers only within their EDM type"
)

// capabilities lists every Capability, in the order the table shows them.
func capabilities() []Capability {
	return []Capability{
		CapStalePopReceiptNotFound,
		CapQueueBeingDeleted,
		CapContainerBeingDeleted,
		CapTableBeingDeleted,
		CapSASKeyRanges,
		CapBatchWithTableSAS,
		CapSASSourceIP,
		CapSASProtocol,
		CapSASAuthenticationFailed,
		CapRangeAtEnd416,
		CapBrokenLeaseLost,
		CapLowerCaseOperators,
		CapExponentLiteral,
		CapDateTime100ns,
		CapTypedNumberCompare,
	}
}

// azuriteLacks is what Azurite 3.37 (tools/azurite/package-lock.json) does
// otherwise than the service; every entry is checked by the case that
// needs it, which asserts Azurite's own answer so that a fixed Azurite
// fails the case and the entry is dropped.
func azuriteLacks() map[Capability]string {
	return map[Capability]string{
		CapStalePopReceiptNotFound: "Azurite answers 400 PopReceiptMismatch",
		CapQueueBeingDeleted:       "Azurite lets a deleted queue's name be reused at once",
		CapContainerBeingDeleted:   "Azurite lets a deleted container's name be reused at once",
		CapTableBeingDeleted:       "Azurite lets a deleted table's name be reused at once",
		CapSASKeyRanges:            "Azurite checks a table SAS's signature and permissions but not its key range",
		CapBatchWithTableSAS:       "Azurite refuses every $batch that carries a table SAS with 403",
		CapSASSourceIP:             "Azurite does not check a SAS's signed IP range",
		CapSASAuthenticationFailed: "Azurite refuses with 403 AuthorizationFailure (queues: AuthenticationFailed, as the service)",
		CapRangeAtEnd416:           "Azurite answers a range that starts exactly at the end with success and no body (past the end: 416)",
		CapBrokenLeaseLost:         "Azurite answers 412 LeaseNotPresentWithBlobOperation, with LeaseLost's message",
		CapLowerCaseOperators:      "Azurite reads operators in any case",
		CapExponentLiteral:         "Azurite misreads 1e10: D eq 1e10 matches entities without D",
		CapDateTime100ns:           "Azurite compares DateTimes in milliseconds",
		CapTypedNumberCompare:      "Azurite compares numbers across EDM types: Whole eq 2 matches a Double 2.0",
	}
}

// Has reports whether the backend has capability c. When it does not, it
// logs "not run on <backend>: <reason>" so that the output lists every
// case a backend could not run; the caller then checks what it can (often
// the backend's own, recorded answer) or returns.
func (env backend) Has(t testing.TB, c Capability) bool {
	t.Helper()
	reason, lacks := env.Lacks[c]
	if lacks {
		t.Logf("not run on %s: %s: %s", env.Name, c, reason)
	}
	return !lacks
}
