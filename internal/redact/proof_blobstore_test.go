package redact_test

import (
	"context"
	"io"

	"github.com/tablekit/tablekit/consistency/blobstore"
)

// The blob reader's caller: it reads the proof's blob through the failing
// transport, so its error text must hold no credential.
func init() {
	register(map[string]caller{
		"blobstore.Read": func(ctx context.Context, e *env) error {
			b, err := blobstore.Read(ctx, e.blobs, "proof", "b", &blobstore.ReadOptions{MaxInflated: 1 << 20, SniffGzip: true})
			if err != nil {
				return err
			}
			defer b.Body.Close()
			_, err = io.ReadAll(b.Body)
			return err
		},
	})
}
