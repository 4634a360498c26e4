package integration

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/tablekit/tablekit/internal/reqcount"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/table"
)

// Compressed is an entity with a binary property stored gzip-compressed.
type Compressed struct {
	table.Meta
	Doc []byte `table:"Doc,gzip"`
}

// RunCompression runs the service behaviours client-side compression
// relies on: a blob keeps its Content-Encoding property and answers it on
// read, in its properties and in a listing, and returns the stored bytes
// untouched when asked for them (Accept-Encoding: identity), so that
// LargeEntity and BlobLog can mark gzip blobs for standard tools and still
// bound their own inflation; then the three compression switches end to
// end.
func RunCompression(t *testing.T, env Env) {
	ctx := t.Context()
	csv := strings.Repeat("customer,order,amount,city\n42,1000017,99.50,Lisbon\n", 3000) // 150 KB
	var zbuf bytes.Buffer
	zw := gzip.NewWriter(&zbuf)
	_, _ = zw.Write([]byte(csv))
	_ = zw.Close()
	zipped := zbuf.Bytes()

	t.Run("blob: Content-Encoding is kept, listed and answered; identity reads return the stored bytes", func(t *testing.T) {
		c, ctr := env.NewContainer(t, nil)
		_, err := c.UploadBuffer(ctx, ctr, "a.csv", zipped, &azblob.UploadBufferOptions{HTTPHeaders: &blob.HTTPHeaders{
			BlobContentEncoding: to.Ptr("gzip"), BlobContentType: to.Ptr("text/csv")}})
		if err != nil {
			t.Fatal(err)
		}
		bc := c.ServiceClient().NewContainerClient(ctr).NewBlobClient("a.csv")
		p, err := bc.GetProperties(ctx, nil)
		if err != nil || p.ContentEncoding == nil || *p.ContentEncoding != "gzip" || p.ContentLength == nil || *p.ContentLength != int64(len(zipped)) {
			t.Fatalf("properties: encoding %v, length %v, %v", p.ContentEncoding, p.ContentLength, err)
		}
		pager := c.NewListBlobsFlatPager(ctr, nil)
		page, err := pager.NextPage(ctx)
		if err != nil || len(page.Segment.BlobItems) != 1 {
			t.Fatalf("list: %v", err)
		}
		if ce := page.Segment.BlobItems[0].Properties.ContentEncoding; ce == nil || *ce != "gzip" {
			t.Fatalf("listed Content-Encoding %v", ce)
		}
		// Asked for the stored bytes, every backend returns them with the
		// header: the blob service stores the encoding, it never applies it.
		ictx := policy.WithHTTPHeader(ctx, http.Header{"Accept-Encoding": {"identity"}})
		d, err := c.DownloadStream(ictx, ctr, "a.csv", nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(d.Body)
		d.Body.Close()
		if err != nil || !bytes.Equal(got, zipped) || d.ContentEncoding == nil || *d.ContentEncoding != "gzip" {
			t.Fatalf("identity download: %d bytes (stored %d), encoding %v, %v", len(got), len(zipped), d.ContentEncoding, err)
		}
		// Without the header, what arrives depends on the client's
		// transport, not on the service: net/http's default transport asks
		// for gzip itself and hands back the inflated bytes without the
		// header; a transport that does not (the fake's) hands back the
		// stored bytes with it. Either way it is one of the two.
		d, err = c.DownloadStream(ctx, ctr, "a.csv", nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err = io.ReadAll(d.Body)
		d.Body.Close()
		inflated := string(got) == csv && d.ContentEncoding == nil
		stored := bytes.Equal(got, zipped) && d.ContentEncoding != nil && *d.ContentEncoding == "gzip"
		if err != nil || !(inflated || stored) {
			t.Fatalf("default download: %d bytes, encoding %v, %v", len(got), d.ContentEncoding, err)
		}
		t.Logf("default download: inflated by the transport: %v", inflated)
		// Set Blob Properties without the encoding clears it, as it
		// clears every standard property left out.
		if _, err := bc.SetHTTPHeaders(ctx, blob.HTTPHeaders{BlobContentType: to.Ptr("text/csv")}, nil); err != nil {
			t.Fatal(err)
		}
		if p, err := bc.GetProperties(ctx, nil); err != nil || p.ContentEncoding != nil {
			t.Fatalf("after Set Blob Properties: %v, %v", p.ContentEncoding, err)
		}
	})

	t.Run("LargeEntity.Compress: gzip blob, exact size recorded, plain and compressed read alike", func(t *testing.T) {
		client := env.NewTable(t, &reqcount.Counter{})
		c, ctr := env.NewContainer(t, nil)
		plain, err := patterns.NewLargeEntity[Profile](tableOf(table.New[Profile](client, nil)), c, ctr, []string{"Bio"}, 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		zl, _ := patterns.NewLargeEntity[Profile](tableOf(table.New[Profile](client, nil)), c, ctr, []string{"Bio"}, 0, &patterns.LargeEntityOptions{Compress: true})
		if err := plain.Put(ctx, &Profile{Meta: table.Meta{PartitionKey: "p", RowKey: "plain"}, Bio: csv}, nil); err != nil {
			t.Fatal(err)
		}
		if err := zl.Put(ctx, &Profile{Meta: table.Meta{PartitionKey: "p", RowKey: "zipped"}, Bio: csv}, nil); err != nil {
			t.Fatal(err)
		}
		raw, _ := table.New[table.Entity](client, nil)
		e, err := raw.Get(ctx, "p", "zipped", nil)
		if err != nil {
			t.Fatal(err)
		}
		nv, _ := e.Get("BioBlob")
		sv, _ := e.Get("BioSize")
		name, _ := nv.AsString()
		if n, ok := sv.AsInt64(); !ok || n != int64(len(csv)) {
			t.Fatalf("BioSize %v %v", n, ok)
		}
		p, err := c.ServiceClient().NewContainerClient(ctr).NewBlobClient(name).GetProperties(ctx, nil)
		if err != nil || p.ContentEncoding == nil || *p.ContentEncoding != "gzip" || *p.ContentLength*10 > int64(len(csv)) {
			t.Fatalf("blob: encoding %v, %v bytes, %v", p.ContentEncoding, p.ContentLength, err)
		}
		for _, l := range []*patterns.LargeEntity[Profile]{plain, zl} {
			for _, rk := range []string{"plain", "zipped"} {
				v, err := l.Get(ctx, "p", rk, nil)
				if err != nil || v.Bio != csv {
					t.Fatalf("Get %s: %d bytes, %v", rk, len(v.Bio), err)
				}
			}
		}
	})

	t.Run("BlobLog.Compress: gzip blobs marked for standard tools, read back with plain ones", func(t *testing.T) {
		c, ctr := env.NewContainer(t, nil)
		at := time.Date(2026, 11, 23, 14, 0, 0, 0, time.UTC)
		for i, zip := range []bool{false, true} {
			l, err := patterns.NewBlobLog(c, ctr, "app", &patterns.BlobLogOptions{Writer: fmt.Sprintf("w%d", i), Compress: zip})
			if err != nil {
				t.Fatal(err)
			}
			for j := range 50 {
				_ = l.AppendAt(ctx, at.Add(time.Duration(2*j+i)*time.Second), fmt.Sprintf("GET /api/orders/%d 200 w%d", j, i), nil)
			}
			if err := l.Close(ctx, nil); err != nil {
				t.Fatal(err)
			}
		}
		p, err := c.ServiceClient().NewContainerClient(ctr).NewBlobClient("app/2026/11/23/1400/w1-000001.log").GetProperties(ctx, nil)
		if err != nil || p.ContentEncoding == nil || *p.ContentEncoding != "gzip" {
			t.Fatalf("compressed blob: %v, %v", p.ContentEncoding, err)
		}
		reader, err := patterns.NewBlobLog(c, ctr, "app", nil)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for e, err := range reader.Read(ctx, at, at.Add(time.Hour), nil) {
			if err != nil {
				t.Fatal(err)
			}
			if want := fmt.Sprintf("GET /api/orders/%d 200 w%d", n/2, n%2); e.Text != want {
				t.Fatalf("entry %d: %q, want %q", n, e.Text, want)
			}
			n++
		}
		if n != 100 {
			t.Fatalf("read %d entries", n)
		}
	})

	t.Run("gzip-tagged property: stored compressed, read inflated", func(t *testing.T) {
		client := env.NewTable(t, &reqcount.Counter{})
		tbl, err := table.New[Compressed](client, nil)
		if err != nil {
			t.Fatal(err)
		}
		// 150 KB would not fit a binary property (64 KiB) uncompressed.
		if err := tbl.Upsert(ctx, &Compressed{Meta: table.Meta{PartitionKey: "p", RowKey: "r"}, Doc: []byte(csv)}, nil); err != nil {
			t.Fatal(err)
		}
		e, err := tbl.Entities().Get(ctx, "p", "r", nil)
		if err != nil {
			t.Fatal(err)
		}
		dv, _ := e.Get("Doc")
		if b, ok := dv.AsBinary(); !ok || len(b) > table.MaxBinaryBytes || b[0] != 0x1f || b[1] != 0x8b {
			t.Fatalf("stored Doc: %d bytes", len(b))
		}
		v, err := tbl.Get(ctx, "p", "r", nil)
		if err != nil || string(v.Doc) != csv {
			t.Fatalf("Get: %d bytes, %v", len(v.Doc), err)
		}
	})
}
