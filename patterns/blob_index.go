package patterns

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/tablekit/tablekit/consistency/blobstore"
	"github.com/tablekit/tablekit/internal/blobread"
	"github.com/tablekit/tablekit/internal/idlist"
	"github.com/tablekit/tablekit/internal/keyrules"
	"github.com/tablekit/tablekit/internal/redact"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/table"
)

// BlobIndex keeps value → IDs lists in blobs, one per value (option 1), for
// lists beyond what index entities hold. A change reads the blob and writes
// it back with If-Match (If-None-Match: * when it is new), retrying lost
// races.
type blobIndex struct {
	blobs     blobstore.Client
	container string
	prefix    string
	retry     table.RetryOptions
}

// newBlobIndex keeps lists in container under names that start with prefix.
func newBlobIndex(blobs blobstore.Client, container, prefix string) (*blobIndex, error) {
	if err := keyrules.ValidateContainerName(container); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadDefinition, err)
	}
	return &blobIndex{blobs: blobs, container: container, prefix: prefix, retry: listRetry()}, nil
}

func (b *blobIndex) name(value string) (string, error) {
	enc, err := keys.EncodeTuple(value)
	if err != nil {
		return "", err
	}
	n := b.prefix + enc
	return n, keyrules.ValidateBlobName(n)
}

// read returns the list and its ETag ("" when the blob does not exist).
func (b *blobIndex) read(ctx context.Context, name string) ([]string, azcore.ETag, error) {
	blob, err := blobread.Read(ctx, b.blobs, b.container, name, nil)
	var re *azcore.ResponseError
	if errors.As(err, &re) && re.StatusCode == http.StatusNotFound {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", err
	}
	defer blob.Body.Close()
	data, err := io.ReadAll(blob.Body)
	if err != nil {
		return nil, "", redact.Error(err)
	}
	ids, err := idlist.Decode(string(data))
	if err != nil {
		return nil, "", fmt.Errorf("patterns: index blob %s: %w", name, err)
	}
	return ids, blob.ETag, nil
}

func (b *blobIndex) change(ctx context.Context, op, value string, f func([]string) ([]string, bool)) error {
	name, err := b.name(value)
	if err != nil {
		return &table.InputError{Op: op, Field: "value", Rule: err}
	}
	_, err = table.RetryOnConflict(ctx, func(int) error {
		ids, etag, err := b.read(ctx, name)
		if err != nil {
			return err
		}
		next, changed := f(ids)
		if !changed {
			return nil
		}
		list, err := idlist.Encode(next)
		if err != nil {
			return &table.InputError{Op: op, Field: "id", Rule: err}
		}
		cond := &blob.ModifiedAccessConditions{IfMatch: &etag}
		if etag == "" {
			cond = &blob.ModifiedAccessConditions{IfNoneMatch: to.Ptr(azcore.ETagAny)}
		}
		_, err = b.blobs.UploadBuffer(ctx, b.container, name, []byte(list), &azblob.UploadBufferOptions{AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: cond}})
		err = redact.Error(err) // a transport error names the URL, SAS token included
		var re *azcore.ResponseError
		if errors.As(err, &re) && (re.StatusCode == http.StatusPreconditionFailed || re.StatusCode == http.StatusConflict) {
			// 412 (changed since read) or 409 (created since): a lost race,
			// which RetryOnConflict retries.
			return lostRace(op+" "+name, err)
		}
		return err
	}, &b.retry)
	return err
}

// Add puts id in value's list.
func (b *blobIndex) Add(ctx context.Context, op, value, id string) error {
	if err := idlist.CheckID(id); err != nil {
		return &table.InputError{Op: op, Field: "id", Rule: err}
	}
	return b.change(ctx, op, value, func(ids []string) ([]string, bool) {
		if slices.Contains(ids, id) {
			return ids, false
		}
		return append(ids, id), true
	})
}

// Remove takes id out of value's list.
func (b *blobIndex) Remove(ctx context.Context, op, value, id string) error {
	return b.change(ctx, op, value, func(ids []string) ([]string, bool) {
		i := slices.Index(ids, id)
		if i < 0 {
			return ids, false
		}
		return slices.Delete(ids, i, i+1), true
	})
}

// IDs returns value's list: one request.
func (b *blobIndex) IDs(ctx context.Context, op, value string) ([]string, error) {
	name, err := b.name(value)
	if err != nil {
		return nil, &table.InputError{Op: op, Field: "value", Rule: err}
	}
	ids, _, err := b.read(ctx, name)
	return ids, err
}
