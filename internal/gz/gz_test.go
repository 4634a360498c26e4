package gz

import (
	"bytes"
	stdgzip "compress/gzip"
	"errors"
	"io"
	"testing"
)

func TestRoundTripAndStandardReader(t *testing.T) {
	in := bytes.Repeat([]byte(`{"t":"2026-11-23T14:00:00Z","m":"GET /api/orders 200"}`+"\n"), 200)
	z := Compress(in)
	if !IsGzip(z) || len(z) >= len(in)/5 {
		t.Fatalf("compressed %d of %d bytes, magic %v", len(z), len(in), IsGzip(z))
	}
	if !bytes.Equal(Compress(in), z) {
		t.Fatal("the same input compressed to other bytes")
	}
	// Standard tools read it: here the standard library's reader.
	r, err := stdgzip.NewReader(bytes.NewReader(z))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := io.ReadAll(r); err != nil || !bytes.Equal(got, in) {
		t.Fatalf("compress/gzip read %d bytes, %v", len(got), err)
	}
	got, err := Decompress(z, len(in))
	if err != nil || !bytes.Equal(got, in) {
		t.Fatalf("Decompress at the exact bound: %d bytes, %v", len(got), err)
	}
}

// TestBombIsBounded: 64 MiB of zeros compress to about 64 KiB; a reader
// bounded at 1 MiB stops there with ErrTooLarge.
func TestBombIsBounded(t *testing.T) {
	bomb := Compress(make([]byte, 64<<20))
	if _, err := Decompress(bomb, 1<<20); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Decompress: %v", err)
	}
	r, err := NewReader(bytes.NewReader(bomb), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, r)
	if !errors.Is(err, ErrTooLarge) || n != 1<<20 {
		t.Fatalf("stream: %d bytes, %v", n, err)
	}
	// A stream exactly at the bound is whole.
	r, _ = NewReader(bytes.NewReader(Compress(make([]byte, 1000))), 1000)
	if n, err := io.Copy(io.Discard, r); err != nil || n != 1000 {
		t.Fatalf("at the bound: %d, %v", n, err)
	}
}

func TestCorruptStream(t *testing.T) {
	z := Compress([]byte("hello, hello, hello"))
	z[len(z)-5] ^= 0xff // the CRC
	if _, err := Decompress(z, 100); err == nil || errors.Is(err, ErrTooLarge) {
		t.Fatalf("corrupt stream: %v", err)
	}
}
