package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/tablekit/tablekit/patterns"
)

// Sweeper is what "large sweep" needs of a large entity: the Sweep of
// patterns.LargeEntity.
type Sweeper interface {
	Sweep(ctx context.Context, grace time.Duration, opts *patterns.LargeEntitySweepOptions) (int, error)
}

// LargeRegistration is a large entity under the name the command line
// uses for it.
type LargeRegistration struct {
	name string
	open func(blobs patterns.BlobStore) (Sweeper, error)
}

// Large registers a large entity as -large name for "large sweep". open
// builds it over the blob store the command gives it: the account's blob
// client, or for -dry-run one that lists and reads but only records the
// deletes. LargeEntity is typed by its Go struct, which only the program
// that defines it knows, hence a function rather than flags:
//
//	cli.Large("photos", func(b patterns.BlobStore) (cli.Sweeper, error) {
//		return patterns.NewLargeEntity[Employee](client, b, "photos", []string{"Photo"}, 0)
//	})
func Large(name string, open func(blobs patterns.BlobStore) (Sweeper, error)) LargeRegistration {
	return LargeRegistration{name: name, open: open}
}

// dryRunBlobs lists and reads through the real client and records each
// delete instead of sending it.
type dryRunBlobs struct {
	*azblob.Client
	mu    sync.Mutex
	would []string
}

// DeleteBlob records the blob and sends nothing.
func (d *dryRunBlobs) DeleteBlob(_ context.Context, container, name string, _ *azblob.DeleteBlobOptions) (azblob.DeleteBlobResponse, error) {
	d.mu.Lock()
	d.would = append(d.would, container+"/"+name)
	d.mu.Unlock()
	return azblob.DeleteBlobResponse{}, nil
}

func largeCommands() []command {
	return []command{{
		name:    "large sweep",
		summary: "delete the blobs of large entities that no entity names any more (exit 1 when some were found)",
		usage: `
Lists the container's blobs; for each blob older than -grace, reads the
entity its name points to and deletes the blob if that entity does not
name it. Use at least 10m (patterns.MinSweepGrace) while writes may be in
flight. -dry-run lists and reads the same but deletes nothing.

cmd/tablekit registers no large entity: LargeEntity is typed by your Go
struct. Build your own operator binary with package
github.com/tablekit/tablekit/cli and register it with cli.Large.

examples:
  myops large sweep -large photos -dry-run
  myops -stats large sweep -large photos -grace 1h -json`,
		flags: func(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
			name := fs.String("large", "", "the registered large entity `name` (required)")
			grace := fs.Duration("grace", patterns.MinSweepGrace, "leave blobs younger than this (in-flight writes)")
			dry := fs.Bool("dry-run", false, "list what would be deleted; delete nothing")
			return func(ctx context.Context, c *cli, args []string) error {
				if len(args) != 0 {
					return usagef("unexpected arguments %q", args)
				}
				if len(c.large) == 0 {
					return usagef("no large entity is registered in this binary: build your own with package github.com/tablekit/tablekit/cli and cli.Large")
				}
				var reg *LargeRegistration
				var names []string
				for i, r := range c.large {
					names = append(names, r.name)
					if r.name == *name {
						reg = &c.large[i]
					}
				}
				if reg == nil {
					return usagef("-large %q: want one of %s", *name, strings.Join(names, ", "))
				}
				if *grace < 0 {
					return usagef("-grace %v: want 0 or more", *grace)
				}
				a, err := c.open()
				if err != nil {
					return err
				}
				client, err := a.blobs()
				if err != nil {
					return err
				}
				var store patterns.BlobStore = client
				dryStore := &dryRunBlobs{Client: client}
				if *dry {
					store = dryStore
				}
				sw, err := reg.open(store)
				if err != nil {
					return err
				}
				n, err := sw.Sweep(ctx, *grace, nil)
				would := slices.Clip(dryStore.would)
				if would == nil {
					would = []string{}
				}
				found := n
				if *dry {
					n = 0 // Sweep counted the deletes the dry-run store only recorded
					found = len(would)
				}
				c.emit(map[string]any{"deleted": n, "dryRun": *dry, "wouldDelete": would}, func(w io.Writer) {
					if *dry {
						for _, b := range would {
							fmt.Fprintf(w, "would delete %s\n", b)
						}
						fmt.Fprintf(w, "%d orphan blobs found; nothing deleted (-dry-run)\n", len(would))
						return
					}
					fmt.Fprintf(w, "%d orphan blobs deleted\n", n)
				})
				if err != nil {
					return err
				}
				if found > 0 {
					return errProblemsFound
				}
				return nil
			}
		},
	}}
}
