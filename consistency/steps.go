package consistency

import (
	"context"
	"errors"

	"github.com/tablekit/tablekit/internal/redact"
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
	return redact.Error(blobs.Put(ctx, container, name, data))
}

// ErrSourceChanged: a Mover's message names a version of its entity that
// the key no longer holds, so nothing more is moved (see Mover); the
// message fails permanently with it.
var ErrSourceChanged = errors.New("consistency: source changed since the message was sent")
