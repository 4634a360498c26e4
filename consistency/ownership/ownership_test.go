package ownership_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/service"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/consistency/ownership"
	"github.com/tablekit/tablekit/keys"
)

// noStore fails the test on any request: a bad configuration is refused
// before one is sent.
type noStore struct{ t *testing.T }

func (s noStore) UploadBuffer(context.Context, string, string, []byte, *azblob.UploadBufferOptions) (azblob.UploadBufferResponse, error) {
	s.t.Fatal("a request was sent")
	return azblob.UploadBufferResponse{}, nil
}

func (s noStore) NewListBlobsFlatPager(string, *azblob.ListBlobsFlatOptions) *runtime.Pager[azblob.ListBlobsFlatResponse] {
	s.t.Fatal("a request was sent")
	return nil
}

func (s noStore) DeleteBlob(context.Context, string, string, *azblob.DeleteBlobOptions) (azblob.DeleteBlobResponse, error) {
	s.t.Fatal("a request was sent")
	return azblob.DeleteBlobResponse{}, nil
}

func (s noStore) ServiceClient() *service.Client { return nil }

func TestNewRoleRefusesBadConfiguration(t *testing.T) {
	_, q, p := queues(t)
	one := []ownership.OwnedQueue{{Name: "q0", Queue: q, Poison: p}}
	leaseFor := func(string, string) (ownership.Lease, error) { t.Fatal("a lease client was made"); return nil, nil }
	for _, tc := range []struct {
		name   string
		cont   string
		queues []ownership.OwnedQueue
		opts   ownership.RoleOptions
		want   error
	}{
		{"no queues", "leases", nil, ownership.RoleOptions{}, consistency.ErrBadOption},
		{"a queue twice", "leases", append(one, one[0]), ownership.RoleOptions{}, consistency.ErrBadOption},
		{"no poison queue", "leases", []ownership.OwnedQueue{{Name: "q0", Queue: q}}, ownership.RoleOptions{}, consistency.ErrBadOption},
		{"a slash in a queue name", "leases", []ownership.OwnedQueue{{Name: "a/b", Queue: q, Poison: p}}, ownership.RoleOptions{}, consistency.ErrBadOption},
		{"lease under 15 s", "leases", one, ownership.RoleOptions{LeaseDuration: 10 * time.Second}, consistency.ErrBadOption},
		{"lease over 60 s", "leases", one, ownership.RoleOptions{LeaseDuration: 2 * time.Minute}, consistency.ErrBadOption},
		{"renew too slow for the lease", "leases", one, ownership.RoleOptions{LeaseDuration: 15 * time.Second, Renew: 10 * time.Second}, consistency.ErrBadOption},
		{"bad container name", "Leases!", one, ownership.RoleOptions{}, keys.ErrInvalidName},
	} {
		tc.opts.LeaseFor = leaseFor
		if _, err := ownership.NewRole(noStore{t}, tc.cont, tc.queues, &tc.opts); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v; want %v", tc.name, err, tc.want)
		}
	}
	r, err := ownership.NewRole(noStore{t}, "leases", one, &ownership.RoleOptions{LeaseFor: leaseFor})
	if err != nil {
		t.Fatal(err)
	}
	h := func(context.Context, *consistency.Message) error { return nil }
	if err := r.Handle("a.v1", h); err != nil {
		t.Fatal(err)
	}
	if err := r.Handle("a.v1", h); !errors.Is(err, consistency.ErrDuplicateHandler) {
		t.Fatalf("a second handler for a.v1: %v", err)
	}
}
