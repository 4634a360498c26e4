package blobstore_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit/consistency/blobstore"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/table"
)

// TestStoreRoundTripAndErrors: Put, Get and Delete reach the blob, and a
// missing blob or container is the service's *azcore.ResponseError in the
// chain, which the classifiers read.
func TestStoreRoundTripAndErrors(t *testing.T) {
	svc := fake.NewBlobService(nil)
	bc := svc.NewClient(nil)
	if _, err := bc.CreateContainer(t.Context(), "payloads", nil); err != nil {
		t.Fatal(err)
	}
	s := blobstore.New(bc)
	ctx := t.Context()
	data := bytes.Repeat([]byte("x"), 100_000)
	if err := s.Put(ctx, "payloads", "a/b", data); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, "payloads", "a/b")
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("Get: %d bytes, %v; want the %d put", len(got), err, len(data))
	}
	if err := s.Delete(ctx, "payloads", "a/b"); err != nil {
		t.Fatal(err)
	}
	_, err = s.Get(ctx, "payloads", "a/b")
	var re *azcore.ResponseError
	if !errors.As(err, &re) || re.ErrorCode != "BlobNotFound" || !table.Is(err, table.ErrNotFound) {
		t.Fatalf("Get of a deleted blob: %v; want the service's BlobNotFound", err)
	}
	if err := s.Put(ctx, "missing", "a", data); !table.Is(err, table.ErrContainerNotFound) {
		t.Fatalf("Put into a missing container: %v; want ContainerNotFound", err)
	}
}
