// Package patterns implements the Table design guide's patterns as typed
// building blocks, one file per pattern. See "Table design patterns":
// https://learn.microsoft.com/azure/storage/tables/table-storage-design-patterns
//
// An entity with indexes is declared once, as a Model: its key layout and
// every index on it, each of a kind the model declares (ModelOptions):
// Copies (copies of the entity under other RowKeys of its partition, the
// guide's "empid_" and "email_" rows), Lists (value → list of IDs in the
// partition, the guide's EmployeeIDs per last name, option 2), CrossCopies
// (copies under other PartitionKeys or tables, the guide's "email_Sales")
// and RemoteLists (ID lists in another partition or table, option 3, or a
// blob per value, option 1). The model is the one way to write such an
// entity: Add, Update, Upsert, Modify, Delete and Load keep every index;
// Lookup, Find, Range, Prefix, IDs and LookupEntities read through them and
// return whole values (a copy that lacks properties, encrypted or not
// projected, is answered from its primary).
//
// The same-partition indexes change in the entity's own entity group
// transaction, so they never disagree with it: a crash or a failed request
// leaves the old state or the new one, never a mix. Writers that race are
// serialised by ETags: the loser's transaction fails whole with 412 and is
// retried with jittered back-off (table.RetryOnConflict). The indexes
// elsewhere are brought along through a queue (package consistency): one
// message per write, sent hidden before the transaction and shown after it,
// so a crash at any step leaves a message that converges them to the
// primary; between a write and its handling, readers can see them lag. Each
// model sends under its own message type (its Name, MessageType), so any
// number of models share one queue and one worker. What can go stale is
// what was written around tablekit (by hand, by an older version): the
// model's Verify and Repair cover every index at once (or those named in
// VerifyOptions.Indexes) and stream: each missing, orphaned or stale row
// goes to VerifyOptions.Issue as its range is read, Repair repairs each
// range right after, and a summary counts what was read and found, so
// memory is bounded by a range (a partition, or a page), not by the
// table. A new index is backfilled by Model.Build. A copy is a table.Entity written whole, so a property the
// primary loses leaves its copies too; it names its owner
// (indexOfProperty), so a copy in the primaries' own table is never taken
// for a primary, and a copy is removed only while it still belongs to its
// owner, under its ETag.
//
// Denormalized (a source's properties copied into other entities) and
// ReferenceCache (the guide's "join in the client") keep related entities
// together. Related rows under compound RowKeys (the guide's reviews
// "000123_2012" beside employee "000123") need no type of their own: one
// batch.Submit writes a parent and its rows in one transaction, and a
// table.Registry query over table.RowPrefix(partitionKey, "000123") reads
// them back, each as its own Go type, with one range query, when parent
// IDs have a fixed width (keys.FixedUint), as examples/departments shows.
//
// The patterns of shape and time: LogTail (inverted-tick keys that record
// the instant given, the n most recent entries in one request, the other
// rows of a shared partition left out), DataSeries (a property
// per slot), WideEntity (more than 252 properties or 1 MiB over parts
// written in one transaction, under part keys no other RowKey can produce), LargeEntity (big fields in blobs, blob first, Sweep for
// what a crash leaves), RollingTables (a table per period, expiry by
// dropping tables), Sharded (appends over N partitions, a merged reader),
// BlobLog (log data in blobs by hour); a token for one key range is
// sas.Table.
//
// These patterns share a table, and a partition, with an entity model and
// with each other: every row they write carries its kind (a log entry, a
// shard's append, a series, a wide entity's part, a large entity), so the
// model's reads, Verify, Repair and Build, and every other typed handle of
// the table, leave it out, as they leave out index copies and lists, with
// no declaration on the model. A pattern's typed handle (LogTail,
// Sharded, LargeEntity) belongs to its kind: its reads take that kind
// alone, and a handle that already belongs to a model or to another
// pattern is refused (ErrBadDefinition), so no pattern writes the model's
// type around its indexes. Give each a handle of its own over the same
// client and options (table.New). DataSeries, WideEntity and LargeEntity
// read a row without a mark at their keys as theirs (written before the
// mark) and refuse a row of another kind (table.ErrOtherRowKind).
//
// Every pattern over a table takes the program's *table.Table handle, not a
// client: the codec, encryption, name, logger and tracing are configured
// once, with table.New, and every pattern over that table uses them, so a
// type with an encrypted field works with every pattern. An index copy
// holds the clear properties only (and only those its projection lists):
// the model's reads then read the primary the copy names. Patterns of raw
// entities (DataSeries, WideEntity, the tables of ListDef.Table and
// IndexDef.Table) take a *table.Table[table.Entity] (t.Entities() of a
// typed handle shares its options). RollingTables, which makes a table per
// period, takes the options for them in RollingTablesOptions.Table.
//
// # Tracing
//
// A pattern over a *table.Table (Model, LargeEntity, WideEntity) opens one
// span per operation, named Type.Method (the method called: Model.Delete,
// never a part of the model), with the handle's tracing provider
// (table.Options.TracingProvider) and the table's name, partition,
// operation count and outcome as attributes, around the SDK's HTTP spans,
// as "Tracing" in package table's documentation describes; it logs to the
// handle's Logger. Model's iterators (Find, Range, Prefix, Query) open
// none of their own: their pages show as the handle's spans. BlobLog, over
// a blob client and no table, takes its provider and logger in
// BlobLogOptions.
//
// # Errors
//
// An error of a Model method names that method, whichever part of the
// model or layer below raised it: an *table.InputError carries it as Op
// ("table: Model.Update.email: …"), any other error starts with it
// ("patterns: Model.Delete: table: Get …"), and errors.Is and errors.As
// still find the sentinel, the *table.ServiceError and the service's
// *azcore.ResponseError in the chain.
package patterns
