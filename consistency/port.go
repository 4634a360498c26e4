package consistency

import (
	"context"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
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

// Blobs is the part of *azblob.Client used for payloads too large for a
// message and for blob targets.
type Blobs interface {
	UploadBuffer(ctx context.Context, containerName string, blobName string, buffer []byte, o *azblob.UploadBufferOptions) (azblob.UploadBufferResponse, error)
	DownloadStream(ctx context.Context, containerName string, blobName string, o *azblob.DownloadStreamOptions) (azblob.DownloadStreamResponse, error)
	DeleteBlob(ctx context.Context, containerName string, blobName string, o *azblob.DeleteBlobOptions) (azblob.DeleteBlobResponse, error)
}

// The official clients satisfy the ports with no adapter.
var (
	_ Queue = (*azqueue.QueueClient)(nil)
	_ Blobs = (*azblob.Client)(nil)
)
