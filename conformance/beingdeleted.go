package conformance

import (
	"net/http"
	"testing"
	"time"

	"github.com/tablekit/tablekit/internal/reqcount"
)

// The longest window in which the service refuses a deleted name: Delete
// Table's "at least 40 seconds" (containers: at least 30 seconds).
const beingDeletedWindow = 40 * time.Second

// runBeingDeleted runs the rule that a deleted queue, container or table
// keeps its name for a while: Create answers 409 QueueBeingDeleted,
// ContainerBeingDeleted or TableBeingDeleted until the service has
// collected it. Code that drops and re-creates a name at once (a test's
// clean-up, a rolling table) fails in production on exactly this.
func runBeingDeleted(t *testing.T, env backend) {
	ctx := t.Context()

	t.Run("a deleted queue's name: 409 QueueBeingDeleted, free again later", func(t *testing.T) {
		q := env.NewQueue(t, nil)
		if _, err := q.Delete(ctx, nil); err != nil {
			t.Fatal(err)
		}
		_, err := q.Create(ctx, nil)
		if !env.Has(t, CapQueueBeingDeleted) {
			if err != nil {
				t.Fatalf("azurite's recorded answer is success; now: %v", err)
			}
			return
		}
		wantCode(t, err, http.StatusConflict, "QueueBeingDeleted")
		env.Advance(beingDeletedWindow + time.Second)
		if _, err := q.Create(ctx, nil); err != nil {
			t.Fatalf("after the window: %v", err)
		}
	})

	t.Run("a deleted container's name: 409 ContainerBeingDeleted, free again later", func(t *testing.T) {
		c, name := env.NewContainer(t, nil)
		if _, err := c.DeleteContainer(ctx, name, nil); err != nil {
			t.Fatal(err)
		}
		_, err := c.CreateContainer(ctx, name, nil)
		if !env.Has(t, CapContainerBeingDeleted) {
			if err != nil {
				t.Fatalf("azurite's recorded answer is success; now: %v", err)
			}
			return
		}
		wantCode(t, err, http.StatusConflict, "ContainerBeingDeleted")
		env.Advance(beingDeletedWindow + time.Second)
		if _, err := c.CreateContainer(ctx, name, nil); err != nil {
			t.Fatalf("after the window: %v", err)
		}
	})

	t.Run("a deleted table's name: 409 TableBeingDeleted, free again later", func(t *testing.T) {
		tc := env.NewTable(t, &reqcount.Counter{})
		if _, err := tc.Delete(ctx, nil); err != nil {
			t.Fatal(err)
		}
		_, err := tc.CreateTable(ctx, nil)
		if !env.Has(t, CapTableBeingDeleted) {
			if err != nil {
				t.Fatalf("azurite's recorded answer is success; now: %v", err)
			}
			return
		}
		wantCode(t, err, http.StatusConflict, "TableBeingDeleted")
		env.Advance(beingDeletedWindow + time.Second)
		if _, err := tc.CreateTable(ctx, nil); err != nil {
			t.Fatalf("after the window: %v", err)
		}
	})
}
