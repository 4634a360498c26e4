// Package gz is tablekit's one gzip codec: the compression of LargeEntity
// and BlobLog blobs and of binary properties tagged gzip. It writes RFC
// 1952 gzip, which every standard tool reads (a browser or azcopy
// --decompress through the blob's Content-Encoding, gunzip, zcat), and it
// inflates with a hard bound so that a crafted stream (a decompression
// bomb) costs at most the bound in memory and CPU.
package gz

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"

	// klauspost/compress's gzip, already in the module graph (azblob's
	// arrow path uses it): much faster than compress/gzip at the default
	// level for slightly larger output on JSON entities and log lines
	// (BENCHMARKS.md), and it writes and reads the same RFC 1952 format.
	"github.com/klauspost/compress/gzip"
)

// Encoding is the Content-Encoding value of gzip data (RFC 9110 §8.4.1.3).
const Encoding = "gzip"

// Level is the compression level written: the default, the balance of
// speed and size the library tunes for (ratios in BENCHMARKS.md).
const Level = gzip.DefaultCompression

// ErrTooLarge: the data inflates past the bound its reader allows.
var ErrTooLarge = errors.New("gz: data inflates past its bound")

// writers pools gzip writers: a writer holds about 800 KiB of state, which
// would otherwise be allocated per compressed value. It holds scratch
// state only: a writer is Reset before each use and carries nothing from
// one caller to the next, so no caller can observe another through it.
var writers = sync.Pool{New: func() any {
	w, _ := gzip.NewWriterLevel(nil, Level)
	return w
}}

// Compress returns the gzip stream of b. The header carries no name and no
// time, so the same input always compresses to the same bytes.
func Compress(b []byte) []byte {
	var out bytes.Buffer
	out.Grow(len(b)/3 + 64)
	w := writers.Get().(*gzip.Writer)
	w.Reset(&out)
	_, _ = w.Write(b) // writes to a bytes.Buffer cannot fail
	_ = w.Close()
	writers.Put(w)
	return out.Bytes()
}

// IsGzip reports whether b starts with the gzip magic and the deflate
// method (1f 8b 08), the self-describing mark of a gzip stream.
func IsGzip(b []byte) bool {
	return len(b) >= 3 && b[0] == 0x1f && b[1] == 0x8b && b[2] == 8
}

// Decompress inflates the gzip stream b, refusing (ErrTooLarge) as soon
// as the output would pass limit bytes: a bomb costs at most limit bytes.
// A corrupt stream or a bad checksum is an error wrapping gzip's.
func Decompress(b []byte, limit int) ([]byte, error) {
	return DecompressReader(bytes.NewReader(b), limit)
}

// DecompressReader is Decompress for a stream.
func DecompressReader(r io.Reader, limit int) ([]byte, error) {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("gz: %w", err)
	}
	zr.Multistream(false)
	out, err := io.ReadAll(io.LimitReader(zr, int64(limit)+1))
	if err != nil {
		return nil, fmt.Errorf("gz: %w", err)
	}
	if len(out) > limit {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, limit)
	}
	return out, nil
}

// NewReader inflates r as a stream for a reader that consumes it
// incrementally (lines of a log): reads past limit inflated bytes fail
// with ErrTooLarge.
func NewReader(r io.Reader, limit int64) (io.ReadCloser, error) {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("gz: %w", err)
	}
	zr.Multistream(false)
	return &bounded{zr: zr, left: limit}, nil
}

type bounded struct {
	zr   *gzip.Reader
	left int64
}

func (b *bounded) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more tells a stream that ends exactly at the bound
		// from one that goes past it.
		var one [1]byte
		for {
			n, err := b.zr.Read(one[:])
			if n > 0 {
				return 0, fmt.Errorf("%w: more than the bound", ErrTooLarge)
			}
			if err != nil {
				return 0, err
			}
		}
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.zr.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *bounded) Close() error { return b.zr.Close() }
