package conformance

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
)

func wantCode(t *testing.T, err error, status int, code string) {
	t.Helper()
	var re *azcore.ResponseError
	if !errors.As(err, &re) || re.StatusCode != status || re.ErrorCode != code {
		t.Fatalf("got %v, want %d %s", err, status, code)
	}
}

// runQueueAndBlob runs the queue and blob behaviours package consistency
// relies on.
func runQueueAndBlob(t *testing.T, env backend) {
	ctx := t.Context()

	t.Run("queue: text round trip, dequeue count, visibility", func(t *testing.T) {
		q := env.NewQueue(t, nil)
		text := `{"t":"archive.v1","p":{"name":"<Jones & Co> \"ü😀\""}}`
		if _, err := q.EnqueueMessage(ctx, text, nil); err != nil {
			t.Fatal(err)
		}
		d, err := q.DequeueMessages(ctx, &azqueue.DequeueMessagesOptions{VisibilityTimeout: to.Ptr(int32(30))})
		if err != nil || len(d.Messages) != 1 {
			t.Fatalf("dequeue: %v %v", d.Messages, err)
		}
		m := d.Messages[0]
		if *m.MessageText != text || *m.DequeueCount != 1 || m.TimeNextVisible.Before(time.Now().Add(20*time.Second)) {
			t.Fatalf("message = %q, count %d, visible %v", *m.MessageText, *m.DequeueCount, m.TimeNextVisible)
		}
		if d, _ := q.DequeueMessages(ctx, nil); len(d.Messages) != 0 {
			t.Fatal("a dequeued message was visible again before its timeout")
		}
		// Update with visibility 0 makes it visible at once, with a new receipt.
		u, err := q.UpdateMessage(ctx, *m.MessageID, *m.PopReceipt, text, &azqueue.UpdateMessageOptions{VisibilityTimeout: to.Ptr(int32(0))})
		if err != nil || *u.PopReceipt == *m.PopReceipt {
			t.Fatalf("update: %v", err)
		}
		d2, err := q.DequeueMessages(ctx, nil)
		if err != nil || len(d2.Messages) != 1 || *d2.Messages[0].DequeueCount != 2 {
			t.Fatalf("second dequeue: %v %v", d2.Messages, err)
		}
		// Only the newest pop receipt works: the service answers a stale one
		// as if the message were gone (404 MessageNotFound), not with
		// PopReceiptMismatch (Delete Message, Update Message REST docs).
		status, code := http.StatusNotFound, "MessageNotFound"
		if !env.Has(t, CapStalePopReceiptNotFound) {
			status, code = http.StatusBadRequest, "PopReceiptMismatch"
		}
		_, err = q.DeleteMessage(ctx, *m.MessageID, *u.PopReceipt, nil)
		wantCode(t, err, status, code)
		_, err = q.UpdateMessage(ctx, *m.MessageID, *m.PopReceipt, text, &azqueue.UpdateMessageOptions{VisibilityTimeout: to.Ptr(int32(0))})
		wantCode(t, err, status, code)
		if _, err := q.DeleteMessage(ctx, *m.MessageID, *d2.Messages[0].PopReceipt, nil); err != nil {
			t.Fatal(err)
		}
		_, err = q.DeleteMessage(ctx, *m.MessageID, *d2.Messages[0].PopReceipt, nil)
		wantCode(t, err, http.StatusNotFound, "MessageNotFound")
	})

	t.Run("queue: limits", func(t *testing.T) {
		q := env.NewQueue(t, nil)
		for i := 0; i < 40; i++ {
			if _, err := q.EnqueueMessage(ctx, "m", nil); err != nil {
				t.Fatal(err)
			}
		}
		d, err := q.DequeueMessages(ctx, &azqueue.DequeueMessagesOptions{NumberOfMessages: to.Ptr(int32(32))})
		if err != nil || len(d.Messages) != 32 {
			t.Fatalf("dequeue 32: %d %v", len(d.Messages), err)
		}
		_, err = q.DequeueMessages(ctx, &azqueue.DequeueMessagesOptions{NumberOfMessages: to.Ptr(int32(33))})
		wantCode(t, err, http.StatusBadRequest, "OutOfRangeQueryParameterValue")
		_, err = q.DequeueMessages(ctx, &azqueue.DequeueMessagesOptions{VisibilityTimeout: to.Ptr(int32(0))})
		wantCode(t, err, http.StatusBadRequest, "OutOfRangeQueryParameterValue")
		if _, err := q.EnqueueMessage(ctx, strings.Repeat("x", 64*1024), nil); err != nil {
			t.Fatalf("a 64 KiB message: %v", err)
		}
		_, err = q.EnqueueMessage(ctx, strings.Repeat("x", 64*1024+1), nil)
		wantCode(t, err, http.StatusRequestEntityTooLarge, "RequestBodyTooLarge")
	})

	t.Run("queue: a dequeued message reappears after its visibility timeout", func(t *testing.T) {
		q := env.NewQueue(t, nil)
		if _, err := q.EnqueueMessage(ctx, "again", nil); err != nil {
			t.Fatal(err)
		}
		d, _ := q.DequeueMessages(ctx, &azqueue.DequeueMessagesOptions{VisibilityTimeout: to.Ptr(int32(1))})
		if len(d.Messages) != 1 {
			t.Fatal("no message")
		}
		env.Advance(time.Second) // the visibility timeout: at once on the fake
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			d2, err := q.DequeueMessages(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(d2.Messages) == 1 {
				if *d2.Messages[0].DequeueCount != 2 {
					t.Fatalf("dequeue count %d", *d2.Messages[0].DequeueCount)
				}
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
		t.Fatal("the message never reappeared")
	})

	t.Run("blob: put, get, conditions, delete", func(t *testing.T) {
		c, container := env.NewContainer(t, nil)
		data := []byte("EmployeeIDs: 000152, 000223")
		up, err := c.UploadBuffer(ctx, container, "lname/Jones", data, nil)
		if err != nil || up.ETag == nil {
			t.Fatalf("upload: %v", err)
		}
		get, err := c.DownloadStream(ctx, container, "lname/Jones", nil)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(get.Body)
		if !bytes.Equal(got, data) || *get.ETag != *up.ETag {
			t.Fatalf("download = %q, ETag %v vs %v", got, *get.ETag, *up.ETag)
		}
		// Create only if absent.
		_, err = c.UploadBuffer(ctx, container, "lname/Jones", data, &azblob.UploadBufferOptions{AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfNoneMatch: to.Ptr(azcore.ETagAny)}}})
		wantCode(t, err, http.StatusConflict, "BlobAlreadyExists")
		// Replace only at a known version.
		stale := azcore.ETag(`"0x8D000000000000"`)
		_, err = c.UploadBuffer(ctx, container, "lname/Jones", data, &azblob.UploadBufferOptions{AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfMatch: &stale}}})
		wantCode(t, err, http.StatusPreconditionFailed, "ConditionNotMet")
		up2, err := c.UploadBuffer(ctx, container, "lname/Jones", []byte("v2"), &azblob.UploadBufferOptions{AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfMatch: up.ETag}}})
		if err != nil || *up2.ETag == *up.ETag {
			t.Fatalf("conditional replace: %v", err)
		}
		if _, err := c.DeleteBlob(ctx, container, "lname/Jones", nil); err != nil {
			t.Fatal(err)
		}
		_, err = c.DownloadStream(ctx, container, "lname/Jones", nil)
		wantCode(t, err, http.StatusNotFound, "BlobNotFound")
		_, err = c.DeleteBlob(ctx, container, "lname/Jones", nil)
		wantCode(t, err, http.StatusNotFound, "BlobNotFound")
		_, err = c.DownloadStream(ctx, container+"x", "a", nil)
		wantCode(t, err, http.StatusNotFound, "ContainerNotFound")
	})

	// BlobLog tells its own upload from another writer's by the metadata of
	// a one-byte ranged read.
	t.Run("blob: a ranged read returns the metadata and only the range", func(t *testing.T) {
		c, container := env.NewContainer(t, nil)
		if _, err := c.UploadBuffer(ctx, container, "log/web1-000001.log", []byte("GET /orders 200\n"),
			&azblob.UploadBufferOptions{Metadata: map[string]*string{"sha256": to.Ptr("abc123")}}); err != nil {
			t.Fatal(err)
		}
		d, err := c.DownloadStream(ctx, container, "log/web1-000001.log", &azblob.DownloadStreamOptions{Range: azblob.HTTPRange{Count: 1}})
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(d.Body)
		d.Body.Close()
		var sha string
		for k, v := range d.Metadata {
			if strings.EqualFold(k, "sha256") && v != nil {
				sha = *v
			}
		}
		if string(body) != "G" || sha != "abc123" {
			t.Fatalf("ranged read: body %q, metadata %v", body, d.Metadata)
		}
	})
}
