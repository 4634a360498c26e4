package patterns

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/table"
)

// BlobStore is the part of *azblob.Client the blob patterns use: the
// consistency port and listing.
type BlobStore interface {
	consistency.Blobs
	NewListBlobsFlatPager(containerName string, o *azblob.ListBlobsFlatOptions) *runtime.Pager[azblob.ListBlobsFlatResponse]
}

var _ BlobStore = (*azblob.Client)(nil)

// LargeEntity keeps properties too big for a table in blobs ("Large
// entities pattern": the employee photo): a []byte or string field larger
// than the threshold, or, largest first, as many fields as the entity needs
// to fit its limits, goes to a blob named after the entity, the field and a
// hash of its content, and the entity keeps the blob's name and the hash.
// The blob is written first, then the entity; a crash between the two
// leaves a blob no entity names, which Sweep removes, so no entity ever
// names a missing blob. Get returns the whole value, checking each blob
// against its hash; Delete removes the entity, then its blobs.
type LargeEntity[T any] struct {
	tbl       *table.Table[T]
	blobs     BlobStore
	container string
	fields    []string // Go field names
	threshold int
}

// DefaultLargeThreshold is the field size above which LargeEntity uses a blob.
const DefaultLargeThreshold = 32 * 1024

// NewLargeEntity offloads the named fields of T ([]byte or string) when
// larger than threshold bytes (0 means DefaultLargeThreshold).
func NewLargeEntity[T any](client table.Client, blobs BlobStore, container string, fields []string, threshold int) (*LargeEntity[T], error) {
	tbl, err := table.New[T](client, nil)
	if err != nil {
		return nil, err
	}
	if err := keys.ValidateContainerName(container); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadDefinition, err)
	}
	rt := reflect.TypeFor[T]()
	for _, f := range fields {
		sf, ok := rt.FieldByName(f)
		if !ok || (sf.Type.Kind() != reflect.String && !(sf.Type.Kind() == reflect.Slice && sf.Type.Elem().Kind() == reflect.Uint8)) {
			return nil, fmt.Errorf("%w: %s is not a string or []byte field of %s", ErrBadDefinition, f, rt)
		}
	}
	if threshold <= 0 {
		threshold = DefaultLargeThreshold
	}
	return &LargeEntity[T]{tbl: tbl, blobs: blobs, container: container, fields: fields, threshold: threshold}, nil
}

func fieldBytes(fv reflect.Value) []byte {
	if fv.Kind() == reflect.String {
		return []byte(fv.String())
	}
	return fv.Bytes()
}

func setField(fv reflect.Value, b []byte) {
	if fv.Kind() == reflect.String {
		fv.SetString(string(b))
	} else {
		fv.SetBytes(b)
	}
}

// blobRef is what the entity keeps of an offloaded field.
type blobRef struct{ name, sha string }

func (l *LargeEntity[T]) blobName(pk, rk, field, sha string) string {
	enc, _ := keys.EncodeTuple(pk, rk)
	return enc + "/" + field + "/" + sha[:32]
}

// Put writes v's large fields to blobs, then v: one request per offloaded
// field, plus one.
func (l *LargeEntity[T]) Put(ctx context.Context, v *T) error {
	if v == nil {
		return &table.InputError{Op: "LargeEntity.Put", Rule: table.ErrNilValue}
	}
	m := l.tbl.Meta(v)
	if err := validKeyPair(m.PartitionKey, m.RowKey); err != nil {
		return err
	}
	c := *v
	cv := reflect.ValueOf(&c).Elem()
	refs := map[string]blobRef{}
	offload := func(f string) error {
		data := fieldBytes(cv.FieldByName(f))
		sum := sha256.Sum256(data)
		ref := blobRef{sha: hex.EncodeToString(sum[:])}
		ref.name = l.blobName(m.PartitionKey, m.RowKey, f, ref.sha)
		// Content-addressed: an existing blob of that name already holds it.
		_, err := l.blobs.UploadBuffer(ctx, l.container, ref.name, data, &azblob.UploadBufferOptions{
			AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfNoneMatch: to.Ptr(azcore.ETagAny)}}})
		var re *azcore.ResponseError
		if err != nil && !(errors.As(err, &re) && re.StatusCode == http.StatusConflict) {
			return fmt.Errorf("patterns: large field %s: %w", f, err)
		}
		setField(cv.FieldByName(f), nil)
		refs[f] = ref
		return nil
	}
	for _, f := range l.fields {
		if len(fieldBytes(cv.FieldByName(f))) > l.threshold {
			if err := offload(f); err != nil {
				return err
			}
		}
	}
	// Fields under the threshold can still add up past the entity limits:
	// move the largest remaining ones out until the entity fits.
	var body []byte
	for {
		var err error
		body, err = l.tbl.Encode(&c)
		if err == nil && len(body) > table.MaxEntityBytes {
			// Within the service's count, but Azurite measures the request
			// body, where binary is base64: keep both happy.
			err = table.ErrEntityTooLarge
		}
		if err == nil {
			break
		}
		if !errors.Is(err, table.ErrEntityTooLarge) && !errors.Is(err, table.ErrStringTooLong) && !errors.Is(err, table.ErrBinaryTooLong) {
			return err
		}
		largest, size := "", 0
		for _, f := range l.fields {
			if n := len(fieldBytes(cv.FieldByName(f))); n > size {
				largest, size = f, n
			}
		}
		if largest == "" {
			return err // nothing left to move: the rest of the entity is too big
		}
		if err := offload(largest); err != nil {
			return err
		}
	}
	body = spliceRefs(body, refs)
	// Replace, not merge: a field now small must not keep its old blob's name.
	resp, err := l.tbl.Client().UpsertEntity(ctx, body, &aztables.UpsertEntityOptions{UpdateMode: aztables.UpdateModeReplace})
	if err != nil {
		return &table.ServiceError{Op: "LargeEntity.Put", PartitionKey: m.PartitionKey, RowKey: m.RowKey, Err: err}
	}
	m.WrittenETag(resp.ETag)
	return nil
}

// spliceRefs adds <Field>Blob and <Field>SHA256 properties to an entity.
func spliceRefs(body []byte, refs map[string]blobRef) []byte {
	if len(refs) == 0 {
		return body
	}
	var b bytes.Buffer
	b.Write(body[:len(body)-1])
	for f, r := range refs {
		n, _ := json.Marshal(r.name)
		fmt.Fprintf(&b, `,"%sBlob":%s,"%sSHA256":"%s"`, f, n, f, r.sha)
	}
	b.WriteByte('}')
	return b.Bytes()
}

func refsOf(raw []byte, fields []string) (map[string]blobRef, error) {
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	refs := map[string]blobRef{}
	for _, f := range fields {
		name, _ := m[f+"Blob"].(string)
		sha, _ := m[f+"SHA256"].(string)
		if name != "" {
			refs[f] = blobRef{name: name, sha: sha}
		}
	}
	return refs, nil
}

// ErrBlobMismatch: an offloaded field's blob does not hash to what the entity says.
var ErrBlobMismatch = errors.New("patterns: a large field's blob does not match its hash")

// Get reads the entity and every offloaded field: one request, plus one
// per offloaded field.
func (l *LargeEntity[T]) Get(ctx context.Context, partitionKey, rowKey string) (*T, error) {
	v, lazy, err := l.GetLazy(ctx, partitionKey, rowKey)
	if err != nil {
		return nil, err
	}
	for f := range lazy.refs {
		if err := lazy.Load(ctx, f); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// Lazy holds the offloaded fields of a value read with GetLazy.
type Lazy[T any] struct {
	l    *LargeEntity[T]
	v    *T
	refs map[string]blobRef
}

// Fields lists the fields still in blobs.
func (z *Lazy[T]) Fields() []string {
	var out []string
	for f := range z.refs {
		out = append(out, f)
	}
	return out
}

// Load reads one offloaded field into the value: one request.
func (z *Lazy[T]) Load(ctx context.Context, field string) error {
	r, ok := z.refs[field]
	if !ok {
		return nil
	}
	resp, err := z.l.blobs.DownloadStream(ctx, z.l.container, r.name, nil)
	if err != nil {
		return fmt.Errorf("patterns: large field %s: %w", field, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(data)
	if hex.EncodeToString(sum[:]) != r.sha {
		return fmt.Errorf("%w: %s", ErrBlobMismatch, r.name)
	}
	setField(reflect.ValueOf(z.v).Elem().FieldByName(field), data)
	delete(z.refs, field)
	return nil
}

// GetLazy reads the entity only (one request); its offloaded fields stay
// empty until Load.
func (l *LargeEntity[T]) GetLazy(ctx context.Context, partitionKey, rowKey string) (*T, *Lazy[T], error) {
	if err := validKeyPair(partitionKey, rowKey); err != nil {
		return nil, nil, err
	}
	resp, err := l.tbl.Client().GetEntity(ctx, partitionKey, rowKey, nil)
	if err != nil {
		return nil, nil, &table.ServiceError{Op: "LargeEntity.Get", PartitionKey: partitionKey, RowKey: rowKey, Err: err}
	}
	v := new(T)
	if err := l.tbl.Decode(resp.Value, v); err != nil {
		return nil, nil, err
	}
	l.tbl.Meta(v).ETag = resp.ETag
	refs, err := refsOf(resp.Value, l.fields)
	if err != nil {
		return nil, nil, err
	}
	return v, &Lazy[T]{l: l, v: v, refs: refs}, nil
}

// Delete removes the entity, then its blobs. A crash in between leaves
// blobs that Sweep removes.
func (l *LargeEntity[T]) Delete(ctx context.Context, partitionKey, rowKey string) error {
	_, lazy, err := l.GetLazy(ctx, partitionKey, rowKey)
	if err != nil {
		return err
	}
	if err := l.tbl.Delete(ctx, partitionKey, rowKey, &table.DeleteOptions{IfExists: true}); err != nil {
		return err
	}
	for _, r := range lazy.refs {
		if _, err := l.blobs.DeleteBlob(ctx, l.container, r.name, nil); err != nil && !isBlobNotFound(err) {
			return err
		}
	}
	return nil
}

func isBlobNotFound(err error) bool {
	var re *azcore.ResponseError
	return errors.As(err, &re) && re.StatusCode == http.StatusNotFound
}

// Sweep deletes blobs that no entity names (left by a crash between the
// two writes of Put, by Delete, or by a rewrite with new content), if they
// are older than grace, so a Put in progress keeps its blob. It returns how
// many it deleted: one request per page of blobs, plus one read per blob.
func (l *LargeEntity[T]) Sweep(ctx context.Context, grace time.Duration) (int, error) {
	deleted := 0
	pager := l.blobs.NewListBlobsFlatPager(l.container, nil)
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return deleted, err
		}
		for _, item := range page.Segment.BlobItems {
			if item.Name == nil {
				continue
			}
			name := *item.Name
			if item.Properties != nil && item.Properties.LastModified != nil && time.Since(*item.Properties.LastModified) < grace {
				continue
			}
			tuple, field, ok := strings.Cut(name, "/")
			field, _, _ = strings.Cut(field, "/")
			parts, err := keys.DecodeTuple(tuple)
			if !ok || err != nil || len(parts) != 2 {
				continue // not ours
			}
			resp, err := l.tbl.Client().GetEntity(ctx, parts[0], parts[1], nil)
			if err == nil {
				if refs, _ := refsOf(resp.Value, []string{field}); refs[field].name == name {
					continue
				}
			} else if !table.IsNotFound(err) {
				return deleted, err
			}
			if _, err := l.blobs.DeleteBlob(ctx, l.container, name, nil); err != nil && !isBlobNotFound(err) {
				return deleted, err
			}
			deleted++
		}
	}
	return deleted, nil
}
