// Package consistency keeps data in different partitions, tables or blobs
// eventually consistent through a queue: the guide's "Eventually consistent
// transactions pattern" as a library
// (https://learn.microsoft.com/azure/storage/tables/table-storage-design-patterns#eventually-consistent-transactions-pattern).
// A Sender puts a typed message (type with a version, idempotency key,
// first-enqueued time, payload; a payload over 64 KiB goes to a blob
// through a BlobStore, which blobstore.New makes of an *azblob.Client) on an
// Azure queue; a Worker dequeues in batches of up to 32, runs the handler
// registered for each type with bounded concurrency, renews the visibility
// of long-running work, deletes a message only after its handler succeeds,
// lets a failed one reappear after a back-off that grows with its dequeue
// count (the message carries its last error), and moves one that failed too
// often, or can never succeed, to a poison queue. A type's handler is
// registered with Handle (a Handler, one message at a time) or HandleBatch
// (a BatchHandler, up to 32 of the type's messages together, so their
// table work can share reads and transactions); one Worker runs both kinds
// on one queue, and every batched message is held, renewed, deleted,
// retried or poisoned by its own outcome as a single one is. Mover is the
// guide's archive scenario built in.
//
// A worker handles at most Concurrency messages at once (a batch counts its
// messages), holds a bounded number more, renews each held message while
// it waits for a slot or runs, so none waits out its visibility, and sleeps while it may hold no
// more until a handler finishes. A handler that panics fails
// only its own message (a *PanicError with the value and the stack, retried
// like any failure); the worker keeps serving the others. Failures are
// never silent: each is logged at Warn (WorkerOptions.Logger, else
// slog.Default()), counted per message type in Stats, and Drain and Run
// return a *FailureReport of the messages that failed during the call. A
// type has one handler: a second Handle for it is refused
// (ErrDuplicateHandler), so give each index its own type.
//
// Delivery is at least once, so handlers must converge: read the source and
// make the target match it (level-triggered), with idempotent steps
// (table.Table's Upsert with aztables.UpdateModeReplace, Delete with IfExists and
// IfMatch; BlobStore.Put). Then a crash
// at any point, a redelivered or duplicated message, or two messages out of
// order all end in the same state once the queue drains; in between,
// readers can see the source and the target disagree, and the guide warns
// that this pattern gives no isolation. To scale out, run more workers (in
// as many processes and machines as needed) on the same queue; or spread
// keys over a set of queues with NewShardedSender (a stable hash of the key)
// and run an ownership.Role (package consistency/ownership) in each
// process: the roles share the set through blob
// leases, one lease per queue, each taking its fair share, giving queues
// up when a role joins and taking over a dead role's queues when its
// leases expire. The storage services are the coordinator, so there is
// nothing else to deploy.
//
// # Moving entities
//
// A Mover's move is three idempotent steps, so a crash between any two
// leaves a state from which the redelivered message completes it: before
// the target write nothing happened; after it, the write is repeated and
// the delete done; after the delete, the source is gone and the handler
// has nothing left to do. A message moves only the version it names. If
// the key holds another version when the message is handled (the entity
// changed after the request, or the move is done, the key reused and the
// message delivered again) nothing more is moved or deleted and the
// message fails permanently with ErrSourceChanged, so it lands in the
// poison queue for an operator to see; request the move again to move the
// newer version. If the source changes between the write and the delete,
// the target keeps the requested version and the source the newer one.
//
// Mover.ProcessBatch, registered with Worker.HandleBatch, moves a dequeue's
// messages together, grouped by partition: the sources of a partition are read with one query
// per 14 keys, written to the target in one transaction per 100 entities
// and deleted from the source the same way (each delete guarded by the
// version its message names), and then the messages are deleted. Every
// step is as crash-safe as a single move: a message is deleted only after
// its move is complete. A transaction the service refuses (a source
// changed since it was read, or a response lost and the SDK's retry found
// its work done) is settled entity by entity. For a batch of 32 moves in
// one partition a message costs 1 request for its delete, plus 1/32 each
// for the dequeue, the target write and the source delete, plus 3/32 for
// the reads.
//
// # Visibility and latency
//
// While a worker holds a message (waiting for a handler slot or running
// its handler) it renews the message's visibility with Update Message:
// the first renewal a third of WorkerOptions.Visibility after the
// dequeue, each next one a third of it after the previous answer, one at
// a time. No renewal starts once the handler has returned, and the delete
// that follows does not wait for one still in flight. A renewal has to
// reach the queue before the visibility the previous one set lapses, so a
// round trip of two thirds of Visibility leaves no margin, and no timing
// of renewals can help beyond it: make Visibility at least four times the
// slowest round trip you expect (the default 30 s allows 7.5 s). The
// worker records its slowest renewal in Stats.SlowestRenewal and warns
// once, through its Logger, when a renewal takes over a quarter of
// Visibility.
//
// When the worker loses its claim on a message (the queue refuses the
// message's pop receipt to a renewal, to the delete after its handler
// succeeded, or to the update that retries it, because another consumer
// dequeued the message once its visibility lapsed), the message may be
// handled again, possibly while its first handler still runs. The worker
// then cancels the handler's context with ErrClaimLost as its cause
// (errors.Is(context.Cause(ctx), ErrClaimLost)), counts the loss in
// Stats.ClaimsLost instead of Processed, and logs it at Warn with the
// message ID. A handler should return when its context ends, and must be
// idempotent: two handlings of one message can overlap, and only
// converging, conditional writes end in the same state whichever finishes
// last. Lost claims that keep coming mean Visibility is short for the
// queue's latency, or a process stalled for longer than it.
//
// This package does not import the Blob SDK, which pulls in Apache Arrow:
// a program that sends and handles messages and moves entities between
// tables builds without either. Blob code lives in consistency/blobstore
// (the *azblob.Client adapter) and consistency/ownership (the Role's
// leases); TestQueueOnlyPartsBuildWithoutAzblob keeps it so.
package consistency
