package sas

import (
	"fmt"
	"strings"
	"time"

	"github.com/tablekit/tablekit/internal/keyrules"
	"github.com/tablekit/tablekit/table"
)

// tableVersion is the service version table tokens are signed for: the
// aztables SDK's SASVersion, whose string to sign carries the key range.
const tableVersion = "2019-02-02"

// TablePermissions of a table SAS or a table's stored access policy, in
// the service's order: r (query and get), a (add, and the insert of an
// upsert), u (update and merge), d (delete).
type TablePermissions struct {
	Read, Add, Update, Delete bool
}

// String renders the permissions as the token's sp ("rau").
func (p TablePermissions) String() string {
	return flags([]flag{{p.Read, 'r'}, {p.Add, 'a'}, {p.Update, 'u'}, {p.Delete, 'd'}})
}

// parseTablePermissions reads an sp or a policy's Permission ("raud", any order).
func parseTablePermissions(s string) (TablePermissions, error) {
	var p TablePermissions
	return p, parseFlags("parseTablePermissions", s, map[rune]*bool{'r': &p.Read, 'a': &p.Add, 'u': &p.Update, 'd': &p.Delete})
}

// KeyRange bounds what a table SAS reaches: entities from (StartPartitionKey,
// StartRowKey) to (EndPartitionKey, EndRowKey), inclusive; empty fields
// leave that side open. One user's entities: StartPartitionKey and
// EndPartitionKey both that user's PartitionKey.
type KeyRange struct {
	StartPartitionKey, StartRowKey string
	EndPartitionKey, EndRowKey     string
}

// Table is a table service SAS: a token for one table, optionally
// confined to a key range.
type Table struct {
	// Table is the table's name (required).
	Table string
	// Permissions the token grants; may be empty only when Identifier
	// names a stored access policy that grants them.
	Permissions TablePermissions
	// Start is when the token becomes valid. Default (zero): at once.
	Start time.Time
	// Expiry is when the token stops working; required unless Identifier
	// names a stored access policy that sets it.
	Expiry time.Time
	// KeyRange confines the token to a range of keys. Default: the whole table.
	KeyRange KeyRange
	// IPRange is where requests may come from. Default: anywhere.
	IPRange IPRange
	// HTTPSOnly confines the token to HTTPS requests (spr=https). Default
	// false: HTTPS and HTTP.
	HTTPSOnly bool
	// Identifier names the table's stored access policy the token
	// references: revoking the policy revokes the token. Default: none.
	Identifier string
}

// Sign validates the request and returns the token as a query string.
// aztables v1.4.1 signs a key range but leaves spk, srk, epk and erk out
// of the token it encodes, so the service rejects its signature; this
// token carries them.
func (v Table) Sign(c Credential) (string, error) {
	if err := v.Validate(); err != nil {
		return "", err
	}
	if err := checkCredential("sas.Table", c); err != nil {
		return "", err
	}
	g := v.grant()
	name := strings.ToLower(v.Table)
	st, se := g.fields()
	r := v.KeyRange
	q := g.query(tableVersion)
	q.Set("tn", name)
	for k, val := range map[string]string{"spk": r.StartPartitionKey, "srk": r.StartRowKey, "epk": r.EndPartitionKey, "erk": r.EndRowKey} {
		if val != "" {
			q.Set(k, val)
		}
	}
	// "Create a service SAS", Table service, version 2018-11-09 and earlier
	// than 2020-12-06 (the form aztables signs).
	q.Set("sig", c.sign(g.perms, st, se, "/table/"+c.accountName+"/"+name, g.identifier, g.ip.String(), g.protocol(), tableVersion,
		r.StartPartitionKey, r.StartRowKey, r.EndPartitionKey, r.EndRowKey))
	return q.Encode(), nil
}

// Validate checks the request without signing it: the table name, the
// grant and the key range.
func (v Table) Validate() error {
	if err := keyrules.ValidateTableName(v.Table); err != nil {
		return badName("sas.Table", "Table", err)
	}
	if err := v.grant().validate(); err != nil {
		return err
	}
	return v.KeyRange.validate("sas.Table")
}

func (v Table) grant() grant {
	return grant{op: "sas.Table", perms: v.Permissions.String(), start: v.Start, expiry: v.Expiry, ip: v.IPRange, httpsOnly: v.HTTPSOnly, identifier: v.Identifier, identifierAllowed: true}
}

func (r KeyRange) validate(op string) error {
	for _, k := range []struct{ field, v string }{{"StartPartitionKey", r.StartPartitionKey}, {"EndPartitionKey", r.EndPartitionKey}} {
		if err := keyrules.ValidatePartitionKey(k.v); err != nil {
			return badName(op, "KeyRange."+k.field, err)
		}
	}
	for _, k := range []struct{ field, v string }{{"StartRowKey", r.StartRowKey}, {"EndRowKey", r.EndRowKey}} {
		if err := keyrules.ValidateRowKey(k.v); err != nil {
			return badName(op, "KeyRange."+k.field, err)
		}
	}
	// A row key bound means something only within its partition key bound.
	if r.StartRowKey != "" && r.StartPartitionKey == "" {
		return bad(op, "KeyRange.StartRowKey", table.ErrInvalidValue, "StartRowKey %q without StartPartitionKey", r.StartRowKey)
	}
	if r.EndRowKey != "" && r.EndPartitionKey == "" {
		return bad(op, "KeyRange.EndRowKey", table.ErrInvalidValue, "EndRowKey %q without EndPartitionKey", r.EndRowKey)
	}
	// The service compares keys as strings; a reversed range would grant
	// nothing, silently.
	if r.StartPartitionKey != "" && r.EndPartitionKey != "" {
		c := keyrules.Compare(r.StartPartitionKey, r.EndPartitionKey)
		if c > 0 || c == 0 && r.StartRowKey != "" && r.EndRowKey != "" && keyrules.Compare(r.StartRowKey, r.EndRowKey) > 0 {
			return bad(op, "KeyRange", table.ErrInvalidValue, "start (%q, %q) is after end (%q, %q)", r.StartPartitionKey, r.StartRowKey, r.EndPartitionKey, r.EndRowKey)
		}
	}
	return nil
}

// Contains reports whether (pk, rk) lies in the range, inclusive, in the
// service's key order.
func (r KeyRange) Contains(pk, rk string) bool {
	if r.StartPartitionKey != "" {
		if c := keyrules.Compare(pk, r.StartPartitionKey); c < 0 || (c == 0 && r.StartRowKey != "" && keyrules.Compare(rk, r.StartRowKey) < 0) {
			return false
		}
	}
	if r.EndPartitionKey != "" {
		if c := keyrules.Compare(pk, r.EndPartitionKey); c > 0 || (c == 0 && r.EndRowKey != "" && keyrules.Compare(rk, r.EndRowKey) > 0) {
			return false
		}
	}
	return true
}

func checkCredential(op string, c Credential) error {
	if c.accountName == "" || len(c.key) == 0 {
		return bad(op, "Credential", table.ErrInvalidValue, "the zero Credential: make one with NewCredential")
	}
	return nil
}

type flag struct {
	on bool
	c  byte
}

func flags(fs []flag) string {
	var b strings.Builder
	for _, f := range fs {
		if f.on {
			b.WriteByte(f.c)
		}
	}
	return b.String()
}

func parseFlags(op, s string, set map[rune]*bool) error {
	for _, r := range s {
		p, ok := set[r]
		if !ok {
			return bad(op, "Permissions", table.ErrInvalidValue, "%q: unknown permission %q", s, r)
		}
		*p = true
	}
	return nil
}

var _ fmt.Stringer = TablePermissions{}
