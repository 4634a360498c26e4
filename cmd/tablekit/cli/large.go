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

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/tablekit/tablekit/consistency/blobstore"
	"github.com/tablekit/tablekit/internal/keyrules"
	"github.com/tablekit/tablekit/ledger"
	"github.com/tablekit/tablekit/patterns"
)

// sweeper is what "large sweep" needs of a large entity: the Sweep of
// patterns.LargeEntity, whatever its type parameter.
type sweeper interface {
	Sweep(ctx context.Context, grace time.Duration, opts *patterns.WriteOptions) (int, error)
}

// largeEntity is what Large registers: where a large entity's entities
// and blobs are, and how to build it over the account's clients.
type largeEntity struct {
	table, container string
	open             func(entities *aztables.Client, blobs blobstore.Client) (sweeper, error)
}

// Large registers a large entity as -large name for "large sweep": its
// entities in table, its blobs in container. open builds it over the two
// clients the command gives it, both of the one account the command line
// names (-conn or -account), so entities and blobs always come from the
// same account. LargeEntity is typed by its Go struct, which only the
// program that defines it knows, hence a function rather than flags:
//
//	cli.Large("photos", "Employees", "photos", func(t *aztables.Client, b blobstore.Client) (*patterns.LargeEntity[Employee], error) {
//		employees, err := table.New[Employee](t, opts) // the program's codec, encryption, tracing
//		if err != nil {
//			return nil, err
//		}
//		return patterns.NewLargeEntity[Employee](employees, b, "photos", []string{"Photo"}, 0, nil)
//	})
//
// A sweep refuses to delete when open's entity reads did not go through
// the client it was given: reading another account's entities, it would
// take every blob for an orphan.
func Large[T any](name, table, container string, open func(entities *aztables.Client, blobs blobstore.Client) (*patterns.LargeEntity[T], error)) Registration {
	return Registration{name: name, large: &largeEntity{table: table, container: container, open: func(entities *aztables.Client, blobs blobstore.Client) (sweeper, error) {
		le, err := open(entities, blobs)
		if err == nil && le == nil {
			// A nil *LargeEntity in the interface would not compare nil.
			err = fmt.Errorf("cli: -large %s: its open function returned no large entity", name)
		}
		if err != nil {
			return nil, err
		}
		return le, nil
	}}}
}

// sweepBlobs lists and reads through the real client; DeleteBlob is
// recorded, and sent only when act is set.
type sweepBlobs struct {
	*azblob.Client
	act     bool
	mu      sync.Mutex
	deletes []string // sent and succeeded (act), or would be sent
}

func (d *sweepBlobs) DeleteBlob(ctx context.Context, container, name string, o *azblob.DeleteBlobOptions) (azblob.DeleteBlobResponse, error) {
	if d.act {
		resp, err := d.Client.DeleteBlob(ctx, container, name, o)
		if err != nil {
			return resp, err
		}
		d.mu.Lock()
		d.deletes = append(d.deletes, container+"/"+name)
		d.mu.Unlock()
		return resp, nil
	}
	d.mu.Lock()
	d.deletes = append(d.deletes, container+"/"+name)
	d.mu.Unlock()
	return azblob.DeleteBlobResponse{}, nil
}

// largeOutput is the -json output of large sweep.
type largeOutput struct {
	DryRun bool `json:"dryRun"`
	// Deleted lists the blobs deleted (-yes) or that would be ("container/name").
	Deleted []string `json:"deleted"`
	// TooYoung lists the blobs left because they are younger than -grace:
	// a write may still be about to name them.
	TooYoung []string `json:"tooYoung"`
}

func largeCommands() []command {
	return []command{{
		name:    "large sweep",
		summary: "list the blobs of large entities that no entity names any more; with -yes, delete them",
		usage: `
Lists the container's blobs; for each blob older than -grace, reads the
entity its name points to; a blob that entity does not name is an orphan.
Without -yes nothing is deleted: the orphans are listed, with the blobs
left as too young. With -yes the orphans are deleted and listed. Use at
least 10m (patterns.MinSweepGrace) while writes may be in flight.

Entities and blobs are read from the one account -conn or -account names;
a registration whose entity reads do not go through the client the
command gives it is refused before anything is deleted.

-json: {"dryRun": bool, "deleted": ["container/name", ...], "tooYoung": [...]}.
Exit codes: 0 listed or swept (orphans found are not a failure); 1 a
request failed or the registration reads another account; 2 usage.

cmd/tablekit registers no large entity: LargeEntity is typed by your Go
struct. Build your own operator binary with package
github.com/tablekit/tablekit/cli and register it with cli.Large.

examples:
  myops large sweep -large photos
  myops large sweep -large photos -grace 1h -yes
  myops -stats large sweep -large photos -yes -json`,
		flags: func(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
			name := fs.String("large", "", "the registered large entity `name` (required)")
			grace := fs.Duration("grace", patterns.MinSweepGrace, "leave blobs younger than this (in-flight writes)")
			dry := fs.Bool("dry-run", false, "list what would be deleted; delete nothing (the default without -yes)")
			yes := fs.Bool("yes", false, "delete the orphans")
			return func(ctx context.Context, c *cli, args []string) error {
				if len(args) != 0 {
					return usagef("unexpected arguments %q", args)
				}
				if *dry && *yes {
					return usagef("-dry-run and -yes contradict each other")
				}
				if len(c.large) == 0 {
					return usagef("no large entity is registered in this binary: build your own with package github.com/tablekit/tablekit/cli and cli.Large")
				}
				var reg *largeEntity
				var names []string
				for _, r := range c.large {
					names = append(names, r.name)
					if r.name == *name {
						reg = r.large
					}
				}
				if reg == nil {
					return usagef("-large %q: want one of %s", *name, strings.Join(names, ", "))
				}
				if *grace < 0 {
					return usagef("-grace %v: want 0 or more", *grace)
				}
				if err := keyrules.ValidateContainerName(reg.container); err != nil {
					return usagef("large entity %q: container %q: %v", *name, reg.container, err)
				}
				a, err := c.open()
				if err != nil {
					return err
				}
				client, err := a.blobs()
				if err != nil {
					return err
				}
				entities, err := a.table(reg.table)
				if err != nil {
					return err
				}
				// Always a dry pass first: it finds the orphans, and shows
				// whether the registration reads its entities through the
				// account's client.
				started := time.Now()
				dryStore := &sweepBlobs{Client: client}
				sw, err := reg.open(entities, dryStore)
				if err != nil {
					return err
				}
				tableBefore := tableRequests(a.ledger)
				if _, err := sw.Sweep(ctx, *grace, nil); err != nil {
					return err
				}
				if len(dryStore.deletes) > 0 && tableRequests(a.ledger) == tableBefore {
					return fmt.Errorf("large entity %q read none of its entities through the account's table client (%s), yet would delete %d blobs: it reads another account's entities, and every blob would look orphaned; refused, nothing deleted (build it over the client cli.Large's open is given)", *name, reg.table, len(dryStore.deletes))
				}
				young, err := tooYoung(ctx, client, reg.container, *grace, started)
				if err != nil {
					return err
				}
				out := largeOutput{DryRun: !*yes, Deleted: nonNil(slices.Clip(dryStore.deletes)), TooYoung: young}
				if *yes {
					store := &sweepBlobs{Client: client, act: true}
					if sw, err = reg.open(entities, store); err != nil {
						return err
					}
					_, err = sw.Sweep(ctx, *grace, nil)
					out.Deleted = nonNil(slices.Clip(store.deletes))
					c.emitLarge(out)
					return err
				}
				c.emitLarge(out)
				return nil
			}
		},
	}}
}

// tooYoung lists the container's blobs modified within grace of now.
func tooYoung(ctx context.Context, client *azblob.Client, container string, grace time.Duration, now time.Time) ([]string, error) {
	out := []string{}
	pager := client.NewListBlobsFlatPager(container, nil)
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, it := range page.Segment.BlobItems {
			if it.Name != nil && it.Properties != nil && it.Properties.LastModified != nil && now.Sub(*it.Properties.LastModified) < grace {
				out = append(out, container+"/"+*it.Name)
			}
		}
	}
	return out, nil
}

func (c *cli) emitLarge(o largeOutput) {
	c.emit(o, func(w io.Writer) {
		verb := "deleted"
		if o.DryRun {
			verb = "would delete"
		}
		for _, b := range o.Deleted {
			fmt.Fprintf(w, "%s %s\n", verb, b)
		}
		for _, b := range o.TooYoung {
			fmt.Fprintf(w, "left %s: younger than -grace\n", b)
		}
		if o.DryRun {
			fmt.Fprintf(w, "%d orphan blobs found, %d left as too young; nothing deleted (add -yes to delete)\n", len(o.Deleted), len(o.TooYoung))
			return
		}
		fmt.Fprintf(w, "%d orphan blobs deleted, %d left as too young\n", len(o.Deleted), len(o.TooYoung))
	})
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// tableRequests counts the table requests l has seen.
func tableRequests(l *ledger.Ledger) int {
	n := 0
	for _, e := range l.Entries() {
		if e.Service == ledger.Table {
			n += e.Requests
		}
	}
	return n
}
