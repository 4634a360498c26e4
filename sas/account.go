package sas

import (
	"time"

	"github.com/tablekit/tablekit/table"
)

// accountVersion is the service version account tokens are signed for:
// the last before 2020-12-06 added the encryption scope to the string to
// sign, as the azqueue and aztables SDK signers build it.
const accountVersion = "2020-02-10"

// AccountPermissions of an account SAS, in the service's order: r (read),
// w (write), d (delete), l (list), a (add), c (create), u (update), p
// (process messages).
type AccountPermissions struct {
	Read, Write, Delete, List, Add, Create, Update, Process bool
}

// String renders the permissions as the token's sp ("rwdlacup").
func (p AccountPermissions) String() string {
	return flags([]flag{{p.Read, 'r'}, {p.Write, 'w'}, {p.Delete, 'd'}, {p.List, 'l'}, {p.Add, 'a'}, {p.Create, 'c'}, {p.Update, 'u'}, {p.Process, 'p'}})
}

// Services an account SAS reaches (ss), in the service's order: b (blob),
// q (queue), t (table).
type Services struct {
	Blob, Queue, Table bool
}

// String renders the services as the token's ss ("bqt").
func (s Services) String() string {
	return flags([]flag{{s.Blob, 'b'}, {s.Queue, 'q'}, {s.Table, 't'}})
}

// ResourceTypes an account SAS reaches (srt): s (service-level calls:
// list tables, queues or containers, service properties), c (container:
// create and delete tables, queues and containers), o (object: entities,
// messages, blobs).
type ResourceTypes struct {
	Service, Container, Object bool
}

// String renders the resource types as the token's srt ("sco").
func (r ResourceTypes) String() string {
	return flags([]flag{{r.Service, 's'}, {r.Container, 'c'}, {r.Object, 'o'}})
}

// Account is an account SAS: one token for operations across services
// and resource types. It cannot reference a stored access policy.
type Account struct {
	// Services the token reaches (required: at least one).
	Services Services
	// ResourceTypes the token reaches (required: at least one).
	ResourceTypes ResourceTypes
	// Permissions the token grants (required: at least one).
	Permissions AccountPermissions
	// Start is when the token becomes valid. Default (zero): at once.
	Start time.Time
	// Expiry is when the token stops working (required).
	Expiry time.Time
	// IPRange is where requests may come from. Default: anywhere.
	IPRange IPRange
	// HTTPSOnly confines the token to HTTPS requests (spr=https). Default
	// false: HTTPS and HTTP.
	HTTPSOnly bool
}

// Sign validates the request and returns the token as a query string.
func (v Account) Sign(c Credential) (string, error) {
	if err := v.Validate(); err != nil {
		return "", err
	}
	if err := checkCredential("sas.Account", c); err != nil {
		return "", err
	}
	g := v.grant()
	ss, srt := v.Services.String(), v.ResourceTypes.String()
	st, se := g.fields()
	q := g.query(accountVersion)
	q.Set("ss", ss)
	q.Set("srt", srt)
	// "Create an account SAS", versions before 2020-12-06: the string to
	// sign ends with a newline.
	q.Set("sig", c.sign(c.accountName, g.perms, ss, srt, st, se, g.ip.String(), g.protocol(), accountVersion, ""))
	return q.Encode(), nil
}

// Validate checks the request without signing it.
func (v Account) Validate() error {
	const op = "sas.Account"
	if v.Services.String() == "" {
		return bad(op, "Services", table.ErrInvalidValue, "no service: the token would reach nothing")
	}
	if v.ResourceTypes.String() == "" {
		return bad(op, "ResourceTypes", table.ErrInvalidValue, "no resource type: the token would reach nothing")
	}
	return v.grant().validate()
}

func (v Account) grant() grant {
	return grant{op: "sas.Account", perms: v.Permissions.String(), start: v.Start, expiry: v.Expiry, ip: v.IPRange, httpsOnly: v.HTTPSOnly}
}
