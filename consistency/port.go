package consistency

import (
	"context"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
)

// Queue is the part of *azqueue.QueueClient the worker and senders use:
// pass the client you already have.
type Queue interface {
	EnqueueMessage(ctx context.Context, content string, o *azqueue.EnqueueMessageOptions) (azqueue.EnqueueMessagesResponse, error)
	DequeueMessages(ctx context.Context, o *azqueue.DequeueMessagesOptions) (azqueue.DequeueMessagesResponse, error)
	UpdateMessage(ctx context.Context, messageID string, popReceipt string, content string, o *azqueue.UpdateMessageOptions) (azqueue.UpdateMessageResponse, error)
	DeleteMessage(ctx context.Context, messageID string, popReceipt string, o *azqueue.DeleteMessageOptions) (azqueue.DeleteMessageResponse, error)
}

// The official queue client satisfies the port with no adapter.
var _ Queue = (*azqueue.QueueClient)(nil)

// BlobStore keeps the blobs this package writes and reads by container and
// name: payloads too large for a message (SenderOptions.Blobs,
// WorkerOptions.Blobs), and BlobTarget's entities.
//
// It names no type of the Blob SDK on purpose: azblob pulls in Apache
// Arrow, and a program that uses only queues and tables should not build
// either. It is not a second port to the Blob service: tablekit's one blob
// port is blobstore.Client (package consistency/blobstore), and
// blobstore.New(client) makes a BlobStore of an *azblob.Client. An
// implementation keeps the service's error (*azcore.ResponseError) in the
// chain of the errors it returns.
//
// Its methods take no options parameter: BlobStore is a port
// that blobstore.Store or the user implements and this package alone calls,
// so an options struct would be a value every implementation ignores.
type BlobStore interface {
	// Put writes data to the blob, replacing what is there.
	Put(ctx context.Context, container, name string, data []byte) error
	// Get reads the whole blob.
	Get(ctx context.Context, container, name string) ([]byte, error)
	// Delete removes the blob.
	Delete(ctx context.Context, container, name string) error
}
