// Package blobstore adapts the official Blob client (*azblob.Client) to
// consistency.BlobStore, the port through which the consistency package
// keeps payloads too large for a message and moves entities to blobs.
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

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/internal/redact"
)

// Client is the part of *azblob.Client a Store uses: pass the client you
// already have.
type Client interface {
	UploadBuffer(ctx context.Context, containerName string, blobName string, buffer []byte, o *azblob.UploadBufferOptions) (azblob.UploadBufferResponse, error)
	DownloadStream(ctx context.Context, containerName string, blobName string, o *azblob.DownloadStreamOptions) (azblob.DownloadStreamResponse, error)
	DeleteBlob(ctx context.Context, containerName string, blobName string, o *azblob.DeleteBlobOptions) (azblob.DeleteBlobResponse, error)
}

// The official client satisfies Client with no adapter, and Store the
// consistency port.
var (
	_ Client                = (*azblob.Client)(nil)
	_ consistency.BlobStore = (*Store)(nil)
)

// Store is a consistency.BlobStore over a Blob client. Its errors keep the
// service's *azcore.ResponseError in the chain (consistency.IsContainerNotFound
// and table.IsNotFound see through them), with the blob's URL redacted from
// their text: a transport error names it, SAS signature included.
type Store struct {
	client Client
}

// New returns a Store over client, usually an *azblob.Client.
func New(client Client) *Store { return &Store{client: client} }

// Put uploads data as the blob (one request up to the client's block
// size), replacing what is there.
func (s *Store) Put(ctx context.Context, container, name string, data []byte, o *consistency.BlobPutOptions) error {
	_, err := s.client.UploadBuffer(ctx, container, name, data, nil)
	return redact.Error(err)
}

// Get downloads the whole blob.
func (s *Store) Get(ctx context.Context, container, name string, o *consistency.BlobGetOptions) ([]byte, error) {
	resp, err := s.client.DownloadStream(ctx, container, name, nil)
	if err != nil {
		return nil, redact.Error(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return b, redact.Error(err)
}

// Delete removes the blob.
func (s *Store) Delete(ctx context.Context, container, name string, o *consistency.BlobDeleteOptions) error {
	_, err := s.client.DeleteBlob(ctx, container, name, nil)
	return redact.Error(err)
}
