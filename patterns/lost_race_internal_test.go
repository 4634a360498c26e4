package patterns

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/table"
)

// interleaved is a blob client that runs before once, ahead of the next
// upload: another writer's move forced between a pattern's read and its
// guarded write.
type interleaved struct {
	*azblob.Client
	before func(ctx context.Context)
}

func (c *interleaved) UploadBuffer(ctx context.Context, container, name string, b []byte, o *azblob.UploadBufferOptions) (azblob.UploadBufferResponse, error) {
	if f := c.before; f != nil {
		c.before = nil
		f(ctx)
	}
	return c.Client.UploadBuffer(ctx, container, name, b, o)
}

// assertLostRace: err is a lost race by the one test every caller uses,
// errors.Is(err, table.ErrLostRace), with the service's answer of status
// in the chain, on one line.
func assertLostRace(t *testing.T, what string, err error, status int) {
	t.Helper()
	var re *azcore.ResponseError
	switch {
	case !errors.Is(err, table.ErrLostRace):
		t.Errorf("%s: %v; want errors.Is(err, table.ErrLostRace)", what, err)
	case !table.Is(err, table.ErrLostRace):
		t.Errorf("%s: %v; table.Is(err, table.ErrLostRace) is false", what, err)
	case !errors.As(err, &re) || re.StatusCode != status:
		t.Errorf("%s: %v; want the service's %d in the chain", what, err, status)
	case strings.ContainsAny(err.Error(), "\r\n"):
		t.Errorf("%s: Error() spans lines: %q", what, err)
	}
}

// TestBlobIndexLostRaceIsErrLostRace: another writer changes the list
// blob (412) or creates it (409) between BlobIndex's read and its guarded
// write; with one attempt allowed the error is table.ErrLostRace with the
// blob service's answer in the chain.
func TestBlobIndexLostRaceIsErrLostRace(t *testing.T) {
	ctx := t.Context()
	bc := fake.NewBlobService(nil).NewClient(nil)
	if _, err := bc.CreateContainer(ctx, "index", nil); err != nil {
		t.Fatal(err)
	}
	newIndex := func(before func(context.Context)) *blobIndex {
		b, err := newBlobIndex(&interleaved{Client: bc, before: before}, "index", "byname/")
		if err != nil {
			t.Fatal(err)
		}
		b.retry = table.RetryOptions{MaxAttempts: 1}
		return b
	}
	other := newIndex(nil)
	// 409: the blob does not exist at the read; the other writer creates it.
	err := newIndex(func(ctx context.Context) {
		if err := other.Add(ctx, opModelProcess, "smith", "1"); err != nil {
			t.Fatal(err)
		}
	}).Add(ctx, opModelProcess, "smith", "2")
	assertLostRace(t, "a blob list's Add racing a create", err, http.StatusConflict)
	// 412: the blob exists at the read; the other writer changes it.
	err = newIndex(func(ctx context.Context) {
		if err := other.Add(ctx, opModelProcess, "smith", "3"); err != nil {
			t.Fatal(err)
		}
	}).Remove(ctx, opModelProcess, "smith", "1")
	assertLostRace(t, "a blob list's Remove racing an add", err, http.StatusPreconditionFailed)
}

type photo struct {
	table.Meta
	Name string
	Data []byte
}

// TestLargeEntityModifyLostRaceIsErrLostRace: another writer updates the
// entity (412) or deletes it (404, with Create) between Modify's read and
// its write; with one attempt allowed the error is table.ErrLostRace with
// the table service's answer in the chain.
func TestLargeEntityModifyLostRaceIsErrLostRace(t *testing.T) {
	ctx := t.Context()
	client := fake.NewTableService(nil).NewClient("Photos", nil)
	if _, err := client.CreateTable(ctx, nil); err != nil {
		t.Fatal(err)
	}
	bc := fake.NewBlobService(nil).NewClient(nil)
	if _, err := bc.CreateContainer(ctx, "photos", nil); err != nil {
		t.Fatal(err)
	}
	l, err := NewLargeEntity[photo](tableOf(table.New[photo](client, nil)), bc, "photos", []string{"Data"}, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	put := func() {
		if err := l.Put(ctx, &photo{Meta: table.Meta{PartitionKey: "p", RowKey: "r"}, Data: make([]byte, 100_000)}, nil); err != nil {
			t.Fatal(err)
		}
	}
	put()
	_, err = l.Modify(ctx, "p", "r", func(v *photo) error {
		// The other writer: a whole new version between the read and the write.
		put()
		v.Name = "mine"
		return nil
	}, &table.ModifyOptions{MaxAttempts: 1})
	var ce *table.ConflictError
	if !errors.As(err, &ce) {
		t.Errorf("Modify racing an update: %v; want a *table.ConflictError", err)
	}
	assertLostRace(t, "LargeEntity.Modify racing an update", err, http.StatusPreconditionFailed)

	_, err = l.Modify(ctx, "p", "r", func(v *photo) error {
		if err := l.Delete(ctx, "p", "r", nil); err != nil {
			t.Fatal(err)
		}
		v.Name = "mine"
		return nil
	}, &table.ModifyOptions{MaxAttempts: 1, Create: true})
	assertLostRace(t, "LargeEntity.Modify racing a delete", err, http.StatusNotFound)
}
