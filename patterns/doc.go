// Package patterns implements the Table design guide's patterns as typed
// building blocks, one file per pattern. The ones here keep related
// entities of one partition consistent with entity group transactions:
// IntraPartitionIndex (copies of an entity under other RowKeys, the guide's
// "empid_" and "email_" rows), IndexEntities (value → list of IDs, the
// guide's EmployeeIDs per last name, option 2), Denormalized (a source's
// properties copied into other entities), RelatedRows (compound RowKeys
// read with one range query) and ReferenceCache (the guide's "join in the
// client"). See "Table design patterns":
// https://learn.microsoft.com/azure/storage/tables/table-storage-design-patterns
//
// Use them when the entities that must agree share a PartitionKey and the
// partition's write rate stays within the service's 2,000 entities per
// second: every write is one transaction, so a crash or a failed request
// leaves the old state or the new one, never a mix, and there is nothing to
// repair after a crash. What can go stale is what was written around
// tablekit (by hand, by an older version): every index verifies and
// repairs itself the same way (Verify and Repair on every index kind, one
// IndexReport of missing, orphaned and stale copies), which is also how a
// new index is backfilled. The indexes share one core (index_core.go): a
// copy is a table.Entity written whole, so a property the primary loses
// leaves its copies too; it names its owner (indexOfProperty), so a copy
// in the primaries' own table is never taken for a primary, and a copy is
// removed only while it still belongs to its owner, under its ETag.
// Writers that race are serialised by ETags: the loser's transaction fails
// whole with 412 and is retried with jittered back-off (table.RetryOnConflict),
// so nothing is lost. When the indexed entities span partitions, or a
// partition is hot, use the eventually consistent patterns instead:
// InterPartitionIndex (copies under other PartitionKeys or tables, the
// guide's "email_Sales") and EventualIndexEntities over RemoteIndexEntities
// (option 3) or BlobIndex (option 1). They send their changes through a
// queue (package consistency) around the write, hidden until it is done, so
// a crash at any step leaves a message that converges the copies to the
// primary; between a write and its handling, readers can see the copies lag.
// Each index sends under its own message type (its Name in the options,
// MessageType), so any number of them share one queue and one worker.
//
// The patterns of shape and time: LogTail (inverted-tick keys that record
// the instant given, the n most recent entries in one request, rows of a
// shared partition that are not log keys skipped), DataSeries (a property
// per slot), WideEntity (more than 252 properties or 1 MiB over parts
// written in one transaction, under part keys no other RowKey can produce), LargeEntity (big fields in blobs, blob first, Sweep for
// what a crash leaves), RollingTables (a table per period, expiry by
// dropping tables), Sharded (appends over N partitions, a merged reader),
// BlobLog (log data in blobs by hour); a token for one key range is
// sas.Table.
//
// Every pattern over a table takes the program's *table.Table handle, not a
// client: the codec, encryption, name, logger and tracing are configured
// once, with table.New, and every pattern over that table uses them, so a
// type with an encrypted field works with every pattern. An index copy
// holds the clear properties only (and only those its projection lists):
// Model.Lookup then reads the primary the copy names, and a value decoded
// from such a copy by an index's own reads is refused by every write
// (table.ErrPartialValue), so the zeros it holds are never stored. Patterns of raw
// entities (DataSeries, WideEntity, RemoteIndexEntities, the copies of
// CrossIndexDef.Table) take a *table.Table[table.Entity] (t.Entities() of a
// typed handle shares its options). RollingTables, which makes a table per
// period, takes the options for them in RollingTablesOptions.Table.
//
// # Tracing
//
// A pattern's TracingProvider option (IntraPartitionIndexOptions,
// IndexEntitiesOptions, InterPartitionIndexOptions, LargeEntityOptions,
// WideEntityOptions) opens one span per operation, named Type.Method, with
// the table (the TableName option: aztables does not expose a client's
// table name), partition, operation count and outcome as attributes,
// around the SDK's HTTP spans, as "Tracing" in package table's
// documentation describes.
package patterns
