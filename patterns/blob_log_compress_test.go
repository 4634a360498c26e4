package patterns_test

import (
	"bytes"
	stdgzip "compress/gzip"
	"errors"
	"fmt"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/table"
)

// todaysBlob is a log blob as BlobLog wrote it before the line format
// moved to internal/jsonlines (json.Encoder, HTML-safe escaping).
const todaysBlob = `{"t":"2014-07-31T18:00:00Z","m":"GET /a?x=1\u0026y=\u003cz\u003e 200"}` + "\n" +
	`{"t":"2014-07-31T18:00:01.5Z","m":"line \"two\""}` + "\n"

func TestBlobLogFormatUnchanged(t *testing.T) {
	ctx := t.Context()
	blobs := fake.NewBlobService(nil)
	bc := blobs.NewClient(nil)
	_, _ = bc.CreateContainer(ctx, "logs", nil)
	at := time.Date(2014, 7, 31, 18, 0, 0, 0, time.UTC)
	// Reads a blob in today's format...
	if _, err := bc.UploadBuffer(ctx, "logs", "old/2014/07/31/1800/w-000001.log", []byte(todaysBlob), nil); err != nil {
		t.Fatal(err)
	}
	old, err := patterns.NewBlobLog(bc, "logs", "old", nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for e, err := range old.Read(ctx, at, at.Add(time.Hour), nil) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, e.Time.Format(time.RFC3339Nano)+" "+e.Text)
	}
	if want := []string{"2014-07-31T18:00:00Z GET /a?x=1&y=<z> 200", `2014-07-31T18:00:01.5Z line "two"`}; !slices.Equal(got, want) {
		t.Fatalf("read %q", got)
	}
	// ...and writes the same bytes.
	l, _ := patterns.NewBlobLog(bc, "logs", "new", nil)
	_ = l.AppendAt(ctx, at, "GET /a?x=1&y=<z> 200", nil)
	_ = l.AppendAt(ctx, at.Add(1500*time.Millisecond), `line "two"`, nil)
	if err := l.Close(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if b, _ := blobs.Blob("logs", "new/2014/07/31/1800/w-000001.log"); string(b) != todaysBlob {
		t.Fatalf("wrote\n%s", b)
	}
}

func TestBlobLogCompress(t *testing.T) {
	ctx := t.Context()
	blobs := fake.NewBlobService(nil)
	bc := blobs.NewClient(nil)
	_, _ = bc.CreateContainer(ctx, "logs", nil)
	at := time.Date(2014, 7, 31, 18, 0, 0, 0, time.UTC)
	// An hour of plain blobs from before the switch...
	plain, _ := patterns.NewBlobLog(bc, "logs", "app", &patterns.BlobLogOptions{Writer: "a"})
	var want []string
	for i := range 100 {
		text := fmt.Sprintf("GET /api/orders/%d 200 took=%dms", i, i%37)
		_ = plain.AppendAt(ctx, at.Add(time.Duration(2*i)*time.Second), text, nil)
		want = append(want, text)
	}
	if err := plain.Close(ctx, nil); err != nil {
		t.Fatal(err)
	}
	// ...and compressed ones after it, in the same hour.
	zl, _ := patterns.NewBlobLog(bc, "logs", "app", &patterns.BlobLogOptions{Writer: "b", Compress: true})
	for i := range 100 {
		text := fmt.Sprintf("GET /api/orders/%d 200 took=%dms", 1000+i, i%37)
		_ = zl.AppendAt(ctx, at.Add(time.Duration(2*i+1)*time.Second), text, nil)
	}
	if err := zl.Close(ctx, nil); err != nil {
		t.Fatal(err)
	}
	const name = "app/2014/07/31/1800/b-000001.log"
	stored, _ := blobs.Blob("logs", name)
	props, err := bc.ServiceClient().NewContainerClient("logs").NewBlobClient(name).GetProperties(ctx, nil)
	if err != nil || props.ContentEncoding == nil || *props.ContentEncoding != "gzip" {
		t.Fatalf("Content-Encoding %v, %v", props.ContentEncoding, err)
	}
	zr, err := stdgzip.NewReader(bytes.NewReader(stored))
	if err != nil {
		t.Fatal(err)
	}
	lines, _ := io.ReadAll(zr)
	if plainBlob, _ := blobs.Blob("logs", "app/2014/07/31/1800/a-000001.log"); len(stored)*3 > len(lines) || len(plainBlob) < len(lines)*9/10 {
		t.Fatalf("compressed blob %d bytes for %d bytes of lines", len(stored), len(lines))
	}
	var got []string
	for e, err := range zl.Read(ctx, at, at.Add(time.Hour), nil) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, e.Text)
	}
	if len(got) != 200 {
		t.Fatalf("read %d entries", len(got))
	}
	for i := range 100 {
		if got[2*i] != want[i] || got[2*i+1] != fmt.Sprintf("GET /api/orders/%d 200 took=%dms", 1000+i, i%37) {
			t.Fatalf("entry %d: %q %q", i, got[2*i], got[2*i+1])
		}
	}
}

// TestBlobLogReadBoundsABomb: a blob crafted to inflate to 16 MiB (from about 50 KiB) is refused
// at the reader's bound instead of filling memory.
func TestBlobLogReadBoundsABomb(t *testing.T) {
	ctx := t.Context()
	blobs := fake.NewBlobService(nil)
	bc := blobs.NewClient(nil)
	_, _ = bc.CreateContainer(ctx, "logs", nil)
	var z bytes.Buffer
	zw := stdgzip.NewWriter(&z)
	line := []byte(`{"t":"2014-07-31T18:00:00Z","m":"x"}` + "\n")
	zw.Write(bytes.Repeat(line, (16<<20)/len(line)))
	zw.Close()
	_, err := bc.UploadBuffer(ctx, "logs", "app/2014/07/31/1800/evil-000001.log", z.Bytes(), &azblob.UploadBufferOptions{HTTPHeaders: &blob.HTTPHeaders{BlobContentEncoding: to.Ptr("gzip")}})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2014, 7, 31, 18, 0, 0, 0, time.UTC)
	reader, err := patterns.NewBlobLog(bc, "logs", "app", &patterns.BlobLogOptions{MaxBlobBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, err = range reader.Read(ctx, at, at.Add(time.Hour), nil) {
		if err != nil {
			break
		}
		n++
	}
	if !errors.Is(err, table.ErrInflatedTooLarge) || n != 0 {
		t.Fatalf("after %d entries: %v", n, err)
	}
}

// TestBlobLogRefusesANegativeBlobBound: a negative MaxBlobBytes is refused
// by NewBlobLog, naming the field, before any request.
func TestBlobLogRefusesANegativeBlobBound(t *testing.T) {
	blobs := fake.NewBlobService(nil)
	bc := blobs.NewClient(nil)
	_, _ = bc.CreateContainer(t.Context(), "logs", nil)
	blobs.ResetCounts()
	l, err := patterns.NewBlobLog(bc, "logs", "app", &patterns.BlobLogOptions{MaxBlobBytes: -1})
	var ie *table.InputError
	if l != nil || !errors.Is(err, table.ErrBadOption) || !errors.Is(err, patterns.ErrBadDefinition) || !errors.As(err, &ie) || ie.Field != "MaxBlobBytes" {
		t.Fatalf("NewBlobLog with MaxBlobBytes -1: %v, %v", l, err)
	}
	if n := blobs.Total(); n != 0 {
		t.Fatalf("NewBlobLog sent %d requests", n)
	}
	// The counter counts: the same log with a valid bound reads with requests.
	l, err = patterns.NewBlobLog(bc, "logs", "app", nil)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2014, 7, 31, 18, 0, 0, 0, time.UTC)
	for _, err := range l.Read(t.Context(), at, at.Add(time.Hour), nil) {
		t.Fatal(err)
	}
	if blobs.Total() == 0 {
		t.Fatal("a read counted no request")
	}
}
