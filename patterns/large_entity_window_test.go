package patterns

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/tablekit/tablekit/consistency/blobstore"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/table"
)

type photoRow struct {
	table.Meta
	Name  string
	Photo []byte
}

// clock is a stopped clock the test moves, shared by the fake blob
// service (Last-Modified) and the LargeEntity (putWindow, blob ages).
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// slowUploads moves the clock forward during every upload: a writer
// stalled between its blobs and its entity.
type slowUploads struct {
	blobstore.Client
	c     *clock
	stall time.Duration
}

func (s *slowUploads) UploadBuffer(ctx context.Context, c, n string, b []byte, o *azblob.UploadBufferOptions) (azblob.UploadBufferResponse, error) {
	resp, err := s.Client.UploadBuffer(ctx, c, n, b, o)
	s.c.add(s.stall)
	return resp, err
}

// TestLargeEntityPutWindow: a write that stalls past putWindow between its
// upload and its entity write does not write the entity, so a Sweep with
// MinSweepGrace that found its blob unnamed cannot have broken it; a write
// within the window keeps its blob from a Sweep with MinSweepGrace.
func TestLargeEntityPutWindow(t *testing.T) {
	ctx := t.Context()
	c := &clock{t: time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)}
	tables := fake.NewTableService(nil)
	client := tables.NewClient("photos", nil)
	if _, err := client.CreateTable(ctx, nil); err != nil {
		t.Fatal(err)
	}
	blobs := fake.NewBlobService(&fake.BlobServiceOptions{Now: c.now})
	bc := blobs.NewClient(nil)
	if _, err := bc.CreateContainer(ctx, "photos", nil); err != nil {
		t.Fatal(err)
	}
	newLE := func(b blobstore.Client) *LargeEntity[photoRow] {
		le, err := NewLargeEntity[photoRow](tableOf(table.New[photoRow](client, nil)), b, "photos", []string{"Photo"}, 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		le.now = c.now
		return le
	}
	le := newLE(bc)
	photo := func(b byte) []byte { return bytes.Repeat([]byte{b}, 40_000) }
	if err := le.Put(ctx, &photoRow{Meta: table.Meta{PartitionKey: "p", RowKey: "r"}, Name: "v1", Photo: photo(1)}, nil); err != nil {
		t.Fatal(err)
	}

	// Within the window: the write takes putWindow minus a second.
	slow := newLE(&slowUploads{Client: bc, c: c, stall: putWindow - time.Second})
	if err := slow.Put(ctx, &photoRow{Meta: table.Meta{PartitionKey: "p", RowKey: "r"}, Name: "v2", Photo: photo(2)}, nil); err != nil {
		t.Fatalf("a write inside putWindow: %v", err)
	}
	// Past the window: nothing is written, and the blob it left is an
	// orphan that Sweep may take once it is MinSweepGrace old.
	stalled := newLE(&slowUploads{Client: bc, c: c, stall: putWindow + time.Second})
	err := stalled.Put(ctx, &photoRow{Meta: table.Meta{PartitionKey: "p", RowKey: "r"}, Name: "v3", Photo: photo(3)}, nil)
	if !errors.Is(err, ErrPutWindow) {
		t.Fatalf("a write stalled past putWindow: %v, want ErrPutWindow", err)
	}
	got, err := le.Get(ctx, "p", "r", nil)
	if err != nil || got.Name != "v2" || !bytes.Equal(got.Photo, photo(2)) {
		t.Fatalf("after the stalled write: %v %+v, want v2", err, got)
	}
	// A Sweep with MinSweepGrace now: v1's blob is old enough, v2's blob
	// is named, the stalled write's blob is too young.
	if n, err := le.Sweep(ctx, MinSweepGrace, nil); err != nil || n != 0 {
		t.Fatalf("Sweep: %d %v, want 0 (v1's blob is %v old)", n, err, 2*putWindow)
	}
	c.add(MinSweepGrace)
	if n, err := le.Sweep(ctx, MinSweepGrace, nil); err != nil || n != 2 {
		t.Fatalf("Sweep: %d %v, want v1's and the stalled write's blobs", n, err)
	}
	if got, err := le.Get(ctx, "p", "r", nil); err != nil || got.Name != "v2" || !bytes.Equal(got.Photo, photo(2)) {
		t.Fatalf("after Sweep: %v", err)
	}
	if names := blobs.Names("photos"); len(names) != 1 {
		t.Fatalf("blobs left: %q, want v2's only", names)
	}
}
