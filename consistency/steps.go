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

// UpsertReplace makes the stored entity exactly v (insert or replace).
func UpsertReplace[T any](ctx context.Context, tbl *table.Table[T], v *T) error {
	return tbl.Upsert(ctx, v, &table.UpsertOptions{Mode: table.Replace})
}

// DeleteIfExists removes an entity; a missing one is success.
func DeleteIfExists[T any](ctx context.Context, tbl *table.Table[T], partitionKey, rowKey string) error {
	return tbl.Delete(ctx, partitionKey, rowKey, &table.DeleteOptions{IfExists: true})
}

// DeleteIfUnchanged removes an entity only at version etag; a missing one is
// success, a changed one is table.ErrPreconditionFailed (the handler then
// fails, and its retry converges on the newer version).
func DeleteIfUnchanged[T any](ctx context.Context, tbl *table.Table[T], partitionKey, rowKey string, etag azcore.ETag) error {
	return tbl.Delete(ctx, partitionKey, rowKey, &table.DeleteOptions{IfMatch: &etag, IfExists: true})
}

// PutBlob writes data to a blob, replacing what is there.
func PutBlob(ctx context.Context, blobs Blobs, container, name string, data []byte) error {
	_, err := blobs.UploadBuffer(ctx, container, name, data, nil)
	return redact.Error(err) // a transport error names the blob's URL, SAS signature included
}

// ErrSourceChanged: WriteIfSourceUnchanged skipped its write because the
// source moved on; the message of that newer change will bring it along.
var ErrSourceChanged = errors.New("consistency: source changed since the message was sent")

// WriteIfSourceUnchanged runs write only while the source entity still has
// version etag: it reads the source (one request) and skips the write with
// ErrSourceChanged otherwise. Use it when a message carries a version and
// only that version may be written (edge-triggered work); prefer handlers
// that read the source and converge to it, which need no such check.
func WriteIfSourceUnchanged[S any](ctx context.Context, src *table.Table[S], partitionKey, rowKey string, etag azcore.ETag, write func(*S) error) error {
	cur, err := src.Get(ctx, partitionKey, rowKey, nil)
	if err != nil {
		return err
	}
	if src.Meta(cur).ETag != etag {
		return ErrSourceChanged
	}
	return write(cur)
}
