// Package blobstore holds tablekit's one blob port, Client, the part of
// the official Blob client (*azblob.Client) that tablekit uses. Store adapts a Client to
// consistency.BlobStore, through which the consistency package keeps
// payloads too large for a message and moves entities to blobs; the blob
// patterns (patterns.LargeEntity, BlobLog, BlobIndex) and the CLI take a
// Client.
//
// It is a package of its own so that consistency does not import azblob:
// azblob pulls in Apache Arrow, and a program that only sends and handles
// messages, or moves entities between tables, builds without either. Import
// this package where blobs are used:
//
//	s := consistency.NewSender(queue, &consistency.SenderOptions{
//		Blobs: blobstore.New(blobClient), Container: "payloads"})
package blobstore

import (
	"context"
	"io"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/internal/blobread"
	"github.com/tablekit/tablekit/internal/redact"
)

// Client is the part of *azblob.Client tablekit uses, with the client's
// own method signatures: pass the client you already have (fake.BlobService
// hands out real ones too). Implementations keep the service's
// *azcore.ResponseError in the chain of the errors they return.
type Client interface {
	UploadBuffer(ctx context.Context, containerName string, blobName string, buffer []byte, o *azblob.UploadBufferOptions) (azblob.UploadBufferResponse, error)
	DownloadStream(ctx context.Context, containerName string, blobName string, o *azblob.DownloadStreamOptions) (azblob.DownloadStreamResponse, error)
	DeleteBlob(ctx context.Context, containerName string, blobName string, o *azblob.DeleteBlobOptions) (azblob.DeleteBlobResponse, error)
	NewListBlobsFlatPager(containerName string, o *azblob.ListBlobsFlatOptions) *runtime.Pager[azblob.ListBlobsFlatResponse]
}

// The official client satisfies Client with no adapter, and Store the
// consistency port.
var (
	_ Client                = (*azblob.Client)(nil)
	_ consistency.BlobStore = (*Store)(nil)
)

// Store is a consistency.BlobStore over a Client. Its errors keep the
// service's *azcore.ResponseError in the chain (table.Is sees through them:
// ErrContainerNotFound, ErrNotFound), with the blob's URL redacted from
// their text: a transport error names it, SAS signature included.
type Store struct {
	client Client
}

// New returns a Store over client, usually an *azblob.Client.
func New(client Client) *Store { return &Store{client: client} }

// Put uploads data as the blob (one request up to the client's block
// size), replacing what is there.
func (s *Store) Put(ctx context.Context, container, name string, data []byte) error {
	_, err := s.client.UploadBuffer(ctx, container, name, data, nil)
	return redact.Error(err)
}

// Get reads the whole blob: the stored bytes as they are (Put never
// stores them gzip-encoded; a gzip-encoded blob is refused rather than
// inflated without a bound).
func (s *Store) Get(ctx context.Context, container, name string) ([]byte, error) {
	b, err := blobread.Read(ctx, s.client, container, name, nil)
	if err != nil {
		return nil, err
	}
	defer b.Body.Close()
	data, err := io.ReadAll(b.Body)
	return data, redact.Error(err)
}

// Delete removes the blob.
func (s *Store) Delete(ctx context.Context, container, name string) error {
	_, err := s.client.DeleteBlob(ctx, container, name, nil)
	return redact.Error(err)
}
