package consistency_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/service"
	"github.com/tablekit/tablekit/consistency"
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
	one := []consistency.OwnedQueue{{Name: "q0", Queue: q, Poison: p}}
	leaseFor := func(string, string) (consistency.Lease, error) { t.Fatal("a lease client was made"); return nil, nil }
	for _, tc := range []struct {
		name   string
		cont   string
		queues []consistency.OwnedQueue
		opts   consistency.RoleOptions
		want   error
	}{
		{"no queues", "leases", nil, consistency.RoleOptions{}, consistency.ErrRoleConfig},
		{"a queue twice", "leases", append(one, one[0]), consistency.RoleOptions{}, consistency.ErrRoleConfig},
		{"no poison queue", "leases", []consistency.OwnedQueue{{Name: "q0", Queue: q}}, consistency.RoleOptions{}, consistency.ErrRoleConfig},
		{"a slash in a queue name", "leases", []consistency.OwnedQueue{{Name: "a/b", Queue: q, Poison: p}}, consistency.RoleOptions{}, consistency.ErrRoleConfig},
		{"lease under 15 s", "leases", one, consistency.RoleOptions{LeaseDuration: 10 * time.Second}, consistency.ErrRoleConfig},
		{"lease over 60 s", "leases", one, consistency.RoleOptions{LeaseDuration: 2 * time.Minute}, consistency.ErrRoleConfig},
		{"renew too slow for the lease", "leases", one, consistency.RoleOptions{LeaseDuration: 15 * time.Second, Renew: 10 * time.Second}, consistency.ErrRoleConfig},
		{"bad container name", "Leases!", one, consistency.RoleOptions{}, keys.ErrInvalidName},
	} {
		tc.opts.LeaseFor = leaseFor
		if _, err := consistency.NewRole(noStore{t}, tc.cont, tc.queues, &tc.opts); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v; want %v", tc.name, err, tc.want)
		}
	}
	r, err := consistency.NewRole(noStore{t}, "leases", one, &consistency.RoleOptions{LeaseFor: leaseFor})
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

func TestShardedSenderRoutesByKey(t *testing.T) {
	svc, q0, q1 := queues(t)
	s, err := consistency.NewShardedSender([]consistency.Queue{q0, q1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a", "b", "c", "d", "e", "a"} {
		if err := s.Send(t.Context(), "x.v1", k, 1, nil); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]int{}
	for _, k := range []string{"a", "b", "c", "d", "e", "a"} {
		want[[]string{"work", "poison"}[keys.ShardBucket(k, 2)]]++
	}
	if svc.Len("work") != want["work"] || svc.Len("poison") != want["poison"] {
		t.Fatalf("queues hold %d and %d; want %v", svc.Len("work"), svc.Len("poison"), want)
	}
}
