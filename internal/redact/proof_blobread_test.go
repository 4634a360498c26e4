package redact_test

import (
	"context"
	"io"

	"github.com/tablekit/tablekit/internal/blobread"
)

// The blob reader's caller: it reads the proof's blob through the failing
// transport, so its error text must hold no credential.
func init() {
	register(map[string]caller{
		"internal/blobread.Read": func(ctx context.Context, e *env) error {
			b, err := blobread.Read(ctx, e.blobs, "proof", "b", &blobread.Options{MaxInflated: 1 << 20, SniffGzip: true})
			if err != nil {
				return err
			}
			defer b.Body.Close()
			_, err = io.ReadAll(b.Body)
			return err
		},
	})
}
