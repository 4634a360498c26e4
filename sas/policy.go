package sas

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/internal/redact"
	"github.com/tablekit/tablekit/table"
)

// maxPolicies is the most stored access policies (signed identifiers) a
// table, queue or container holds ("Define a stored access policy": "You
// can set a maximum of five access policies on a container, table, or
// queue at any given time").
const maxPolicies = 5

// Errors of the policy managers.
var (
	// ErrTooManyPolicies: the resource already holds the most policies
	// it may, five ("Define a stored access policy").
	ErrTooManyPolicies = errors.New("sas: too many stored access policies")
	// ErrPolicyExists: Create met a policy of the same ID.
	ErrPolicyExists = errors.New("sas: stored access policy already exists")
)

// permissions is what a stored access policy of each kind of resource
// grants: TablePermissions, QueuePermissions or BlobPermissions.
type permissions interface {
	TablePermissions | QueuePermissions | BlobPermissions
	String() string
}

// Policy is a stored access policy: a token that names its ID (the
// builders' Identifier) gets what the policy sets, and stops working when
// the policy is revoked. A field the policy sets must not be set again in
// the token ("Define a stored access policy").
// P is the resource's permissions type: TablePermissions,
// QueuePermissions or BlobPermissions.
type Policy[P permissions] struct {
	// ID is the signed identifier, 1 to 64 characters, unique on its resource.
	ID string
	// Start is when tokens of the policy become valid. Default (zero): the
	// policy leaves it to the token.
	Start time.Time
	// Expiry is when tokens of the policy stop working. Default (zero):
	// the policy leaves it to the token (which must then set it).
	Expiry time.Time
	// Permissions granted. Default (none): the policy leaves them to the token.
	Permissions P
}

func (p Policy[P]) validate(op string) error {
	if err := validateIdentifier(p.ID); err != nil {
		return withOp(err, op)
	}
	if !p.Start.IsZero() && !p.Expiry.IsZero() && !p.Expiry.After(p.Start) {
		return &table.InputError{Op: op, Field: "Expiry", Rule: table.ErrInvalidValue,
			Detail: fmt.Sprintf("expiry %s is not after start %s", p.Expiry.UTC().Format(timeFormat), p.Start.UTC().Format(timeFormat))}
	}
	return nil
}

// rawPolicy is a signed identifier as the three SDKs carry it.
type rawPolicy struct {
	id            string
	start, expiry *time.Time
	perms         *string
}

// aclStore reads and replaces one resource's signed identifiers.
type aclStore interface {
	// get returns the policies and what else the write must send back
	// unchanged (a container's public access level).
	get(ctx context.Context) ([]rawPolicy, any, error)
	set(ctx context.Context, ps []rawPolicy, keep any) error
}

// Policies manages the stored access policies of one table, queue or
// container. The service replaces a resource's policies as a whole and
// offers no condition on the write, so Create and Revoke read, change and
// write back the list: two managers changing the same resource at the
// same moment can lose one change. Keep one writer per resource.
type Policies[P permissions] struct {
	store aclStore
	parse func(string) (P, error)
	op    string
	// complete: every policy sets Start, Expiry and Permissions. "Define
	// a stored access policy" calls the three optional, but the Table
	// service's REST specification marks them required in Set Table ACL
	// and Azurite 3.37 answers 400 without them: a table policy that sets
	// all three works on both.
	complete bool
}

// tableACL is the part of *aztables.Client that manages its table's
// policies. The ports are unexported: a user passes the SDK client.
type tableACL interface {
	GetAccessPolicy(ctx context.Context, options *aztables.GetAccessPolicyOptions) (aztables.GetAccessPolicyResponse, error)
	SetAccessPolicy(ctx context.Context, options *aztables.SetAccessPolicyOptions) (aztables.SetAccessPolicyResponse, error)
}

// queueACL is the part of *azqueue.QueueClient that manages its queue's policies.
type queueACL interface {
	GetAccessPolicy(ctx context.Context, o *azqueue.GetAccessPolicyOptions) (azqueue.GetAccessPolicyResponse, error)
	SetAccessPolicy(ctx context.Context, o *azqueue.SetAccessPolicyOptions) (azqueue.SetAccessPolicyResponse, error)
}

// containerACL is the part of *container.Client that manages its container's policies.
type containerACL interface {
	GetAccessPolicy(ctx context.Context, o *container.GetAccessPolicyOptions) (container.GetAccessPolicyResponse, error)
	SetAccessPolicy(ctx context.Context, o *container.SetAccessPolicyOptions) (container.SetAccessPolicyResponse, error)
}

var (
	_ tableACL     = (*aztables.Client)(nil)
	_ queueACL     = (*azqueue.QueueClient)(nil)
	_ containerACL = (*container.Client)(nil)
)

// NewTablePolicies manages the policies of c's table; c is an
// *aztables.Client (or anything with its GetAccessPolicy and
// SetAccessPolicy). A table's policy
// must set Start, Expiry and Permissions, all three: the Table REST
// specification requires them and Azurite refuses a policy without them.
func NewTablePolicies(c tableACL) *Policies[TablePermissions] {
	return &Policies[TablePermissions]{store: tableStore{c}, parse: parseTablePermissions, op: "TablePolicies", complete: true}
}

// NewQueuePolicies manages the policies of c's queue; c is an
// *azqueue.QueueClient (or anything with its GetAccessPolicy and
// SetAccessPolicy).
func NewQueuePolicies(c queueACL) *Policies[QueuePermissions] {
	return &Policies[QueuePermissions]{store: queueStore{c}, parse: parseQueuePermissions, op: "QueuePolicies"}
}

// NewContainerPolicies manages the policies of c's container; c is a
// *container.Client (or anything with its GetAccessPolicy and
// SetAccessPolicy). The container's public access level is kept as it is.
func NewContainerPolicies(c containerACL) *Policies[BlobPermissions] {
	return &Policies[BlobPermissions]{store: containerStore{c}, parse: parseBlobPermissions, op: "ContainerPolicies"}
}

// ReadOptions configure the reads of this package without knobs of their
// own (Policies.List). There are none yet; pass nil.
type ReadOptions struct{}

// WriteOptions configure the writes of this package without knobs of
// their own (Policies.Create and Revoke). There are none yet; pass nil.
type WriteOptions struct{}

// List returns the resource's policies, in the service's order: one request.
func (m *Policies[P]) List(ctx context.Context, o *ReadOptions) ([]Policy[P], error) {
	ps, err := m.list(ctx)
	return ps, redact.Error(err) // a transport error names the URL, SAS token included
}

func (m *Policies[P]) list(ctx context.Context) ([]Policy[P], error) {
	raw, _, err := m.store.get(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Policy[P], 0, len(raw))
	for _, r := range raw {
		p := Policy[P]{ID: r.id}
		if r.start != nil {
			p.Start = *r.start
		}
		if r.expiry != nil {
			p.Expiry = *r.expiry
		}
		if r.perms != nil {
			if p.Permissions, err = m.parse(*r.perms); err != nil {
				return nil, fmt.Errorf("%s.List: policy %q: %w", m.op, r.id, err)
			}
		}
		out = append(out, p)
	}
	return out, nil
}

// Create adds policy p: two requests (read, write). A bad policy is
// refused before any request; a policy whose ID is taken gets
// ErrPolicyExists, and a sixth policy ErrTooManyPolicies, before the write.
// The service may take up to 30 seconds to apply it ("Set Table ACL").
func (m *Policies[P]) Create(ctx context.Context, p Policy[P], o *WriteOptions) error {
	return redact.Error(m.create(ctx, p)) // a transport error names the URL, SAS token included
}

func (m *Policies[P]) create(ctx context.Context, p Policy[P]) error {
	if err := p.validate(m.op + ".Create"); err != nil {
		return err
	}
	if m.complete {
		for _, f := range []struct {
			name  string
			unset bool
		}{{"Start", p.Start.IsZero()}, {"Expiry", p.Expiry.IsZero()}, {"Permissions", p.Permissions.String() == ""}} {
			if f.unset {
				return &table.InputError{Op: m.op + ".Create", Field: f.name, Rule: table.ErrInvalidValue,
					Detail: "a table's stored access policy sets Start, Expiry and Permissions (Set Table ACL)"}
			}
		}
	}
	raw, keep, err := m.store.get(ctx)
	if err != nil {
		return err
	}
	if slices.ContainsFunc(raw, func(r rawPolicy) bool { return r.id == p.ID }) {
		return fmt.Errorf("%s.Create %q: %w", m.op, p.ID, ErrPolicyExists)
	}
	if len(raw) >= maxPolicies {
		return fmt.Errorf("%s.Create %q: %w: the resource holds %d, the service's limit", m.op, p.ID, ErrTooManyPolicies, len(raw))
	}
	r := rawPolicy{id: p.ID}
	if !p.Start.IsZero() {
		st := p.Start.UTC().Truncate(time.Second)
		r.start = &st
	}
	if !p.Expiry.IsZero() {
		se := p.Expiry.UTC().Truncate(time.Second)
		r.expiry = &se
	}
	if s := p.Permissions.String(); s != "" {
		r.perms = &s
	}
	return m.store.set(ctx, append(raw, r), keep)
}

// Revoke removes the policy named id, so that every token that references
// it stops working (after up to 30 seconds on the service). It reports
// whether the policy was there: one request when it was not, two when it was.
func (m *Policies[P]) Revoke(ctx context.Context, id string, o *WriteOptions) (bool, error) {
	ok, err := m.revoke(ctx, id)
	return ok, redact.Error(err) // a transport error names the URL, SAS token included
}

func (m *Policies[P]) revoke(ctx context.Context, id string) (bool, error) {
	if err := validateIdentifier(id); err != nil {
		return false, withOp(err, m.op+".Revoke")
	}
	raw, keep, err := m.store.get(ctx)
	if err != nil {
		return false, err
	}
	kept := slices.DeleteFunc(slices.Clone(raw), func(r rawPolicy) bool { return r.id == id })
	if len(kept) == len(raw) {
		return false, nil
	}
	return true, m.store.set(ctx, kept, keep)
}

// policyFields is an access policy of any of the three SDKs: their
// AccessPolicy types have the same fields.
type policyFields interface {
	aztables.AccessPolicy | azqueue.AccessPolicy | container.AccessPolicy
}

// rawPolicies reads a service's signed identifiers (each SDK has its own
// types of one shape) into rawPolicy values, skipping entries without an
// ID. fields gives an identifier's ID and policy.
func rawPolicies[S any, A policyFields](sis []*S, fields func(*S) (*string, *A)) []rawPolicy {
	var out []rawPolicy
	for _, si := range sis {
		if si == nil {
			continue
		}
		id, ap := fields(si)
		if id == nil {
			continue
		}
		r := rawPolicy{id: *id}
		if ap != nil {
			r.start, r.expiry, r.perms = policyOf(ap)
		}
		out = append(out, r)
	}
	return out
}

// policyOf is an access policy's window and permissions.
func policyOf[A policyFields](ap *A) (start, expiry *time.Time, perms *string) {
	switch p := any(ap).(type) {
	case *aztables.AccessPolicy:
		return p.Start, p.Expiry, p.Permission
	case *azqueue.AccessPolicy:
		return p.Start, p.Expiry, p.Permission
	case *container.AccessPolicy:
		return p.Start, p.Expiry, p.Permission
	}
	return nil, nil, nil
}

type tableStore struct{ c tableACL }

func (s tableStore) get(ctx context.Context) ([]rawPolicy, any, error) {
	resp, err := s.c.GetAccessPolicy(ctx, nil)
	if err != nil {
		return nil, nil, err
	}
	out := rawPolicies(resp.SignedIdentifiers, func(si *aztables.SignedIdentifier) (*string, *aztables.AccessPolicy) { return si.ID, si.AccessPolicy })
	return out, nil, nil
}

func (s tableStore) set(ctx context.Context, ps []rawPolicy, _ any) error {
	acl := make([]*aztables.SignedIdentifier, 0, len(ps))
	for _, p := range ps {
		acl = append(acl, &aztables.SignedIdentifier{ID: &p.id, AccessPolicy: &aztables.AccessPolicy{Start: p.start, Expiry: p.expiry, Permission: p.perms}})
	}
	_, err := s.c.SetAccessPolicy(ctx, &aztables.SetAccessPolicyOptions{TableACL: acl})
	return err
}

type queueStore struct{ c queueACL }

func (s queueStore) get(ctx context.Context) ([]rawPolicy, any, error) {
	resp, err := s.c.GetAccessPolicy(ctx, nil)
	if err != nil {
		return nil, nil, err
	}
	out := rawPolicies(resp.SignedIdentifiers, func(si *azqueue.SignedIdentifier) (*string, *azqueue.AccessPolicy) { return si.ID, si.AccessPolicy })
	return out, nil, nil
}

func (s queueStore) set(ctx context.Context, ps []rawPolicy, _ any) error {
	acl := make([]*azqueue.SignedIdentifier, 0, len(ps))
	for _, p := range ps {
		acl = append(acl, &azqueue.SignedIdentifier{ID: &p.id, AccessPolicy: &azqueue.AccessPolicy{Start: p.start, Expiry: p.expiry, Permission: p.perms}})
	}
	_, err := s.c.SetAccessPolicy(ctx, &azqueue.SetAccessPolicyOptions{QueueACL: acl})
	return err
}

// containerStore keeps the container's public access level: Set
// Container ACL without it makes the container private.
type containerStore struct{ c containerACL }

func (s containerStore) get(ctx context.Context) ([]rawPolicy, any, error) {
	resp, err := s.c.GetAccessPolicy(ctx, nil)
	if err != nil {
		return nil, nil, err
	}
	out := rawPolicies(resp.SignedIdentifiers, func(si *container.SignedIdentifier) (*string, *container.AccessPolicy) { return si.ID, si.AccessPolicy })
	return out, resp.BlobPublicAccess, nil
}

func (s containerStore) set(ctx context.Context, ps []rawPolicy, keep any) error {
	access, _ := keep.(*container.PublicAccessType)
	acl := make([]*container.SignedIdentifier, 0, len(ps))
	for _, p := range ps {
		acl = append(acl, &container.SignedIdentifier{ID: &p.id, AccessPolicy: &container.AccessPolicy{Start: p.start, Expiry: p.expiry, Permission: p.perms}})
	}
	_, err := s.c.SetAccessPolicy(ctx, &container.SetAccessPolicyOptions{Access: access, ContainerACL: acl})
	return err
}
