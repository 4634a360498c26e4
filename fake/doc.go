// Package fake holds in-memory Azure Storage services for tests: use them
// in your own unit tests as you would a real account, with no emulator.
//
// TableService is the Table service as an HTTP transport, so the clients it
// hands out (NewClient, NewServiceClient) are the official *aztables.Client
// and *aztables.ServiceClient, and code typed to those concrete clients or to
// tablekit's ports runs against it unchanged. It keeps entities in the
// service's order, produces ETags and Timestamps from an injectable clock
// (deterministic and strictly increasing), evaluates OData filters, $select
// and $top, pages with continuation tokens (with switches for short and
// empty pages), answers with the service's status codes and error codes,
// runs entity group transactions atomically with the service's multipart
// answer, keeps a deleted table's name in TableBeingDeleted for a
// configurable window, counts requests per operation, and fails the next N
// requests of an operation on demand. It enforces the documented limits of
// the service that the Azurite emulator does not. internal/conformance runs
// the same behaviour suite against this fake and against Azurite.
package fake
