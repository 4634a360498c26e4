// Package fake holds in-memory Azure Storage services for tests: use them
// in your own unit tests as you would a real account, with no emulator.
//
// TableService is the Table service as an HTTP transport, so the clients it
// hands out (NewClient, NewServiceClient) are the official *aztables.Client
// and *aztables.ServiceClient, and code typed to those concrete clients or to
// tablekit's ports runs against it unchanged. It keeps entities in the
// service's order, produces ETags and Timestamps from an injectable clock
// (deterministic and strictly increasing), evaluates OData filters, $select
// and $top, pages with continuation tokens as the service cuts them
// (the zero Paging, the default: a page ends after 1,000 entities, where a
// partition ends in a query that spans partitions, or when its 5-second
// scan budget runs out, and a point or single-partition query of a few
// rows comes back whole in one response; SetPaging switches one table to
// Paging{EmptyPageEvery: 3}, every third response empty with a token, for
// a test that proves a loop follows tokens whatever a page holds, or to
// Paging{AcrossPartitions: true}, pages of 1,000 only, as Azurite cuts
// them), answers
// with the service's status codes and error codes,
// runs entity group transactions atomically with the service's multipart
// answer, keeps a deleted table's name in TableBeingDeleted for a
// configurable window, counts requests per operation, and fails the next N
// requests of an operation on demand.
//
// QueueService and BlobService do the same for the Queue and Blob services
// behind *azqueue.QueueClient and *azblob.Client: pop receipts, visibility
// and time to live on an injectable clock, queue metadata; block blobs put
// whole or in blocks, leases on blobs and containers, metadata and HTTP
// headers, hierarchical listing and conditional headers.
//
// Like the service, every fake refuses a deleted name for a while: Create
// Table, Create Queue and Create Container answer 409 TableBeingDeleted,
// QueueBeingDeleted or ContainerBeingDeleted within 40 s, 40 s and 30 s of
// the delete, on the fake's clock. Tests that drop and re-create one name
// should use a new name, as code must against the service, or shorten the
// window with DeletedTableWindow, DeletedQueueWindow or
// DeletedContainerWindow (negative: no window). It enforces the documented limits of
// the service that the Azurite emulator does not, and answers as recorded
// exchanges with the service show (the Accept metadata level; Location,
// DataServiceId and Preference-Applied; the service's DateTime format);
// RELIABILITY.md lists what still differs, and why. conformance runs the same
// behaviour suite against this fake and against Azurite.
//
// Retry delays: unlike an account, every fake writes short retry delays into
// the options of the clients it hands out, by default 1 ms
// doubling up to 4 ms instead of the SDK's 0.8 s doubling up to
// 60 s, so that a test of failures runs in milliseconds. Only the waits
// change: the SDK's retry policy still makes the same tries (MaxRetries,
// statuses) as against the service, so request counts are true. Options
// that set a delay themselves are never changed. Call SetRetryDelays(0, 0)
// on a service before making its clients to keep the SDK's own delays, or
// pass other values; RetryDelays reports what its clients get.
//
// Your own client: the clients NewClient and NewServiceClient hand out
// carry tablekit's per-call policy, as a client built with
// table.ClientOptions does. To test how a plain aztables client behaves
// (yours, built as your program builds it, with neither that policy nor
// the short retry delays), make it with the service as its transport and
// URL as its endpoint (see the plainClient example):
//
//	opts := &aztables.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: svc}}
//	service, err := aztables.NewServiceClientWithNoCredential(svc.URL(), opts)
package fake
