package sas

import (
	"strings"
	"time"

	"github.com/tablekit/tablekit/internal/keyrules"
	"github.com/tablekit/tablekit/table"
)

// blobVersion is the service version blob tokens are signed for; its
// string to sign (2020-12-06 and later) is the one the azblob SDK builds.
const blobVersion = "2022-11-02"

// BlobPermissions of a container or blob SAS, or a container's stored
// access policy, in the service's order: r (read), a (append), c (create a
// new blob), w (write), d (delete), l (list the container's blobs: a
// container token only).
type BlobPermissions struct {
	Read, Add, Create, Write, Delete, List bool
}

// String renders the permissions as the token's sp ("rcwl").
func (p BlobPermissions) String() string {
	return flags([]flag{{p.Read, 'r'}, {p.Add, 'a'}, {p.Create, 'c'}, {p.Write, 'w'}, {p.Delete, 'd'}, {p.List, 'l'}})
}

// parseBlobPermissions reads an sp or a policy's Permission ("racwdl", any order).
func parseBlobPermissions(s string) (BlobPermissions, error) {
	var p BlobPermissions
	return p, parseFlags("parseBlobPermissions", s, map[rune]*bool{'r': &p.Read, 'a': &p.Add, 'c': &p.Create, 'w': &p.Write, 'd': &p.Delete, 'l': &p.List})
}

// Blob is a blob service SAS: a token for a container and its blobs
// (sr=c) or, when Blob is set, for that one blob (sr=b).
type Blob struct {
	// Container is the container's name (required).
	Container string
	// Blob names one blob. Default: the token reaches the whole container.
	Blob string
	// Permissions the token grants; may be empty only when Identifier
	// names a stored access policy that grants them. List needs a
	// container token.
	Permissions BlobPermissions
	// Start is when the token becomes valid. Default (zero): at once.
	Start time.Time
	// Expiry is when the token stops working; required unless Identifier
	// names a stored access policy that sets it.
	Expiry time.Time
	// IPRange is where requests may come from. Default: anywhere.
	IPRange IPRange
	// HTTPSOnly confines the token to HTTPS requests (spr=https). Default
	// false: HTTPS and HTTP.
	HTTPSOnly bool
	// Identifier names the container's stored access policy the token
	// references (a blob token references its container's). Default: none.
	Identifier string
}

// Sign validates the request and returns the token as a query string.
func (v Blob) Sign(c Credential) (string, error) {
	if err := v.Validate(); err != nil {
		return "", err
	}
	if err := checkCredential("sas.Blob", c); err != nil {
		return "", err
	}
	g := v.grant()
	resource, canonical := "c", "/blob/"+c.accountName+"/"+v.Container
	if v.Blob != "" {
		// The SDK signs a backslash as the slash the service stores.
		resource, canonical = "b", canonical+"/"+strings.ReplaceAll(v.Blob, `\`, "/")
	}
	st, se := g.fields()
	q := g.query(blobVersion)
	q.Set("sr", resource)
	// "Create a service SAS", Blob service, version 2020-12-06 and later:
	// resource, snapshot time, encryption scope and the five response
	// headers follow; this builder sets none of the last seven.
	q.Set("sig", c.sign(g.perms, st, se, canonical, g.identifier, g.ip.String(), g.protocol(), blobVersion,
		resource, "", "", "", "", "", "", ""))
	return q.Encode(), nil
}

// Validate checks the request without signing it.
func (v Blob) Validate() error {
	const op = "sas.Blob"
	if err := keyrules.ValidateContainerName(v.Container); err != nil {
		return badName(op, "Container", err)
	}
	if v.Blob != "" {
		if err := keyrules.ValidateBlobName(v.Blob); err != nil {
			return badName(op, "Blob", err)
		}
		if v.Permissions.List {
			return bad(op, "Permissions", table.ErrInvalidValue, "l (list) applies to a container; a token for blob %q cannot list", v.Blob)
		}
	}
	return v.grant().validate()
}

func (v Blob) grant() grant {
	return grant{op: "sas.Blob", perms: v.Permissions.String(), start: v.Start, expiry: v.Expiry, ip: v.IPRange, httpsOnly: v.HTTPSOnly, identifier: v.Identifier, identifierAllowed: true}
}
