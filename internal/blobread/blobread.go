// Package blobread is the one way tablekit reads a blob: the stored bytes
// as they are, errors with the blob's URL redacted, and a gzip-encoded
// blob inflated within a bound. The blob patterns (LargeEntity, BlobLog,
// the model's blob lists) and blobstore.Store.Get read through it.
package blobread

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
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/tablekit/tablekit/internal/gz"
	"github.com/tablekit/tablekit/internal/redact"
)

// Downloader is the part of *azblob.Client (and of blobstore.Client) that
// Read uses.
type Downloader interface {
	DownloadStream(ctx context.Context, containerName string, blobName string, o *azblob.DownloadStreamOptions) (azblob.DownloadStreamResponse, error)
}

// ErrUnboundedGzip: Read met a gzip-encoded blob and was given no bound
// for its inflation (Options.MaxInflated), so it read nothing of it.
var ErrUnboundedGzip = errors.New("blobstore: blob is gzip-encoded and no inflation bound was given")

// Options configure Read. nil means the defaults.
type Options struct {
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
func Read(ctx context.Context, c Downloader, container, name string, o *Options) (*Blob, error) {
	var opts Options
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
