// Package batch sends entity group transactions (EGTs) that never surprise:
// every rule of the service is checked while a Transaction is built (at most
// 100 operations, one PartitionKey, each RowKey once, a request of at most
// 4 MiB measured as the SDK will send it, every entity within its limits),
// so a bad transaction is an *OpError naming the operation and nothing is
// sent. Updates are update-only (If-Match: the entity's ETag, or *), never
// the silent upsert the SDK makes of a batch update without If-Match. On
// success Submit recovers each operation's new ETag from the service's
// multipart answer, which the SDK drops, and writes it into the typed
// values' Meta; on failure it parses the same answer into a
// *TransactionError with the failed operation's index, status, code and
// message, while the SDK's *azcore.ResponseError stays in the chain.
//
// A transaction is atomic, and that is the service's guarantee: all of its
// operations commit or none does, so a crash or failure leaves nothing half
// written ("Entity group transactions" in the Table design guide:
// https://learn.microsoft.com/azure/storage/tables/table-storage-design#entity-group-transactions).
// Plan splits any operations into valid transactions and Writer sends them
// with bounded parallelism across partitions, in order within one, retrying
// only throttling and server errors. A plan of several transactions is NOT
// atomic as a whole: if the process dies midway, the transactions sent so
// far are committed and the rest are not, each entirely; write operations
// that are safe to repeat (upserts, deletes with IfExists semantics) so a
// rerun converges. Use EGTs when several entities of one partition must
// change together (an entity and its index rows, the guide's intra-partition
// patterns); do not use them to batch unrelated partitions, which they
// cannot span.
//
// # The Writer's retries
//
// Retries happen once, in one place: the client's retry policy retries a
// transaction the service answered with 408, 429 or 5xx, or did not
// answer. The Writer resends one only when the service's 202 answer names
// its failed operation as throttled or timed out
// (WriterOptions.MaxAttempts, with back-off), and never on a 400-class
// answer. So a transaction costs at most MaxRetries+1 requests of the
// client's policy, times MaxAttempts only in that throttled case, plus one
// range query when WriterOptions.IdempotentAdds settles a 409.
//
// # Keys with quotes
//
// On a client built with table.ClientOptions tablekit writes each $batch
// body itself. aztables v1.4.1 writes a batch
// operation's keys into its URL without doubling single quotes, so on any
// other client updates and upserts whose keys contain ' are refused with
// ErrQuoteInKey before any request (adds and deletes work on every key).
package batch
