package consistency_test

import (
	"testing"

	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/internal/keyrules"
)

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
		want[[]string{"work", "poison"}[keyrules.ShardBucket(k, 2)]]++
	}
	if svc.Len("work") != want["work"] || svc.Len("poison") != want["poison"] {
		t.Fatalf("queues hold %d and %d; want %v", svc.Len("work"), svc.Len("poison"), want)
	}
}
