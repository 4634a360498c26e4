package table

import (
	"context"
	"log/slog"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/tracing"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/internal/keyrules"
	"github.com/tablekit/tablekit/internal/rowkind"
	"github.com/tablekit/tablekit/internal/sameprops"
	"github.com/tablekit/tablekit/internal/trace"
)

// Table reads and writes entities of type T, a struct that embeds Meta, in
// one table. It is safe for concurrent use.
type Table[T any] struct {
	client Client
	wire   wirePath // whether client has tablekit's policy, once known
	plan   *plan
	name   string
	log    *slog.Logger
	enc    *Encryption
	tr     trace.OpTracer
	// learned is the table's name as a query response showed it, which
	// binds continuation tokens to their table.
	learned atomic.Pointer[string]
	// only is the RowKey prefix of the one row kind t reads and writes
	// (onlyRowPrefix); nil: every row.
	only atomic.Pointer[string]
	// kind is the kind of row t belongs to (onlyKind): "" the user's
	// entities, which an entity model claims, or the rowkind.Kind of a
	// pattern's rows; nil: unclaimed, the user's entities.
	kind atomic.Pointer[string]
}

// Options configure a Table. nil means the defaults.
type Options struct {
	// Name is the table's name, used only in errors, logs and spans.
	// Default: "" (spans then name the table the client addresses).
	Name string
	// Logger receives a debug record per retry, and a Warn record for
	// every Query that ends at low density (see QueryStats). Default: no
	// logging.
	Logger *slog.Logger
	// Encryption encrypts the fields tagged `table:",encrypt"`; required
	// when T has such fields. Default: nil.
	Encryption *Encryption
	// TracingProvider opens a span per operation (Table.Get, Table.Add,
	// Table.Upsert, Table.Update, Table.Delete, Table.DeleteValue,
	// Table.Modify; Table.QueryPage, and Table.Query once a
	// page) with the table, the partition, the operation count and the
	// outcome as attributes ("Tracing" in the package documentation).
	// Default: zero, no spans.
	TracingProvider tracing.Provider
}

// New checks T's fields once and returns a Table over client. It sends no
// request; an unsupported field type is reported here.
func New[T any](client Client, opts *Options) (*Table[T], error) {
	if client == nil || (reflect.ValueOf(client).Kind() == reflect.Pointer && reflect.ValueOf(client).IsNil()) {
		return nil, inputErr("New", reflect.TypeFor[T]().String(), "", ErrNilValue, "client is nil")
	}
	p, err := cachedPlan(reflect.TypeFor[T]())
	if err != nil {
		return nil, err
	}
	if p.meta == nil {
		return nil, inputErr("New", p.typ.String(), "", ErrNoMeta, "embed table.Meta to carry PartitionKey and RowKey")
	}
	t := &Table[T]{client: client, plan: p}
	if opts != nil {
		t.name, t.log, t.tr = opts.Name, opts.Logger, trace.NewOpTracer(opts.TracingProvider, "")
	}
	if p.hasEncrypted() {
		if opts == nil || opts.Encryption == nil || opts.Encryption.KeyID == "" || opts.Encryption.Keys == nil {
			return nil, inputErr("New", p.typ.String(), strings.Join(p.encrypted, ","), ErrBadOption, "encrypted fields need Options.Encryption with a KeyID and Keys")
		}
		if len(p.fields) > MaxUserProperties-1 {
			return nil, inputErr("New", p.typ.String(), "", ErrTooManyProperties, "%d fields and %s, at most %d", len(p.fields), encryptionProperty, MaxUserProperties)
		}
		enc := *opts.Encryption
		t.enc = &enc
	}
	return t, nil
}

// Client is the client the table sends its requests through.
func (t *Table[T]) Client() Client { return t.client }

// onlyRowPrefix makes t the handle of one row kind in a table that holds
// several under RowKey prefixes (the guide's heterogeneous entity types,
// such as an entity model's "empid_" primaries beside their "email_"
// copies): from then on Query and QueryPage read only the prefix's RowKey
// range, and Get, Stored, Modify, Delete and every write refuse a RowKey
// without the prefix with ErrOtherRowKind before any request, so no row of
// another kind is decoded as T or overwritten by one. OpenModel of package
// patterns calls it with the model's Primary prefix. A Table keeps one
// prefix: the same one again is a no-op, another is refused
// (ErrBadOption). Entities, the raw view, stays unrestricted.
func (t *Table[T]) onlyRowPrefix(prefix string) error {
	if prefix == "" {
		return inputErr("OnlyRowPrefix", t.typeName(), "prefix", ErrBadOption, "the prefix is empty")
	}
	if err := keyrules.ValidateRowKey(prefix); err != nil {
		return &InputError{Op: "OnlyRowPrefix", Type: t.typeName(), Field: "prefix", Rule: err}
	}
	if t.only.CompareAndSwap(nil, &prefix) {
		return nil
	}
	if had := *t.only.Load(); had != prefix {
		return inputErr("OnlyRowPrefix", t.typeName(), "prefix", ErrBadOption, "the Table already reads and writes the rows under %q only", had)
	}
	return nil
}

// ownRow refuses a RowKey outside t's row kind (onlyRowPrefix).
func (t *Table[T]) ownRow(op, rowKey string) error {
	p := t.only.Load()
	if p == nil || strings.HasPrefix(rowKey, *p) {
		return nil
	}
	return inputErr(op, t.typeName(), "RowKey", ErrOtherRowKind, "%q lacks the prefix %q of the rows this Table reads and writes", rowKey, *p)
}

// ownRange restricts f to t's row kind: the prefix's RowKey range joined
// with f (onlyRowPrefix); f itself without one.
func (t *Table[T]) ownRange(f Filter) Filter {
	p := t.only.Load()
	if p == nil {
		return f
	}
	lo, hi := keyrules.PrefixRange(*p)
	rng := Prop("RowKey").Ge(lo)
	if hi != "" {
		rng = rng.And(Prop("RowKey").Lt(hi))
	}
	if f.IsZero() {
		return rng
	}
	return f.And(rng)
}

// onlyKind makes t the handle of one kind of row (internal/rowkind): ""
// the user's entities, as an entity model claims its primaries' Table,
// or a pattern's kind, whose rows t's reads then take alone and every
// row t writes carries. A Table keeps one kind: the same again is a
// no-op, another is refused (ErrBadOption), so one Table never serves
// both a model and a pattern, which would write the model's type around
// its indexes. The raw view (a Table of Entity) takes no kind.
func (t *Table[T]) onlyKind(kind string) error {
	if t.plan.raw {
		return inputErr("OnlyKind", t.typeName(), "kind", ErrBadOption, "the raw view reads every row")
	}
	stored := len(t.plan.fields)
	if t.plan.hasEncrypted() {
		stored++ // the encryption envelope, as New counts it
	}
	if kind != "" && stored+1 > MaxUserProperties {
		// The pattern's mark is one property more than T declares.
		return inputErr("OnlyKind", t.typeName(), "", ErrTooManyProperties, "%d properties and %s, at most %d", stored, rowkind.Property, MaxUserProperties)
	}
	if t.kind.CompareAndSwap(nil, &kind) {
		return nil
	}
	if had := *t.kind.Load(); had != kind {
		return inputErr("OnlyKind", t.typeName(), "kind", ErrBadOption, "the Table already belongs to %s, not %s", kindName(had), kindName(kind))
	}
	return nil
}

func kindName(kind string) string {
	if kind == "" {
		return "an entity model's primaries"
	}
	return "the rows of kind " + strconv.Quote(kind)
}

// ownKind is the pattern's kind t belongs to; "" for the user's entities.
func (t *Table[T]) ownKind() string {
	if k := t.kind.Load(); k != nil {
		return *k
	}
	return ""
}

// otherKind reports whether data, a stored row, is of another kind than
// t's (internal/rowkind). For a Table of the user's entities that is a
// row tablekit marks: an index copy or list, a model's control or
// checkpoint row, a pattern's row. For a pattern's Table (onlyKind) it is
// every row but one marked with its kind. Every Table but the raw view
// leaves such a row out of its queries and refuses it to Get, so no
// handle of the table, whoever opened it, decodes one as T.
func (t *Table[T]) otherKind(data []byte) bool {
	if t.plan.raw {
		return false
	}
	if k := t.ownKind(); k != "" {
		return !rowkind.Is(data, rowkind.Kind(k))
	}
	return rowkind.Marked(data)
}

// withKind adds the mark of t's kind to body, an encoded entity, when t
// belongs to a pattern's kind (onlyKind); body as it is otherwise.
func (t *Table[T]) withKind(body []byte) []byte {
	k := t.ownKind()
	if k == "" || len(body) < 2 || body[len(body)-1] != '}' {
		return body
	}
	mark := `"` + rowkind.Property + `":` + strconv.Quote(k) + `}`
	if body[len(body)-2] != '{' {
		mark = "," + mark
	}
	return append(body[:len(body)-1:len(body)-1], mark...)
}

// encodeValue returns v as the JSON entity the service expects, after checking
// every limit.
func (t *Table[T]) encodeValue(v *T) ([]byte, error) {
	if v == nil {
		return nil, inputErr("encode", t.plan.typ.String(), "", ErrNilValue, "")
	}
	if t.plan.hasEncrypted() {
		return nil, refuseEncrypted("encode", t.plan)
	}
	return t.plan.encode(nil, reflect.ValueOf(v).Elem(), nil)
}

// encodeFor is Encode for the Table's own writes: the body to send
// (encrypted when T has encrypted fields, which only Replace may write) and
// the plaintext it was made from.
func (t *Table[T]) encodeFor(ctx context.Context, op string, v *T, mode aztables.UpdateMode) (wire, plain []byte, err error) {
	if v == nil {
		return nil, nil, inputErr(op, t.plan.typ.String(), "", ErrNilValue, "")
	}
	if mode, err = t.writeMode(op, mode, aztables.UpdateModeMerge); err != nil {
		return nil, nil, err
	}
	if err := t.plan.composeKeys(op, reflect.ValueOf(v).Elem()); err != nil {
		return nil, nil, err
	}
	m := t.Meta(v)
	if m.PartitionKey == "" {
		return nil, nil, checkEntityKeys(op, t.plan.typ.String(), m.PartitionKey, m.RowKey)
	}
	if err := t.ownRow(op, m.RowKey); err != nil {
		return nil, nil, err
	}
	// A merge of an Entity sends only the properties it holds; every
	// other write stores zeros over what a partial value lacks.
	if m.partial && (!t.plan.raw || mode == aztables.UpdateModeReplace) {
		return nil, nil, inputErr(op, t.plan.typ.String(), "", ErrPartialValue, "it was read without some of its properties; Get the entity, change that, and write it")
	}
	plain, err = t.plan.encode(nil, reflect.ValueOf(v).Elem(), nil)
	plain = t.withKind(plain)
	if err != nil || t.enc == nil {
		return plain, plain, err
	}
	if mode == aztables.UpdateModeMerge {
		return nil, nil, inputErr(op, t.plan.typ.String(), "", ErrMergeEncrypted, "write it with Mode: aztables.UpdateModeReplace")
	}
	wire, err = t.encrypt(ctx, plain)
	return wire, plain, err
}

// decodeFrom is Decode for the Table's own reads. full: the entity was read
// whole (no $select), so every encrypted property it lists must be there.
func (t *Table[T]) decodeFrom(ctx context.Context, data []byte, v *T, full bool) error {
	if t.enc != nil {
		plain, err := t.decrypt(ctx, data, full)
		if err != nil {
			return err
		}
		data = plain
	}
	if err := t.plan.decode(data, reflect.ValueOf(v).Elem()); err != nil {
		return err
	}
	t.Meta(v).readVia(t.client)
	return nil
}

// encodeOnly is Encode restricted to the named properties: the projection
// that an index copy stores.
func (t *Table[T]) encodeOnly(v *T, props map[string]bool) ([]byte, error) {
	if v == nil {
		return nil, inputErr("encode", t.plan.typ.String(), "", ErrNilValue, "")
	}
	if t.plan.hasEncrypted() {
		return nil, refuseEncrypted("encode", t.plan)
	}
	return t.plan.encode(nil, reflect.ValueOf(v).Elem(), props)
}

// decodeValue fills v from an entity as the service returns it.
func (t *Table[T]) decodeValue(data []byte, v *T) error {
	if v == nil {
		return inputErr("decode", t.plan.typ.String(), "", ErrNilValue, "")
	}
	if t.plan.hasEncrypted() {
		return refuseEncrypted("decode", t.plan)
	}
	return t.plan.decode(data, reflect.ValueOf(v).Elem())
}

// Meta returns the Meta embedded in v. When T declares its keys and a
// declared key is still empty in v's Meta, the keys are composed from v's
// fields first, so code that routes by Meta before writing (the patterns)
// sees them; a composition error is left for the write to report.
func (t *Table[T]) Meta(v *T) *Meta {
	rv := reflect.ValueOf(v).Elem()
	m := rv.FieldByIndex(t.plan.meta).Addr().Interface().(*Meta)
	if t.plan.hasKeyLayout() && (m.PartitionKey == "" || m.RowKey == "") {
		_ = t.plan.composeKeys("Meta", rv)
	}
	return m
}

func (t *Table[T]) svcErr(op, pk, rk string, err error) error {
	return &ServiceError{Op: op, Table: t.name, PartitionKey: pk, RowKey: rk, Err: err}
}

func checkKeys(op, typ, pk, rk string) error { return checkEntityKeys(op, typ, pk, rk) }

// Get reads one entity: one request. A row tablekit keeps beside the
// entities (an index copy or list, a model's control row; see QueryPage)
// is refused with ErrOtherRowKind by every Table but the raw view.
func (t *Table[T]) Get(ctx context.Context, partitionKey, rowKey string, opts *ReadOptions) (*T, error) {
	ctx, end := t.span(ctx, "Get", partitionKey)
	v, err := t.get(ctx, partitionKey, rowKey, opts)
	end(err)
	return v, err
}

func (t *Table[T]) get(ctx context.Context, partitionKey, rowKey string, _ *ReadOptions) (*T, error) {
	if err := checkKeys("Get", t.plan.typ.String(), partitionKey, rowKey); err != nil {
		return nil, err
	}
	if err := t.ownRow("Get", rowKey); err != nil {
		return nil, err
	}
	resp, body, err := getEntity(ctx, t.client, &t.wire, partitionKey, rowKey, nil)
	if err != nil {
		return nil, t.svcErr("Get", partitionKey, rowKey, err)
	}
	if t.otherKind(body) {
		return nil, inputErr("Get", t.typeName(), "RowKey", ErrOtherRowKind, "(%q, %q) is a row of another kind (an index copy or list, a model's control row, another pattern's row), not a %s", partitionKey, rowKey, t.typeName())
	}
	v := new(T)
	if err := t.decodeFrom(ctx, body, v, true); err != nil {
		return nil, err
	}
	if resp.ETag != "" {
		t.Meta(v).ETag = resp.ETag
	}
	return v, nil
}

// serviceBody is the entity as the service sent it. The SDK's GetEntity
// hands back the body re-encoded through map[string]any, which loses what
// the JSON itself says: an integral Double arrives as 2.0 (the service's
// way of telling it from an Int32) and leaves the SDK as 2. The captured
// response's body is what the service sent; fallback is used when there is
// none (a transport that does not keep it).
func serviceBody(raw *http.Response, fallback []byte) []byte {
	if raw == nil {
		return fallback
	}
	if b, err := runtime.Payload(raw); err == nil && len(b) > 0 {
		return b
	}
	return fallback
}

// ReadOptions configure the reads of a Table without knobs of their own
// (Get). There are none yet; pass nil.
type ReadOptions struct{}

// written records a write's new ETag, and the Timestamp it encodes, in v,
// by the rule on Meta; guarded: the write sent v's ETag as If-Match.
func (t *Table[T]) written(v *T, etag azcore.ETag, guarded bool) {
	t.Meta(v).writtenVia(t.client, etag, guarded)
}

// sameAsSent compares a stored entity with the plaintext an Add encoded;
// an encrypted entity is decrypted first (ciphertexts never repeat).
func (t *Table[T]) sameAsSent(ctx context.Context, plain, stored []byte) bool {
	if t.enc != nil {
		var err error
		if stored, err = t.decrypt(ctx, stored, true); err != nil {
			return false
		}
	}
	return sameprops.Equal(plain, stored)
}

// noContent asks the service not to echo an inserted entity back (the SDK
// exposes no option for it): the ETag comes in a header, so the body is
// wasted bytes and decoding.
func noContent(ctx context.Context) context.Context {
	return policy.WithHTTPHeader(ctx, http.Header{"Prefer": []string{"return-no-content"}})
}

// AddOptions configure Add. nil means the defaults.
type AddOptions struct {
	// Idempotent makes an Add that finds its entity already stored exactly
	// as sent (the same properties) succeed, taking the stored ETag. That is
	// what a retry sees when the first attempt's response was lost: the
	// SDK retries, the service answers 409, yet the write is the caller's.
	// The price: one read on a conflict, and an identical entity added
	// earlier by someone else also counts as success. Default: false, any
	// existing entity is ErrAlreadyExists.
	Idempotent bool
}

// Add inserts v; it fails with ErrAlreadyExists if the entity exists. v's
// ETag and Timestamp are updated. One request, sent with "Prefer:
// return-no-content" so the service does not echo the entity back; the
// header goes through runtime.WithHTTPHeader, which replaces headers a
// caller attached to ctx that way (attach yours with a policy instead).
func (t *Table[T]) Add(ctx context.Context, v *T, opts *AddOptions) error {
	ctx, end := t.span(ctx, "Add", t.partitionOf(v))
	err := t.add(ctx, v, opts)
	end(err)
	return err
}

func (t *Table[T]) add(ctx context.Context, v *T, opts *AddOptions) error {
	body, plain, err := t.encodeFor(ctx, "Add", v, aztables.UpdateModeReplace)
	if err != nil {
		return err
	}
	m := t.Meta(v)
	resp, err := t.client.AddEntity(noContent(ctx), body, nil)
	if err != nil {
		err = t.svcErr("Add", m.PartitionKey, m.RowKey, err)
		if opts != nil && opts.Idempotent && Is(err, ErrAlreadyExists) {
			if ok, _ := t.storedAs(ctx, v, plain); ok {
				return nil
			}
		}
		return err
	}
	t.written(v, resp.ETag, false)
	return nil
}

// storedSpan reports whether v's entity is stored with exactly v's properties
// (the same properties, values compared as the service keeps them); if it is,
// v's ETag is set to the stored one. One request. It settles a write whose
// response was lost: the SDK's retry of an insert, or of a transaction
// that inserts v, meets 409 although the write was the caller's. A missing
// entity is (false, nil).
func (t *Table[T]) storedSpan(ctx context.Context, v *T) (bool, error) {
	ctx, end := t.span(ctx, "Stored", t.partitionOf(v))
	ok, err := t.stored(ctx, v)
	end(err)
	return ok, err
}

func (t *Table[T]) stored(ctx context.Context, v *T) (bool, error) {
	if v == nil {
		return false, inputErr("Stored", t.plan.typ.String(), "", ErrNilValue, "")
	}
	if err := t.plan.composeKeys("Stored", reflect.ValueOf(v).Elem()); err != nil {
		return false, err
	}
	m := t.Meta(v)
	if err := checkKeys("Stored", t.plan.typ.String(), m.PartitionKey, m.RowKey); err != nil {
		return false, err
	}
	if err := t.ownRow("Stored", m.RowKey); err != nil {
		return false, err
	}
	plain, err := t.plan.encode(nil, reflect.ValueOf(v).Elem(), nil)
	if err != nil {
		return false, err
	}
	return t.storedAs(ctx, v, t.withKind(plain))
}

func (t *Table[T]) storedAs(ctx context.Context, v *T, plain []byte) (bool, error) {
	m := t.Meta(v)
	got, body, err := getEntity(ctx, t.client, &t.wire, m.PartitionKey, m.RowKey, nil)
	if err != nil {
		err = t.svcErr("Stored", m.PartitionKey, m.RowKey, err)
		if Is(err, ErrNotFound) {
			return false, nil
		}
		return false, err
	}
	if !t.sameAsSent(ctx, plain, body) {
		return false, nil
	}
	// A read of this table: the ETag is this table's.
	t.written(v, got.ETag, true)
	return true, nil
}

// writeMode checks the mode of a write: aztables.UpdateModeMerge,
// aztables.UpdateModeReplace, or "" for the verb's default def, which is
// Replace for a type with encrypted fields (a merge cannot write it, and
// its reads return whole values, so the whole value written back loses
// nothing of T). Any other value is an ErrBadOption before any request
// (the SDK would refuse it only after the write was encoded, with an
// error of its own).
func (t *Table[T]) writeMode(op string, mode, def aztables.UpdateMode) (aztables.UpdateMode, error) {
	switch {
	case mode == "" && t.enc != nil:
		return aztables.UpdateModeReplace, nil
	case mode == "":
		return def, nil
	case mode == aztables.UpdateModeMerge, mode == aztables.UpdateModeReplace:
		return mode, nil
	}
	return "", inputErr(op, t.plan.typ.String(), "Mode", ErrBadOption, "%q is neither aztables.UpdateModeMerge nor aztables.UpdateModeReplace", mode)
}

// UpsertOptions configure Upsert.
type UpsertOptions struct {
	// Mode: aztables.UpdateModeMerge or aztables.UpdateModeReplace.
	// Default (""): Merge, as in the SDK, or Replace for a type with
	// encrypted fields, which a merge cannot write. Replace makes the
	// stored entity exactly the one sent: a property it stores that T
	// does not declare (another program's) is removed, unless T has an
	// Extra field, which keeps such properties from the Get the value came
	// from.
	Mode aztables.UpdateMode
}

// Upsert inserts v or, if it exists, merges or replaces it, whatever its
// ETag. v's ETag and Timestamp are updated. One request.
func (t *Table[T]) Upsert(ctx context.Context, v *T, opts *UpsertOptions) error {
	ctx, end := t.span(ctx, "Upsert", t.partitionOf(v))
	err := t.upsert(ctx, v, opts)
	end(err)
	return err
}

func (t *Table[T]) upsert(ctx context.Context, v *T, opts *UpsertOptions) error {
	var mode aztables.UpdateMode
	if opts != nil {
		mode = opts.Mode
	}
	mode, err := t.writeMode("Upsert", mode, aztables.UpdateModeMerge)
	if err != nil {
		return err
	}
	body, _, err := t.encodeFor(ctx, "Upsert", v, mode)
	if err != nil {
		return err
	}
	m := t.Meta(v)
	resp, err := t.client.UpsertEntity(ctx, body, &aztables.UpsertEntityOptions{UpdateMode: mode})
	if err != nil {
		return t.svcErr("Upsert", m.PartitionKey, m.RowKey, err)
	}
	t.written(v, resp.ETag, false)
	return nil
}

// UpdateOptions configure Update.
type UpdateOptions struct {
	// Mode: aztables.UpdateModeMerge or aztables.UpdateModeReplace.
	// Default (""): Merge, as in the SDK, or Replace for a type with
	// encrypted fields, which a merge cannot write. Replace makes the
	// stored entity exactly the one sent: a property it stores that T
	// does not declare (another program's) is removed, unless T has an
	// Extra field, which keeps such properties from the Get the value came
	// from.
	Mode aztables.UpdateMode
	// IfMatch is the version the update requires, as the SDK's
	// UpdateEntityOptions.IfMatch: to.Ptr(azcore.ETagAny) updates whatever the
	// version (it still fails with ErrNotFound when the entity does not
	// exist), a pointer to another ETag updates only that version. A
	// pointer to an empty ETag is ErrNoETag. Default (nil): v's Meta.ETag,
	// which must be set.
	IfMatch *azcore.ETag
}

// Update changes an existing entity, guarded by v's ETag: ErrPreconditionFailed
// if another writer changed it since it was read, ErrNotFound if it is gone.
// opts.IfMatch chooses another version (to.Ptr(azcore.ETagAny): any). With
// neither an ETag in v nor IfMatch, it fails with ErrNoETag before any
// request: it never turns into an upsert. One request.
func (t *Table[T]) Update(ctx context.Context, v *T, opts *UpdateOptions) error {
	ctx, end := t.span(ctx, "Update", t.partitionOf(v))
	err := t.update(ctx, v, opts)
	end(err)
	return err
}

func (t *Table[T]) update(ctx context.Context, v *T, opts *UpdateOptions) error {
	if opts == nil {
		opts = &UpdateOptions{}
	}
	mode, err := t.writeMode("Update", opts.Mode, aztables.UpdateModeMerge)
	if err != nil {
		return err
	}
	body, _, err := t.encodeFor(ctx, "Update", v, mode)
	if err != nil {
		return err
	}
	m := t.Meta(v)
	etag := m.ETag
	switch {
	case opts.IfMatch != nil:
		if *opts.IfMatch == "" {
			return inputErr("Update", t.plan.typ.String(), "IfMatch", ErrNoETag, "IfMatch points at an empty ETag; to.Ptr(azcore.ETagAny) means any version")
		}
		etag = *opts.IfMatch
	case etag == "":
		return inputErr("Update", t.plan.typ.String(), "ETag", ErrNoETag, "read the entity first, or set UpdateOptions.IfMatch to to.Ptr(azcore.ETagAny)")
	}
	resp, err := t.client.UpdateEntity(ctx, body, &aztables.UpdateEntityOptions{IfMatch: &etag, UpdateMode: mode})
	if err != nil {
		return t.svcErr("Update", m.PartitionKey, m.RowKey, err)
	}
	// guarded only when the write sent v's own ETag: then v held the
	// version the write replaced (see Meta).
	t.written(v, resp.ETag, etag == m.ETag && etag != azcore.ETagAny)
	return nil
}

// DeleteOptions configure Delete.
type DeleteOptions struct {
	// IfMatch deletes only that version of the entity (ErrPreconditionFailed
	// otherwise). Default: nil, any version.
	IfMatch *azcore.ETag
	// IfExists makes a missing entity a success. Default: false, and a
	// missing entity is ErrNotFound.
	IfExists bool
}

// Delete removes one entity. One request.
func (t *Table[T]) Delete(ctx context.Context, partitionKey, rowKey string, opts *DeleteOptions) error {
	ctx, end := t.span(ctx, "Delete", partitionKey)
	err := t.delete(ctx, partitionKey, rowKey, opts)
	end(err)
	return err
}

func (t *Table[T]) delete(ctx context.Context, partitionKey, rowKey string, opts *DeleteOptions) error {
	if err := checkKeys("Delete", t.plan.typ.String(), partitionKey, rowKey); err != nil {
		return err
	}
	if err := t.ownRow("Delete", rowKey); err != nil {
		return err
	}
	if opts == nil {
		opts = &DeleteOptions{}
	}
	etag := azcore.ETagAny
	if opts.IfMatch != nil {
		if *opts.IfMatch == "" {
			return inputErr("Delete", t.plan.typ.String(), "IfMatch", ErrNoETag, "IfMatch points at an empty ETag")
		}
		etag = *opts.IfMatch
	}
	_, err := t.client.DeleteEntity(ctx, partitionKey, rowKey, &aztables.DeleteEntityOptions{IfMatch: &etag})
	if err != nil {
		if opts.IfExists && Is(err, ErrNotFound) {
			return nil
		}
		return t.svcErr("Delete", partitionKey, rowKey, err)
	}
	return nil
}

// DeleteValue removes v's entity if it is still the version v was read at.
func (t *Table[T]) DeleteValue(ctx context.Context, v *T, opts *WriteOptions) error {
	ctx, end := t.span(ctx, "DeleteValue", t.partitionOf(v))
	err := t.deleteValue(ctx, v, opts)
	end(err)
	return err
}

func (t *Table[T]) deleteValue(ctx context.Context, v *T, _ *WriteOptions) error {
	if v == nil {
		return inputErr("Delete", t.plan.typ.String(), "", ErrNilValue, "")
	}
	m := t.Meta(v)
	if m.ETag == "" {
		return inputErr("Delete", t.plan.typ.String(), "ETag", ErrNoETag, "read the entity first, or use Delete")
	}
	etag := m.ETag
	return t.Delete(ctx, m.PartitionKey, m.RowKey, &DeleteOptions{IfMatch: &etag})
}

// WriteOptions configure the writes of a Table without knobs of their own
// (DeleteValue). There are none yet; pass nil.
type WriteOptions struct{}

// properties lists the property names T's fields are stored under.
func (t *Table[T]) properties() []string {
	out := make([]string, len(t.plan.fields))
	for i, f := range t.plan.fields {
		out[i] = f.name
	}
	return out
}
