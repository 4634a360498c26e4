package integration

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/tablekit/tablekit/consistency/blobstore"
	"github.com/tablekit/tablekit/internal/reqcount"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/table"
)

// pause stops one goroutine at a chosen step until the test lets it go:
// the forced interleavings below run a competing operation while the
// first one is held between two of its requests.
type pause struct {
	mu      sync.Mutex
	armed   bool
	reached chan struct{}
	release chan struct{}
}

// arm makes the next hit stop.
func (p *pause) arm() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.armed, p.reached, p.release = true, make(chan struct{}), make(chan struct{})
}

// hit stops the caller if armed (once), until resume.
func (p *pause) hit() {
	p.mu.Lock()
	if !p.armed {
		p.mu.Unlock()
		return
	}
	p.armed = false
	reached, release := p.reached, p.release
	p.mu.Unlock()
	close(reached)
	<-release
}

// wait blocks until the armed step is reached.
func (p *pause) wait(t *testing.T) {
	t.Helper()
	select {
	case <-p.reached:
	case <-time.After(30 * time.Second):
		t.Fatal("the paused operation never reached its step")
	}
}

func (p *pause) resume() { close(p.release) }

// pauseBeforeEntityWrite holds a LargeEntity write after its blobs are
// uploaded and before its entity is written.
type pauseBeforeEntityWrite struct {
	table.Client
	p *pause
}

func (c *pauseBeforeEntityWrite) UpsertEntity(ctx context.Context, e []byte, o *aztables.UpsertEntityOptions) (aztables.UpsertEntityResponse, error) {
	c.p.hit()
	return c.Client.UpsertEntity(ctx, e, o)
}

func (c *pauseBeforeEntityWrite) UpdateEntity(ctx context.Context, e []byte, o *aztables.UpdateEntityOptions) (aztables.UpdateEntityResponse, error) {
	c.p.hit()
	return c.Client.UpdateEntity(ctx, e, o)
}

func (c *pauseBeforeEntityWrite) AddEntity(ctx context.Context, e []byte, o *aztables.AddEntityOptions) (aztables.AddEntityResponse, error) {
	c.p.hit()
	return c.Client.AddEntity(ctx, e, o)
}

// pauseBeforeBlobDelete holds a LargeEntity.Delete after its entity is
// gone and before its blobs are deleted.
type pauseBeforeBlobDelete struct {
	blobstore.Client
	p *pause
}

func (b *pauseBeforeBlobDelete) DeleteBlob(ctx context.Context, c, n string, o *azblob.DeleteBlobOptions) (azblob.DeleteBlobResponse, error) {
	b.p.hit()
	return b.Client.DeleteBlob(ctx, c, n, o)
}

// agedListing lists the named blobs as modified an hour earlier than they
// were: they stand for blobs written long ago, while every blob written
// during the test keeps its true age.
type agedListing struct {
	blobstore.Client
	old map[string]bool
}

func (a *agedListing) NewListBlobsFlatPager(container string, o *azblob.ListBlobsFlatOptions) *runtime.Pager[azblob.ListBlobsFlatResponse] {
	inner := a.Client.NewListBlobsFlatPager(container, o)
	return runtime.NewPager(runtime.PagingHandler[azblob.ListBlobsFlatResponse]{
		More: func(azblob.ListBlobsFlatResponse) bool { return inner.More() },
		Fetcher: func(ctx context.Context, _ *azblob.ListBlobsFlatResponse) (azblob.ListBlobsFlatResponse, error) {
			page, err := inner.NextPage(ctx)
			if err != nil || page.Segment == nil {
				return page, err
			}
			for _, it := range page.Segment.BlobItems {
				if it.Name != nil && a.old[*it.Name] && it.Properties != nil && it.Properties.LastModified != nil {
					aged := it.Properties.LastModified.Add(-time.Hour)
					it.Properties.LastModified = &aged
				}
			}
			return page, nil
		},
	})
}

func blobNames(t *testing.T, bc blobstore.Client, container string) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	pager := bc.NewListBlobsFlatPager(container, nil)
	for pager.More() {
		page, err := pager.NextPage(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Segment.BlobItems {
			names[*it.Name] = true
		}
	}
	return names
}

// RunLargeEntityRaces forces, one at a time, the interleavings of
// LargeEntity's two-step writes with a Sweep, a Delete or another writer,
// holding one operation between its requests while the other runs. None
// may lose an acknowledged write, and a blob that is gone while its entity
// names it is corruption, never "not found".
func RunLargeEntityRaces(t *testing.T, env Env) {
	ctx := t.Context()
	const grace = 10 * time.Minute                                                      // what Sweep is given: far longer than a Put takes
	photo := func(b byte) []byte { return bytes.Repeat([]byte{b, 0xd8, 0x42}, 20_000) } // 60 KB, offloaded
	key := func() table.Meta { return table.Meta{PartitionKey: "Sales", RowKey: "000123"} }

	t.Run("put racing sweep keeps the new write", func(t *testing.T) {
		client := env.NewTable(t, &reqcount.Counter{})
		bc, container := env.NewContainer(t, nil)
		le, _ := patterns.NewLargeEntity[Profile](tableOf(table.New[Profile](client, nil)), bc, container, []string{"Photo"}, 0, nil)
		// Photo X, then photo Y: X's blob is now unreferenced and, for
		// this test, an hour old.
		if err := le.Put(ctx, &Profile{Meta: key(), Name: "x", Photo: photo('X')}, nil); err != nil {
			t.Fatal(err)
		}
		if err := le.Put(ctx, &Profile{Meta: key(), Name: "y", Photo: photo('Y')}, nil); err != nil {
			t.Fatal(err)
		}
		aged := &agedListing{Client: bc, old: blobNames(t, bc, container)}
		sweeper, _ := patterns.NewLargeEntity[Profile](tableOf(table.New[Profile](client, nil)), aged, container, []string{"Photo"}, 0, nil)
		// Put X again, held after its blob and before its entity, while
		// Sweep runs.
		p := &pause{}
		writer, _ := patterns.NewLargeEntity[Profile](tableOf(table.New[Profile](&pauseBeforeEntityWrite{Client: client, p: p}, nil)), bc, container, []string{"Photo"}, 0, nil)
		p.arm()
		done := make(chan error, 1)
		go func() { done <- writer.Put(ctx, &Profile{Meta: key(), Name: "x again", Photo: photo('X')}, nil) }()
		p.wait(t)
		if _, err := sweeper.Sweep(ctx, grace, nil); err != nil {
			t.Fatal(err)
		}
		p.resume()
		if err := <-done; err != nil {
			t.Fatalf("Put: %v", err)
		}
		got, err := le.Get(ctx, "Sales", "000123", nil)
		if err != nil || got.Name != "x again" || !bytes.Equal(got.Photo, photo('X')) {
			t.Fatalf("the acknowledged Put was lost: %v (name %q)", err, nameOf(got))
		}
	})

	t.Run("delete racing a put of the same content keeps the new write", func(t *testing.T) {
		client := env.NewTable(t, &reqcount.Counter{})
		bc, container := env.NewContainer(t, nil)
		le, _ := patterns.NewLargeEntity[Profile](tableOf(table.New[Profile](client, nil)), bc, container, []string{"Photo"}, 0, nil)
		if err := le.Put(ctx, &Profile{Meta: key(), Name: "old", Photo: photo('X')}, nil); err != nil {
			t.Fatal(err)
		}
		// Delete, held after its entity is gone and before its blobs go,
		// while the same photo is put again.
		p := &pause{}
		deleter, _ := patterns.NewLargeEntity[Profile](tableOf(table.New[Profile](client, nil)), &pauseBeforeBlobDelete{Client: bc, p: p}, container, []string{"Photo"}, 0, nil)
		p.arm()
		done := make(chan error, 1)
		go func() { done <- deleter.Delete(ctx, "Sales", "000123", nil) }()
		p.wait(t)
		if err := le.Put(ctx, &Profile{Meta: key(), Name: "new", Photo: photo('X')}, nil); err != nil {
			t.Fatal(err)
		}
		p.resume()
		if err := <-done; err != nil {
			t.Fatalf("Delete: %v", err)
		}
		got, err := le.Get(ctx, "Sales", "000123", nil)
		if err != nil || got.Name != "new" || !bytes.Equal(got.Photo, photo('X')) {
			t.Fatalf("the Put acknowledged after the Delete was lost: %v (name %q)", err, nameOf(got))
		}
	})

	t.Run("two writers: Update refuses a stale ETag, Modify keeps both changes", func(t *testing.T) {
		client := env.NewTable(t, &reqcount.Counter{})
		bc, container := env.NewContainer(t, nil)
		le, _ := patterns.NewLargeEntity[Profile](tableOf(table.New[Profile](client, nil)), bc, container, []string{"Photo"}, 0, nil)
		if err := le.Put(ctx, &Profile{Meta: key(), Name: "start", Photo: photo('S')}, nil); err != nil {
			t.Fatal(err)
		}
		a, err := le.Get(ctx, "Sales", "000123", nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := le.Get(ctx, "Sales", "000123", nil)
		a.Name, a.Photo = "a", photo('A')
		b.Name, b.Photo = "b", photo('B')
		if err := le.Update(ctx, a, nil); err != nil {
			t.Fatal(err)
		}
		if err := le.Update(ctx, b, nil); !table.Is(err, table.ErrPreconditionFailed) {
			t.Fatalf("Update over a stale ETag: %v, want a precondition failure", err)
		}
		noTag := &Profile{Meta: key(), Name: "x"}
		if err := le.Update(ctx, noTag, nil); !errors.Is(err, table.ErrNoETag) {
			t.Fatalf("Update without an ETag: %v, want ErrNoETag", err)
		}
		// Modify: writer 1 holds inside its change while writer 2 modifies
		// the same entity; writer 1's write then loses the race, and goes
		// round on the new version.
		p := &pause{}
		p.arm()
		done := make(chan error, 1)
		go func() {
			_, err := le.Modify(ctx, "Sales", "000123", func(v *Profile) error {
				p.hit()
				v.Name += "+1"
				return nil
			}, nil)
			done <- err
		}()
		p.wait(t)
		if _, err := le.Modify(ctx, "Sales", "000123", func(v *Profile) error { v.Name += "+2"; v.Photo = photo('M'); return nil }, nil); err != nil {
			t.Fatal(err)
		}
		p.resume()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		got, err := le.Get(ctx, "Sales", "000123", nil)
		if err != nil || got.Name != "a+2+1" || !bytes.Equal(got.Photo, photo('M')) {
			t.Fatalf("after two Modify calls: %v, name %q; want a+2+1 with the second writer's photo", err, nameOf(got))
		}
		// Every write uploads its large fields to new blobs. A refused
		// write removes its own at once (B, the lost round's copy of A);
		// the superseded versions are Sweep's: S, A, and M as the second
		// writer stored it.
		if n, err := le.Sweep(ctx, 0, nil); err != nil || n != 3 {
			t.Fatalf("Sweep: %d, %v; want the 3 superseded photos", n, err)
		}
		if got, err := le.Get(ctx, "Sales", "000123", nil); err != nil || !bytes.Equal(got.Photo, photo('M')) {
			t.Fatalf("after Sweep: %v", err)
		}
	})

	t.Run("entities written by earlier versions still read, update and sweep", func(t *testing.T) {
		client := env.NewTable(t, &reqcount.Counter{})
		bc, container := env.NewContainer(t, nil)
		le, _ := patterns.NewLargeEntity[Profile](tableOf(table.New[Profile](client, nil)), bc, container, []string{"Photo"}, 0, nil)
		// The earlier format: a content-addressed blob "<tuple>/<field>/<sha[:32]>".
		old := photo('O')
		sum := sha256.Sum256(old)
		sha := hex.EncodeToString(sum[:])
		tuple, _ := keys.EncodeTuple("Sales", "000123")
		name := tuple + "/Photo/" + sha[:32]
		if _, err := bc.UploadBuffer(ctx, container, name, old, nil); err != nil {
			t.Fatal(err)
		}
		body, _ := json.Marshal(map[string]any{"PartitionKey": "Sales", "RowKey": "000123", "Name": "legacy", "Bio": "", "PhotoBlob": name, "PhotoSHA256": sha})
		if _, err := client.UpsertEntity(ctx, body, nil); err != nil {
			t.Fatal(err)
		}
		got, err := le.Get(ctx, "Sales", "000123", nil)
		if err != nil || got.Name != "legacy" || !bytes.Equal(got.Photo, old) {
			t.Fatalf("legacy Get: %v", err)
		}
		if n, err := le.Sweep(ctx, 0, nil); err != nil || n != 0 {
			t.Fatalf("Sweep took %d of a legacy entity's blobs (%v)", n, err)
		}
		got.Name = "updated"
		if err := le.Update(ctx, got, nil); err != nil {
			t.Fatal(err)
		}
		if n, err := le.Sweep(ctx, 0, nil); err != nil || n != 1 {
			t.Fatalf("Sweep after the update: %d (%v), want the legacy blob", n, err)
		}
		if got, err := le.Get(ctx, "Sales", "000123", nil); err != nil || got.Name != "updated" || !bytes.Equal(got.Photo, old) {
			t.Fatalf("after the update: %v", err)
		}
		// Modify with Create starts a missing entity.
		if _, err := le.Modify(ctx, "Sales", "000999", func(p *Profile) error { p.Name, p.Photo = "created", photo('C'); return nil }, &table.ModifyOptions{Create: true}); err != nil {
			t.Fatal(err)
		}
		if got, err := le.Get(ctx, "Sales", "000999", nil); err != nil || got.Name != "created" || !bytes.Equal(got.Photo, photo('C')) {
			t.Fatalf("created by Modify: %v", err)
		}
		if _, err := le.Modify(ctx, "Sales", "000998", func(*Profile) error { return nil }, nil); !table.Is(err, table.ErrNotFound) {
			t.Fatalf("Modify of a missing entity without Create: %v", err)
		}
	})

	t.Run("a type with Extra does not carry a version's blob references into the next", func(t *testing.T) {
		type ProfileX struct {
			table.Meta
			Name  string
			Photo []byte
			More  table.Extra
		}
		client := env.NewTable(t, &reqcount.Counter{})
		bc, container := env.NewContainer(t, nil)
		le, _ := patterns.NewLargeEntity[ProfileX](tableOf(table.New[ProfileX](client, nil)), bc, container, []string{"Photo"}, 0, nil)
		if err := le.Put(ctx, &ProfileX{Meta: key(), Name: "big", Photo: photo('X')}, nil); err != nil {
			t.Fatal(err)
		}
		v, err := le.Get(ctx, "Sales", "000123", nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(v.More) != 0 {
			t.Fatalf("the blob references reached the value: %v", v.More)
		}
		v.Photo = []byte("small")
		if err := le.Update(ctx, v, nil); err != nil {
			t.Fatal(err)
		}
		if got, err := le.Get(ctx, "Sales", "000123", nil); err != nil || string(got.Photo) != "small" {
			t.Fatalf("after shrinking the photo: %v %q", err, got.Photo)
		}
	})

	t.Run("a missing blob is corruption, not not-found", func(t *testing.T) {
		client := env.NewTable(t, &reqcount.Counter{})
		bc, container := env.NewContainer(t, nil)
		le, _ := patterns.NewLargeEntity[Profile](tableOf(table.New[Profile](client, nil)), bc, container, []string{"Photo"}, 0, nil)
		if err := le.Put(ctx, &Profile{Meta: key(), Name: "x", Photo: photo('X')}, nil); err != nil {
			t.Fatal(err)
		}
		for name := range blobNames(t, bc, container) {
			if _, err := bc.DeleteBlob(ctx, container, name, nil); err != nil {
				t.Fatal(err)
			}
		}
		_, err := le.Get(ctx, "Sales", "000123", nil)
		if err == nil || table.Is(err, table.ErrNotFound) {
			t.Fatalf("Get of an entity whose blob is gone: %v (Is ErrNotFound %v); the entity exists", err, table.Is(err, table.ErrNotFound))
		}
		if !errors.Is(err, patterns.ErrBlobMissing) {
			t.Fatalf("Get of an entity whose blob is gone: %v, want ErrBlobMissing", err)
		}
	})
}

func nameOf(p *Profile) string {
	if p == nil {
		return "<nil>"
	}
	return p.Name
}

// largeVersion matches the version at the end of a LargeEntity blob name,
// random by design: two runs name their blobs differently.
var largeVersion = regexp.MustCompile(`(lg/k[A-Za-z0-9_-]*/k[A-Za-z0-9_-]*/[A-Za-z0-9_]+/)[0-9a-f]{32}`)

// withoutVersions is s with every LargeEntity blob version replaced by a
// counter per entity and field, in order of first appearance in the sorted
// keys, so two runs that stored the same contents compare equal.
func withoutVersions(s state) state {
	out := state{}
	for k, v := range s {
		k = largeVersion.ReplaceAllString(k, "${1}<version>")
		v = largeVersion.ReplaceAllString(v, "${1}<version>")
		for i := 0; ; i++ {
			kk := k
			if i > 0 {
				kk = fmt.Sprintf("%s#%d", k, i)
			}
			if _, taken := out[kk]; !taken {
				out[kk] = v
				break
			}
		}
	}
	return out
}

// RunLargeEntityUnderFaults is the "large entity" case of RunUnderFaults
// with blob versions normalised: each write makes a new, randomly named
// blob, so the fault-free and the faulty run agree on contents, not names.
func RunLargeEntityUnderFaults(t *testing.T, env Env, svc func(t *testing.T, c *reqcount.Counter) *aztables.ServiceClient) {
	underFaults(t, env, svc, 25, func(r *faultRun) state {
		ctx := r.t.Context()
		client := r.table()
		bc, container := r.container()
		le, err := patterns.NewLargeEntity[Profile](tableOf(table.New[Profile](client, nil)), bc, container, []string{"Photo"}, 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		photo := func(i, size int) []byte {
			b := make([]byte, size)
			for j := range b {
				b[j] = byte(i*31 + j)
			}
			return b
		}
		r.start()
		for i := 0; i < 24; i++ {
			p := &Profile{Meta: table.Meta{PartitionKey: "Sales", RowKey: fmt.Sprintf("%06d", 500+i)}, Name: fmt.Sprint(i), Photo: photo(i, 20_000+i*5_000)}
			r.do("Put", func() error { return le.Put(ctx, p, nil) })
		}
		for i := 0; i < 8; i++ {
			p := &Profile{Meta: table.Meta{PartitionKey: "Sales", RowKey: fmt.Sprintf("%06d", 500+i)}, Name: "new", Photo: photo(i+50, 40_000)}
			r.do("Put replace", func() error { return le.Put(ctx, p, nil) })
		}
		for i := 0; i < 4; i++ {
			rk := fmt.Sprintf("%06d", 500+i)
			r.do("Modify", func() error {
				_, err := le.Modify(ctx, "Sales", rk, func(p *Profile) error { p.Name += " modified"; p.Photo = photo(i+90, 50_000); return nil }, nil)
				return err
			})
		}
		for _, rk := range []string{"000507", "000510", "000520"} {
			r.do("Delete", func() error { return le.Delete(ctx, "Sales", rk, nil) })
		}
		r.do("Sweep", func() error { _, err := le.Sweep(ctx, 0, nil); return err })
		r.stop()
		s := state{}
		s.addTable(t, "profiles", client)
		s.addBlobs(t, "photos", bc, container)
		return withoutVersions(s)
	})
}
