package patterns

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/table"
)

// MaxWideParts is the most physical entities one wide entity spans: they
// are written in one transaction.
const MaxWideParts = batch.MaxOperations

// ErrTooWide: a value that needs more than MaxWideParts entities, or more
// than one transaction's 4 MiB.
var ErrTooWide = fmt.Errorf("patterns: a wide entity spans at most %d entities written in one transaction of 4 MiB", MaxWideParts)

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
// WideEntity under such a key is reported, not read as a part.
type WideEntity struct {
	client table.Client
}

// NewWideEntity returns a WideEntity over client.
func NewWideEntity(client table.Client) *WideEntity { return &WideEntity{client: client} }

// partPrefix starts the RowKey of every part of the wide entity rk, and
// part i's RowKey is partPrefix(rk) and i in two digits. A RowKey whose
// parts' keys would be too long is refused before any request.
func partPrefix(op, rk string) (string, error) {
	p, err := keys.EncodeTuple(rk)
	if err == nil {
		err = keys.ValidateRowKey(p + "00")
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

// wideProp is one property ready to place: its JSON and the size the
// service counts for it.
type wideProp struct {
	name string
	json []byte // `"name@odata.type":"…","name":value` or `"name":value`
	size int
}

func encodeWideProp(op, name string, v any) (wideProp, error) {
	if err := keys.ValidatePropertyName(name); err != nil {
		return wideProp{}, &table.InputError{Op: op, Field: name, Rule: err}
	}
	annot := func(edm string) string { return `"` + name + `@odata.type":"` + edm + `",` }
	qn, _ := json.Marshal(name)
	var b []byte
	size := 8 + 2*keys.UTF16Len(name)
	switch x := v.(type) {
	case string:
		n := keys.UTF16Len(x)
		if n > table.MaxStringUTF16 {
			return wideProp{}, &table.InputError{Op: op, Field: name, Rule: table.ErrStringTooLong}
		}
		q, _ := json.Marshal(x)
		b, size = append(append(append(b, qn...), ':'), q...), size+4+2*n
	case bool:
		b, size = strconv.AppendBool(append(append(b, qn...), ':'), x), size+1
	case int32:
		b, size = strconv.AppendInt(append(append(b, qn...), ':'), int64(x), 10), size+4
	case int64:
		b = append(b, annot(table.EdmInt64)...)
		b = append(append(append(b, qn...), ':', '"'), strconv.FormatInt(x, 10)+`"`...)
		size += 8
	case int:
		return encodeWideProp(op, name, int64(x))
	case float64:
		b = append(b, annot(table.EdmDouble)...)
		f, _ := json.Marshal(x)
		b, size = append(append(append(b, qn...), ':'), f...), size+8
	case []byte:
		if len(x) > table.MaxBinaryBytes {
			return wideProp{}, &table.InputError{Op: op, Field: name, Rule: table.ErrBinaryTooLong}
		}
		b = append(b, annot(table.EdmBinary)...)
		q, _ := json.Marshal(x) // base64
		b, size = append(append(append(b, qn...), ':'), q...), size+4+len(x)
	default:
		return wideProp{}, &table.InputError{Op: op, Field: name, Rule: table.ErrUnsupportedType, Detail: fmt.Sprintf("%T", v)}
	}
	return wideProp{name: name, json: b, size: size}, nil
}

// split places the properties, in name order, into parts within the
// entity limits; each part also records the total number of parts.
func split(op, pk, prefix string, props map[string]any) ([][]byte, error) {
	names := make([]string, 0, len(props))
	for n := range props {
		names = append(names, n)
	}
	sort.Strings(names)
	base := 4 + 2*keys.UTF16Len(pk) + 2*(len(prefix)+2) + 8 + 18 + 8 + (8 + 2*len("TkParts") + 4)
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
		if len(cur) > 0 && (len(cur) == table.MaxUserProperties-1 || size+p.size > table.MaxEntityBytes || jsonLen+len(p.json)+1 > table.MaxEntityBytes) {
			groups, cur, size, jsonLen = append(groups, cur), nil, base, jsonBase
		}
		cur, size, jsonLen = append(cur, p), size+p.size, jsonLen+len(p.json)+1
	}
	groups = append(groups, cur)
	if len(groups) > MaxWideParts {
		return nil, fmt.Errorf("%w: %d parts", ErrTooWide, len(groups))
	}
	bodies := make([][]byte, len(groups))
	for i, g := range groups {
		var b []byte
		b = append(b, `{"PartitionKey":`...)
		b, _ = appendJSON(b, pk)
		b = append(b, `,"RowKey":`...)
		b, _ = appendJSON(b, partKey(prefix, i))
		b = append(b, `,"TkParts":`...)
		b = strconv.AppendInt(b, int64(len(groups)), 10)
		for _, p := range g {
			b = append(b, ',')
			b = append(b, p.json...)
		}
		bodies[i] = append(b, '}')
	}
	return bodies, nil
}

func appendJSON(b []byte, s string) ([]byte, error) {
	q, err := json.Marshal(s)
	return append(b, q...), err
}

// WidePutOptions configure Put.
type WidePutOptions struct {
	// Current is the value as read or last written (its Parts and ETag):
	// Put is then one request, guarded by the ETag. Default: nil, and Put
	// reads the parts' keys first (two requests).
	Current *Wide
}

// Put writes v: every part in one transaction, the parts a smaller value no
// longer needs deleted in the same transaction. One request with
// opts.Current (or for a new entity); two otherwise.
func (w *WideEntity) Put(ctx context.Context, v *Wide, opts *WidePutOptions) error {
	if v == nil {
		return &table.InputError{Op: "WideEntity.Put", Rule: table.ErrNilValue}
	}
	if err := keys.ValidatePartitionKey(v.PartitionKey); err != nil {
		return &table.InputError{Op: "WideEntity.Put", Field: "PartitionKey", Rule: err}
	}
	prefix, err := partPrefix("WideEntity.Put", v.RowKey)
	if err != nil {
		return err
	}
	bodies, err := split("WideEntity.Put", v.PartitionKey, prefix, v.Properties)
	if err != nil {
		return err
	}
	old, etag := 0, azcore.ETag("")
	if opts != nil && opts.Current != nil {
		old, etag = opts.Current.Parts, opts.Current.ETag
	} else {
		cur, err := w.get(ctx, "WideEntity.Put", v.PartitionKey, v.RowKey, true)
		if err != nil && !table.IsNotFound(err) {
			return err
		}
		if cur != nil {
			old, etag = cur.Parts, cur.ETag
		}
	}
	tx := batch.NewTransaction(nil)
	for i, body := range bodies {
		op := batch.Raw(batch.KindUpsertReplace, body, nil)
		switch {
		case i == 0 && etag != "":
			op = batch.Raw(batch.KindUpdateReplace, body, &etag)
		case i == 0:
			op = batch.Raw(batch.KindAdd, body, nil)
		}
		if err := tx.Append(op); err != nil {
			if errorsIsTooLarge(err) {
				return fmt.Errorf("%w: %v", ErrTooWide, err)
			}
			return err
		}
	}
	for i := len(bodies); i < old; i++ {
		if err := tx.Append(batch.Delete(v.PartitionKey, partKey(prefix, i))); err != nil {
			return err
		}
	}
	res, err := tx.Submit(ctx, w.client)
	if err != nil {
		return err
	}
	v.Parts, v.ETag = len(bodies), res.ETags[0]
	return nil
}

func errorsIsTooLarge(err error) bool {
	return strings.Contains(err.Error(), batch.ErrTooLarge.Error()) || strings.Contains(err.Error(), batch.ErrTooManyOperations.Error())
}

// Get reads every part with one range query and merges them. keysOnly
// reads just the parts' keys and the version.
func (w *WideEntity) Get(ctx context.Context, partitionKey, rowKey string, keysOnly bool) (*Wide, error) {
	return w.get(ctx, "WideEntity.Get", partitionKey, rowKey, keysOnly)
}

func (w *WideEntity) get(ctx context.Context, op, partitionKey, rowKey string, keysOnly bool) (*Wide, error) {
	if err := keys.ValidatePartitionKey(partitionKey); err != nil {
		return nil, &table.InputError{Op: op, Field: "PartitionKey", Rule: err}
	}
	prefix, err := partPrefix(op, rowKey)
	if err != nil {
		return nil, err
	}
	// Part numbers are two digits, and ':' follows '9'.
	opts := &table.QueryOptions{Filter: table.RowRange(partitionKey, prefix+"0", prefix+":")}
	if keysOnly {
		opts.Select = []string{"TkParts"}
	}
	v := &Wide{PartitionKey: partitionKey, RowKey: rowKey, Properties: map[string]any{}}
	declared := 0
	for raw, err := range table.QueryRaw(ctx, w.client, opts) {
		if err != nil {
			return nil, err
		}
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, err
		}
		rk, _ := m["RowKey"].(string)
		if partIndex(prefix, rk) != v.Parts {
			return nil, fmt.Errorf("patterns: wide entity %s/%s: row %q sits among its parts and was not written by WideEntity", partitionKey, rowKey, rk)
		}
		if v.Parts == 0 {
			e, _ := m["odata.etag"].(string)
			v.ETag = azcore.ETag(e)
		}
		if n, ok := m["TkParts"].(float64); ok && v.Parts == 0 {
			declared = int(n)
		}
		v.Parts++
		if keysOnly {
			continue
		}
		for k, val := range m {
			if k == "PartitionKey" || k == "RowKey" || k == "Timestamp" || k == "TkParts" || strings.HasPrefix(k, "odata.") || strings.Contains(k, "@odata.type") {
				continue
			}
			typ, _ := m[k+"@odata.type"].(string)
			v.Properties[k] = wideValue(val, typ)
		}
	}
	if v.Parts == 0 {
		return nil, &NotFoundError{Op: op, PartitionKey: partitionKey, RowKey: rowKey}
	}
	if declared != v.Parts {
		return nil, fmt.Errorf("patterns: wide entity %s/%s has %d parts of %d; it was not written by WideEntity", partitionKey, rowKey, v.Parts, declared)
	}
	return v, nil
}

func wideValue(v any, typ string) any {
	switch typ {
	case table.EdmInt64:
		s, _ := v.(string)
		n, _ := strconv.ParseInt(s, 10, 64)
		return n
	case table.EdmBinary:
		s, _ := v.(string)
		var b []byte
		_ = json.Unmarshal([]byte(strconv.Quote(s)), &b)
		return b
	case table.EdmDouble:
		if f, ok := v.(float64); ok {
			return f
		}
	}
	if f, ok := v.(float64); ok && typ == "" && f == float64(int32(f)) {
		return int32(f)
	}
	return v
}

// Delete removes every part in one transaction (reading their keys first).
func (w *WideEntity) Delete(ctx context.Context, partitionKey, rowKey string) error {
	cur, err := w.get(ctx, "WideEntity.Delete", partitionKey, rowKey, true)
	if err != nil {
		return err
	}
	prefix, _ := partPrefix("WideEntity.Delete", rowKey) // Get checked it
	var ops []batch.Op
	for i := 0; i < cur.Parts; i++ {
		if i == 0 {
			ops = append(ops, batch.DeleteIf(partitionKey, partKey(prefix, 0), cur.ETag))
		} else {
			ops = append(ops, batch.Delete(partitionKey, partKey(prefix, i)))
		}
	}
	_, err = batch.Submit(ctx, w.client, ops...)
	return err
}
