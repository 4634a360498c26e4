package consistency

import (
	"context"
	"errors"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit/internal/redact"
	"github.com/tablekit/tablekit/table"
)

// The idempotent steps the guide requires of a handler ("Eventually
// consistent transactions pattern", error recovery): each may run any
// number of times with the same result.

// UpsertReplaceOptions configure UpsertReplace. It has no fields yet: nil
// is the only value today, and the parameter lets options be added
// without breaking callers.
type UpsertReplaceOptions struct{}

// UpsertReplace makes the stored entity exactly v (insert or replace).
func UpsertReplace[T any](ctx context.Context, tbl *table.Table[T], v *T, o *UpsertReplaceOptions) error {
	return tbl.Upsert(ctx, v, &table.UpsertOptions{Mode: table.Replace})
}

// DeleteIfExistsOptions configure DeleteIfExists. It has no fields yet:
// nil is the only value today.
type DeleteIfExistsOptions struct{}

// DeleteIfExists removes an entity; a missing one is success.
func DeleteIfExists[T any](ctx context.Context, tbl *table.Table[T], partitionKey, rowKey string, o *DeleteIfExistsOptions) error {
	return tbl.Delete(ctx, partitionKey, rowKey, &table.DeleteOptions{IfExists: true})
}

// DeleteIfUnchangedOptions configure DeleteIfUnchanged. It has no fields
// yet: nil is the only value today.
type DeleteIfUnchangedOptions struct{}

// DeleteIfUnchanged removes an entity only at version etag; a missing one is
// success, a changed one is table.ErrPreconditionFailed (the handler then
// fails, and its retry converges on the newer version).
func DeleteIfUnchanged[T any](ctx context.Context, tbl *table.Table[T], partitionKey, rowKey string, etag azcore.ETag, o *DeleteIfUnchangedOptions) error {
	return tbl.Delete(ctx, partitionKey, rowKey, &table.DeleteOptions{IfMatch: &etag, IfExists: true})
}

// PutBlobOptions configure PutBlob. It has no fields yet: nil is the only
// value today.
type PutBlobOptions struct{}

// PutBlob writes data to a blob, replacing what is there.
func PutBlob(ctx context.Context, blobs BlobStore, container, name string, data []byte, o *PutBlobOptions) error {
	// A transport error names the blob's URL, SAS signature included: the
	// store redacts it, and so does this step, for stores that do not.
	return redact.Error(blobs.Put(ctx, container, name, data, nil))
}

// ErrSourceChanged: WriteIfSourceUnchanged skipped its write because the
// source moved on; the message of that newer change will bring it along.
var ErrSourceChanged = errors.New("consistency: source changed since the message was sent")

// WriteIfSourceUnchangedOptions configure WriteIfSourceUnchanged. It has
// no fields yet: nil is the only value today.
type WriteIfSourceUnchangedOptions struct{}

// WriteIfSourceUnchanged runs write only while the source entity still has
// version etag: it reads the source (one request) and skips the write with
// ErrSourceChanged otherwise. Use it when a message carries a version and
// only that version may be written (edge-triggered work); prefer handlers
// that read the source and converge to it, which need no such check.
func WriteIfSourceUnchanged[S any](ctx context.Context, src *table.Table[S], partitionKey, rowKey string, etag azcore.ETag, write func(*S) error, o *WriteIfSourceUnchangedOptions) error {
	cur, err := src.Get(ctx, partitionKey, rowKey, nil)
	if err != nil {
		return err
	}
	if src.Meta(cur).ETag != etag {
		return ErrSourceChanged
	}
	return write(cur)
}
