// Package blobstore holds tablekit's one blob port, Client, the part of
// the official Blob client (*azblob.Client) that tablekit uses, and Read,
// the one way tablekit reads a blob. Store adapts a Client to
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
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/internal/gz"
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

// ErrUnboundedGzip: Read met a gzip-encoded blob and was given no bound
// for its inflation (ReadOptions.MaxInflated), so it read nothing of it.
var ErrUnboundedGzip = errors.New("blobstore: blob is gzip-encoded and no inflation bound was given")

// ReadOptions configure Read. nil means the defaults.
type ReadOptions struct {
	// MaxInflated bounds, in bytes, what a gzip-encoded blob inflates to:
	// reading past it fails (a decompression bomb costs at most the
	// bound). Default 0: a gzip-encoded blob is refused with
	// ErrUnboundedGzip before its body is read.
	MaxInflated int64
	// SniffGzip also inflates a blob whose content starts with the gzip
	// magic though its Content-Encoding does not say gzip (a copy that
	// lost its properties), for content that never starts so otherwise
	// (lines of JSON). Default false: only Content-Encoding gzip inflates.
	SniffGzip bool
}

// Blob is a blob being read.
type Blob struct {
	// Body yields the content, inflated when the blob is stored
	// gzip-encoded; the caller closes it.
	Body io.ReadCloser
	// Gzip reports that the blob is stored gzip-encoded.
	Gzip bool
	// ETag is the version read.
	ETag azcore.ETag
	// Metadata is the blob's metadata.
	Metadata map[string]*string
}

// Read starts reading the whole blob: one request. It asks for the stored
// bytes as they are (Accept-Encoding: identity): otherwise Go's transport
// asks for gzip itself and inflates a compressed blob behind the caller's
// back, with no bound. A gzip-encoded blob is inflated within
// o.MaxInflated. Errors keep the service's *azcore.ResponseError in the
// chain (a missing blob is its 404), with the blob's URL redacted from
// their text.
func Read(ctx context.Context, c Client, container, name string, o *ReadOptions) (*Blob, error) {
	var opts ReadOptions
	if o != nil {
		opts = *o
	}
	ctx = policy.WithHTTPHeader(ctx, http.Header{"Accept-Encoding": {"identity"}})
	resp, err := c.DownloadStream(ctx, container, name, nil)
	if err != nil {
		return nil, redact.Error(err) // a transport error names the URL, SAS token included
	}
	b := &Blob{Body: resp.Body, Metadata: resp.Metadata}
	if resp.ETag != nil {
		b.ETag = *resp.ETag
	}
	b.Gzip = resp.ContentEncoding != nil && strings.EqualFold(*resp.ContentEncoding, gz.Encoding)
	var src io.Reader = resp.Body
	if !b.Gzip && opts.SniffGzip {
		br := bufio.NewReader(resp.Body)
		magic, _ := br.Peek(3)
		b.Gzip, src = gz.IsGzip(magic), br
		if !b.Gzip {
			b.Body = readCloser{br, resp.Body}
		}
	}
	if !b.Gzip {
		return b, nil
	}
	if opts.MaxInflated <= 0 {
		resp.Body.Close()
		return nil, fmt.Errorf("%w: %s/%s", ErrUnboundedGzip, container, name)
	}
	zr, err := gz.NewReader(src, opts.MaxInflated)
	if err != nil {
		resp.Body.Close()
		return nil, redact.Error(fmt.Errorf("blobstore: %s/%s: %w", container, name, err))
	}
	b.Body = readCloser{zr, multiCloser{zr, resp.Body}}
	return b, nil
}

type readCloser struct {
	io.Reader
	io.Closer
}

type multiCloser []io.Closer

func (m multiCloser) Close() error {
	var errs []error
	for _, c := range m {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

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

// Get reads the whole blob (Read; Put never stores one gzip-encoded).
func (s *Store) Get(ctx context.Context, container, name string) ([]byte, error) {
	b, err := Read(ctx, s.client, container, name, nil)
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
