package fake

import (
	"bytes"
	"github.com/tablekit/tablekit/internal/testenv"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
)

// TestUploadBufferOverThePutBlobLimit runs UploadBuffer's block path, which
// the SDK takes only above 256 MiB (blockblob.MaxUploadBlobBytes): Put
// Block in 4 MiB blocks, then Put Block List. It holds about 2 GB (RSS) at its
// peak, so it runs only with TABLEKIT_LONG=1; UploadStream's cases in
// conformance send the same two operations in every run.
func TestUploadBufferOverThePutBlobLimit(t *testing.T) {
	testenv.Long(t, "an upload over 256 MiB, about 2 GB of memory")
	s := NewBlobService(nil)
	c := s.NewClient(nil)
	if _, err := c.CreateContainer(t.Context(), "big", nil); err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte{0, 1, 2, 3, 4, 5, 6, 7}, (blockblob.MaxUploadBlobBytes+8)/8)
	if _, err := c.UploadBuffer(t.Context(), "big", "b", data, &azblob.UploadBufferOptions{Concurrency: 4}); err != nil {
		t.Fatal(err)
	}
	blocks := (len(data) + 4<<20 - 1) / (4 << 20)
	if s.Count(OpPutBlob) != 0 || s.Count(OpPutBlock) != blocks || s.Count(OpPutBlockList) != 1 {
		t.Fatalf("requests: %v, want %d Put Block and 1 Put Block List", s.Counts(), blocks)
	}
	got, ok := s.Blob("big", "b")
	if !ok || !bytes.Equal(got, data) {
		t.Fatalf("the blob has %d bytes, want %d equal ones", len(got), len(data))
	}
}
