package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/tablekit/tablekit/consistency/blobstore"
	"github.com/tablekit/tablekit/internal/reqcount"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/table"
)

// Profile is the guide's employee with a photo.
type Profile struct {
	table.Meta
	Name  string
	Photo []byte
	Bio   string
}

// dieOnUpsert fails the first UpsertEntity before it is sent: a process
// that died between writing the blob and writing the entity.
type dieOnUpsert struct {
	table.Client
	mu   sync.Mutex
	done bool
}

func (d *dieOnUpsert) UpsertEntity(ctx context.Context, e []byte, o *aztables.UpsertEntityOptions) (aztables.UpsertEntityResponse, error) {
	d.mu.Lock()
	first := !d.done
	d.done = true
	d.mu.Unlock()
	if first {
		return aztables.UpsertEntityResponse{}, errInjected
	}
	return d.Client.UpsertEntity(ctx, e, o)
}

// failUploads fails blob uploads while on.
type failUploads struct {
	blobstore.Client
	on bool
}

func (f *failUploads) UploadBuffer(ctx context.Context, c, n string, b []byte, o *azblob.UploadBufferOptions) (azblob.UploadBufferResponse, error) {
	if f.on {
		return azblob.UploadBufferResponse{}, errInjected
	}
	return f.Client.UploadBuffer(ctx, c, n, b, o)
}

func blobCount(t *testing.T, bc *azblob.Client, container string) int {
	t.Helper()
	n := 0
	pager := bc.NewListBlobsFlatPager(container, nil)
	for pager.More() {
		page, err := pager.NextPage(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		n += len(page.Segment.BlobItems)
	}
	return n
}

// RunBlobPatterns runs the large entity and the blob log.
func RunBlobPatterns(t *testing.T, env Env) {
	ctx := t.Context()

	t.Run("large entity: blob first, entity second, sweep after a crash", func(t *testing.T) {
		client := env.NewTable(t, &reqcount.Counter{})
		bc, container := env.NewContainer(t, nil)
		photo := bytes.Repeat([]byte{0xff, 0xd8, 0x00, 0x42}, 50000) // 200 KB
		le, err := patterns.NewLargeEntity[Profile](tableOf(table.New[Profile](client, nil)), bc, container, []string{"Photo", "Bio"}, 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		p := &Profile{Meta: table.Meta{PartitionKey: "Sales", RowKey: "000123"}, Name: "Don Hall", Photo: photo, Bio: "short"}
		if err := le.Put(ctx, p, nil); err != nil {
			t.Fatal(err)
		}
		got, err := le.Get(ctx, "Sales", "000123", nil)
		if err != nil || !bytes.Equal(got.Photo, photo) || got.Bio != "short" || got.Name != "Don Hall" {
			t.Fatalf("Get: %v", err)
		}
		lazy, z, err := le.GetLazy(ctx, "Sales", "000123", nil)
		if err != nil || len(lazy.Photo) != 0 || len(z.Fields()) != 1 {
			t.Fatalf("GetLazy: %v %v", z.Fields(), err)
		}
		if err := z.Load(ctx, "Photo", nil); err != nil || !bytes.Equal(lazy.Photo, photo) {
			t.Fatalf("Load: %v", err)
		}
		// A crash between the blob and the entity: the blob is orphaned,
		// the entity still names the old photo.
		crashing, _ := patterns.NewLargeEntity[Profile](tableOf(table.New[Profile](&dieOnUpsert{Client: client}, nil)), bc, container, []string{"Photo"}, 0, nil)
		p2 := *p
		p2.Photo = bytes.Repeat([]byte{1}, 100000)
		if err := crashing.Put(ctx, &p2, nil); err == nil {
			t.Fatal("the crash did not happen")
		}
		if got, _ := le.Get(ctx, "Sales", "000123", nil); !bytes.Equal(got.Photo, photo) {
			t.Fatal("the entity changed although its write failed")
		}
		if n := blobCount(t, bc, container); n != 2 {
			t.Fatalf("%d blobs, want the photo and the orphan", n)
		}
		if n, err := le.Sweep(ctx, 0, nil); err != nil || n != 1 {
			t.Fatalf("Sweep removed %d (%v), want the orphan", n, err)
		}
		if got, err := le.Get(ctx, "Sales", "000123", nil); err != nil || !bytes.Equal(got.Photo, photo) {
			t.Fatalf("after Sweep the photo must still load: %v", err)
		}
		// A blob whose upload fails is never named by an entity.
		fu := &failUploads{Client: bc, on: true}
		failing, _ := patterns.NewLargeEntity[Profile](tableOf(table.New[Profile](client, nil)), fu, container, []string{"Photo"}, 0, nil)
		if err := failing.Put(ctx, &p2, nil); err == nil {
			t.Fatal("upload failure not reported")
		}
		// Shrinking below the threshold drops the reference.
		p3 := *p
		p3.Photo = []byte("tiny")
		if err := le.Put(ctx, &p3, nil); err != nil {
			t.Fatal(err)
		}
		if got, _ := le.Get(ctx, "Sales", "000123", nil); string(got.Photo) != "tiny" {
			t.Fatalf("inline photo = %q", got.Photo)
		}
		if n, _ := le.Sweep(ctx, 0, nil); n != 1 {
			t.Fatalf("Sweep after shrinking removed %d, want 1", n)
		}
		if err := le.Put(ctx, p, nil); err != nil {
			t.Fatal(err)
		}
		if err := le.Delete(ctx, "Sales", "000123", nil); err != nil {
			t.Fatal(err)
		}
		if n := blobCount(t, bc, container); n != 0 {
			t.Fatalf("%d blobs left after Delete", n)
		}
		if _, err := patterns.NewLargeEntity[Profile](tableOf(table.New[Profile](client, nil)), bc, container, []string{"Name2"}, 0, nil); !errors.Is(err, patterns.ErrBadDefinition) {
			t.Fatalf("unknown field: %v", err)
		}
	})

	t.Run("log data in blobs: flush on size and close, read a time range", func(t *testing.T) {
		bc, container := env.NewContainer(t, nil)
		base := time.Date(2014, 7, 31, 17, 50, 0, 0, time.UTC)
		log, err := patterns.NewBlobLog(bc, container, "applog", &patterns.BlobLogOptions{Writer: "web1", MaxBytes: 4096, MaxAge: time.Hour, Now: func() time.Time { return base }})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 200; i++ {
			at := base.Add(time.Duration(i) * 6 * time.Second) // 17:50 to 18:09:54
			if err := log.AppendAt(ctx, at, fmt.Sprintf("request %03d <ok> & done", i), nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := log.Close(ctx, nil); err != nil {
			t.Fatal(err)
		}
		var names []string
		pager := bc.NewListBlobsFlatPager(container, &azblob.ListBlobsFlatOptions{Include: azblob.ListBlobsInclude{Metadata: true}})
		for pager.More() {
			page, err := pager.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, it := range page.Segment.BlobItems {
				names = append(names, *it.Name)
				if len(it.Metadata) < 2 {
					t.Fatalf("blob %s lacks first/last metadata: %v", *it.Name, it.Metadata)
				}
			}
		}
		if len(names) < 3 || !strings.HasPrefix(names[0], "applog/2014/07/31/1700/web1-") || !strings.HasPrefix(names[len(names)-1], "applog/2014/07/31/1800/web1-") {
			t.Fatalf("blob names: %q", names)
		}
		var got []string
		for e, err := range log.Read(ctx, base.Add(9*time.Minute), base.Add(11*time.Minute), nil) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, e.Text)
		}
		if len(got) != 20 || got[0] != "request 090 <ok> & done" || got[19] != "request 109 <ok> & done" {
			t.Fatalf("17:59 to 18:01 read %d entries: %q", len(got), got)
		}
		// A failed flush keeps its entries; the next flush writes them.
		fu := &failUploads{Client: bc, on: true}
		l2, _ := patterns.NewBlobLog(fu, container, "applog2", nil)
		_ = l2.AppendAt(ctx, base, "kept", nil)
		if err := l2.Flush(ctx, nil); err == nil {
			t.Fatal("a failing flush reported success")
		}
		fu.on = false
		if err := l2.Close(ctx, nil); err != nil {
			t.Fatal(err)
		}
		// A reader of its own, as a process that only reads builds one.
		reader, err := patterns.NewBlobLog(bc, container, "applog2", nil)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for e, err := range reader.Read(ctx, base.Add(-time.Hour), base.Add(time.Hour), nil) {
			if err != nil || e.Text != "kept" {
				t.Fatalf("%v %v", e, err)
			}
			n++
		}
		if n != 1 {
			t.Fatalf("the entry of the failed flush: %d found", n)
		}
		if _, err := patterns.NewBlobLog(bc, "Bad_Container", "x", nil); !errors.Is(err, patterns.ErrBadDefinition) {
			t.Fatalf("bad container: %v", err)
		}
	})
}

// RunLargeBySize checks that fields under the threshold still move to blobs
// when together they would pass the entity's limits.
func RunLargeBySize(t *testing.T, env Env) {
	type Doc struct {
		table.Meta
		A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P, Q []byte
	}
	client := env.NewTable(t, &reqcount.Counter{})
	bc, container := env.NewContainer(t, nil)
	fields := []string{"A", "B", "C", "D", "E", "F", "G", "H", "I", "J", "K", "L", "M", "N", "O", "P", "Q"}
	le, err := patterns.NewLargeEntity[Doc](tableOf(table.New[Doc](client, nil)), bc, container, fields, 64*1024, nil)
	if err != nil {
		t.Fatal(err)
	}
	chunk := bytes.Repeat([]byte("x"), 63*1024) // each under the threshold
	d := &Doc{Meta: table.Meta{PartitionKey: "p", RowKey: "r"}, A: chunk, B: chunk, C: chunk, D: chunk, E: chunk, F: chunk, G: chunk, H: chunk, I: chunk, J: chunk, K: chunk, L: chunk, M: chunk, N: chunk, O: chunk, P: chunk, Q: chunk}
	if err := le.Put(t.Context(), d, nil); err != nil {
		t.Fatalf("17 x 63 KiB (1.07 MiB): %v", err)
	}
	got, err := le.Get(t.Context(), "p", "r", nil)
	if err != nil || !bytes.Equal(got.Q, chunk) || !bytes.Equal(got.A, chunk) {
		t.Fatalf("round trip: %v", err)
	}
	if n := blobCount(t, bc, container); n == 0 {
		t.Fatal("nothing moved to a blob")
	}
}
