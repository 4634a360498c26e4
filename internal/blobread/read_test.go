package blobread_test

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/internal/blobread"
	"github.com/tablekit/tablekit/internal/gz"
	"github.com/tablekit/tablekit/table"
)

// acceptEncoding records the Accept-Encoding each GET went out with (read
// after the policies behind it, which set headers from the context, ran).
type acceptEncoding struct{ seen []string }

func (a *acceptEncoding) Do(req *policy.Request) (*http.Response, error) {
	resp, err := req.Next()
	if req.Raw().Method == http.MethodGet {
		a.seen = append(a.seen, req.Raw().Header.Get("Accept-Encoding"))
	}
	return resp, err
}

// TestReadPlainGzipAndBounds: Read returns a plain blob as stored, inflates
// a gzip-encoded one within MaxInflated (a longer inflation fails while
// read), refuses a gzip-encoded one given no bound, inflates by the magic
// only with SniffGzip, asks for the stored bytes (Accept-Encoding:
// identity), and keeps the service's 404 in the chain.
func TestReadPlainGzipAndBounds(t *testing.T) {
	ctx := t.Context()
	var ae acceptEncoding
	opts := &azblob.ClientOptions{}
	opts.PerRetryPolicies = append(opts.PerRetryPolicies, &ae)
	bc := fake.NewBlobService(nil).NewClient(opts)
	if _, err := bc.CreateContainer(ctx, "logs", nil); err != nil {
		t.Fatal(err)
	}
	plain := bytes.Repeat([]byte("line of text\n"), 1000)
	zipped := gz.Compress(plain)
	put := func(name string, data []byte, encoding string) {
		o := &azblob.UploadBufferOptions{}
		if encoding != "" {
			o.HTTPHeaders = &blob.HTTPHeaders{BlobContentEncoding: to.Ptr(encoding)}
		}
		if _, err := bc.UploadBuffer(ctx, "logs", name, data, o); err != nil {
			t.Fatal(err)
		}
	}
	put("plain", plain, "")
	put("encoded", zipped, gz.Encoding)
	put("lost-properties", zipped, "")
	read := func(name string, o *blobread.Options) ([]byte, *blobread.Blob, error) {
		b, err := blobread.Read(ctx, bc, "logs", name, o)
		if err != nil {
			return nil, nil, err
		}
		defer b.Body.Close()
		data, err := io.ReadAll(b.Body)
		return data, b, err
	}

	if got, b, err := read("plain", nil); err != nil || !bytes.Equal(got, plain) || b.Gzip || b.ETag == "" {
		t.Errorf("plain blob: %d bytes, gzip %v, ETag %q, %v; want it as stored", len(got), b != nil && b.Gzip, b.ETag, err)
	}
	if got, b, err := read("encoded", &blobread.Options{MaxInflated: int64(len(plain))}); err != nil || !bytes.Equal(got, plain) || !b.Gzip {
		t.Errorf("gzip-encoded blob within its bound: %d bytes, %v; want the %d inflated", len(got), err, len(plain))
	}
	if _, _, err := read("encoded", &blobread.Options{MaxInflated: int64(len(plain)) - 1}); !errors.Is(err, gz.ErrTooLarge) {
		t.Errorf("gzip-encoded blob past its bound: %v; want gz.ErrTooLarge", err)
	}
	if _, _, err := read("encoded", nil); !errors.Is(err, blobread.ErrUnboundedGzip) {
		t.Errorf("gzip-encoded blob with no bound: %v; want ErrUnboundedGzip", err)
	}
	if got, _, err := read("lost-properties", &blobread.Options{MaxInflated: 1 << 20}); err != nil || !bytes.Equal(got, zipped) {
		t.Errorf("gzip bytes without Content-Encoding, no SniffGzip: %d bytes, %v; want them as stored", len(got), err)
	}
	if got, b, err := read("lost-properties", &blobread.Options{MaxInflated: 1 << 20, SniffGzip: true}); err != nil || !bytes.Equal(got, plain) || !b.Gzip {
		t.Errorf("gzip bytes without Content-Encoding, SniffGzip: %d bytes, %v; want them inflated", len(got), err)
	}
	if got, _, err := read("plain", &blobread.Options{SniffGzip: true}); err != nil || !bytes.Equal(got, plain) {
		t.Errorf("plain blob with SniffGzip: %d bytes, %v; want it as stored", len(got), err)
	}
	for i, h := range ae.seen {
		if h != "identity" {
			t.Errorf("request %d asked Accept-Encoding %q; want identity", i, h)
		}
	}
	if len(ae.seen) == 0 {
		t.Fatal("no request seen: the probe policy is not in the pipeline")
	}

	_, _, err := read("missing", nil)
	var re *azcore.ResponseError
	if !errors.As(err, &re) || re.StatusCode != http.StatusNotFound || !table.Is(err, table.ErrNotFound) {
		t.Errorf("missing blob: %v; want the service's 404 in the chain", err)
	}
}
