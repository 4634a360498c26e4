package sas_test

import (
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/sas"
	"github.com/tablekit/tablekit/table"
)

// Every bad request is refused before signing, with ErrBadSAS and an
// InputError naming the field.
func TestBadRequests(t *testing.T) {
	c := cred(t)
	r := sas.TablePermissions{Read: true}
	v4 := netip.MustParseAddr
	for _, tc := range []struct {
		name, field string
		rule        error
		sign        func() (string, error)
	}{
		{"zero credential", "Credential", table.ErrInvalidValue, func() (string, error) {
			return sas.Table{Table: "tone", Permissions: r, Expiry: expiry}.Sign(sas.Credential{})
		}},
		{"table name", "Table", keys.ErrInvalidName, func() (string, error) { return sas.Table{Table: "bad-name", Permissions: r, Expiry: expiry}.Sign(c) }},
		{"no permissions", "Permissions", table.ErrInvalidValue, func() (string, error) { return sas.Table{Table: "good", Expiry: expiry}.Sign(c) }},
		{"no expiry", "Expiry", table.ErrInvalidValue, func() (string, error) { return sas.Table{Table: "good", Permissions: r}.Sign(c) }},
		{"expiry before start", "Expiry", table.ErrInvalidValue, func() (string, error) {
			return sas.Table{Table: "good", Permissions: r, Start: expiry, Expiry: start}.Sign(c)
		}},
		{"reversed key range", "KeyRange", table.ErrInvalidValue, func() (string, error) {
			return sas.Table{Table: "good", Permissions: r, Expiry: expiry, KeyRange: sas.KeyRange{StartPartitionKey: "z", EndPartitionKey: "a"}}.Sign(c)
		}},
		{"row key without partition key", "KeyRange.StartRowKey", table.ErrInvalidValue, func() (string, error) {
			return sas.Table{Table: "good", Permissions: r, Expiry: expiry, KeyRange: sas.KeyRange{StartRowKey: "1"}}.Sign(c)
		}},
		{"bad key in range", "KeyRange.EndPartitionKey", keys.ErrInvalidKey, func() (string, error) {
			return sas.Table{Table: "good", Permissions: r, Expiry: expiry, KeyRange: sas.KeyRange{EndPartitionKey: "a/b"}}.Sign(c)
		}},
		{"IPv6 range", "IPRange", table.ErrInvalidValue, func() (string, error) {
			return sas.Table{Table: "good", Permissions: r, Expiry: expiry, IPRange: sas.IPRange{Start: v4("::1")}}.Sign(c)
		}},
		{"reversed IP range", "IPRange", table.ErrInvalidValue, func() (string, error) {
			return sas.Queue{Queue: "jobs", Permissions: sas.QueuePermissions{Read: true}, Expiry: expiry, IPRange: sas.IPRange{Start: v4("10.0.0.9"), End: v4("10.0.0.1")}}.Sign(c)
		}},
		{"IP range end only", "IPRange", table.ErrInvalidValue, func() (string, error) {
			return sas.Queue{Queue: "jobs", Permissions: sas.QueuePermissions{Read: true}, Expiry: expiry, IPRange: sas.IPRange{End: v4("10.0.0.1")}}.Sign(c)
		}},
		{"queue name", "Queue", keys.ErrInvalidName, func() (string, error) {
			return sas.Queue{Queue: "Jobs", Permissions: sas.QueuePermissions{Read: true}, Expiry: expiry}.Sign(c)
		}},
		{"identifier too long", "ID", table.ErrInvalidValue, func() (string, error) {
			return sas.Queue{Queue: "jobs", Identifier: string(make([]byte, 65))}.Sign(c)
		}},
		{"container name", "Container", keys.ErrInvalidName, func() (string, error) {
			return sas.Blob{Container: "x", Permissions: sas.BlobPermissions{Read: true}, Expiry: expiry}.Sign(c)
		}},
		{"list on a blob token", "Permissions", table.ErrInvalidValue, func() (string, error) {
			return sas.Blob{Container: "logs", Blob: "a.log", Permissions: sas.BlobPermissions{List: true}, Expiry: expiry}.Sign(c)
		}},
		{"account: no services", "Services", table.ErrInvalidValue, func() (string, error) {
			return sas.Account{ResourceTypes: sas.ResourceTypes{Object: true}, Permissions: sas.AccountPermissions{Read: true}, Expiry: expiry}.Sign(c)
		}},
		{"account: no resource types", "ResourceTypes", table.ErrInvalidValue, func() (string, error) {
			return sas.Account{Services: sas.Services{Table: true}, Permissions: sas.AccountPermissions{Read: true}, Expiry: expiry}.Sign(c)
		}},
		{"account: no expiry", "Expiry", table.ErrInvalidValue, func() (string, error) {
			return sas.Account{Services: sas.Services{Table: true}, ResourceTypes: sas.ResourceTypes{Object: true}, Permissions: sas.AccountPermissions{Read: true}}.Sign(c)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok, err := tc.sign()
			var ie *table.InputError
			if !errors.Is(err, sas.ErrBadSAS) || !errors.As(err, &ie) || !errors.Is(err, tc.rule) || ie.Field != tc.field {
				t.Fatalf("got %q, %v; want ErrBadSAS, field %s, rule %v", tok, err, tc.field, tc.rule)
			}
			if tok != "" {
				t.Fatalf("a refused request returned a token: %q", tok)
			}
		})
	}
	for name, mk := range map[string]func() (sas.Credential, error){
		"account name": func() (sas.Credential, error) { return sas.NewCredential("Bad_Name", key) },
		"key":          func() (sas.Credential, error) { return sas.NewCredential(account, "not base64!") },
	} {
		if _, err := mk(); !errors.Is(err, sas.ErrBadSAS) || !errors.Is(err, table.ErrInvalidValue) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// A token that references a stored access policy may leave the
// permissions and the expiry to the policy.
func TestIdentifierSuppliesPermissionsAndExpiry(t *testing.T) {
	tok, err := sas.Table{Table: "notes", Identifier: "readers"}.Sign(cred(t))
	if err != nil {
		t.Fatal(err)
	}
	q := sig(t, tok)
	if q.Get("si") != "readers" || q.Has("sp") || q.Has("se") {
		t.Fatalf("token %s", tok)
	}
	if _, err := (sas.Account{Services: sas.Services{Table: true}, ResourceTypes: sas.ResourceTypes{Object: true}, Permissions: sas.AccountPermissions{Read: true}, Expiry: time.Now()}).Sign(cred(t)); err != nil {
		t.Fatal(err)
	}
}

func TestIPRange(t *testing.T) {
	r, err := sas.ParseIPRange("10.0.0.1-10.0.0.9")
	if err != nil || r.String() != "10.0.0.1-10.0.0.9" || !r.Contains(netip.MustParseAddr("10.0.0.5")) || r.Contains(netip.MustParseAddr("10.0.0.10")) {
		t.Fatalf("%v %v", r, err)
	}
	one, _ := sas.ParseIPRange("127.0.0.1")
	if !one.Contains(netip.MustParseAddr("::ffff:127.0.0.1")) || one.Contains(netip.MustParseAddr("127.0.0.2")) {
		t.Fatal("single address")
	}
	if _, err := sas.ParseIPRange("10.0.0.9-10.0.0.1"); !errors.Is(err, sas.ErrBadSAS) {
		t.Fatal(err)
	}
	if !(sas.IPRange{}).Contains(netip.MustParseAddr("8.8.8.8")) {
		t.Fatal("the zero range allows any address")
	}
}
