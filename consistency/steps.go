package consistency

import (
	"context"
	"errors"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit/internal/redact"
	"github.com/tablekit/tablekit/table"
)

// The idempotent steps the guide requires of a handler ("Eventually
// consistent transactions pattern", error recovery) are table's own verbs:
// Table.Upsert with Mode Replace, Table.Delete with IfExists (and IfMatch
// for a guarded delete), and BlobStore.Put; each may run any number of
// times with the same result.

// putBlob writes data to a blob, replacing what is there: the idempotent
// blob step of BlobTarget.
func putBlob(ctx context.Context, blobs BlobStore, container, name string, data []byte) error {
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
