package patterns_test

import (
	"bytes"
	stdgzip "compress/gzip"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/table"
)

type report struct {
	table.Meta
	Title string
	Body  string
}

func TestLargeEntityCompress(t *testing.T) {
	ctx := t.Context()
	_, client := newClient("Reports")
	blobs := fake.NewBlobService(nil)
	bc := blobs.NewClient(nil)
	_, _ = bc.CreateContainer(ctx, "bodies", nil)
	body := strings.Repeat("customer,order,amount,city\n42,1000017,99.50,Lisbon\n", 4000) // 200 KB of CSV

	// Written before Compress was switched on: a plain blob.
	plain, _ := patterns.NewLargeEntity[report](tableOf(table.New[report](client, nil)), bc, "bodies", []string{"Body"}, 0, nil)
	if err := plain.Put(ctx, &report{Meta: table.Meta{PartitionKey: "2026", RowKey: "old"}, Body: body}, nil); err != nil {
		t.Fatal(err)
	}
	zipped, _ := patterns.NewLargeEntity[report](tableOf(table.New[report](client, nil)), bc, "bodies", []string{"Body"}, 0, &patterns.LargeEntityOptions{Compress: true})
	if err := zipped.Put(ctx, &report{Meta: table.Meta{PartitionKey: "2026", RowKey: "new"}, Title: "t", Body: body}, nil); err != nil {
		t.Fatal(err)
	}
	raw, _ := table.New[table.Entity](client, nil)
	stored, err := raw.Get(ctx, "2026", "new", nil)
	if err != nil {
		t.Fatal(err)
	}
	sz, _ := stored.Get("BodySize")
	name, _ := stored.Get("BodyBlob")
	n, _ := sz.AsInt64()
	blobName, _ := name.AsString()
	if n != int64(len(body)) {
		t.Fatalf("BodySize %d, want %d", n, len(body))
	}
	b, _ := blobs.Blob("bodies", blobName)
	props, err := bc.ServiceClient().NewContainerClient("bodies").NewBlobClient(blobName).GetProperties(ctx, nil)
	if err != nil || props.ContentEncoding == nil || *props.ContentEncoding != "gzip" || len(b)*10 > len(body) {
		t.Fatalf("blob %d bytes, Content-Encoding %v, %v", len(b), props.ContentEncoding, err)
	}
	zr, _ := stdgzip.NewReader(bytes.NewReader(b))
	if got, _ := io.ReadAll(zr); string(got) != body {
		t.Fatal("the blob is not the gzip of the field")
	}
	// Both read with either switch; the old entity has no BodySize.
	for _, l := range []*patterns.LargeEntity[report]{plain, zipped} {
		for _, rk := range []string{"old", "new"} {
			got, err := l.Get(ctx, "2026", rk, nil)
			if err != nil || got.Body != body {
				t.Fatalf("Get %s: %d bytes, %v", rk, len(got.Body), err)
			}
		}
	}
	// Rewritten without compression, the entity loses BodySize.
	v, _ := zipped.Get(ctx, "2026", "new", nil)
	if err := plain.Update(ctx, v, nil); err != nil {
		t.Fatal(err)
	}
	stored, _ = raw.Get(ctx, "2026", "new", nil)
	if _, ok := stored.Get("BodySize"); ok {
		t.Fatal("BodySize kept after a plain write")
	}
}

// TestLargeEntityCompressedBlobBomb: a compressed blob replaced behind the
// pattern's back by one that inflates far past the recorded size is read
// no further than that size, and refused.
func TestLargeEntityCompressedBlobBomb(t *testing.T) {
	ctx := t.Context()
	_, client := newClient("Reports")
	blobs := fake.NewBlobService(nil)
	bc := blobs.NewClient(nil)
	_, _ = bc.CreateContainer(ctx, "bodies", nil)
	l, _ := patterns.NewLargeEntity[report](tableOf(table.New[report](client, nil)), bc, "bodies", []string{"Body"}, 0, &patterns.LargeEntityOptions{Compress: true})
	if err := l.Put(ctx, &report{Meta: table.Meta{PartitionKey: "p", RowKey: "r"}, Body: strings.Repeat("x", 40_000)}, nil); err != nil {
		t.Fatal(err)
	}
	name := blobs.Names("bodies")[0]
	var z bytes.Buffer
	zw := stdgzip.NewWriter(&z)
	zw.Write(make([]byte, 16<<20))
	zw.Close()
	if _, err := bc.UploadBuffer(ctx, "bodies", name, z.Bytes(), &azblob.UploadBufferOptions{HTTPHeaders: &blob.HTTPHeaders{BlobContentEncoding: to.Ptr("gzip")}}); err != nil {
		t.Fatal(err)
	}
	_, err := l.Get(ctx, "p", "r", nil)
	if !errors.Is(err, table.ErrInflatedTooLarge) {
		t.Fatalf("bomb: %v", err)
	}
	// A gzip blob whose entity records no size (not written by Compress)
	// is refused rather than inflated without a bound.
	plainL, _ := patterns.NewLargeEntity[report](tableOf(table.New[report](client, nil)), bc, "bodies", []string{"Body"}, 0, nil)
	if err := plainL.Put(ctx, &report{Meta: table.Meta{PartitionKey: "p", RowKey: "q"}, Body: strings.Repeat("y", 40_000)}, nil); err != nil {
		t.Fatal(err)
	}
	raw, _ := table.New[table.Entity](client, nil)
	e, _ := raw.Get(ctx, "p", "q", nil)
	nv, _ := e.Get("BodyBlob")
	qname, _ := nv.AsString()
	if _, err := bc.UploadBuffer(ctx, "bodies", qname, z.Bytes(), &azblob.UploadBufferOptions{HTTPHeaders: &blob.HTTPHeaders{BlobContentEncoding: to.Ptr("gzip")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := plainL.Get(ctx, "p", "q", nil); !errors.Is(err, patterns.ErrBlobMismatch) {
		t.Fatalf("gzip blob without a size: %v", err)
	}
}
