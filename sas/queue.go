package sas

import (
	"time"

	"github.com/tablekit/tablekit/internal/keyrules"
)

// queueVersion is the service version queue tokens are signed for: the
// azqueue SDK's sas.Version.
const queueVersion = "2020-02-10"

// QueuePermissions of a queue SAS or a queue's stored access policy, in
// the service's order: r (peek and read metadata), a (put messages), u
// (update messages), p (get and delete messages).
type QueuePermissions struct {
	Read, Add, Update, Process bool
}

// String renders the permissions as the token's sp ("raup").
func (p QueuePermissions) String() string {
	return flags([]flag{{p.Read, 'r'}, {p.Add, 'a'}, {p.Update, 'u'}, {p.Process, 'p'}})
}

// parseQueuePermissions reads an sp or a policy's Permission ("raup", any order).
func parseQueuePermissions(s string) (QueuePermissions, error) {
	var p QueuePermissions
	return p, parseFlags("parseQueuePermissions", s, map[rune]*bool{'r': &p.Read, 'a': &p.Add, 'u': &p.Update, 'p': &p.Process})
}

// Queue is a queue service SAS: a token for one queue and its messages.
type Queue struct {
	// Queue is the queue's name (required).
	Queue string
	// Permissions the token grants; may be empty only when Identifier
	// names a stored access policy that grants them.
	Permissions QueuePermissions
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
	// Identifier names the queue's stored access policy the token
	// references. Default: none.
	Identifier string
}

// Sign validates the request and returns the token as a query string.
func (v Queue) Sign(c Credential) (string, error) {
	if err := v.Validate(); err != nil {
		return "", err
	}
	if err := checkCredential("sas.Queue", c); err != nil {
		return "", err
	}
	g := v.grant()
	st, se := g.fields()
	q := g.query(queueVersion)
	// "Create a service SAS", Queue service, versions 2015-04-05 to 2020-02-10.
	q.Set("sig", c.sign(g.perms, st, se, "/queue/"+c.accountName+"/"+v.Queue, g.identifier, g.ip.String(), g.protocol(), queueVersion))
	return q.Encode(), nil
}

// Validate checks the request without signing it.
func (v Queue) Validate() error {
	if err := keyrules.ValidateQueueName(v.Queue); err != nil {
		return badName("sas.Queue", "Queue", err)
	}
	return v.grant().validate()
}

func (v Queue) grant() grant {
	return grant{op: "sas.Queue", perms: v.Permissions.String(), start: v.Start, expiry: v.Expiry, ip: v.IPRange, httpsOnly: v.HTTPSOnly, identifier: v.Identifier, identifierAllowed: true}
}
