// Package eventstream stores event streams in Azure Table Storage, after
// Streamstone: each stream is one partition, whose header row holds the
// committed version and whose events are rows keyed by version. Store
// appends with optimistic concurrency (one transaction guarded by the
// header's ETag, or several with the header marked Pending until the last
// commits), deduplicates events by ID, writes other rows of the partition
// atomically with an append (AppendOptions.Include), and reads forward or
// backward by version, a page per request. A snapshot keeps the state of a
// stream at a version next to it, written with the append that reaches it
// (AppendOptions.Snapshot) and read with Store.LoadSnapshot.
//
// Event streams are not one of the Table design guide's patterns, so they
// live apart from package patterns; they use the same layers (table for
// entities, batch for transactions).
//
// # Appends and reads
//
// An append too large for one transaction (100 operations, 4 MiB) is split
// over several, with the header updated in each, guarded by its ETag, and
// the committed version moved only by the last: the earlier transactions
// mark the header Pending. A crash between them leaves the header at the
// old version with Pending above it, and events past the version. Readers
// cap every read at the header's version, so they never see them; the next
// Append removes them (each removal guarded by the header's ETag too) and
// then writes its own. Every transaction of every append is conditional on
// the header's ETag, so a writer that loses its stream to another midway
// fails on its next transaction without writing anything more. Includes
// and the snapshot travel in the last transaction, with the commit.
//
// Reads (Read, ReadPage) go forward or backward from a version: one read
// of the header (none for a read as of a head, ReadOptions.AsOf), then one
// range query per page, since versions are dense and each page's RowKeys
// are known. A snapshot (LoadSnapshot) holds the state at a version, so a
// reader loads it and reads only the events after it.
//
// # Commands
//
// Store.AppendFunc runs a command: decide turns the stream's head into
// events, and a lost race sends it round again. AppendFunc itself sends
// the Open and the append, two requests without contention, and each lost
// race two more: the header read (which tells a lost race from a lost
// answer, and gives the fresh head) and the next append. decide's own
// reads come on top, in every round. A decide that rebuilds the state as
// of its head (LoadSnapshot and Read with ReadOptions.AsOf) reads no header: one request for the snapshot and one
// per page of the events after it (none when the snapshot is at the head).
// So a command that replays up to 1,000 events and appends costs three
// requests, and three more per lost race; a decide that reads without AsOf
// pays a header read more in every round.
//
// A stream commits one append at a time, so with N writers appending to
// it at once each round has one winner, and the back-off makes a writer
// that lost wait longer before its next try: the rounds a command needs
// grow with N, and the default 8 attempts are too few from two writers
// on. Size table.RetryOptions.MaxAttempts at 3N+8 for N concurrent writers
// of a stream (14 for 2, 20 for 4, 32 for 8, 56 for 16); the contention
// runs behind the rule are in BENCHMARKS.md. Requests per command grow with
// N as well: many writers of one stream are better served by one writer
// fed from a queue.
package eventstream
