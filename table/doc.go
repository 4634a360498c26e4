// Package table reads and writes Go structs as Azure Table Storage entities
// over the official *aztables.Client. A struct embeds Meta (PartitionKey,
// RowKey, ETag, Timestamp) and its exported fields become typed properties
// (see Codec). Table[T] offers Azure's verbs with Azure's meaning: Get, Add
// (fails if present), Upsert (either way, merge or replace), Update (needs
// the entity's ETag, or an explicit IfMatch: it never becomes an upsert) and
// Delete (with an ETag or unconditional, optionally if-exists); Modify is
// the optimistic-concurrency loop (read, change, write with the ETag, retry
// on 412 with jittered back-off). Queries are iter.Seq2 iterators that follow
// continuation tokens through short and empty pages, or one page at a time
// with an opaque token to resume after a restart (bound to its filter and
// table, so a foreign or edited token is an ErrBadToken input error);
// Filter builds $filter
// text in which every literal is typed and quoted by construction, and
// Classify tells a point query from a table scan. Registry decodes tables
// that hold several entity types. Entity is the untyped form: Meta plus
// EDM-typed Values, a T like any struct (Table[Entity], Table.Entities,
// ToEntity, FromEntity), checked exactly like typed values.
//
// One way to pass a condition, as the SDK does: a conditional write takes
// an If-Match ETag as IfMatch *azcore.ETag in its options (UpdateOptions,
// DeleteOptions; in package batch, Op.IfMatch), where nil is the verb's
// documented default (Update and DeleteValue: the value's Meta.ETag;
// Delete: any version), to.Ptr(azcore.ETagAny) means any version, and any other
// ETag means that version only (ErrPreconditionFailed otherwise). A value
// read from the table carries its ETag in Meta, so the common guarded
// write needs no option at all. A pointer to an empty ETag is ErrNoETag
// before any request.
//
// An empty PartitionKey is refused by every write, Get and Delete
// (ErrEmptyPartitionKey): the service accepts it, but the Azure SDK cannot
// address such an entity after adding it. A Meta's ETag belongs to the
// table it was read from: writing the value to another table leaves it
// alone (see Meta).
//
// Every limit of the service is checked before a request is sent: keys and
// property names (package keys), 252 properties, 32 K UTF-16 units per
// string, 64 KiB per binary value, 1 MiB per entity as the service counts
// it, DateTime from 1601, 15 comparisons per filter, $top up to 1,000. Bad
// input is an *InputError that names the type, field and rule, and nothing
// is sent. Errors from the service keep the *azcore.ResponseError in the
// chain and classify with errors.Is (ErrNotFound, ErrAlreadyExists,
// ErrPreconditionFailed, ErrThrottled) or IsRetryable; tablekit never
// retries a 400-class answer. Each operation here is a single request, except
// Modify (a read and a write, more only under contention) and Query (one per
// page), so a crash between steps leaves either the old or the new entity,
// never half of one. See "Design for querying" and "Table design patterns":
// https://learn.microsoft.com/azure/storage/tables/table-storage-design-for-query
//
// As in the Azure SDK, every function and method that takes a context
// takes it first and its options last (*XxxOptions; nil means the
// documented defaults), so options can grow without breaking callers.
//
// Fields tagged `table:",encrypt"` are encrypted on the client ("Encrypting
// table data" in the guide): a Table built with Options.Encryption seals
// them with AES-256-GCM under a fresh key per write, bound to the entity's
// keys and the property's name, and stores that key wrapped by your
// key-encryption key (KeyWrapper; LocalKeys for keys you hold) in
// encryptionProperty. Reads decrypt and detect a wrong key or tampering
// (ErrDecrypt). Encrypted properties cannot be filtered on, and such
// entities are written with Replace only: a merge would keep properties
// sealed under a key the write replaces (ErrMergeEncrypted). Paths that
// would carry the fields in plaintext (Codec, Encode, Registry, batch
// operations) refuse the type (ErrEncryptedType).
//
// # Tracing
//
// Every tablekit type that sends requests (Table here, and batch's
// Transaction and Writer, consistency's Worker and Mover, eventstream's
// Store, the patterns) takes a TracingProvider in its options and opens
// one span per operation, named Type.Method, its options saying which
// spans and attributes. Give it the provider the clients were built with
// (aztables.ClientOptions.TracingProvider; for OpenTelemetry,
// azotel.NewTracingProvider): the SDK's HTTP spans of the operation's
// requests are then its children. The option exists because aztables
// keeps a client's provider to itself. An operation inside another
// tablekit span (a pattern's transaction) is folded into that span.
// The default, the zero provider, records nothing and costs nothing.
package table
