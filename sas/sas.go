package sas

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/tablekit/tablekit/table"
)

// ErrBadSAS is matched by every error of a SAS request that cannot make a
// working token; the error also carries a *table.InputError.
var ErrBadSAS = errors.New("sas: bad SAS request")

// maxIdentifierLength is the longest signed identifier ("Define a stored
// access policy": the identifier may be up to 64 characters long).
const maxIdentifierLength = 64

// timeFormat is how st, se and a policy's times are written: ISO 8601 UTC
// to the second, as the SDK signers format them.
const timeFormat = "2006-01-02T15:04:05Z"

// Credential is an account's name and key: what signs a token.
type Credential struct {
	accountName string
	key         []byte
}

// NewCredential checks an account name (3 to 24 lower-case letters and
// digits) and its base64 key.
func NewCredential(accountName, accountKey string) (Credential, error) {
	if n := len(accountName); n < 3 || n > 24 || strings.ContainsFunc(accountName, func(r rune) bool {
		return (r < 'a' || r > 'z') && (r < '0' || r > '9')
	}) {
		return Credential{}, bad("NewCredential", "AccountName", table.ErrInvalidValue, "%q is not 3 to 24 lower-case letters and digits", accountName)
	}
	key, err := base64.StdEncoding.DecodeString(accountKey)
	if err != nil || len(key) == 0 {
		// The key itself is a secret: the error never shows it.
		return Credential{}, bad("NewCredential", "AccountKey", table.ErrInvalidValue, "the account key is not base64 (%d characters)", len(accountKey))
	}
	return Credential{accountName: accountName, key: key}, nil
}

// AccountName is the account the credential signs for.
func (c Credential) AccountName() string { return c.accountName }

// sign is the token's signature: base64 of HMAC-SHA256 of the string to
// sign with the account key.
func (c Credential) sign(lines ...string) string {
	mac := hmac.New(sha256.New, c.key)
	mac.Write([]byte(strings.Join(lines, "\n")))
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// IPRange is a token's signed IP (sip): the one IPv4 address Start, or the
// addresses from Start to End inclusive. The zero value allows any address.
type IPRange struct {
	Start, End netip.Addr
}

// String renders the range as the token's sip ("" for any address).
func (r IPRange) String() string {
	switch {
	case !r.Start.IsValid():
		return ""
	case !r.End.IsValid():
		return r.Start.String()
	}
	return r.Start.String() + "-" + r.End.String()
}

// parseIPRange reads a sip value: "a.b.c.d" or "a.b.c.d-e.f.g.h".
func parseIPRange(s string) (IPRange, error) {
	if s == "" {
		return IPRange{}, nil
	}
	lo, hi, isRange := strings.Cut(s, "-")
	var r IPRange
	var err error
	if r.Start, err = netip.ParseAddr(lo); err != nil {
		return IPRange{}, bad("ParseIPRange", "IPRange", table.ErrInvalidValue, "%q: %v", s, err)
	}
	if isRange {
		if r.End, err = netip.ParseAddr(hi); err != nil {
			return IPRange{}, bad("ParseIPRange", "IPRange", table.ErrInvalidValue, "%q: %v", s, err)
		}
	}
	return r, r.validate("ParseIPRange")
}

// Contains reports whether addr is in the range (any address for the zero range).
func (r IPRange) Contains(addr netip.Addr) bool {
	addr = addr.Unmap()
	switch {
	case !r.Start.IsValid():
		return true
	case !r.End.IsValid():
		return addr == r.Start
	}
	return r.Start.Compare(addr) <= 0 && addr.Compare(r.End) <= 0
}

func (r IPRange) validate(op string) error {
	switch {
	case !r.Start.IsValid() && r.End.IsValid():
		return bad(op, "IPRange", table.ErrInvalidValue, "End %s without Start", r.End)
	case !r.Start.IsValid():
		return nil
	case !r.Start.Is4() || r.End.IsValid() && !r.End.Is4():
		// "Create a service SAS": the signed IP is an IPv4 address or range.
		return bad(op, "IPRange", table.ErrInvalidValue, "%s: a SAS allows IPv4 addresses only", r)
	case r.End.IsValid() && r.End.Less(r.Start):
		return bad(op, "IPRange", table.ErrInvalidValue, "End %s is before Start %s", r.End, r.Start)
	}
	return nil
}

// grant is what every token shares: its window, where it may be used
// from, and the stored access policy it may reference.
type grant struct {
	op                string
	perms             string
	start, expiry     time.Time
	ip                IPRange
	httpsOnly         bool
	identifier        string
	identifierAllowed bool
}

// validate checks the shared fields. With a signed identifier the
// permissions and the expiry may come from the stored policy instead.
func (g grant) validate() error {
	if g.identifier != "" && !g.identifierAllowed {
		return bad(g.op, "Identifier", table.ErrInvalidValue, "an account SAS cannot reference a stored access policy")
	}
	if err := validateIdentifier(g.identifier); err != nil && g.identifier != "" {
		return fmt.Errorf("%w: %w", ErrBadSAS, withOp(err, g.op))
	}
	if g.identifier == "" {
		if g.perms == "" {
			return bad(g.op, "Permissions", table.ErrInvalidValue, "no permissions: the token would allow nothing")
		}
		if g.expiry.IsZero() {
			return bad(g.op, "Expiry", table.ErrInvalidValue, "no expiry: a token without a stored access policy needs one")
		}
	}
	if !g.start.IsZero() && !g.expiry.IsZero() && !g.expiry.After(g.start) {
		return bad(g.op, "Expiry", table.ErrInvalidValue, "expiry %s is not after start %s", g.expiry.UTC().Format(timeFormat), g.start.UTC().Format(timeFormat))
	}
	if err := g.ip.validate(g.op); err != nil {
		return err
	}
	return nil
}

// protocol is the token's signed protocol (spr, "Create a service SAS"):
// "https" for HTTPSOnly, else "", which leaves spr out and which the
// service reads as HTTPS and HTTP.
func (g grant) protocol() string {
	if g.httpsOnly {
		return "https"
	}
	return ""
}

// fields are the signed values as they appear in the string to sign.
func (g grant) fields() (st, se string) {
	if !g.start.IsZero() {
		st = g.start.UTC().Format(timeFormat)
	}
	if !g.expiry.IsZero() {
		se = g.expiry.UTC().Format(timeFormat)
	}
	return st, se
}

// query is the token's shared parameters; empty values are left out, as
// the service reads a missing parameter and an empty one alike.
func (g grant) query(version string) url.Values {
	st, se := g.fields()
	q := url.Values{}
	set := func(k, v string) {
		if v != "" {
			q.Set(k, v)
		}
	}
	set("sv", version)
	set("st", st)
	set("se", se)
	set("sp", g.perms)
	set("sip", g.ip.String())
	set("spr", g.protocol())
	set("si", g.identifier)
	return q
}

// validateIdentifier checks a signed identifier: 1 to 64 characters.
func validateIdentifier(id string) error {
	if n := len([]rune(id)); n == 0 || n > maxIdentifierLength {
		return &table.InputError{Op: "Identifier", Field: "ID", Rule: table.ErrInvalidValue,
			Detail: fmt.Sprintf("%q: a signed identifier has 1 to %d characters", id, maxIdentifierLength)}
	}
	return nil
}

func withOp(err error, op string) error {
	var ie *table.InputError
	if errors.As(err, &ie) {
		c := *ie
		c.Op = op
		return &c
	}
	return err
}

// bad is a refused request: ErrBadSAS and the InputError naming the rule.
func bad(op, field string, rule error, format string, args ...any) error {
	return fmt.Errorf("%w: %w", ErrBadSAS, &table.InputError{Op: op, Field: field, Rule: rule, Detail: fmt.Sprintf(format, args...)})
}

// badName wraps a name's validation error (a *keys.ValidationError).
func badName(op, field string, err error) error {
	return fmt.Errorf("%w: %w", ErrBadSAS, &table.InputError{Op: op, Field: field, Rule: err, Detail: err.Error()})
}
