package consistency

import (
	"errors"
	"net/http"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
)

// The service's codes for a missing queue and container (Queue and Blob
// service error codes). table.IsNotFound does not match them: a missing
// queue or container is a deployment problem, not a missing message or blob.
const (
	codeQueueNotFound     = "QueueNotFound"
	codeContainerNotFound = "ContainerNotFound"
)

// IsQueueNotFound reports whether err holds the service's answer that the
// queue does not exist (404 QueueNotFound): create it, or fix its name.
func IsQueueNotFound(err error) bool { return hasCode(err, codeQueueNotFound) }

// IsContainerNotFound reports whether err holds the service's answer that
// the blob container does not exist (404 ContainerNotFound).
func IsContainerNotFound(err error) bool { return hasCode(err, codeContainerNotFound) }

func hasCode(err error, code string) bool {
	var re *azcore.ResponseError
	return errors.As(err, &re) && re.StatusCode == http.StatusNotFound && re.ErrorCode == code
}
