package conformance

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"
	"github.com/tablekit/tablekit/internal/reqcount"
)

// Lease IDs the cases use (the service takes any GUID).
const (
	leaseA = "11111111-1111-4111-8111-111111111111"
	leaseB = "22222222-2222-4222-8222-222222222222"
	leaseC = "33333333-3333-4333-8333-333333333333"
)

// runBlobFidelity runs the documented Blob service behaviours beyond one
// Put Blob: leases on blobs and containers, the block path of the upload
// helpers, metadata and HTTP headers, hierarchical listing, ranges, and the
// conditional headers on every operation.
func runBlobFidelity(t *testing.T, env backend) {
	ctx := t.Context()

	t.Run("blob lease: acquire 15..60 s or infinite, renew, change, release; writes need the lease", func(t *testing.T) {
		c, ctr := env.NewContainer(t, nil)
		bc := c.ServiceClient().NewContainerClient(ctr).NewBlockBlobClient("owner/p0")
		if _, err := bc.Upload(ctx, nopCloser("v1"), nil); err != nil {
			t.Fatal(err)
		}
		la, lb := blobLease(t, bc, leaseA), blobLease(t, bc, leaseB)
		for _, d := range []int32{14, 61, 0, -2} {
			_, err := la.AcquireLease(ctx, d, nil)
			wantCode(t, err, http.StatusBadRequest, "InvalidHeaderValue")
		}
		r, err := la.AcquireLease(ctx, 15, nil)
		if err != nil || *r.LeaseID != leaseA {
			t.Fatalf("acquire: %v %v", r.LeaseID, err)
		}
		// A lease operation answers with the blob's ETag and leaves it as it is.
		if p, _ := bc.GetProperties(ctx, nil); r.ETag == nil || *r.ETag != *p.ETag {
			t.Fatalf("acquire answered ETag %v, the blob has %v", r.ETag, p.ETag)
		}
		_, err = lb.AcquireLease(ctx, 60, nil)
		wantCode(t, err, http.StatusConflict, "LeaseAlreadyPresent")
		if _, err := la.AcquireLease(ctx, 60, nil); err != nil {
			t.Fatalf("acquire again with the same ID: %v", err)
		}
		p, err := bc.GetProperties(ctx, nil)
		if err != nil || *p.LeaseState != lease.StateTypeLeased || *p.LeaseStatus != lease.StatusTypeLocked || *p.LeaseDuration != lease.DurationTypeFixed {
			t.Fatalf("properties: %v %v %v %v", p.LeaseState, p.LeaseStatus, p.LeaseDuration, err)
		}
		// Writes need the lease ID; reads may go without it.
		_, err = bc.Upload(ctx, nopCloser("v2"), nil)
		wantCode(t, err, http.StatusPreconditionFailed, "LeaseIdMissing")
		_, err = bc.Upload(ctx, nopCloser("v2"), &blockblob.UploadOptions{AccessConditions: withLease(leaseB)})
		wantCode(t, err, http.StatusPreconditionFailed, "LeaseIdMismatchWithBlobOperation")
		_, err = bc.SetMetadata(ctx, map[string]*string{"k": to.Ptr("v")}, nil)
		wantCode(t, err, http.StatusPreconditionFailed, "LeaseIdMissing")
		_, err = bc.SetHTTPHeaders(ctx, blob.HTTPHeaders{BlobContentType: to.Ptr("text/plain")}, nil)
		wantCode(t, err, http.StatusPreconditionFailed, "LeaseIdMissing")
		_, err = bc.Delete(ctx, nil)
		wantCode(t, err, http.StatusPreconditionFailed, "LeaseIdMissing")
		if got := download(t, c, ctr, "owner/p0", nil); got != "v1" {
			t.Fatalf("read without the lease ID: %q", got)
		}
		_, err = bc.DownloadStream(ctx, &blob.DownloadStreamOptions{AccessConditions: withLease(leaseB)})
		wantCode(t, err, http.StatusPreconditionFailed, "LeaseIdMismatchWithBlobOperation")
		if _, err := bc.Upload(ctx, nopCloser("v2"), &blockblob.UploadOptions{AccessConditions: withLease(leaseA)}); err != nil {
			t.Fatalf("write with the lease ID: %v", err)
		}
		if p, _ := bc.GetProperties(ctx, nil); *p.LeaseState != lease.StateTypeLeased {
			t.Fatalf("a write with the lease ID ended the lease: %v", *p.LeaseState)
		}
		_, err = lb.RenewLease(ctx, nil)
		wantCode(t, err, http.StatusConflict, "LeaseIdMismatchWithLeaseOperation")
		if r, err := la.RenewLease(ctx, nil); err != nil || *r.LeaseID != leaseA {
			t.Fatalf("renew: %v", err)
		}
		// Change hands the lease to another ID; the old one no longer works.
		if r, err := la.ChangeLease(ctx, leaseC, nil); err != nil || *r.LeaseID != leaseC {
			t.Fatalf("change: %v", err)
		}
		_, err = bc.Upload(ctx, nopCloser("v3"), &blockblob.UploadOptions{AccessConditions: withLease(leaseA)})
		wantCode(t, err, http.StatusPreconditionFailed, "LeaseIdMismatchWithBlobOperation")
		_, err = lb.ReleaseLease(ctx, nil)
		wantCode(t, err, http.StatusConflict, "LeaseIdMismatchWithLeaseOperation")
		if _, err := la.ReleaseLease(ctx, nil); err != nil { // la now holds leaseC
			t.Fatalf("release: %v", err)
		}
		if p, _ := bc.GetProperties(ctx, nil); *p.LeaseState != lease.StateTypeAvailable || *p.LeaseStatus != lease.StatusTypeUnlocked {
			t.Fatalf("after release: %v %v", *p.LeaseState, *p.LeaseStatus)
		}
		_, err = bc.Upload(ctx, nopCloser("v3"), &blockblob.UploadOptions{AccessConditions: withLease(leaseC)})
		wantCode(t, err, http.StatusPreconditionFailed, "LeaseNotPresentWithBlobOperation")
		if _, err := bc.Upload(ctx, nopCloser("v3"), nil); err != nil {
			t.Fatalf("write after release: %v", err)
		}
		_, err = lb.BreakLease(ctx, nil)
		wantCode(t, err, http.StatusConflict, "LeaseNotPresentWithLeaseOperation")
		_, err = lb.RenewLease(ctx, nil)
		wantCode(t, err, http.StatusConflict, "LeaseIdMismatchWithLeaseOperation")
		_, err = blobLease(t, c.ServiceClient().NewContainerClient(ctr).NewBlockBlobClient("absent"), leaseA).AcquireLease(ctx, 15, nil)
		wantCode(t, err, http.StatusNotFound, "BlobNotFound")
	})

	t.Run("blob lease: break at once or after a period; broken and breaking leases", func(t *testing.T) {
		c, ctr := env.NewContainer(t, nil)
		bc := c.ServiceClient().NewContainerClient(ctr).NewBlockBlobClient("b")
		if _, err := bc.Upload(ctx, nopCloser("x"), nil); err != nil {
			t.Fatal(err)
		}
		la, lb := blobLease(t, bc, leaseA), blobLease(t, bc, leaseB)
		if _, err := la.AcquireLease(ctx, -1, nil); err != nil {
			t.Fatal(err)
		}
		if p, _ := bc.GetProperties(ctx, nil); *p.LeaseDuration != lease.DurationTypeInfinite {
			t.Fatalf("duration %v", *p.LeaseDuration)
		}
		// An infinite lease breaks at once; anyone may break it.
		r, err := lb.BreakLease(ctx, nil)
		if err != nil || *r.LeaseTime != 0 {
			t.Fatalf("break: %v %v", r.LeaseTime, err)
		}
		if p, _ := bc.GetProperties(ctx, nil); *p.LeaseState != lease.StateTypeBroken {
			t.Fatalf("state %v", *p.LeaseState)
		}
		_, err = la.RenewLease(ctx, nil)
		wantCode(t, err, http.StatusConflict, "LeaseIsBrokenAndCannotBeRenewed")
		if _, err := bc.Upload(ctx, nopCloser("y"), nil); err != nil {
			t.Fatalf("write to a broken lease's blob: %v", err)
		}
		// A broken lease can be acquired again, by another ID.
		if _, err := lb.AcquireLease(ctx, 60, nil); err != nil {
			t.Fatalf("acquire after break: %v", err)
		}
		_, err = la.BreakLease(ctx, &lease.BlobBreakOptions{BreakPeriod: to.Ptr(int32(61))})
		wantCode(t, err, http.StatusBadRequest, "InvalidHeaderValue")
		// A break period of 5 s, not 1: the five requests below must land
		// within it, and a busy Azurite (parallel suites) once took over
		// 1 s for them, so the lease was broken before the Acquire.
		r, err = la.BreakLease(ctx, &lease.BlobBreakOptions{BreakPeriod: to.Ptr(int32(breakPeriod))})
		if err != nil || *r.LeaseTime != breakPeriod {
			t.Fatalf("break with %d s: %v %v", breakPeriod, r.LeaseTime, err)
		}
		if p, _ := bc.GetProperties(ctx, nil); *p.LeaseState != lease.StateTypeBreaking || *p.LeaseStatus != lease.StatusTypeLocked {
			t.Fatalf("state %v %v", *p.LeaseState, *p.LeaseStatus)
		}
		_, err = bc.Upload(ctx, nopCloser("z"), nil)
		wantCode(t, err, http.StatusPreconditionFailed, "LeaseIdMissing")
		// Renewing a breaking lease fails; the code is Azurite's, the REST
		// docs' table gives only the 409.
		_, err = lb.RenewLease(ctx, nil)
		wantCode(t, err, http.StatusConflict, "LeaseIsBrokenAndCannotBeRenewed")
		_, err = lb.ChangeLease(ctx, leaseC, nil)
		wantCode(t, err, http.StatusConflict, "LeaseIsBreakingAndCannotBeChanged")
		_, err = la.AcquireLease(ctx, 15, nil)
		wantCode(t, err, http.StatusConflict, "LeaseAlreadyPresent")
		env.Advance(breakPeriod*time.Second + 500*time.Millisecond)
		if p, _ := bc.GetProperties(ctx, nil); *p.LeaseState != lease.StateTypeBroken {
			t.Fatalf("after the break period: %v", *p.LeaseState)
		}
		if _, err := lb.AcquireLease(ctx, 15, nil); err != nil {
			t.Fatalf("acquire a broken lease again: %v", err)
		}
		if _, err := la.BreakLease(ctx, &lease.BlobBreakOptions{BreakPeriod: to.Ptr(int32(0))}); err != nil {
			t.Fatal(err)
		}
		if _, err := lb.ReleaseLease(ctx, nil); err != nil {
			t.Fatalf("release a broken lease: %v", err)
		}
		// A write without a lease ID ends a broken lease: the blob is available.
		if _, err := lb.AcquireLease(ctx, 15, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := la.BreakLease(ctx, &lease.BlobBreakOptions{BreakPeriod: to.Ptr(int32(0))}); err != nil {
			t.Fatal(err)
		}
		if _, err := bc.Upload(ctx, nopCloser("z"), nil); err != nil {
			t.Fatalf("write after the break: %v", err)
		}
		if p, _ := bc.GetProperties(ctx, nil); *p.LeaseState != lease.StateTypeAvailable {
			t.Fatalf("a broken lease after a write: %v", *p.LeaseState)
		}
		_, err = lb.ReleaseLease(ctx, nil)
		wantStatus(t, err, http.StatusConflict, "release after the write ended the lease")
	})

	t.Run("blob lease: a fixed lease expires on the clock", func(t *testing.T) {
		c, ctr := env.NewContainer(t, nil)
		bc := c.ServiceClient().NewContainerClient(ctr).NewBlockBlobClient("e")
		if _, err := bc.Upload(ctx, nopCloser("x"), nil); err != nil {
			t.Fatal(err)
		}
		la, lb := blobLease(t, bc, leaseA), blobLease(t, bc, leaseB)
		if _, err := la.AcquireLease(ctx, 15, nil); err != nil {
			t.Fatal(err)
		}
		// On Azurite this case waits 26 s of real time.
		env.Advance(10 * time.Second)
		if _, err := la.RenewLease(ctx, nil); err != nil { // 15 s from now
			t.Fatal(err)
		}
		env.Advance(10 * time.Second)
		if p, _ := bc.GetProperties(ctx, nil); *p.LeaseState != lease.StateTypeLeased {
			t.Fatalf("renewed lease 20 s after the acquire: %v", *p.LeaseState)
		}
		env.Advance(6 * time.Second)
		if p, _ := bc.GetProperties(ctx, nil); *p.LeaseState != lease.StateTypeExpired || *p.LeaseStatus != lease.StatusTypeUnlocked {
			t.Fatalf("16 s after the renew: %v %v", *p.LeaseState, *p.LeaseStatus)
		}
		if _, err := bc.SetMetadata(ctx, map[string]*string{"k": to.Ptr("v")}, nil); err != nil {
			t.Fatalf("write after expiry: %v", err)
		}
		if _, err := lb.AcquireLease(ctx, 15, nil); err != nil {
			t.Fatalf("another owner after expiry: %v", err)
		}
	})

	t.Run("container lease guards Delete Container", func(t *testing.T) {
		c, ctr := env.NewContainer(t, nil)
		cc := c.ServiceClient().NewContainerClient(ctr)
		la, err := lease.NewContainerClient(cc, &lease.ContainerClientOptions{LeaseID: to.Ptr(leaseA)})
		if err != nil {
			t.Fatal(err)
		}
		lb, _ := lease.NewContainerClient(cc, &lease.ContainerClientOptions{LeaseID: to.Ptr(leaseB)})
		if _, err := la.AcquireLease(ctx, -1, nil); err != nil {
			t.Fatal(err)
		}
		_, err = lb.AcquireLease(ctx, -1, nil)
		wantCode(t, err, http.StatusConflict, "LeaseAlreadyPresent")
		p, err := cc.GetProperties(ctx, nil)
		if err != nil || *p.LeaseState != lease.StateTypeLeased {
			t.Fatalf("container properties: %v %v", p.LeaseState, err)
		}
		_, err = cc.Delete(ctx, nil)
		wantCode(t, err, http.StatusPreconditionFailed, "LeaseIdMissing")
		_, err = cc.Delete(ctx, &container.DeleteOptions{AccessConditions: &container.AccessConditions{LeaseAccessConditions: &container.LeaseAccessConditions{LeaseID: to.Ptr(leaseB)}}})
		wantCode(t, err, http.StatusPreconditionFailed, "LeaseIdMismatchWithContainerOperation")
		if _, err := la.ReleaseLease(ctx, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := cc.Delete(ctx, nil); err != nil {
			t.Fatalf("delete after release: %v", err)
		}
	})

	t.Run("blob: UploadStream in 1 MiB blocks: Put Block ×3 and Put Block List", func(t *testing.T) {
		var rc reqcount.Counter
		c, ctr := env.NewContainer(t, &rc)
		data := bytes.Repeat([]byte("0123456789abcdef"), (5<<20)/2/16) // 2.5 MiB
		rc.Reset()
		if _, err := c.UploadStream(ctx, ctr, "big", bytes.NewReader(data), &azblob.UploadStreamOptions{BlockSize: 1 << 20, Concurrency: 2,
			Metadata: map[string]*string{"kind": to.Ptr("stream")}}); err != nil {
			t.Fatal(err)
		}
		if rc.N() != 4 {
			t.Fatalf("UploadStream of 2.5 MiB took %d requests, want 3 blocks + 1 block list", rc.N())
		}
		d, err := c.DownloadStream(ctx, ctr, "big", nil)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(d.Body)
		d.Body.Close()
		if !bytes.Equal(got, data) || lowerMeta(d.Metadata)["kind"] != "stream" {
			t.Fatalf("download: %d bytes (want %d), metadata %v", len(got), len(data), lowerMeta(d.Metadata))
		}
		bl, err := c.ServiceClient().NewContainerClient(ctr).NewBlockBlobClient("big").GetBlockList(ctx, blockblob.BlockListTypeAll, nil)
		if err != nil {
			t.Fatal(err)
		}
		var sizes []int64
		for _, b := range bl.CommittedBlocks {
			sizes = append(sizes, *b.Size)
		}
		if !slices.Equal(sizes, []int64{1 << 20, 1 << 20, 1 << 19}) || len(bl.UncommittedBlocks) != 0 || *bl.BlobContentLength != int64(len(data)) {
			t.Fatalf("block list: committed %v, %d uncommitted", sizes, len(bl.UncommittedBlocks))
		}
	})

	t.Run("blob: DownloadBuffer in ranged reads", func(t *testing.T) {
		c, ctr := env.NewContainer(t, nil)
		data := bytes.Repeat([]byte("0123456789abcdef"), (3<<20)/16+5) // 3 MiB and 80 bytes
		if _, err := c.UploadBuffer(ctx, ctr, "ranged", data, nil); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, len(data))
		n, err := c.DownloadBuffer(ctx, ctr, "ranged", got, &azblob.DownloadBufferOptions{BlockSize: 1 << 20, Concurrency: 2})
		if err != nil || n != int64(len(data)) || !bytes.Equal(got, data) {
			t.Fatalf("DownloadBuffer: %d bytes of %d, equal %v, %v", n, len(data), bytes.Equal(got, data), err)
		}
		// A range that runs past the end is cut at the end.
		d, err := c.DownloadStream(ctx, ctr, "ranged", &azblob.DownloadStreamOptions{Range: azblob.HTTPRange{Offset: int64(len(data)) - 3, Count: 10}})
		if err != nil {
			t.Fatal(err)
		}
		tail, _ := io.ReadAll(d.Body)
		d.Body.Close()
		if string(tail) != "def" || *d.ContentLength != 3 {
			t.Fatalf("tail: %q, length %v", tail, *d.ContentLength)
		}
		_, err = c.DownloadStream(ctx, ctr, "ranged", &azblob.DownloadStreamOptions{Range: azblob.HTTPRange{Offset: int64(len(data)) + 5, Count: 1}})
		wantCode(t, err, http.StatusRequestedRangeNotSatisfiable, "InvalidRange")
		_, err = c.DownloadStream(ctx, ctr, "ranged", &azblob.DownloadStreamOptions{Range: azblob.HTTPRange{Offset: int64(len(data)), Count: 1}})
		if !env.Has(t, CapRangeAtEnd416) {
			if err != nil {
				t.Fatalf("azurite's recorded answer to a range at the end is a success; now: %v", err)
			}
			return
		}
		wantCode(t, err, http.StatusRequestedRangeNotSatisfiable, "InvalidRange")
	})

	t.Run("blob: StageBlock, CommitBlockList, GetBlockList", func(t *testing.T) {
		c, ctr := env.NewContainer(t, nil)
		bc := c.ServiceClient().NewContainerClient(ctr).NewBlockBlobClient("blocks")
		id := func(i int) string { return base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "block-%04d", i)) }
		for i, part := range []string{"hello ", "world", "unused"} {
			if _, err := bc.StageBlock(ctx, id(i), nopCloser(part), nil); err != nil {
				t.Fatal(err)
			}
		}
		// Put Block: every block ID of a blob has the same length.
		_, err := bc.StageBlock(ctx, base64.StdEncoding.EncodeToString([]byte("short")), nopCloser("x"), nil)
		wantCode(t, err, http.StatusBadRequest, "InvalidBlobOrBlock")
		bl, err := bc.GetBlockList(ctx, blockblob.BlockListTypeAll, nil)
		if err != nil || len(bl.CommittedBlocks) != 0 || len(bl.UncommittedBlocks) != 3 {
			t.Fatalf("staged: %v, %v", bl.BlockList, err)
		}
		_, err = bc.DownloadStream(ctx, nil)
		wantCode(t, err, http.StatusNotFound, "BlobNotFound")
		_, err = bc.CommitBlockList(ctx, []string{id(0), id(9)}, nil)
		wantCode(t, err, http.StatusBadRequest, "InvalidBlockList")
		if _, err := bc.CommitBlockList(ctx, []string{id(0), id(1)}, &blockblob.CommitBlockListOptions{HTTPHeaders: &blob.HTTPHeaders{BlobContentType: to.Ptr("text/plain")}}); err != nil {
			t.Fatal(err)
		}
		if got := download(t, c, ctr, "blocks", nil); got != "hello world" {
			t.Fatalf("committed content %q", got)
		}
		bl, err = bc.GetBlockList(ctx, blockblob.BlockListTypeAll, nil)
		if err != nil || len(bl.CommittedBlocks) != 2 || len(bl.UncommittedBlocks) != 0 || *bl.CommittedBlocks[1].Name != id(1) {
			t.Fatalf("after commit: %d committed, %d uncommitted, %v", len(bl.CommittedBlocks), len(bl.UncommittedBlocks), err)
		}
		// A committed block can be committed again next to a new one.
		if _, err := bc.StageBlock(ctx, id(3), nopCloser("there"), nil); err != nil {
			t.Fatal(err)
		}
		if _, err := bc.CommitBlockList(ctx, []string{id(0), id(3)}, nil); err != nil {
			t.Fatal(err)
		}
		if got := download(t, c, ctr, "blocks", nil); got != "hello there" {
			t.Fatalf("recommitted content %q", got)
		}
	})

	t.Run("blob: SetMetadata and SetHTTPHeaders replace and change the ETag", func(t *testing.T) {
		c, ctr := env.NewContainer(t, nil)
		bc := c.ServiceClient().NewContainerClient(ctr).NewBlockBlobClient("props")
		up, err := bc.Upload(ctx, nopCloser("{}"), &blockblob.UploadOptions{Metadata: map[string]*string{"a": to.Ptr("1"), "b": to.Ptr("2")},
			HTTPHeaders: &blob.HTTPHeaders{BlobContentType: to.Ptr("application/json"), BlobContentLanguage: to.Ptr("en")}})
		if err != nil {
			t.Fatal(err)
		}
		m, err := bc.SetMetadata(ctx, map[string]*string{"c": to.Ptr("3")}, nil)
		if err != nil || *m.ETag == *up.ETag {
			t.Fatalf("set metadata: %v (ETag unchanged: %v)", err, m.ETag != nil && *m.ETag == *up.ETag)
		}
		p, err := bc.GetProperties(ctx, nil)
		if got := lowerMeta(p.Metadata); err != nil || len(got) != 1 || got["c"] != "3" || *p.ContentType != "application/json" {
			t.Fatalf("after SetMetadata: %v %v %v", got, p.ContentType, err)
		}
		h, err := bc.SetHTTPHeaders(ctx, blob.HTTPHeaders{BlobContentType: to.Ptr("text/plain"), BlobCacheControl: to.Ptr("no-cache")}, nil)
		if err != nil || *h.ETag == *m.ETag {
			t.Fatalf("set headers: %v", err)
		}
		p, err = bc.GetProperties(ctx, nil)
		if err != nil || *p.ContentType != "text/plain" || *p.CacheControl != "no-cache" || p.ContentLanguage != nil || lowerMeta(p.Metadata)["c"] != "3" {
			t.Fatalf("after SetHTTPHeaders: type %v, cache %v, language %v (want cleared), metadata %v, %v", p.ContentType, p.CacheControl, p.ContentLanguage, lowerMeta(p.Metadata), err)
		}
	})

	t.Run("blob: list with a delimiter gives BlobPrefix items, paged", func(t *testing.T) {
		c, ctr := env.NewContainer(t, nil)
		for _, n := range []string{"a/1", "a/2", "a/b/3", "b", "c/4", "c/5/6"} {
			if _, err := c.UploadBuffer(ctx, ctr, n, []byte(n), nil); err != nil {
				t.Fatal(err)
			}
		}
		cc := c.ServiceClient().NewContainerClient(ctr)
		list := func(prefix string, max int32) (items []string, pages int) {
			pg := cc.NewListBlobsHierarchyPager("/", &container.ListBlobsHierarchyOptions{Prefix: to.Ptr(prefix), MaxResults: to.Ptr(max)})
			for pg.More() {
				page, err := pg.NextPage(ctx)
				if err != nil {
					t.Fatal(err)
				}
				pages++
				var here []string
				for _, p := range page.Segment.BlobPrefixes {
					here = append(here, *p.Name)
				}
				for _, b := range page.Segment.BlobItems {
					here = append(here, *b.Name)
				}
				slices.Sort(here)
				items = append(items, here...)
			}
			return items, pages
		}
		if items, pages := list("", 100); !slices.Equal(items, []string{"a/", "b", "c/"}) || pages != 1 {
			t.Fatalf("top level: %q in %d pages", items, pages)
		}
		if items, _ := list("a/", 100); !slices.Equal(items, []string{"a/1", "a/2", "a/b/"}) {
			t.Fatalf("under a/: %q", items)
		}
		if items, pages := list("", 1); !slices.Equal(items, []string{"a/", "b", "c/"}) || pages != 3 {
			t.Fatalf("one item a page: %q in %d pages", items, pages)
		}
	})

	t.Run("blob: a ranged read of an empty blob is 416 InvalidRange", func(t *testing.T) {
		c, ctr := env.NewContainer(t, nil)
		if _, err := c.UploadBuffer(ctx, ctr, "empty", nil, nil); err != nil {
			t.Fatal(err)
		}
		if got := download(t, c, ctr, "empty", nil); got != "" {
			t.Fatalf("whole read: %q", got)
		}
		_, err := c.DownloadStream(ctx, ctr, "empty", &azblob.DownloadStreamOptions{Range: azblob.HTTPRange{Count: 1}})
		if !env.Has(t, CapRangeAtEnd416) {
			if err != nil {
				t.Fatalf("azurite's recorded answer is 200 with no body; now: %v", err)
			}
			return
		}
		wantCode(t, err, http.StatusRequestedRangeNotSatisfiable, "InvalidRange")
	})

	t.Run("blob: If-Match, If-None-Match, If-Modified-Since, If-Unmodified-Since on every operation", func(t *testing.T) {
		c, ctr := env.NewContainer(t, nil)
		bc := c.ServiceClient().NewContainerClient(ctr).NewBlockBlobClient("cond")
		up, err := bc.Upload(ctx, nopCloser("x"), nil)
		if err != nil {
			t.Fatal(err)
		}
		etag, modified := *up.ETag, *up.LastModified
		stale := azcore.ETag(`"0x8D000000000000"`)
		before, after := modified.Add(-time.Hour), modified.Add(time.Hour)
		failing := map[string]*blob.ModifiedAccessConditions{
			"If-Match stale":            {IfMatch: &stale},
			"If-None-Match current":     {IfNoneMatch: &etag},
			"If-Modified-Since later":   {IfModifiedSince: &after},
			"If-Unmodified-Since prior": {IfUnmodifiedSince: &before},
		}
		readFails := map[string]int{ // a read that fails If-None-Match or If-Modified-Since is "not modified"
			"If-Match stale": 412, "If-None-Match current": 304, "If-Modified-Since later": 304, "If-Unmodified-Since prior": 412,
		}
		for name, mc := range failing {
			ac := &blob.AccessConditions{ModifiedAccessConditions: mc}
			// The SDK takes a 304 from Get Blob as a success.
			var resp *http.Response
			_, err := bc.DownloadStream(policy.WithCaptureResponse(ctx, &resp), &blob.DownloadStreamOptions{AccessConditions: ac})
			if readFails[name] == http.StatusNotModified {
				if err != nil || resp == nil || resp.StatusCode != http.StatusNotModified {
					t.Errorf("get %s: %v, want 304", name, err)
				}
			} else {
				wantStatus(t, err, readFails[name], "get "+name)
			}
			_, err = bc.GetProperties(ctx, &blob.GetPropertiesOptions{AccessConditions: ac})
			wantStatus(t, err, readFails[name], "properties "+name)
			_, err = bc.Upload(ctx, nopCloser("y"), &blockblob.UploadOptions{AccessConditions: ac})
			wantStatus(t, err, 412, "put "+name)
			_, err = bc.SetMetadata(ctx, nil, &blob.SetMetadataOptions{AccessConditions: ac})
			wantStatus(t, err, 412, "metadata "+name)
			_, err = bc.SetHTTPHeaders(ctx, blob.HTTPHeaders{}, &blob.SetHTTPHeadersOptions{AccessConditions: ac})
			wantStatus(t, err, 412, "headers "+name)
			_, err = bc.CommitBlockList(ctx, nil, &blockblob.CommitBlockListOptions{AccessConditions: ac})
			wantStatus(t, err, 412, "block list "+name)
			_, err = blobLease(t, bc, leaseA).AcquireLease(ctx, 15, &lease.BlobAcquireOptions{ModifiedAccessConditions: mc})
			wantStatus(t, err, 412, "lease "+name)
			_, err = bc.Delete(ctx, &blob.DeleteOptions{AccessConditions: ac})
			wantStatus(t, err, 412, "delete "+name)
		}
		if got := download(t, c, ctr, "cond", nil); got != "x" {
			t.Fatalf("a refused write changed the blob: %q", got)
		}
		// One condition a request: Azurite refuses some combinations
		// (400 MultipleConditionHeadersNotSupported).
		for _, mc := range []*blob.ModifiedAccessConditions{{IfMatch: &etag}, {IfModifiedSince: &before}, {IfUnmodifiedSince: &modified}, {IfNoneMatch: &stale}} {
			ac := &blob.AccessConditions{ModifiedAccessConditions: mc}
			if got, err := bc.DownloadStream(ctx, &blob.DownloadStreamOptions{AccessConditions: ac}); err != nil || *got.ContentLength != 1 {
				t.Fatalf("get with a passing condition %+v: %v", *mc, err)
			}
		}
		if _, err := bc.SetMetadata(ctx, map[string]*string{"k": to.Ptr("v")}, &blob.SetMetadataOptions{AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfMatch: &etag}}}); err != nil {
			t.Fatalf("metadata with a passing If-Match: %v", err)
		}
	})

	t.Run("blob: a 304 to a conditional read carries neither ETag nor Last-Modified", func(t *testing.T) {
		c, ctr := env.NewContainer(t, nil)
		bc := c.ServiceClient().NewContainerClient(ctr).NewBlockBlobClient("cond304")
		up, err := bc.Upload(ctx, nopCloser("x"), nil)
		if err != nil {
			t.Fatal(err)
		}
		later := up.LastModified.Add(time.Hour)
		for _, mc := range []*blob.ModifiedAccessConditions{{IfNoneMatch: up.ETag}, {IfModifiedSince: &later}} {
			ac := &blob.AccessConditions{ModifiedAccessConditions: mc}
			// The SDK takes a 304 to Get Blob for success and one to Get
			// Blob Properties for an error: the answer itself is compared.
			var get, head *http.Response
			_, _ = bc.DownloadStream(policy.WithCaptureResponse(ctx, &get), &blob.DownloadStreamOptions{AccessConditions: ac})
			_, _ = bc.GetProperties(policy.WithCaptureResponse(ctx, &head), &blob.GetPropertiesOptions{AccessConditions: ac})
			for op, r := range map[string]*http.Response{"Get Blob": get, "Get Blob Properties": head} {
				if r == nil || r.StatusCode != http.StatusNotModified {
					t.Fatalf("%s with %+v: %v, want 304", op, *mc, r)
				}
				if h := r.Header; h.Get("ETag") != "" || h.Get("Last-Modified") != "" {
					t.Errorf("%s with %+v: 304 with ETag %q, Last-Modified %q; want neither", op, *mc, h.Get("ETag"), h.Get("Last-Modified"))
				}
			}
		}
	})

	t.Run("blob: Put Block List answers with a Content-MD5", func(t *testing.T) {
		c, ctr := env.NewContainer(t, nil)
		bc := c.ServiceClient().NewContainerClient(ctr).NewBlockBlobClient("committed")
		id := base64.StdEncoding.EncodeToString([]byte("block-0"))
		if _, err := bc.StageBlock(ctx, id, nopCloser("abc"), nil); err != nil {
			t.Fatal(err)
		}
		r, err := bc.CommitBlockList(ctx, []string{id}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.ContentMD5) != 16 {
			t.Errorf("Put Block List answered Content-MD5 %x, want the 16 bytes of an MD5", r.ContentMD5)
		}
	})

	t.Run("blob lease: the ID of a broken lease is LeaseLost", func(t *testing.T) {
		c, ctr := env.NewContainer(t, nil)
		bc := c.ServiceClient().NewContainerClient(ctr).NewBlockBlobClient("broken")
		if _, err := bc.Upload(ctx, nopCloser("x"), nil); err != nil {
			t.Fatal(err)
		}
		la := blobLease(t, bc, leaseA)
		if _, err := la.AcquireLease(ctx, -1, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := la.BreakLease(ctx, &lease.BlobBreakOptions{BreakPeriod: to.Ptr(int32(0))}); err != nil {
			t.Fatal(err)
		}
		lost := "LeaseLost"
		if !env.Has(t, CapBrokenLeaseLost) {
			lost = "LeaseNotPresentWithBlobOperation" // Azurite's answer
		}
		_, err := bc.Upload(ctx, nopCloser("y"), &blockblob.UploadOptions{AccessConditions: withLease(leaseA)})
		wantCode(t, err, http.StatusPreconditionFailed, lost)
		_, err = bc.SetMetadata(ctx, map[string]*string{"k": to.Ptr("v")}, &blob.SetMetadataOptions{AccessConditions: withLease(leaseA)})
		wantCode(t, err, http.StatusPreconditionFailed, lost)
		// An ID that never held the lease is not lost: there is no lease.
		_, err = bc.SetMetadata(ctx, map[string]*string{"k": to.Ptr("v")}, &blob.SetMetadataOptions{AccessConditions: withLease(leaseB)})
		wantCode(t, err, http.StatusPreconditionFailed, "LeaseNotPresentWithBlobOperation")
	})

	t.Run("blob: Set Blob Properties answers without x-ms-request-server-encrypted and clears an unset content type", func(t *testing.T) {
		c, ctr := env.NewContainer(t, nil)
		bc := c.ServiceClient().NewContainerClient(ctr).NewBlockBlobClient("typed")
		if _, err := bc.Upload(ctx, nopCloser("{}"), &blockblob.UploadOptions{HTTPHeaders: &blob.HTTPHeaders{BlobContentType: to.Ptr("application/json")}}); err != nil {
			t.Fatal(err)
		}
		var raw *http.Response
		if _, err := bc.SetHTTPHeaders(policy.WithCaptureResponse(ctx, &raw), blob.HTTPHeaders{BlobCacheControl: to.Ptr("no-cache")}, nil); err != nil {
			t.Fatal(err)
		}
		if v, ok := raw.Header["X-Ms-Request-Server-Encrypted"]; ok {
			t.Errorf("Set Blob Properties answered x-ms-request-server-encrypted: %v", v)
		}
		p, err := bc.GetProperties(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if p.ContentType != nil || p.CacheControl == nil || *p.CacheControl != "no-cache" {
			t.Errorf("after Set Blob Properties with no content type: Content-Type %v (want none), Cache-Control %v", deref(p.ContentType), deref(p.CacheControl))
		}
	})

	t.Run("blob: List Blobs shows a tagged blob's TagCount, and metadata and tags only when asked", func(t *testing.T) {
		c, ctr := env.NewContainer(t, nil)
		cc := c.ServiceClient().NewContainerClient(ctr)
		if _, err := cc.NewBlockBlobClient("tagged").Upload(ctx, nopCloser("t"), &blockblob.UploadOptions{
			Tags: map[string]string{"owner": "ops", "tier": "cold"}, Metadata: map[string]*string{"k": to.Ptr("v")}}); err != nil {
			t.Fatal(err)
		}
		if _, err := cc.NewBlockBlobClient("plain").Upload(ctx, nopCloser("p"), nil); err != nil {
			t.Fatal(err)
		}
		list := func(include container.ListBlobsInclude) (map[string]*container.BlobItem, string) {
			t.Helper()
			var raw *http.Response
			page, err := cc.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Include: include}).NextPage(policy.WithCaptureResponse(ctx, &raw))
			if err != nil {
				t.Fatal(err)
			}
			body, err := runtime.Payload(raw)
			if err != nil {
				t.Fatal(err)
			}
			items := map[string]*container.BlobItem{}
			for _, it := range page.Segment.BlobItems {
				items[*it.Name] = it
			}
			return items, string(body)
		}
		if p, err := cc.NewBlobClient("tagged").GetProperties(ctx, nil); err != nil || p.TagCount == nil || *p.TagCount != 2 {
			t.Errorf("Get Blob Properties of the tagged blob: x-ms-tag-count %v, %v; want 2", p.TagCount, err)
		}
		items, body := list(container.ListBlobsInclude{})
		if n := items["tagged"].Properties.TagCount; n == nil || *n != 2 {
			t.Errorf("the tagged blob's TagCount: %v, want 2", n)
		}
		if n := items["plain"].Properties.TagCount; n != nil {
			t.Errorf("the untagged blob's TagCount: %d, want none", *n)
		}
		for _, unasked := range []string{"<Metadata", "<Tags", "<Snapshot", "<VersionId", "<Deleted"} {
			if bytes.Contains([]byte(body), []byte(unasked)) {
				t.Errorf("a list without include= holds %s>: %s", unasked, body)
			}
		}
		items, _ = list(container.ListBlobsInclude{Metadata: true, Tags: true})
		if m := items["tagged"].Metadata; len(m) != 1 {
			t.Errorf("include=metadata: %v", m)
		}
		if tags := items["tagged"].BlobTags; tags == nil || len(tags.BlobTagSet) != 2 {
			t.Errorf("include=tags: %v", tags)
		}
	})
}

// deref is *p, or "<nil>".
func deref(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

func nopCloser(s string) io.ReadSeekCloser { return streamingNop{bytes.NewReader([]byte(s))} }

type streamingNop struct{ *bytes.Reader }

func (streamingNop) Close() error { return nil }

func blobLease(t *testing.T, bc *blockblob.Client, id string) *lease.BlobClient {
	t.Helper()
	l, err := lease.NewBlobClient(bc, &lease.BlobClientOptions{LeaseID: to.Ptr(id)})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func withLease(id string) *blob.AccessConditions {
	return &blob.AccessConditions{LeaseAccessConditions: &blob.LeaseAccessConditions{LeaseID: to.Ptr(id)}}
}

func download(t *testing.T, c *azblob.Client, ctr, name string, o *azblob.DownloadStreamOptions) string {
	t.Helper()
	d, err := c.DownloadStream(t.Context(), ctr, name, o)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Body.Close()
	b, err := io.ReadAll(d.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// wantStatus wants an error with the service's status (the code of a 304
// or a HEAD answer travels in a header the backends may leave out).
func wantStatus(t *testing.T, err error, status int, what string) {
	t.Helper()
	var re *azcore.ResponseError
	if !errors.As(err, &re) || re.StatusCode != status {
		t.Errorf("%s: got %v, want %d", what, err, status)
	}
}

// breakPeriod is the break period, in seconds, of the breaking-lease case.
const breakPeriod = 5
