package patterns

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/internal/rowkind"
	"github.com/tablekit/tablekit/internal/tableio"
	"github.com/tablekit/tablekit/internal/tuple"
	"github.com/tablekit/tablekit/internal/wirepolicy"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/table"
)

// The index core: what every index of this package does the same way.
// A copy is an entity of its own, written whole (Replace, never Merge), so
// a property the primary loses leaves the copy too; it carries
// indexOfProperty, the reference to its owner, so a copy is removed only
// while it still belongs to the primary that no longer wants it, and
// verify can tell copies from primaries wherever they live.

// indexOfProperty is the property every index copy carries: the reference
// to the primary entity it copies, the tuple of its keys (ownerRef), so
// copies can be verified and repaired.
const indexOfProperty = rowkind.IndexOf

// ownerRef names a primary in its copies and lists, for every index kind:
// the tuple of its keys (the encoding of keys.EncodeTuple). It is stored
// as a property, not a key, so it has no key's length bound: two keys that
// are each valid may encode past one key's 512 units together.
func ownerRef(pk, rk string) string {
	return tuple.Encode(pk, rk)
}

// maxMessageKeyBytes is consistency's bound on a message's idempotency key
// (1 KiB; consistency.ErrBadKey).
const maxMessageKeyBytes = 1 << 10

// messageKey is the idempotency key of a message about the primary pk/rk:
// its reference, or, when that passes the key bound (keys near the
// service's maximum), the reference's SHA-256, so that every primary with
// valid keys can be written with its messages.
func messageKey(pk, rk string) string {
	ref := ownerRef(pk, rk)
	if len(ref) <= maxMessageKeyBytes {
		return ref
	}
	sum := sha256.Sum256([]byte(ref))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// ownerKeys reads an owner reference back into the primary's keys.
func ownerKeys(ref string) (pk, rk string, ok bool) {
	parts, err := keys.DecodeTuple(ref)
	if err != nil || len(parts) != 2 {
		return "", "", false
	}
	return parts[0], parts[1], true
}

// ownerRowKey is the RowKey of the owner that ref names in partition pk.
// A copy that names its owner by RowKey alone (not the tuple) is read
// as its partition's; Verify reports it stale and Repair rewrites it with
// the tuple.
func ownerRowKey(ref, pk string) string {
	if p, rk, ok := ownerKeys(ref); ok && p == pk {
		return rk
	}
	return ref
}

// copyEntity is v's copy at (pk, rk): the properties v is stored with, only
// those of project when it is not nil, and indexOfProperty naming owner.
func copyEntity[T any](tbl *table.Table[T], v *T, project map[string]bool, pk, rk, owner string) (*table.Entity, error) {
	// Clear properties only: a sealed value is bound to the primary's keys
	// and would not open under the copy's (see table.Encryption).
	e, err := tableio.For(tbl).ClearEntity(v)
	if err != nil {
		return nil, err
	}
	if project != nil {
		for name := range e.Properties {
			if !project[name] {
				delete(e.Properties, name)
			}
		}
	}
	e.Meta = table.Meta{PartitionKey: pk, RowKey: rk}
	e.Set(indexOfProperty, table.ValueOf(owner))
	return e, nil
}

// ownerOf is the owner reference of a copy; false for an entity that is no
// copy (a primary, or any other row).
func ownerOf(e *table.Entity) (string, bool) {
	v, ok := e.Get(indexOfProperty)
	if !ok {
		return "", false
	}
	return v.AsString()
}

// fromCopy decodes a copy into T under its primary's keys, with no ETag:
// the copy's version is not the primary's.
func fromCopy[T any](tbl *table.Table[T], e *table.Entity, pk, rk string) (*T, error) {
	v, err := tableio.For(tbl).FromClearEntity(e)
	if err != nil {
		return nil, err
	}
	m := tbl.Meta(v)
	m.PartitionKey, m.RowKey, m.ETag = pk, rk, ""
	return v, nil
}

// removeIfOwned deletes the copy at (pk, rk) only while it belongs to
// owner, guarded by the ETag it was read at: another primary may have
// taken its value since, and its copy is not ours to remove. Two requests
// (one when the copy is gone or not ours). A 412 means the copy changed
// in between; the error says so and the caller runs again.
func removeIfOwned(ctx context.Context, copies *table.Table[table.Entity], pk, rk, owner string) (bool, error) {
	c, err := copies.Get(ctx, pk, rk, nil)
	if table.Is(err, table.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if of, _ := ownerOf(c); of != owner {
		return false, nil
	}
	etag := c.ETag
	err = copies.Delete(ctx, pk, rk, &table.DeleteOptions{IfMatch: &etag, IfExists: true})
	if table.Is(err, table.ErrPreconditionFailed) {
		return false, fmt.Errorf("patterns: the copy (%q, %q) changed while being removed; run again: %w", pk, rk, err)
	}
	return err == nil, err
}

// quoteGuard refuses, at an entity's first write, keys that its later
// writes could not send: an index keeps an entity's rows with batch
// updates and upserts, and on a client without tablekit's policy the SDK
// cannot send one whose keys hold a single quote (batch.ErrQuoteInKey).
// Adds would go through, and the entity could then never change. It asks
// each client once (wirepolicy.HasPath: nothing leaves the process) and
// only for a key that holds a quote.
type quoteGuard struct {
	mu  sync.Mutex
	has map[table.Client]bool
}

// quotedKey is one key a write stores and later writes update: a PartitionKey
// or a RowKey, and the client of its table.
type quotedKey struct {
	client table.Client
	field  string // "PartitionKey", "RowKey", or an index's name
	key    string
}

// check refuses the first of ks that holds a quote on a client without
// tablekit's policy, with a *table.InputError whose rule is
// batch.ErrQuoteInKey (its text says to build the client with
// table.ClientOptions).
func (g *quoteGuard) check(op string, ks ...quotedKey) error {
	for _, k := range ks {
		if !strings.ContainsRune(k.key, '\'') || g.wirePath(k.client) {
			continue
		}
		return &table.InputError{Op: op, Field: k.field, Rule: batch.ErrQuoteInKey,
			Detail: fmt.Sprintf("%q: the entity's later changes are batch updates on this key", k.key)}
	}
	return nil
}

func (g *quoteGuard) wirePath(client table.Client) bool {
	if !reflect.TypeOf(client).Comparable() {
		return wirepolicy.HasPath(client)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if has, ok := g.has[client]; ok {
		return has
	}
	if g.has == nil {
		g.has = map[table.Client]bool{}
	}
	has := wirepolicy.HasPath(client)
	g.has[client] = has
	return has
}

// RepairSummary is what a Repair found (its verify's summary) and did.
type RepairSummary struct {
	VerifySummary
	Transactions int
	Written      int // copies or index entities written (missing or stale)
	Deleted      int // orphan copies or emptied index entities deleted
}

// RepairOptions configure Model.Repair. nil means the defaults.
type RepairOptions struct {
	// VerifyOptions scope the verify that Repair runs and hear its issues
	// and progress, as for Model.Verify.
	VerifyOptions
	// PerTransaction caps the operations of one repair transaction, 2 to
	// 100; other values are refused before any request. Default (0): 100.
	PerTransaction int
}

// verifyOptions is the verify part of opts (nil for nil).
func (opts *RepairOptions) verifyOptions() *VerifyOptions {
	if opts == nil {
		return nil
	}
	return &opts.VerifyOptions
}

// repairGroup is the repair of one primary (or one value's list): its
// operations, which must commit together.
type repairGroup struct {
	ops              []batch.Op
	written, deleted int
}

// checkRepairOptions refuses a PerTransaction outside its documented range
// before any request: 0 is the default, else 2 (a group's smallest) to the
// service's 100 operations.
func checkRepairOptions(op string, opts *RepairOptions) error {
	if opts == nil || opts.PerTransaction == 0 {
		return nil
	}
	if opts.PerTransaction < 2 || opts.PerTransaction > batch.MaxOperations {
		return &table.InputError{Op: op, Field: "PerTransaction", Rule: table.ErrBadOption, Detail: fmt.Sprintf("%d is outside 2 to %d (the service's operations per transaction); 0 means the default", opts.PerTransaction, batch.MaxOperations)}
	}
	return nil
}

// repairPacked submits groups packed into transactions of at most
// PerTransaction operations (the groups of one partition share them). If
// a packed transaction fails because one of its entities changed (412, or
// 404 when it is gone, or 409 when it was created), its groups are sent
// one by one, so the others are still repaired; a failing service is not
// retried. Every group's own guard makes a concurrent change fail its
// repair instead of writing stale data: Verify again.
func repairPacked(ctx context.Context, client table.Client, groups []repairGroup, opts *RepairOptions) (RepairSummary, error) {
	per := batch.MaxOperations
	if opts != nil && opts.PerTransaction >= 2 && opts.PerTransaction < per {
		per = opts.PerTransaction
	}
	var sum RepairSummary
	submit := func(gs []repairGroup) error {
		tx := batch.NewTransaction(nil)
		for _, g := range gs {
			for _, op := range g.ops {
				if err := tx.Append(op); err != nil {
					return err
				}
			}
		}
		if _, err := tx.Submit(ctx, client, nil); err != nil {
			return err
		}
		sum.Transactions++
		for _, g := range gs {
			sum.Written += g.written
			sum.Deleted += g.deleted
		}
		return nil
	}
	var errs []error
	for i := 0; i < len(groups); {
		j, n := i, 0
		// A transaction holds one partition: groups of several share one
		// only while they are of the same partition.
		pk := groups[i].ops[0].PartitionKey()
		for j < len(groups) && (j == i || n+len(groups[j].ops) <= per && groups[j].ops[0].PartitionKey() == pk) {
			n += len(groups[j].ops)
			j++
		}
		if err := submit(groups[i:j]); err != nil {
			changed := table.Is(err, table.ErrPreconditionFailed) || table.Is(err, table.ErrNotFound) || table.Is(err, table.ErrAlreadyExists)
			if j-i == 1 || !changed {
				errs = append(errs, err)
			} else {
				for _, g := range groups[i:j] { // one changed entity must not hold back the rest
					if err := submit([]repairGroup{g}); err != nil {
						errs = append(errs, err)
					}
				}
			}
		}
		i = j
	}
	return sum, errors.Join(errs...)
}

// IndexIssue is one disagreement between a primary entity and its index
// rows (for a list: between an entity and its value's ID list, where Copy
// is the RowKey of the index entity concerned, or the value).
type IndexIssue struct {
	Kind         IssueKind
	Index        string // the declared index's name
	PartitionKey string // the index row's PartitionKey
	// PrimaryPartitionKey and Primary are the keys of the primary the
	// issue is about: the owner that lacks its row or has a stale one,
	// or the owner an orphan names ("" for a row that names none).
	PrimaryPartitionKey string
	Primary             string
	Copy                string      // the index row's RowKey
	CopyETag            azcore.ETag // the index row's version, when it exists
}

// verifyRange is what one range of an index kind's verify found (a
// partition, or a page of primaries or of index rows), with what that
// kind's repair of the range needs; it is dropped once handled.
type verifyRange struct {
	Index             string
	Partition         string // VerifyOptions.Partition
	Primaries, Copies int
	Missing           []IndexIssue
	Orphans           []IndexIssue
	Stale             []IndexIssue

	owner     any                         // the index whose verify made it
	primaries map[[2]string]*table.Entity // by keys, as verify read them, for repair
	lists     map[[2]string]*listState    // IndexEntities: by partition and value, for repair
	toFix     map[[2]string]bool          // InterPartitionIndex: primaries to converge
	orphans   []copyAddr                  // InterPartitionIndex: orphan copies
}

// OK reports a range whose index rows all agree with their primaries.
func (r *verifyRange) OK() bool { return len(r.Missing)+len(r.Orphans)+len(r.Stale) == 0 }
