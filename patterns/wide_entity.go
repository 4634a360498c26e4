package patterns

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/internal/keyrules"
	"github.com/tablekit/tablekit/internal/rowkind"
	"github.com/tablekit/tablekit/internal/sameprops"
	"github.com/tablekit/tablekit/internal/tableio"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/table"
)

// maxWideParts is the most physical entities one wide entity spans: they
// are written in one transaction.
const maxWideParts = batch.MaxOperations

// tooWide is the refusal of a value that needs more than 100 entities
// (one transaction's operations), or more than one transaction's 4 MiB.
func tooWide(op, detail string) error {
	return &table.InputError{Op: op, Rule: table.ErrEntityTooLarge,
		Detail: fmt.Sprintf("a wide entity spans at most %d entities written in one transaction of 4 MiB: %s", maxWideParts, detail)}
}

// Wide is a logical entity of any number of properties: property name →
// string, bool, int32, int64 (or int), float64 or []byte. Read back, a
// float64 with no fraction may come back as int32 from a service that omits
// its type annotation (Azurite does); use a fraction, or a struct, when the
// type must survive.
type Wide struct {
	PartitionKey, RowKey string
	Properties           map[string]any
	// Parts is how many physical entities hold it, as read or written.
	Parts int
	// ETag is the version of the first part, which guards a rewrite.
	ETag azcore.ETag
}

// WideEntity splits a logical entity with more than 252 properties or more
// than 1 MiB over several physical entities of one partition (the guide's
// 365 days of message statistics): the "Wide entities pattern". They are
// written in one transaction, so a reader sees all of a version or none of
// it, and read back with one range query.
//
// A part's RowKey is the tuple encoding of the wide entity's RowKey and a
// two-digit part number: "2026!00", "2026!01", … (keys.EncodeTuple). The
// encoding is prefix-free, so the parts of one wide entity never fall in
// the range of another, whatever their RowKeys; a row written around
// WideEntity under such a key is reported, not read as a part. Every part
// carries the mark of a wide entity's part, so an entity model's handle
// and every other typed handle of the table leave the parts out.
type WideEntity struct {
	client table.Client
	tbl    *table.Table[table.Entity]
}

// NewWideEntity returns a WideEntity over the entities of tbl, whose name,
// logger and tracing provider it uses: it has no options of its own.
func NewWideEntity(tbl *table.Table[table.Entity]) *WideEntity {
	return &WideEntity{client: tbl.Client(), tbl: tbl}
}

// partPrefix starts the RowKey of every part of the wide entity rk, and
// part i's RowKey is partPrefix(rk) and i in two digits. A RowKey whose
// parts' keys would be too long is refused before any request.
func partPrefix(op, rk string) (string, error) {
	p, err := keys.EncodeTuple(rk)
	if err == nil {
		err = keyrules.ValidateRowKey(p + "00")
	}
	if err != nil {
		return "", &table.InputError{Op: op, Field: "RowKey", Rule: err, Detail: "a wide entity's part keys are the RowKey's tuple encoding and two digits"}
	}
	return p, nil
}

func partKey(prefix string, i int) string { return prefix + fmt.Sprintf("%02d", i) }

// partIndex is the part number of a RowKey in prefix's range, or -1 when
// the RowKey is not a part key.
func partIndex(prefix, rk string) int {
	n, ok := strings.CutPrefix(rk, prefix)
	if !ok || len(n) != 2 || n[0] < '0' || n[0] > '9' || n[1] < '0' || n[1] > '9' {
		return -1
	}
	return int(n[0]-'0')*10 + int(n[1]-'0')
}

// wideProp is one property ready to place: its value, the size the
// service counts for it, and the length of its JSON in a request body.
type wideProp struct {
	name  string
	value table.Value
	size  int
	json  int
}

// wideValue is the Value of a property of a Wide: the types Wide lists,
// and every other type table.ValueOf takes, or a table.Value.
func wideValue(v any) (table.Value, bool) {
	switch v := v.(type) {
	case table.Value:
		return v, true
	case string:
		return table.ValueOf(v), true
	case bool:
		return table.ValueOf(v), true
	case int8:
		return table.ValueOf(v), true
	case int16:
		return table.ValueOf(v), true
	case int32:
		return table.ValueOf(v), true
	case uint8:
		return table.ValueOf(v), true
	case uint16:
		return table.ValueOf(v), true
	case int64:
		return table.ValueOf(v), true
	case int:
		return table.ValueOf(v), true
	case uint32:
		return table.ValueOf(v), true
	case float64:
		return table.ValueOf(v), true
	case float32:
		return table.ValueOf(v), true
	case time.Time:
		return table.ValueOf(v), true
	case []byte:
		return table.ValueOf(v), true
	case table.GUID:
		return table.ValueOf(v), true
	}
	return table.Value{}, false
}

func encodeWideProp(op, name string, v any) (wideProp, error) {
	if err := keyrules.ValidatePropertyName(name); err != nil {
		return wideProp{}, &table.InputError{Op: op, Field: name, Rule: err}
	}
	if name == partsProperty || rowkind.IsReserved(name) {
		return wideProp{}, &table.InputError{Op: op, Field: name, Rule: table.ErrInvalidValue, Detail: "the name is reserved: it marks the parts of a wide entity"}
	}
	val, ok := wideValue(v)
	if !ok {
		return wideProp{}, &table.InputError{Op: op, Field: name, Rule: table.ErrUnsupportedType, Detail: fmt.Sprintf("%T", v)}
	}
	// The parts are checked again when the transaction encodes them; here
	// a bad property is named before it is placed.
	n := len(name) + 3 // "name":
	switch val.Type() {
	case table.EdmString:
		s, _ := val.AsString()
		if keyrules.UTF16Len(s) > table.MaxStringUTF16 {
			return wideProp{}, &table.InputError{Op: op, Field: name, Rule: table.ErrStringTooLong}
		}
		n += jsonStringLen(s)
	case table.EdmBinary:
		b, _ := val.AsBinary()
		if len(b) > table.MaxBinaryBytes {
			return wideProp{}, &table.InputError{Op: op, Field: name, Rule: table.ErrBinaryTooLong}
		}
		n += 2 + 4*((len(b)+2)/3) // base64
	default:
		n += 40 // a number, a time or a GUID, quoted
	}
	if val.Type() != table.EdmString && val.Type() != table.EdmBoolean && val.Type() != table.EdmInt32 {
		n += len(name) + len(`"@odata.type":"Edm.DateTime",`)
	}
	return wideProp{name: name, value: val, size: tableio.PropertySize(name, val), json: n}, nil
}

// jsonStringLen is at most the length of s as a JSON string: escapes take
// up to six bytes.
func jsonStringLen(s string) int {
	n := 2
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			n += 2
		case c < 0x20 || c == '<' || c == '>' || c == '&':
			n += 6
		default:
			n++
		}
	}
	return n
}

// partsProperty records in every part how many parts the value has.
const partsProperty = "TkParts"

// split places the properties, in name order, into parts within the
// entity limits; each part also records the total number of parts and
// carries the mark of a wide entity's part.
func split(op, pk, prefix string, props map[string]any) ([]*table.Entity, error) {
	names := make([]string, 0, len(props))
	for n := range props {
		names = append(names, n)
	}
	sort.Strings(names)
	head := &table.Entity{Meta: table.Meta{PartitionKey: pk, RowKey: partKey(prefix, 0)}}
	head.Set(partsProperty, table.ValueOf(int32(maxWideParts)))
	markKind(head, rowkind.WidePart)
	base := head.Size()
	// A part must fit the service's count (size) and, since Azurite
	// measures the request body instead (binary as base64), its JSON too.
	jsonBase := 2*len(pk) + 2*len(prefix) + 96
	var groups [][]wideProp
	var cur []wideProp
	size, jsonLen := base, jsonBase
	for _, n := range names {
		p, err := encodeWideProp(op, n, props[n])
		if err != nil {
			return nil, err
		}
		if len(cur) > 0 && (len(cur) == table.MaxUserProperties-2 || size+p.size > table.MaxEntityBytes || jsonLen+p.json+1 > table.MaxEntityBytes) {
			groups, cur, size, jsonLen = append(groups, cur), nil, base, jsonBase
		}
		cur, size, jsonLen = append(cur, p), size+p.size, jsonLen+p.json+1
	}
	groups = append(groups, cur)
	if len(groups) > maxWideParts {
		return nil, tooWide(op, fmt.Sprintf("this one needs %d", len(groups)))
	}
	parts := make([]*table.Entity, len(groups))
	for i, g := range groups {
		e := &table.Entity{Meta: table.Meta{PartitionKey: pk, RowKey: partKey(prefix, i)}, Properties: make(map[string]table.Value, len(g)+2)}
		e.Set(partsProperty, table.ValueOf(int32(int32(len(groups)))))
		markKind(e, rowkind.WidePart)
		for _, p := range g {
			e.Set(p.name, p.value)
		}
		parts[i] = e
	}
	return parts, nil
}

// Put writes v: every part in one transaction, the parts a smaller value no
// longer needs deleted in the same transaction. One request with
// opts.Current; two otherwise (a read of the parts' keys first). opts.Current
// is v's stored version (Get, keysOnly is enough); another entity's, or one
// without an ETag, is refused before any request. For an entity known to be
// new, Add costs one request and needs no Current.
func (w *WideEntity) Put(ctx context.Context, v *Wide, opts *PutOptions[Wide]) (err error) {
	ctx, end := tableio.For(w.tbl).Span(ctx, opWideEntityPut, widePartition(v), 1)
	defer func() { end(err) }()
	prefix, parts, err := w.parts(opWideEntityPut, v)
	if err != nil {
		return err
	}
	old, etag := 0, azcore.ETag("")
	if opts != nil && opts.Current != nil {
		cur := opts.Current
		if err := checkCurrent(opWideEntityPut, v.PartitionKey, v.RowKey, cur.PartitionKey, cur.RowKey, cur.ETag); err != nil {
			return err
		}
		old, etag = cur.Parts, cur.ETag
	} else {
		cur, err := w.get(ctx, opWideEntityPut, v.PartitionKey, v.RowKey, true)
		if err != nil && !table.Is(err, table.ErrNotFound) {
			return err
		}
		if cur != nil {
			old, etag = cur.Parts, cur.ETag
		}
	}
	return w.write(ctx, opWideEntityPut, v, prefix, parts, old, etag)
}

// Add writes v, which must be new: every part in one transaction whose
// first operation inserts, so that an entity already stored under v's keys
// fails it with table.ErrAlreadyExists and nothing is written. One request.
// With opts.Idempotent an entity stored exactly as v (the same parts, each
// with the same values, compared as table.AddOptions.Idempotent compares
// them) is a success, taking the stored ETag, at one more request (a read
// of the parts): what the SDK's retry meets when the first attempt's answer
// was lost.
func (w *WideEntity) Add(ctx context.Context, v *Wide, opts *table.AddOptions) (err error) {
	ctx, end := tableio.For(w.tbl).Span(ctx, opWideEntityAdd, widePartition(v), 1)
	defer func() { end(err) }()
	prefix, parts, err := w.parts(opWideEntityAdd, v)
	if err != nil {
		return err
	}
	err = w.write(ctx, opWideEntityAdd, v, prefix, parts, 0, "")
	if err == nil || opts == nil || !opts.Idempotent || !table.Is(err, table.ErrAlreadyExists) {
		return err
	}
	etag, same, rerr := w.storedAs(ctx, v.PartitionKey, prefix, parts)
	if rerr != nil {
		return errors.Join(err, rerr)
	}
	if !same {
		return err
	}
	v.Parts, v.ETag = len(parts), etag
	return nil
}

// parts checks v and splits it into the entities that hold it, before any
// request.
func (w *WideEntity) parts(op string, v *Wide) (prefix string, parts []*table.Entity, err error) {
	if v == nil {
		return "", nil, &table.InputError{Op: op, Rule: table.ErrNilValue}
	}
	if err := keyrules.ValidatePartitionKey(v.PartitionKey); err != nil {
		return "", nil, &table.InputError{Op: op, Field: "PartitionKey", Rule: err}
	}
	if prefix, err = partPrefix(op, v.RowKey); err != nil {
		return "", nil, err
	}
	if parts, err = split(op, v.PartitionKey, prefix, v.Properties); err != nil {
		return "", nil, err
	}
	return prefix, parts, nil
}

// write sends parts in one transaction: the first as an update guarded by
// etag, or as an insert when etag is "" (a new entity), the others as
// upserts, and deletes of parts old..: what a smaller value no longer needs.
func (w *WideEntity) write(ctx context.Context, op string, v *Wide, prefix string, parts []*table.Entity, old int, etag azcore.ETag) error {
	tx := batch.NewTransaction(nil)
	for i, part := range parts {
		// Every part is written whole; the first carries the version.
		write := batch.Upsert(part, aztables.UpdateModeReplace)
		switch {
		case i == 0 && etag != "":
			part.ETag = etag
			write = batch.Update(part, aztables.UpdateModeReplace)
		case i == 0:
			write = batch.Add(part)
		}
		if err := tx.Append(write); err != nil {
			if errors.Is(err, batch.ErrTooLarge) || errors.Is(err, batch.ErrTooManyOperations) {
				return tooWide(op, err.Error())
			}
			return err
		}
	}
	for i := len(parts); i < old; i++ {
		if err := tx.Append(batch.Delete(v.PartitionKey, partKey(prefix, i))); err != nil {
			return err
		}
	}
	res, err := tx.Submit(ctx, w.client, nil)
	if err != nil {
		return err
	}
	v.Parts, v.ETag = len(parts), res.ETags[0]
	return nil
}

// storedAs reads the stored parts under prefix (one range query) and
// reports whether they are parts, one for one, each with the same
// properties and values; etag is the first part's.
func (w *WideEntity) storedAs(ctx context.Context, pk, prefix string, parts []*table.Entity) (etag azcore.ETag, same bool, err error) {
	i := 0
	same = true
	for e, err := range w.tbl.Query(ctx, &table.QueryOptions{Filter: table.RowRange(pk, prefix+"0", prefix+":")}) {
		if err != nil {
			return "", false, err
		}
		if i == 0 {
			etag = e.ETag
		}
		if i >= len(parts) || e.RowKey != parts[i].RowKey {
			same = false
		} else if same {
			sent, err1 := tableio.For(w.tbl).Encode(parts[i])
			stored, err2 := tableio.For(w.tbl).Encode(e)
			same = err1 == nil && err2 == nil && sameprops.Equal(sent, stored)
		}
		i++
	}
	return etag, same && i == len(parts), nil
}

// Get reads every part with one range query and merges them. keysOnly
// reads just the parts' keys and the version.
func (w *WideEntity) Get(ctx context.Context, partitionKey, rowKey string, keysOnly bool, options *ReadOptions) (*Wide, error) {
	return w.get(ctx, opWideEntityGet, partitionKey, rowKey, keysOnly)
}

func (w *WideEntity) get(ctx context.Context, op, partitionKey, rowKey string, keysOnly bool) (*Wide, error) {
	if err := keyrules.ValidatePartitionKey(partitionKey); err != nil {
		return nil, &table.InputError{Op: op, Field: "PartitionKey", Rule: err}
	}
	prefix, err := partPrefix(op, rowKey)
	if err != nil {
		return nil, err
	}
	// Part numbers are two digits, and ':' follows '9'.
	opts := &table.QueryOptions{Filter: table.RowRange(partitionKey, prefix+"0", prefix+":")}
	if keysOnly {
		opts.Select = []string{partsProperty, rowkind.Property}
	}
	v := &Wide{PartitionKey: partitionKey, RowKey: rowKey, Properties: map[string]any{}}
	declared := int32(0)
	for e, err := range w.tbl.Query(ctx, opts) {
		if err != nil {
			return nil, err
		}
		if partIndex(prefix, e.RowKey) != v.Parts || !ofKind(e, rowkind.WidePart) {
			return nil, fmt.Errorf("patterns: %s: wide entity (%q, %q): row %q sits among its parts and was not written by WideEntity", op, partitionKey, rowKey, e.RowKey)
		}
		if v.Parts == 0 {
			v.ETag = e.ETag
			if n, ok := e.Get(partsProperty); ok {
				declared, _ = n.AsInt32()
			}
		}
		v.Parts++
		if keysOnly {
			continue
		}
		for name, val := range e.Properties {
			if name != partsProperty && name != rowkind.Property {
				v.Properties[name] = val.Interface()
			}
		}
	}
	if v.Parts == 0 {
		return nil, &notFoundError{Op: op, PartitionKey: partitionKey, RowKey: rowKey}
	}
	if int(declared) != v.Parts {
		return nil, fmt.Errorf("patterns: %s: wide entity (%q, %q) has %d parts of %d; it was not written by WideEntity", op, partitionKey, rowKey, v.Parts, declared)
	}
	return v, nil
}

// Delete removes every part in one transaction, guarded by the first
// part's ETag: a read of their keys, and the transaction. With
// opts.Current (from Get, keysOnly is enough) it sends no read: one
// request, table.ErrPreconditionFailed if the entity changed since. A
// missing entity is table.ErrNotFound, or with opts.IfExists a success.
func (w *WideEntity) Delete(ctx context.Context, partitionKey, rowKey string, opts *DeleteOptions[Wide]) (err error) {
	ctx, end := tableio.For(w.tbl).Span(ctx, opWideEntityDelete, partitionKey, 1)
	defer func() { end(err) }()
	ifExists := opts != nil && opts.IfExists
	if err := keyrules.ValidatePartitionKey(partitionKey); err != nil {
		return &table.InputError{Op: opWideEntityDelete, Field: "PartitionKey", Rule: err}
	}
	prefix, err := partPrefix(opWideEntityDelete, rowKey)
	if err != nil {
		return err
	}
	var cur *Wide
	if opts != nil && opts.Current != nil {
		cur = opts.Current
		if err := checkCurrent(opWideEntityDelete, partitionKey, rowKey, cur.PartitionKey, cur.RowKey, cur.ETag); err != nil {
			return err
		}
		if cur.Parts < 1 || cur.Parts > maxWideParts {
			return &table.InputError{Op: opWideEntityDelete, Field: "Current.Parts", Rule: table.ErrInvalidValue,
				Detail: fmt.Sprintf("%d parts; a stored wide entity has 1 to %d", cur.Parts, maxWideParts)}
		}
	} else {
		cur, err = w.get(ctx, opWideEntityDelete, partitionKey, rowKey, true)
		if err != nil {
			if ifExists && table.Is(err, table.ErrNotFound) {
				return nil
			}
			return err
		}
	}
	var ops []batch.Op
	for i := 0; i < cur.Parts; i++ {
		if i == 0 {
			ops = append(ops, batch.Delete(partitionKey, partKey(prefix, 0)).IfMatch(cur.ETag))
		} else {
			ops = append(ops, batch.Delete(partitionKey, partKey(prefix, i)))
		}
	}
	_, err = batch.Submit(ctx, w.client, ops, nil)
	var te *batch.TransactionError
	if ifExists && errors.As(err, &te) && te.Index == 0 && te.StatusCode == http.StatusNotFound {
		// The first part, which every version has, is gone: so is the
		// entity. (A later part missing is damage, not a missing entity.)
		return nil
	}
	return err
}
