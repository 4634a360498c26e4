package batch

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/internal/batchhook"
	"github.com/tablekit/tablekit/internal/keyrules"
	"github.com/tablekit/tablekit/internal/tableio"
	"github.com/tablekit/tablekit/table"
)

// Kind is what an operation does, with Azure's meaning.
type Kind int

const (
	// KindAdd inserts; the transaction fails if the entity exists.
	KindAdd Kind = iota + 1
	// KindUpsertMerge inserts or, if it exists, merges into the entity,
	// whatever its ETag.
	KindUpsertMerge
	// KindUpsertReplace inserts or, if it exists, replaces the entity,
	// whatever its ETag.
	KindUpsertReplace
	// KindUpdateMerge merges into an existing entity: with its ETag, or
	// with If-Match: * (any version) when the op has none. The SDK sends no
	// If-Match for a batch update without one, which the service takes as
	// an upsert; tablekit always sends one.
	KindUpdateMerge
	// KindUpdateReplace replaces an existing entity, as KindUpdateMerge.
	KindUpdateReplace
	// KindDelete removes the entity: with its ETag, or any version.
	KindDelete
)

// String names the kind, as "UpsertMerge".
func (k Kind) String() string {
	switch k {
	case KindAdd:
		return "Add"
	case KindUpsertMerge:
		return "UpsertMerge"
	case KindUpsertReplace:
		return "UpsertReplace"
	case KindUpdateMerge:
		return "UpdateMerge"
	case KindUpdateReplace:
		return "UpdateReplace"
	case KindDelete:
		return "Delete"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

func (k Kind) action() aztables.TransactionType {
	switch k {
	case KindAdd:
		return aztables.TransactionTypeAdd
	case KindUpsertMerge:
		return aztables.TransactionTypeInsertMerge
	case KindUpsertReplace:
		return aztables.TransactionTypeInsertReplace
	case KindUpdateMerge:
		return aztables.TransactionTypeUpdateMerge
	case KindUpdateReplace:
		return aztables.TransactionTypeUpdateReplace
	}
	return aztables.TransactionTypeDelete
}

// Op is one operation of a transaction. Build it with Add, Upsert, Update,
// Delete or DeleteValue; it is encoded (and its value checked against the
// service's limits) when it joins a Transaction.
type Op struct {
	Kind    Kind
	value   any // pointer to a struct that embeds table.Meta, or nil
	raw     []byte
	pk, rk  string
	ifMatch azcore.ETag // "" means any version, sent as *
	useETag bool        // take If-Match from the value's Meta
	// explicit: IfMatch set ifMatch, which then wins over the value's Meta.
	explicit bool
}

// IfMatch returns o conditioned on etag, the one way tablekit takes a
// condition (see package table): azcore.ETagAny means any version,
// another ETag that version only (the transaction fails
// with 412 otherwise). It applies to updates and deletes, whose defaults
// are documented on their constructors (Update and DeleteValue: the
// value's Meta.ETag; Delete: any version); on an Add or an upsert, or with
// an empty etag, the operation is refused with an *table.InputError before
// any request.
func (o Op) IfMatch(etag azcore.ETag) Op {
	o.ifMatch, o.useETag, o.explicit = etag, true, true
	return o
}

// PartitionKey is the partition the operation acts on.
func (o Op) PartitionKey() string { o.resolveKeys(); return o.pk }

// RowKey is the row the operation acts on.
func (o Op) RowKey() string { o.resolveKeys(); return o.rk }

func (o *Op) resolveKeys() {
	if o.value != nil && o.pk == "" && o.rk == "" {
		if m, err := tableio.MetaOf(o.value); err == nil {
			o.pk, o.rk = m.PartitionKey, m.RowKey
		}
	}
}

// Add inserts v, a pointer to a struct that embeds table.Meta, or a
// *table.Entity (as every operation that takes a value).
func Add(v any) Op { return Op{Kind: KindAdd, value: v} }

// Upsert inserts v or merges into (aztables.UpdateModeMerge, or "") /
// replaces (aztables.UpdateModeReplace) the existing entity. Any other
// mode is refused with ErrBadOperation when the operation joins a
// transaction.
func Upsert(v any, mode aztables.UpdateMode) Op {
	return Op{Kind: modeKind(mode, KindUpsertMerge, KindUpsertReplace), value: v}
}

// Update changes the existing entity guarded by v's ETag (the transaction
// fails with 412 if it changed). v must carry an ETag. mode is as
// Upsert's.
func Update(v any, mode aztables.UpdateMode) Op {
	return Op{Kind: modeKind(mode, KindUpdateMerge, KindUpdateReplace), value: v, useETag: true}
}

// modeKind is merge or replace by mode; 0, which no transaction takes
// (ErrBadOperation), for a mode that is neither.
func modeKind(mode aztables.UpdateMode, merge, replace Kind) Kind {
	switch mode {
	case "", aztables.UpdateModeMerge:
		return merge
	case aztables.UpdateModeReplace:
		return replace
	}
	return 0
}

// Delete removes an entity whatever its version.
func Delete(partitionKey, rowKey string) Op {
	return Op{Kind: KindDelete, pk: partitionKey, rk: rowKey}
}

// DeleteValue removes v's entity only at the version v was read at.
func DeleteValue(v any) Op { return Op{Kind: KindDelete, value: v, useETag: true} }

func init() {
	batchhook.Raw = func(kind int, entity []byte, ifMatch *azcore.ETag) any { return raw(Kind(kind), entity, ifMatch) }
}

// raw is an operation on an entity already encoded as the service's JSON
// (it must hold PartitionKey and RowKey), which tablekit's own packages
// build through internal/batchraw. ifMatch guards updates and deletes;
// nil means any version.
func raw(kind Kind, entity []byte, ifMatch *azcore.ETag) Op {
	o := Op{Kind: kind, raw: entity}
	if ifMatch != nil {
		o.ifMatch, o.useETag = *ifMatch, true
	}
	var keysOnly struct{ PartitionKey, RowKey string }
	if json.Unmarshal(entity, &keysOnly) == nil {
		o.pk, o.rk = keysOnly.PartitionKey, keysOnly.RowKey
	}
	return o
}

// encoded is an operation ready to send.
type encoded struct {
	op      Op
	pk, rk  string
	body    []byte
	ifMatch azcore.ETag // "" for Add and upserts
	meta    *table.Meta // where the new ETag goes, for typed values
	size    int         // this operation's share of the request, upper bound
	quoted  bool        // an update or upsert only tablekit's own $batch body can send
}

// encode checks and encodes one operation; the error is not yet indexed.
func (o Op) encode() (*encoded, error) {
	e := &encoded{op: o}
	switch {
	case o.Kind < KindAdd || o.Kind > KindDelete:
		return nil, ErrBadOperation
	case o.explicit && (o.Kind == KindAdd || o.Kind == KindUpsertMerge || o.Kind == KindUpsertReplace):
		return nil, &table.InputError{Op: o.Kind.String(), Field: "IfMatch", Rule: table.ErrInvalidValue,
			Detail: "an add or upsert takes no If-Match; use an update to require a version"}
	case o.explicit && o.ifMatch == "":
		return nil, &table.InputError{Op: o.Kind.String(), Field: "IfMatch", Rule: table.ErrNoETag,
			Detail: "empty ETag; azcore.ETagAny means any version"}
	case o.value != nil:
		m, err := tableio.MetaOf(o.value)
		if err != nil {
			return nil, err
		}
		e.pk, e.rk, e.meta = m.PartitionKey, m.RowKey, m
		if e.pk == "" {
			return nil, validKeys(e.pk, e.rk)
		}
		if o.Kind == KindDelete {
			if err := validKeys(e.pk, e.rk); err != nil {
				return nil, err
			}
			e.body = deleteKeysJSON(e.pk, e.rk)
		} else if e.body, err = tableio.Marshal(o.value); err != nil {
			return nil, err
		}
		switch {
		case o.explicit:
			e.ifMatch = o.ifMatch
		case o.useETag:
			if m.ETag == "" {
				return nil, &table.InputError{Op: o.Kind.String(), Field: "ETag", Rule: table.ErrNoETag,
					Detail: "read the entity first, or condition the operation with IfMatch(azcore.ETagAny)"}
			}
			e.ifMatch = m.ETag
		}
	case o.raw != nil:
		var keysOnly struct {
			PartitionKey *string
			RowKey       *string
		}
		if err := json.Unmarshal(o.raw, &keysOnly); err != nil || keysOnly.PartitionKey == nil || keysOnly.RowKey == nil {
			return nil, &table.InputError{Op: o.Kind.String(), Rule: table.ErrInvalidValue, Detail: "raw entity must be a JSON object with PartitionKey and RowKey"}
		}
		e.pk, e.rk, e.body = *keysOnly.PartitionKey, *keysOnly.RowKey, o.raw
		if err := validKeys(e.pk, e.rk); err != nil {
			return nil, err
		}
		if o.Kind == KindDelete {
			e.body = deleteKeysJSON(e.pk, e.rk)
		} else {
			// Checked exactly like a typed value (names, EDM types and
			// values, sizes) by reading it as a table.Entity and encoding
			// that, which is also what is sent: the same properties with
			// the same types.
			var ent table.Entity
			if err := tableio.Unmarshal(o.raw, &ent); err != nil {
				return nil, err
			}
			body, err := tableio.Marshal(&ent)
			if err != nil {
				return nil, err
			}
			e.body = body
		}
		e.ifMatch = o.ifMatch
	case o.Kind == KindDelete:
		if err := validKeys(o.pk, o.rk); err != nil {
			return nil, err
		}
		e.pk, e.rk, e.body = o.pk, o.rk, deleteKeysJSON(o.pk, o.rk)
		// An empty ifMatch (any version) is sent as *; IfMatch("") was
		// refused above.
		e.ifMatch = o.ifMatch
	default:
		return nil, &table.InputError{Op: o.Kind.String(), Rule: table.ErrNilValue, Detail: "no value"}
	}
	if o.Kind != KindAdd && o.Kind != KindDelete && (strings.ContainsRune(e.pk, '\'') || strings.ContainsRune(e.rk, '\'')) {
		// aztables v1.4.1 (transactional_batch.go, generateEntitySubset)
		// takes an update's or upsert's keys from its entity and writes the
		// same string into the URL, path-escaped but without OData's quote
		// doubling, and into the body. The service needs O''Brien in the
		// URL and O'Brien in the body, and refuses a body whose keys differ
		// from the URL's (InvalidInput); no entity makes both right, and
		// the SDK has no public way to send a $batch body of one's own
		// through the client's pipeline. Adds (keys in the body only) and
		// deletes (no body: deleteKeysJSON) work on every key; the
		// single-entity verbs, which double the quotes, do the rest.
		return nil, ErrQuoteInKey
	}
	if e.ifMatch == "" && (o.Kind == KindUpdateMerge || o.Kind == KindUpdateReplace) {
		e.ifMatch = azcore.ETagAny // update-only, never the SDK's silent upsert
	}
	e.size = opSize(e)
	return e, nil
}

func validKeys(pk, rk string) error {
	if pk == "" {
		// See table.ErrEmptyPartitionKey: the SDK cannot address it after.
		return &table.InputError{Op: "batch", Field: "PartitionKey", Rule: table.ErrEmptyPartitionKey}
	}
	if err := keyrules.ValidatePartitionKey(pk); err != nil {
		return err
	}
	return keyrules.ValidateRowKey(rk)
}

// deleteKeysJSON is a batch delete's entity: aztables v1.4.1 reads the
// keys from it only to write them into the operation's URL, which it does
// without OData's quote doubling (generateEntitySubset passes them to
// DeleteEntityCreateRequest, which only path-escapes). A delete has no
// body, so sending the keys doubled here puts exactly the OData literal
// the service expects in the URL, and O'Brien is deleted as O'Brien.
func deleteKeysJSON(pk, rk string) []byte {
	return keysJSON(strings.ReplaceAll(pk, "'", "''"), strings.ReplaceAll(rk, "'", "''"))
}

func keysJSON(pk, rk string) []byte {
	b, _ := json.Marshal(struct{ PartitionKey, RowKey string }{pk, rk})
	return b
}

// opOverhead bounds what the SDK adds to an operation besides its body and
// keys: part headers, request line, endpoint and table name (a storage URL
// of up to 200 bytes), and the per-request headers. Measured at under 600
// bytes with a 60-byte endpoint; see TestSizeBoundsWhatIsSent.
const opOverhead = 1024

// opSize bounds the bytes one operation adds to the request. The SDK
// re-encodes the body through encoding/json, which writes <, > and & as
// six-byte escapes, and path-escapes each key (up to 3 bytes a byte, with
// quotes doubled) into the URL.
func opSize(e *encoded) int {
	n := opOverhead + len(e.body) + 3*2*(len(e.pk)+len(e.rk)) + len(e.ifMatch)
	for _, c := range e.body {
		if c == '<' || c == '>' || c == '&' {
			n += 5
		}
	}
	return n
}

// envelope bounds the multipart framing around the operations.
const envelope = 512
