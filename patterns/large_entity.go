package patterns

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"reflect"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/tablekit/tablekit/consistency/blobstore"
	"github.com/tablekit/tablekit/internal/blobread"
	"github.com/tablekit/tablekit/internal/gz"
	"github.com/tablekit/tablekit/internal/keyrules"
	"github.com/tablekit/tablekit/internal/redact"
	"github.com/tablekit/tablekit/internal/rowkind"
	"github.com/tablekit/tablekit/internal/tableio"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/table"
)

// LargeEntity keeps properties too big for a table in blobs ("Large
// entities pattern": the employee photo): a []byte or string field larger
// than the threshold, or, largest first, as many fields as the entity needs
// to fit its limits, goes to a blob, and the entity keeps the blob's name
// and the SHA-256 of its content.
//
// Every write makes new blobs, named after the entity, the field and a
// random version, never reused: the blobs first, then the entity that
// names them. So a blob, once named by an entity, never changes; a reader,
// a Delete or a Sweep acting on an older version can never touch the blobs
// of a newer one. A blob no entity names (left by a crash between the two
// writes, by a failed write, by Delete, or by a newer version) is removed
// by Sweep once it is older than its grace period; a write commits its
// entity within a minute of its first upload or not at all, so a Sweep
// with a grace of at least MinSweepGrace never removes the blob of a write
// still in flight. Get checks each blob against its hash; a blob missing
// while its entity still names it is corruption (ErrBlobMissing), never
// "not found".
type LargeEntity[T any] struct {
	tbl       *table.Table[T]
	raw       *table.Table[table.Entity] // tbl's raw view: T plus the blob references
	blobs     blobstore.Client
	container string
	fields    []string // Go field names
	threshold int
	// now is the clock of putWindow; tests stop it.
	now      func() time.Time
	log      *slog.Logger
	compress bool
}

// LargeEntityOptions configure a LargeEntity. nil means the defaults.
type LargeEntityOptions struct {
	// Compress writes each offloaded field gzip-compressed, its blob
	// marked Content-Encoding: gzip so that a browser or azcopy
	// --decompress shows the original bytes, and the entity records the
	// field's uncompressed length in a <Field>Size property (Edm.Int64):
	// a read inflates to exactly that many bytes and no more, so a blob
	// replaced by a decompression bomb costs no more than the real field,
	// and then fails its hash. <Field>SHA256 stays the hash of the
	// uncompressed bytes. Reads take plain and compressed blobs alike (the
	// blob's Content-Encoding says which), so Compress can be switched on,
	// or off, with data in place. Worth it for text, JSON or CSV; photos
	// and other compressed formats only cost CPU. Default: false.
	Compress bool
}

// defaultLargeThreshold is the field size above which LargeEntity uses a blob.
const defaultLargeThreshold = 32 * 1024

// putWindow bounds a write: its entity is written within a minute of its
// first blob upload, or the write fails (ErrPutWindow) and leaves its
// blobs to Sweep.
const putWindow = time.Minute

// MinSweepGrace is the shortest grace that lets Sweep run while writes
// are in flight: a write's one-minute window (ErrPutWindow), plus room for
// the service's own request timeout and for this host's clock being behind
// the blob service's (a blob's age is the local time minus its
// Last-Modified).
const MinSweepGrace = 10 * time.Minute

// Errors of LargeEntity.
var (
	// ErrBlobMissing: an entity names a blob that does not exist. That is
	// corruption (a blob deleted behind the pattern's back, or a Sweep run
	// with a grace shorter than MinSweepGrace during a write), not a
	// missing entity: table.Is(err, table.ErrNotFound) is false for it.
	ErrBlobMissing = errors.New("patterns: a large field's blob is missing while its entity names it")
	// ErrBlobMismatch: an offloaded field's blob does not hash to what the
	// entity says.
	ErrBlobMismatch = errors.New("patterns: a large field's blob does not match its hash")
	// ErrPutWindow: a write took longer than a minute between its first
	// blob upload and its entity write, so it did not write the entity (a Sweep
	// may already consider its blobs orphans). Nothing changed; write again.
	ErrPutWindow = errors.New("patterns: large entity write took over a minute from its first upload to its entity write; nothing was written")
	// ErrStaleRead: Lazy.Load found the entity changed since GetLazy; read
	// it again.
	ErrStaleRead = errors.New("patterns: the large entity changed since it was read")
)

// blobMissingError reports an entity that names a blob that is gone. It
// matches ErrBlobMissing. The blob service's 404 is kept in Cause, not in
// the chain, so that table.Is(err, table.ErrNotFound) stays false: the entity exists.
type blobMissingError struct {
	PartitionKey, RowKey string
	Field                string
	Blob                 string
	Cause                error
}

// Error names the entity, the field and the blob.
func (e *blobMissingError) Error() string {
	return fmt.Sprintf("patterns: LargeEntity.Get (%q, %q): field %s names blob %s, which is missing (corruption)", e.PartitionKey, e.RowKey, e.Field, e.Blob)
}

// Is matches ErrBlobMissing.
func (e *blobMissingError) Is(target error) bool { return target == ErrBlobMissing }

// NewLargeEntity offloads the named fields of T ([]byte or string) when
// larger than threshold bytes (0 means 32 KiB), the
// entities in tbl (whose name, logger and tracing apply: the logger gets,
// at Warn, the orphan blobs Sweep could not delete and leaves to its next
// run).
func NewLargeEntity[T any](tbl *table.Table[T], blobs blobstore.Client, container string, fields []string, threshold int, opts *LargeEntityOptions) (*LargeEntity[T], error) {
	if tbl == nil {
		return nil, fmt.Errorf("%w: LargeEntity needs a table", ErrBadDefinition)
	}
	if err := keyrules.ValidateContainerName(container); err != nil {
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
		threshold = defaultLargeThreshold
	}
	// The handle is the large entities': an entity model's, whose rows
	// this would write around its indexes, is refused.
	if err := tableio.For(tbl).OnlyKind(string(rowkind.Large)); err != nil {
		return nil, fmt.Errorf("%w: LargeEntity: %w", ErrBadDefinition, err)
	}
	l := &LargeEntity[T]{tbl: tbl, raw: tbl.Entities(), blobs: blobs, container: container, fields: fields, threshold: threshold, now: time.Now, log: tableio.For(tbl).Logger()}
	if opts != nil {
		l.compress = opts.Compress
	}
	return l, nil
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

// blobRef is what the entity keeps of an offloaded field: the <Field>Blob
// and <Field>SHA256 properties, and for a compressed blob <Field>Size,
// the uncompressed length.
type blobRef struct {
	name, sha string
	size      int64 // uncompressed length, when gzip
	gzip      bool  // the blob is gzip-compressed: <Field>Size is stored
}

// largeBlobPrefix starts the names of the blobs LargeEntity writes:
// "lg/k<pk>/k<rk>/<field>/<version>", keys in unpadded base64url so that
// every name is plain ASCII, and Sweep can tell whose blob it is.
const largeBlobPrefix = "lg/"

var b64 = base64.RawURLEncoding

func (l *LargeEntity[T]) newBlobName(op, pk, rk, field string) (string, error) {
	var id [16]byte
	_, _ = rand.Read(id[:])
	name := largeBlobPrefix + "k" + b64.EncodeToString([]byte(pk)) + "/k" + b64.EncodeToString([]byte(rk)) + "/" + field + "/" + hex.EncodeToString(id[:])
	if err := keyrules.ValidateBlobName(name); err != nil {
		return "", &table.InputError{Op: op, Field: "RowKey", Rule: err, Detail: "keys too long for the blob names of their large fields"}
	}
	return name, nil
}

// keysOfBlob returns the entity a blob belongs to, for the names this
// type writes and for those of earlier versions ("<tuple>/<field>/<sha>").
func keysOfBlob(name string) (pk, rk, field string, ok bool) {
	if rest, isNew := strings.CutPrefix(name, largeBlobPrefix); isNew {
		parts := strings.Split(rest, "/")
		if len(parts) != 4 || !strings.HasPrefix(parts[0], "k") || !strings.HasPrefix(parts[1], "k") {
			return "", "", "", false
		}
		p, err1 := b64.DecodeString(parts[0][1:])
		r, err2 := b64.DecodeString(parts[1][1:])
		if err1 != nil || err2 != nil {
			return "", "", "", false
		}
		return string(p), string(r), parts[2], true
	}
	tuple, rest, ok := strings.Cut(name, "/")
	field, _, _ = strings.Cut(rest, "/")
	parts, err := keys.DecodeTuple(tuple)
	if !ok || err != nil || len(parts) != 2 {
		return "", "", "", false
	}
	return parts[0], parts[1], field, true
}

// refProps are the properties that hold field f's blob reference.
func refProps(f string) (blobProp, shaProp string) { return f + "Blob", f + "SHA256" }

// sizeProp holds the uncompressed length of field f's compressed blob.
func sizeProp(f string) string { return f + "Size" }

// refsOf reads the blob references of the named fields from a stored entity.
func refsOf(e *table.Entity, fields []string) map[string]blobRef {
	refs := map[string]blobRef{}
	for _, f := range fields {
		bp, sp := refProps(f)
		nv, _ := e.Get(bp)
		sv, _ := e.Get(sp)
		name, _ := nv.AsString()
		sha, _ := sv.AsString()
		if name != "" {
			r := blobRef{name: name, sha: sha}
			if zv, ok := e.Get(sizeProp(f)); ok {
				r.size, r.gzip = zv.AsInt64()
			}
			refs[f] = r
		}
	}
	return refs
}

// withoutRefs removes the reference properties of every large field: a T
// with an Extra field would otherwise carry a version's references into
// the next version, naming blobs its fields no longer use.
func withoutRefs(e *table.Entity, fields []string) {
	for _, f := range fields {
		bp, sp := refProps(f)
		delete(e.Properties, bp)
		delete(e.Properties, sp)
		delete(e.Properties, sizeProp(f))
	}
}

// writeMode says how a write treats the stored entity.
type writeMode int

const (
	upsertMode writeMode = iota // insert or replace, whatever its version
	updateMode                  // replace the version v was read at
	addMode                     // insert only
)

// Put writes v's large fields to new blobs, then v (insert or replace),
// whatever the stored version: the last writer wins. To not lose a
// concurrent writer's change, pass opts.Current, the version v was made
// from (from Get): v is then written only over that version, and
// table.ErrPreconditionFailed if another writer got there first (its new
// blobs are then deleted, or left to Sweep), as Update does with v's own
// ETag; or use Modify. Either way one request per offloaded field, plus
// one: Put sends no read. The blobs of the version it replaces are left to
// Sweep. v's ETag is updated.
func (l *LargeEntity[T]) Put(ctx context.Context, v *T, opts *PutOptions[T]) (err error) {
	ctx, end := tableio.For(l.tbl).Span(ctx, opLargeEntityPut, partitionOf(l.tbl, v), 1)
	defer func() { end(err) }()
	if opts == nil || opts.Current == nil {
		return l.write(ctx, opLargeEntityPut, v, upsertMode, "")
	}
	if v == nil {
		return &table.InputError{Op: opLargeEntityPut, Rule: table.ErrNilValue}
	}
	m, cm := l.tbl.Meta(v), l.tbl.Meta(opts.Current)
	if err := checkCurrent(opLargeEntityPut, m.PartitionKey, m.RowKey, cm.PartitionKey, cm.RowKey, cm.ETag); err != nil {
		return err
	}
	return l.write(ctx, opLargeEntityPut, v, updateMode, cm.ETag)
}

// Update replaces v's entity only if it is still at v's ETag (as read by
// Get): table.ErrPreconditionFailed if another writer got there first, in
// which case nothing it wrote is named by the entity and Sweep removes its
// blobs. Without an ETag in v it fails with table.ErrNoETag before any
// request. One request per offloaded field, plus one. v's ETag is updated.
func (l *LargeEntity[T]) Update(ctx context.Context, v *T, options *WriteOptions) (err error) {
	ctx, end := tableio.For(l.tbl).Span(ctx, opLargeEntityUpdate, partitionOf(l.tbl, v), 1)
	defer func() { end(err) }()
	return l.write(ctx, opLargeEntityUpdate, v, updateMode, l.tbl.Meta(v).ETag)
}

// Modify applies change to the current value of an entity with optimistic
// concurrency, as table.Modify does: it reads the entity with its large
// fields, calls change, and writes the result guarded by the ETag it read,
// going round again (with a jittered back-off) when another writer got
// there first. change may return table.ErrNoChange to skip the write.
// opts.Create starts from a new value when the entity does not exist;
// opts.Mode is ignored (a large entity is always written whole). Without
// contention: the reads of Get, then the requests of Update.
func (l *LargeEntity[T]) Modify(ctx context.Context, partitionKey, rowKey string, change func(*T) error, opts *table.ModifyOptions) (_ *T, err error) {
	ctx, end := tableio.For(l.tbl).Span(ctx, opLargeEntityModify, partitionKey, 1)
	defer func() { end(err) }()
	if change == nil {
		return nil, &table.InputError{Op: opLargeEntityModify, Rule: table.ErrNilValue, Detail: "change func is nil"}
	}
	if err := validKeys(opLargeEntityModify, partitionKey, "RowKey", rowKey); err != nil {
		return nil, err
	}
	var ro table.RetryOptions
	create := false
	if opts != nil {
		ro = table.RetryOptions{MaxAttempts: opts.MaxAttempts, BaseDelay: opts.BaseDelay, MaxDelay: opts.MaxDelay}
		create = opts.Create
	}
	var result *T
	_, err = table.RetryOnConflict(ctx, func(int) error {
		v, err := l.Get(ctx, partitionKey, rowKey, nil)
		mode := updateMode
		if err != nil {
			if !create || !table.Is(err, table.ErrNotFound) {
				return err
			}
			v, mode = new(T), addMode
			m := l.tbl.Meta(v)
			m.PartitionKey, m.RowKey = partitionKey, rowKey
		}
		if err := change(v); err != nil {
			if errors.Is(err, table.ErrNoChange) {
				if mode != addMode {
					result = v
				}
				return nil
			}
			return err
		}
		if m := l.tbl.Meta(v); m.PartitionKey != partitionKey || m.RowKey != rowKey {
			return &table.InputError{Op: opLargeEntityModify, Field: "Meta", Rule: table.ErrInvalidValue, Detail: "change must not alter the keys"}
		}
		if err := l.write(ctx, opLargeEntityModify, v, mode, l.tbl.Meta(v).ETag); err != nil {
			if mode == updateMode && table.Is(err, table.ErrNotFound) && create {
				// Deleted between the read and the write: go round and
				// create it, keeping the service's 404 in the chain.
				return lostRace(fmt.Sprintf("LargeEntity.Modify (%q, %q) deleted after it was read", partitionKey, rowKey), err)
			}
			return err
		}
		result = v
		return nil
	}, &ro)
	if err != nil {
		return nil, err
	}
	return result, nil
}

// plan works out, before any request, which fields go to blobs and what
// the stored entity is: every limit is checked on the entity as it will be
// written, blob references included.
func (l *LargeEntity[T]) plan(op string, v *T) (*table.Entity, map[string][]byte, error) {
	m := l.tbl.Meta(v)
	c := *v
	cv := reflect.ValueOf(&c).Elem()
	data := map[string][]byte{}
	refs := map[string]blobRef{}
	offload := func(f string) error {
		b := fieldBytes(cv.FieldByName(f))
		sum := sha256.Sum256(b)
		name, err := l.newBlobName(op, m.PartitionKey, m.RowKey, f)
		if err != nil {
			return err
		}
		data[f], refs[f] = b, blobRef{name: name, sha: hex.EncodeToString(sum[:]), size: int64(len(b)), gzip: l.compress}
		setField(cv.FieldByName(f), nil)
		return nil
	}
	for _, f := range l.fields {
		if len(fieldBytes(cv.FieldByName(f))) > l.threshold {
			if err := offload(f); err != nil {
				return nil, nil, err
			}
		}
	}
	// Fields under the threshold can still add up past the entity limits:
	// move the largest remaining ones out until the entity fits.
	for {
		s, err := l.stored(op, &c, refs)
		if err == nil {
			return s, data, nil
		}
		if !errors.Is(err, table.ErrEntityTooLarge) && !errors.Is(err, table.ErrStringTooLong) && !errors.Is(err, table.ErrBinaryTooLong) {
			return nil, nil, err
		}
		largest, size := "", 0
		for _, f := range l.fields {
			if n := len(fieldBytes(cv.FieldByName(f))); n > size {
				largest, size = f, n
			}
		}
		if largest == "" {
			return nil, nil, err // nothing left to move: the rest of the entity is too big
		}
		if err := offload(largest); err != nil {
			return nil, nil, err
		}
	}
}

// stored builds the stored form of c with its references and checks it
// against the service's limits.
func (l *LargeEntity[T]) stored(op string, c *T, refs map[string]blobRef) (*table.Entity, error) {
	e, err := l.tbl.ToEntity(c)
	if err != nil {
		return nil, err
	}
	withoutRefs(e, l.fields)
	markKind(e, rowkind.Large)
	for f, r := range refs {
		bp, sp := refProps(f)
		e.Set(bp, table.ValueOf(r.name))
		e.Set(sp, table.ValueOf(r.sha))
		if r.gzip {
			e.Set(sizeProp(f), table.ValueOf(int64(r.size)))
		}
	}
	full, err := tableio.For(l.raw).Encode(e)
	if err == nil && len(full) > table.MaxEntityBytes {
		// Within the service's count, but Azurite measures the request
		// body, where binary is base64: keep both happy.
		err = &table.InputError{Op: op, Rule: table.ErrEntityTooLarge, Detail: "request body over 1 MiB"}
	}
	if err != nil {
		return nil, err
	}
	return e, nil
}

// write writes v in mode; an updateMode write is guarded by guard, the
// ETag of the version it replaces.
func (l *LargeEntity[T]) write(ctx context.Context, op string, v *T, mode writeMode, guard azcore.ETag) error {
	if v == nil {
		return &table.InputError{Op: op, Rule: table.ErrNilValue}
	}
	m := l.tbl.Meta(v)
	if err := validKeys(op, m.PartitionKey, "RowKey", m.RowKey); err != nil {
		return err
	}
	if mode == updateMode && guard == "" {
		return &table.InputError{Op: op, Field: "ETag", Rule: table.ErrNoETag, Detail: "read the entity with Get first, or use Put"}
	}
	s, data, err := l.plan(op, v)
	if err != nil {
		return err
	}
	start := l.now()
	for _, f := range l.fields {
		b, ok := data[f]
		if !ok {
			continue
		}
		ref := refsOf(s, []string{f})[f]
		var headers *blob.HTTPHeaders
		if ref.gzip {
			b = gz.Compress(b)
			headers = &blob.HTTPHeaders{BlobContentEncoding: to.Ptr(gz.Encoding)}
		}
		// A new name: only a retry of this very upload, whose first
		// answer was lost, can find it taken.
		_, err := l.blobs.UploadBuffer(ctx, l.container, ref.name, b, &azblob.UploadBufferOptions{
			HTTPHeaders:      headers,
			AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfNoneMatch: to.Ptr(azcore.ETagAny)}}})
		err = redact.Error(err) // a transport error names the URL, SAS token included
		if err != nil && !isBlobStatus(err, http.StatusConflict) {
			return fmt.Errorf("patterns: %s: large field %s: %w", op, f, err)
		}
	}
	// The entity goes out within putWindow of the first upload or not at
	// all: a Sweep with MinSweepGrace cannot have removed these blobs.
	left := putWindow - l.now().Sub(start)
	if left <= 0 {
		return fmt.Errorf("%w (%s (%q, %q))", ErrPutWindow, op, m.PartitionKey, m.RowKey)
	}
	wctx, cancel := context.WithTimeout(ctx, left)
	defer cancel()
	switch mode {
	case upsertMode:
		err = l.raw.Upsert(wctx, s, &table.UpsertOptions{Mode: aztables.UpdateModeReplace})
	case updateMode:
		s.ETag = guard
		err = l.raw.Update(wctx, s, &table.UpdateOptions{Mode: aztables.UpdateModeReplace})
	case addMode:
		err = l.raw.Add(wctx, s, nil)
	}
	if err != nil && len(data) > 0 && (table.Is(err, table.ErrPreconditionFailed) || table.Is(err, table.ErrAlreadyExists)) {
		// A write whose answer was lost is retried by the SDK and meets
		// 412 or 409 although it happened: the entity then names the new
		// blobs, which no one else can know.
		ok, serr := tableio.For(l.raw).Stored(ctx, s)
		switch {
		case serr == nil && ok:
			err = nil
		case serr == nil:
			// Refused for certain: no entity names these blobs, nor ever
			// will. Removing them now saves Sweep the work (a failure
			// here leaves them to Sweep).
			for f := range data {
				_, _ = l.blobs.DeleteBlob(ctx, l.container, refsOf(s, []string{f})[f].name, nil)
			}
		}
	}
	if err != nil {
		return fmt.Errorf("patterns: %s: %w", op, err)
	}
	// s started as a copy of v's Meta and the write applied table.Meta's
	// rule to it (a write to another table than the ETag's leaves it).
	*m = s.Meta
	return nil
}

// Get reads the entity and every offloaded field: one request, plus one
// per offloaded field. If the entity changes while its blobs are read, it
// reads the new version.
func (l *LargeEntity[T]) Get(ctx context.Context, partitionKey, rowKey string, options *ReadOptions) (*T, error) {
	if err := validKeys(opLargeEntityGet, partitionKey, "RowKey", rowKey); err != nil {
		return nil, err
	}
	const rounds = 3
	for round := 1; ; round++ {
		v, lazy, err := l.GetLazy(ctx, partitionKey, rowKey, nil)
		if err != nil {
			return nil, err
		}
		for _, f := range l.fields {
			if err = lazy.Load(ctx, f, nil); err != nil {
				break
			}
		}
		if err == nil {
			return v, nil
		}
		if !errors.Is(err, ErrStaleRead) || round == rounds {
			return nil, err
		}
	}
}

// Lazy holds the offloaded fields of a value read with GetLazy.
type Lazy[T any] struct {
	l    *LargeEntity[T]
	v    *T
	etag azcore.ETag
	refs map[string]blobRef
}

// Fields lists the fields still in blobs.
func (z *Lazy[T]) Fields() []string {
	var out []string
	for _, f := range z.l.fields {
		if _, ok := z.refs[f]; ok {
			out = append(out, f)
		}
	}
	return out
}

// Load reads one offloaded field into the value: one request. A blob that
// is gone while the entity still names it is an error matching ErrBlobMissing
// (ErrBlobMissing), checked with one more read of the entity: if the
// entity changed meanwhile the error is ErrStaleRead, if it is gone,
// table.ErrNotFound.
func (z *Lazy[T]) Load(ctx context.Context, field string, options *ReadOptions) error {
	r, ok := z.refs[field]
	if !ok {
		return nil
	}
	m := z.l.tbl.Meta(z.v)
	var ro blobread.Options
	if r.gzip {
		ro.MaxInflated = r.size // else nothing bounds it: a gzip-encoded blob is refused
	}
	b, err := blobread.Read(ctx, z.l.blobs, z.l.container, r.name, &ro)
	if errors.Is(err, blobread.ErrUnboundedGzip) {
		// Only this type writes compressed blobs, and it always records
		// their size.
		return fmt.Errorf("%w: %s is gzip-encoded but its entity records no %s", ErrBlobMismatch, r.name, sizeProp(field))
	}
	if err != nil {
		if !isBlobStatus(err, http.StatusNotFound) {
			return fmt.Errorf("patterns: LargeEntity.Get: large field %s: %w", field, err)
		}
		cur, rerr := z.l.raw.Get(ctx, m.PartitionKey, m.RowKey, nil)
		switch {
		case rerr != nil:
			return rerr // gone (not found), or the service failing
		case cur.ETag != z.etag:
			return fmt.Errorf("%w: (%q, %q) field %s", ErrStaleRead, m.PartitionKey, m.RowKey, field)
		}
		return &blobMissingError{PartitionKey: m.PartitionKey, RowKey: m.RowKey, Field: field, Blob: r.name, Cause: err}
	}
	defer b.Body.Close()
	data, err := io.ReadAll(b.Body)
	if err == nil && b.Gzip && int64(len(data)) != r.size {
		err = fmt.Errorf("%w: %s inflates to %d bytes, its entity says %d", ErrBlobMismatch, r.name, len(data), r.size)
	}
	if err != nil {
		return fmt.Errorf("patterns: LargeEntity.Get: large field %s: %w", field, err)
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
func (l *LargeEntity[T]) GetLazy(ctx context.Context, partitionKey, rowKey string, options *ReadOptions) (*T, *Lazy[T], error) {
	if err := validKeys(opLargeEntityGetLazy, partitionKey, "RowKey", rowKey); err != nil {
		return nil, nil, err
	}
	s, err := l.raw.Get(ctx, partitionKey, rowKey, nil)
	if err != nil {
		return nil, nil, &table.ServiceError{Op: opLargeEntityGet, PartitionKey: partitionKey, RowKey: rowKey, Err: err}
	}
	v, err := l.value(s)
	if err != nil {
		return nil, nil, err
	}
	return v, &Lazy[T]{l: l, v: v, etag: s.ETag, refs: refsOf(s, l.fields)}, nil
}

// value turns a stored entity into a T, references left out; a row of
// another kind than a large entity's is refused (table.ErrOtherRowKind).
func (l *LargeEntity[T]) value(e *table.Entity) (*T, error) {
	if !ofKind(e, rowkind.Large) {
		return nil, otherKind(opLargeEntityGet, e, rowkind.Large)
	}
	c := *e
	c.Properties = maps.Clone(e.Properties)
	withoutRefs(&c, l.fields)
	return l.tbl.FromEntity(&c)
}

// Delete removes the entity, then the blobs of the version it removed: a
// read, a delete guarded by the ETag read (a newer version sends it round
// again), and one request per blob. A crash in between leaves blobs that
// Sweep removes. With opts.Current (from Get) the delete is guarded by
// Current's ETag instead of the read's and is not sent round again: the
// entity goes only at Current's version, and table.ErrPreconditionFailed
// (the service's 412) says it changed since, with no blob touched. The
// read stays: a T does not carry its blobs' names, and a delete without
// them would leave the blobs to Sweep. A missing entity is
// table.ErrNotFound (the read's 404), or a success with opts.IfExists.
func (l *LargeEntity[T]) Delete(ctx context.Context, partitionKey, rowKey string, opts *DeleteOptions[T]) (err error) {
	ctx, end := tableio.For(l.tbl).Span(ctx, opLargeEntityDelete, partitionKey, 1)
	defer func() { end(err) }()
	if err := validKeys(opLargeEntityDelete, partitionKey, "RowKey", rowKey); err != nil {
		return err
	}
	var guard azcore.ETag // Current's version, when given
	if opts != nil && opts.Current != nil {
		cm := l.tbl.Meta(opts.Current)
		if err := checkCurrent(opLargeEntityDelete, partitionKey, rowKey, cm.PartitionKey, cm.RowKey, cm.ETag); err != nil {
			return err
		}
		guard = cm.ETag
	}
	var refs map[string]blobRef
	round := func(int) error {
		s, err := l.raw.Get(ctx, partitionKey, rowKey, nil)
		if table.Is(err, table.ErrNotFound) && opts != nil && opts.IfExists {
			refs = nil
			return nil
		}
		if err != nil {
			return err
		}
		if !ofKind(s, rowkind.Large) {
			return otherKind(opLargeEntityDelete, s, rowkind.Large)
		}
		// The blobs read are the deleted version's: a delete guarded by
		// another version's ETag than the read's is refused with 412.
		refs = refsOf(s, l.fields)
		etag := s.ETag
		if guard != "" {
			etag = guard
		}
		return l.raw.Delete(ctx, partitionKey, rowKey, &table.DeleteOptions{IfMatch: &etag, IfExists: true})
	}
	if guard != "" {
		err = round(1)
	} else {
		_, err = table.RetryOnConflict(ctx, round, nil)
	}
	if err != nil {
		return err
	}
	for _, f := range l.fields {
		r, ok := refs[f]
		if !ok {
			continue
		}
		if _, err := l.blobs.DeleteBlob(ctx, l.container, r.name, nil); err != nil && !isBlobStatus(err, http.StatusNotFound) {
			return redact.Error(err)
		}
	}
	return nil
}

func isBlobStatus(err error, status int) bool {
	var re *azcore.ResponseError
	return errors.As(err, &re) && re.StatusCode == status
}

// Sweep deletes the blobs that no entity names (left by a crash between
// the two writes, by a failed write, by Delete, or by a newer version) and
// that are older than grace. Use at least MinSweepGrace while writes may
// be in flight; a shorter grace is only safe when none are (a test, a
// maintenance window), since a write's blobs are unnamed until its entity
// is written. It returns how many it deleted: one request per page of
// blobs, plus one read per entity with blobs, plus one per blob deleted.
func (l *LargeEntity[T]) Sweep(ctx context.Context, grace time.Duration, options *WriteOptions) (_ int, err error) {
	ctx, end := tableio.For(l.tbl).Span(ctx, opLargeEntitySweep, "", 1)
	defer func() { end(err) }()
	deleted := 0
	type entityKey struct{ pk, rk string }
	var lastKey entityKey
	var lastRefs map[string]bool // the blob names the last entity read names
	pager := l.blobs.NewListBlobsFlatPager(l.container, nil)
	for pager.More() {
		page, err := pager.NextPage(ctx)
		err = redact.Error(err) // a transport error names the URL, SAS token included
		if err != nil {
			return deleted, err
		}
		for _, item := range page.Segment.BlobItems {
			if item.Name == nil || item.Properties == nil || item.Properties.LastModified == nil {
				continue
			}
			name := *item.Name
			if l.now().Sub(*item.Properties.LastModified) < grace {
				continue
			}
			pk, rk, _, ok := keysOfBlob(name)
			if !ok || validKeys(opLargeEntitySweep, pk, "RowKey", rk) != nil {
				continue // not ours
			}
			// Blobs of one entity are listed together: read it once.
			if k := (entityKey{pk, rk}); k != lastKey || lastRefs == nil {
				s, err := l.raw.Get(ctx, pk, rk, nil)
				if err != nil && !table.Is(err, table.ErrNotFound) {
					return deleted, err
				}
				lastKey, lastRefs = k, map[string]bool{}
				if err == nil {
					for _, r := range refsOf(s, l.fields) {
						lastRefs[r.name] = true
					}
				}
			}
			if lastRefs[name] {
				continue
			}
			// Guarded by the blob's ETag as listed: names are never reused,
			// so this only guards against a blob replaced behind our back.
			var o *azblob.DeleteBlobOptions
			if item.Properties.ETag != nil {
				o = &azblob.DeleteBlobOptions{AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfMatch: item.Properties.ETag}}}
			}
			_, err := l.blobs.DeleteBlob(ctx, l.container, name, o)
			err = redact.Error(err) // a transport error names the URL, SAS token included
			switch {
			case err == nil:
				deleted++
			case isBlobStatus(err, http.StatusPreconditionFailed) && l.log != nil:
				l.log.WarnContext(ctx, "tablekit: LargeEntity.Sweep left a blob that changed since it was listed; the next Sweep decides it", "container", l.container, "blob", name)
			case !isBlobStatus(err, http.StatusNotFound) && !isBlobStatus(err, http.StatusPreconditionFailed):
				return deleted, err
			}
		}
	}
	return deleted, nil
}
