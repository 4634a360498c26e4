// Package eventstream stores event streams in Azure Table Storage, after
// Streamstone: each stream is one partition, whose header row holds the
// committed version and whose events are rows keyed by version. Store
// appends with optimistic concurrency (one transaction guarded by the
// header's ETag, or several with the header marked Pending until the last
// commits), deduplicates events by ID, writes other rows of the partition
// atomically with an append (AppendOptions.Include), and reads forward or
// backward by version, a page per request. Snapshots keeps the state of a
// stream at a version next to it, written with the append that reaches it.
//
// Event streams are not one of the Table design guide's patterns, so they
// live apart from package patterns; they use the same layers (table for
// entities, batch for transactions). The names were
// patterns.EventStream, patterns.StreamEvent and so on before (see
// CHANGELOG.md); the stored rows are unchanged.
package eventstream
