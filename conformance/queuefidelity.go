package conformance

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/internal/testenv"
)

// Queue service limits the cases check ("Put Message", "Get Messages",
// "Update Message" REST docs).
const (
	maxQueueMessageBytes = 64 * 1024          // Put Message: up to 64 KiB
	maxVisibility        = 7 * 24 * 60 * 60   // seconds; visibilitytimeout ≤ 7 days
	maxDequeueMessages   = 32                 // Get Messages: numofmessages 1..32
	queueCreatedStatus   = http.StatusCreated // Create Queue, a new queue
)

// runQueueFidelity runs the documented Queue service behaviours that the
// fake must share with the service: queue metadata, the recreate rules,
// and every bound of Put, Get and Update Message.
func runQueueFidelity(t *testing.T, env backend) {
	ctx := t.Context()

	t.Run("queue metadata is kept; create again: same 204, other 409 QueueAlreadyExists", func(t *testing.T) {
		svc := env.QueueService(t)
		name := strings.ToLower(testenv.UniqueName("meta"))
		q := svc.NewQueueClient(name)
		t.Cleanup(func() { _, _ = q.Delete(context.Background(), nil) })
		meta := map[string]*string{"owner": to.Ptr("billing"), "tier": to.Ptr("2")}
		if status := createStatus(t, q, meta); status != queueCreatedStatus {
			t.Fatalf("create: status %d", status)
		}
		p, err := q.GetProperties(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := lowerMeta(p.Metadata); got["owner"] != "billing" || got["tier"] != "2" || len(got) != 2 {
			t.Fatalf("metadata = %v", got)
		}
		if status := createStatus(t, q, meta); status != http.StatusNoContent {
			t.Fatalf("create again with the same metadata: status %d, want 204", status)
		}
		_, err = q.Create(ctx, &azqueue.CreateOptions{Metadata: map[string]*string{"owner": to.Ptr("sales")}})
		wantCode(t, err, http.StatusConflict, "QueueAlreadyExists")
		if _, err := q.SetMetadata(ctx, &azqueue.SetMetadataOptions{Metadata: map[string]*string{"owner": to.Ptr("sales")}}); err != nil {
			t.Fatal(err)
		}
		p, err = q.GetProperties(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := lowerMeta(p.Metadata); got["owner"] != "sales" || len(got) != 1 {
			t.Fatalf("metadata after SetMetadata = %v, want owner=sales only", got)
		}
	})

	t.Run("queue: message size up to 64 KiB of text", func(t *testing.T) {
		q := env.NewQueue(t, nil)
		if _, err := q.EnqueueMessage(ctx, strings.Repeat("x", maxQueueMessageBytes), nil); err != nil {
			t.Fatalf("a 64 KiB message: %v", err)
		}
		_, err := q.EnqueueMessage(ctx, strings.Repeat("x", maxQueueMessageBytes+1), nil)
		wantCode(t, err, http.StatusRequestEntityTooLarge, "RequestBodyTooLarge")
		if p, err := q.GetProperties(ctx, nil); err != nil || *p.ApproximateMessagesCount != 1 {
			t.Fatalf("the refused message was stored: %v %v", p.ApproximateMessagesCount, err)
		}
	})

	t.Run("queue: NumberOfMessages is 1..32", func(t *testing.T) {
		q := env.NewQueue(t, nil)
		for range maxDequeueMessages + 1 {
			if _, err := q.EnqueueMessage(ctx, "m", nil); err != nil {
				t.Fatal(err)
			}
		}
		// Azurite refuses 0 and -1 with a bare 400 (its request schema
		// rejects them before its handler), so the code is checked only
		// where the backend sends one.
		for _, n := range []int32{0, maxDequeueMessages + 1, -1} {
			_, err := q.DequeueMessages(ctx, &azqueue.DequeueMessagesOptions{NumberOfMessages: to.Ptr(n)})
			wantBadParam(t, err, "OutOfRangeQueryParameterValue")
			_, err = q.PeekMessages(ctx, &azqueue.PeekMessagesOptions{NumberOfMessages: to.Ptr(n)})
			wantBadParam(t, err, "OutOfRangeQueryParameterValue")
		}
		p, err := q.PeekMessages(ctx, &azqueue.PeekMessagesOptions{NumberOfMessages: to.Ptr(int32(maxDequeueMessages))})
		if err != nil || len(p.Messages) != maxDequeueMessages {
			t.Fatalf("peek 32: %d %v", len(p.Messages), err)
		}
		d, err := q.DequeueMessages(ctx, &azqueue.DequeueMessagesOptions{NumberOfMessages: to.Ptr(int32(maxDequeueMessages))})
		if err != nil || len(d.Messages) != maxDequeueMessages {
			t.Fatalf("dequeue 32: %d %v", len(d.Messages), err)
		}
	})

	t.Run("queue: visibility timeout bounds (put 0..7 d, get 1 s..7 d, update 0..7 d)", func(t *testing.T) {
		q := env.NewQueue(t, nil)
		for _, vt := range []int32{-1, maxVisibility + 1} {
			_, err := q.EnqueueMessage(ctx, "m", &azqueue.EnqueueMessageOptions{VisibilityTimeout: to.Ptr(vt)})
			wantCode(t, err, http.StatusBadRequest, "OutOfRangeQueryParameterValue")
		}
		for _, vt := range []int32{0, maxVisibility + 1} {
			_, err := q.DequeueMessages(ctx, &azqueue.DequeueMessagesOptions{VisibilityTimeout: to.Ptr(vt)})
			wantCode(t, err, http.StatusBadRequest, "OutOfRangeQueryParameterValue")
		}
		if _, err := q.EnqueueMessage(ctx, "m", &azqueue.EnqueueMessageOptions{VisibilityTimeout: to.Ptr(int32(0))}); err != nil {
			t.Fatalf("put with visibility 0: %v", err)
		}
		d, err := q.DequeueMessages(ctx, &azqueue.DequeueMessagesOptions{VisibilityTimeout: to.Ptr(int32(maxVisibility))})
		if err != nil || len(d.Messages) != 1 {
			t.Fatalf("get with visibility 7 days: %v %v", d.Messages, err)
		}
		m := d.Messages[0]
		_, err = q.UpdateMessage(ctx, *m.MessageID, *m.PopReceipt, "m", &azqueue.UpdateMessageOptions{VisibilityTimeout: to.Ptr(int32(maxVisibility + 1))})
		wantCode(t, err, http.StatusBadRequest, "OutOfRangeQueryParameterValue")
		if _, err := q.UpdateMessage(ctx, *m.MessageID, *m.PopReceipt, "m", &azqueue.UpdateMessageOptions{VisibilityTimeout: to.Ptr(int32(maxVisibility))}); err != nil {
			t.Fatalf("update with visibility 7 days: %v", err)
		}
		// A message may not become visible after it expires.
		_, err = q.EnqueueMessage(ctx, "m", &azqueue.EnqueueMessageOptions{TimeToLive: to.Ptr(int32(60)), VisibilityTimeout: to.Ptr(int32(60))})
		wantCode(t, err, http.StatusBadRequest, "InvalidQueryParameterValue")
	})

	t.Run("queue: time to live (positive or -1) and expiry", func(t *testing.T) {
		q := env.NewQueue(t, nil)
		for _, ttl := range []int32{0, -2} { // Azurite: a bare 400 for -2
			_, err := q.EnqueueMessage(ctx, "m", &azqueue.EnqueueMessageOptions{TimeToLive: to.Ptr(ttl)})
			wantBadParam(t, err, "InvalidQueryParameterValue")
		}
		never, err := q.EnqueueMessage(ctx, "forever", &azqueue.EnqueueMessageOptions{TimeToLive: to.Ptr(int32(-1))})
		if err != nil {
			t.Fatal(err)
		}
		if exp := *never.Messages[0].ExpirationTime; exp.Before(time.Now().AddDate(50, 0, 0)) {
			t.Fatalf("ttl -1 expires at %v, want never (9999-12-31)", exp)
		}
		if _, err := q.EnqueueMessage(ctx, "brief", &azqueue.EnqueueMessageOptions{TimeToLive: to.Ptr(int32(1))}); err != nil {
			t.Fatal(err)
		}
		env.Advance(2 * time.Second)
		p, err := q.PeekMessages(ctx, &azqueue.PeekMessagesOptions{NumberOfMessages: to.Ptr(int32(32))})
		if err != nil || len(p.Messages) != 1 || *p.Messages[0].MessageText != "forever" {
			t.Fatalf("after the ttl: %d messages %v", len(p.Messages), err)
		}
	})
}

// wantBadParam wants a 400 whose error code, when the backend sends one, is code.
func wantBadParam(t *testing.T, err error, code string) {
	t.Helper()
	var re *azcore.ResponseError
	if !errors.As(err, &re) || re.StatusCode != http.StatusBadRequest || (re.ErrorCode != "" && re.ErrorCode != code) {
		t.Fatalf("got %v, want 400 %s", err, code)
	}
}

// createStatus creates q with meta and returns the status code the
// service answered (201 new, 204 existing with the same metadata).
func createStatus(t *testing.T, q *azqueue.QueueClient, meta map[string]*string) int {
	t.Helper()
	var resp *http.Response
	if _, err := q.Create(policy.WithCaptureResponse(t.Context(), &resp), &azqueue.CreateOptions{Metadata: meta}); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode
}

// lowerMeta flattens returned metadata, whose key case the SDK derives
// from HTTP header names.
func lowerMeta(m map[string]*string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		if v != nil {
			out[strings.ToLower(k)] = *v
		}
	}
	return out
}
