// Package table reads and writes Go structs as Azure Table Storage entities
// over the official *aztables.Client. A struct embeds Meta (PartitionKey,
// RowKey, ETag, Timestamp) and its exported fields become typed properties
// (see "Field types" below). Table[T] offers Azure's verbs with Azure's meaning: Get, Add
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
// Filter.Kind tells a point query from a table scan. Registry decodes tables
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
// entities are written with Replace only, the default mode of Update and
// Upsert for such a type: a merge would keep properties sealed under a key
// the write replaces, so an explicit Merge is refused before any request
// (ErrMergeEncrypted). Reads return whole values, so writing one back
// whole loses nothing of T; a property another program stored beside T's
// is kept only by an Extra field (see Replace). Paths that
// would carry the fields in plaintext (Registry, batch operations) refuse
// the type (ErrEncryptedType).
//
// # Field types
//
// A struct's exported fields are stored as properties of these EDM types:
//
//	string, encoding.TextMarshaler      Edm.String
//	bool                                Edm.Boolean
//	int8, int16, int32, uint8, uint16   Edm.Int32
//	int, int64, uint32                  Edm.Int64 (annotated; the value is a string)
//	float32, float64                    Edm.Double (annotated, so 2.0 stays a Double)
//	time.Time                           Edm.DateTime (UTC, 100 ns; 1601 to 9999)
//	[]byte                              Edm.Binary
//	[]byte with `table:",gzip"`         Edm.Binary, gzip-compressed: at most MaxEntityBytes before, MaxBinaryBytes after
//	table.GUID                          Edm.Guid
//	*T of any of these                  nullable: nil is not stored
//	anything with `table:",json"`       Edm.String holding its JSON
//
// Tags: `table:"Name"` renames, `table:",omitempty"` skips zero values,
// `table:"-"` skips the field. Embed Meta for the keys, ETag and Timestamp;
// add a field of type Extra to keep properties the struct does not name.
// The untyped Entity is encoded from its Properties.
//
// # Declarative keys
//
// A struct can say how its PartitionKey and RowKey are composed from its
// fields, in the style of ElectroDB's composite keys, so that no caller
// ever concatenates key strings. The same `table` tag that renames a field
// declares it a key component:
//
//	type Order struct {
//		table.Meta `table:",rkprefix:order_"`
//		Customer string    `table:"Customer,pk"`
//		Year     int       `table:"Year,rk:1,pad:4"`
//		Placed   time.Time `table:"Placed,rk:2,invticks"`
//		ID       string    `table:"ID,rk:3"`
//		Amount   float64
//	}
//
// Options of a component field:
//
//	pk, pk:N, rk, rk:N   the field is component N (1, 2, …; pk means pk:1)
//	                     of the PartitionKey or the RowKey
//	tuple                strings (the default in a key of several
//	                     components): keys.EncodeTuple, any text,
//	                     order-preserving, self-delimiting ("C042!")
//	raw                  strings (the default in a key of one component,
//	                     the guide's "Sales"): the text as it is; only as
//	                     the last component, which needs no delimiter
//	pad                  integers (the default): keys.Int64 for signed,
//	                     keys.FixedUint(n, 20) for unsigned types, 20 characters
//	pad:N                integers: exactly N zero-padded digits
//	                     (keys.FixedUint); a value that does not fit, or a
//	                     negative one, is refused at the write
//	desc                 integers: larger numbers first (keys.Int64 of ^n,
//	                     keys.FixedUint(2^64-1-n, 20); with pad:N, 10^N-1-n
//	                     in N digits)
//	ticks                time.Time (the default): keys.Ticks, oldest first
//	invticks             time.Time: keys.InvertedTicks, newest first (the
//	                     log tail pattern)
//
// The embedded Meta's tag may carry fixed prefixes, `table:",pkprefix:X"`
// and `table:",rkprefix:Y"`, which start the key as written, separator
// included (`rkprefix:empid_` gives the guide's "empid_000123"): the
// guide's RowKey prefixes that tell entity types apart in a partition.
// In a key of several components every component but a raw one ends with
// '!', which sorts below every character the encodings emit, so key order
// is the order of the components, compared one after the other; a key of
// one component is that component alone ("Sales", "000123").
//
// A component is stored as a property too, under its name, so that a
// filter can compare it (FieldOf) and a copy under other keys (the index
// patterns) still carries it. Writes (Table's Add, Upsert, Update, Modify
// and Meta; batch operations, the Writer and the patterns) compose
// the keys into Meta.
// Reads take each component from its property, and from Meta's keys only
// when the entity lacks the properties (written by other code). KeysOf
// gives the keys of a value for Get and Delete; KeyRange the range query
// of a prefix of the components. A key that Meta already holds must be the
// composed one (ErrKeyMismatch): that catches a key set by hand and a
// component changed after a read, which would write another entity than
// the one read. To move an entity to new key fields, clear Meta's keys (it
// is then a new entity) and delete the old one. The layout is checked when
// the type's plan is built (ErrKeyLayout); the composed keys at every
// write, before any request.
//
// # Untyped entities and Doubles
//
// tablekit writes every Double with its Edm.Double annotation, so
// the service stores a Double whatever its value. Reading, the annotation
// wins when the payload has one; a number without one is a Double when it
// has a fraction or exponent ("2.0", "1e300") or does not fit an Int32,
// and an Int32 otherwise. The service omits the annotation of Doubles and
// Int32s alike and tells them apart by the literal, writing an integral
// Double as "2.0", so its payloads decode to the right type. A payload
// that writes an integral Double as "2" (Azurite 3.37 does; the
// conformance case RunRawEntity shows it) cannot be told from an Int32: it
// reads as an Int32 with Inferred set, AsDouble returns it exactly, and
// writing the Entity back sends it unannotated, as it was received. Code
// that knows a property is a Double reads it with AsDouble, or sets it with
// ValueOf(float64(x)) before writing. Int64 is always annotated, so it reads as an
// Int64, beyond 2^53 too.
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
