package conformance

import (
	"errors"
	"testing"
	"time"

	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/internal/batchraw"
	"github.com/tablekit/tablekit/internal/svcanswer"
	"github.com/tablekit/tablekit/sas"
	"github.com/tablekit/tablekit/table"
)

// runSAS runs the scoped SAS: a token for one user's partition.
func runSAS(t *testing.T, env backend) {
	ctx := t.Context()
	admin, scoped := env.SASTable(t, func(account, key, name string) string {
		tok, err := tableSAS(account, key, name, sas.TablePermissions{Read: true, Add: true}, time.Time{}, time.Now().Add(time.Hour),
			sas.KeyRange{StartPartitionKey: "alice", EndPartitionKey: "alice"})
		if err != nil {
			t.Fatal(err)
		}
		return tok
	})
	for _, pk := range []string{"alice", "bob"} {
		if _, err := admin.AddEntity(ctx, []byte(`{"PartitionKey":"`+pk+`","RowKey":"1","Note":"`+pk+`"}`), nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := scoped.GetEntity(ctx, "alice", "1", nil); err != nil {
		t.Fatalf("the token cannot read its own range: %v", err)
	}
	if _, err := scoped.AddEntity(ctx, []byte(`{"PartitionKey":"alice","RowKey":"2"}`), nil); err != nil {
		t.Fatalf("the token cannot add in its own range: %v", err)
	}
	_, err := scoped.DeleteEntity(ctx, "alice", "1", nil)
	wantCode(t, err, 403, "AuthorizationPermissionMismatch")
	_, errGet := scoped.GetEntity(ctx, "bob", "1", nil)
	_, errAdd := scoped.AddEntity(ctx, []byte(`{"PartitionKey":"bob","RowKey":"2"}`), nil)
	page, errList := scoped.NewListEntitiesPager(nil).NextPage(ctx)
	if env.Has(t, CapSASKeyRanges) {
		wantCode(t, errGet, 403, "AuthorizationFailure")
		wantCode(t, errAdd, 403, "AuthorizationFailure")
		if errList != nil || len(page.Entities) != 2 {
			t.Fatalf("a query with the token sees %d entities (%v), want alice's 2", len(page.Entities), errList)
		}
	} else if errGet != nil || errAdd != nil {
		// The backend's recorded answer: it checks the signature and the
		// permissions but not the key range. A backend that now refuses
		// has the capability: drop it from Harness.Lacks.
		t.Errorf("%s is said to lack %q, but refused outside the range: read %v, add %v", env.Name, CapSASKeyRanges, errGet, errAdd)
	}
	// A transaction through the token: operations it allows commit; one it
	// does not (a delete, without d) refuses the whole request with 403,
	// and nothing of it is written.
	newAlice := func(rk string) batch.Op {
		return batchraw.Op(batch.KindAdd, []byte(`{"PartitionKey":"alice","RowKey":"`+rk+`"}`), nil)
	}
	_, err = batch.Submit(ctx, scoped, []batch.Op{newAlice("b1"), newAlice("b2")}, nil)
	switch {
	case env.Has(t, CapBatchWithTableSAS):
		if err != nil {
			t.Fatalf("a transaction of adds in the token's range and permissions: %v", err)
		}
	case svcanswer.StatusCode(err) != 403:
		// The backend's recorded answer is 403 for every $batch that
		// carries a table SAS; one that now commits has the capability.
		t.Errorf("%s is said to lack %q, but a transaction through the token answered %v, not 403", env.Name, CapBatchWithTableSAS, err)
	}
	_, err = batch.Submit(ctx, scoped, []batch.Op{newAlice("b3"), batch.Delete("alice", "1")}, nil)
	if svcanswer.StatusCode(err) != 403 {
		t.Fatalf("a transaction with an operation the token may not do: %v, want 403", err)
	}
	if _, err := admin.GetEntity(ctx, "alice", "b3", nil); !table.Is(err, table.ErrNotFound) {
		t.Fatalf("the refused transaction wrote its add: %v", err)
	}
	// A token signed with another key, and one past its expiry.
	for name, mk := range map[string]func(account, key, table string) (string, error){
		"forged": func(a, _, n string) (string, error) {
			return tableSAS(a, "bm90IHRoZSBhY2NvdW50IGtleQ==", n, sas.TablePermissions{Read: true}, time.Time{}, time.Now().Add(time.Hour), sas.KeyRange{})
		},
		"expired": func(a, k, n string) (string, error) {
			return tableSAS(a, k, n, sas.TablePermissions{Read: true}, time.Now().Add(-2*time.Hour), time.Now().Add(-time.Hour), sas.KeyRange{})
		},
	} {
		admin, bad := env.SASTable(t, func(account, key, table string) string {
			tok, err := mk(account, key, table)
			if err != nil {
				t.Fatal(err)
			}
			return tok
		})
		_, _ = admin.AddEntity(ctx, []byte(`{"PartitionKey":"alice","RowKey":"1"}`), nil)
		if _, err := bad.GetEntity(ctx, "alice", "1", nil); svcanswer.StatusCode(err) != 403 {
			t.Errorf("%s token: %v, want 403", name, err)
		}
	}
	if _, err := tableSAS("a", "bm90IGtleQ==", "bad-name", sas.TablePermissions{Read: true}, time.Time{}, time.Now().Add(time.Hour), sas.KeyRange{}); !errors.Is(err, sas.ErrBadSAS) {
		t.Fatalf("bad table name: %v", err)
	}
	if _, err := tableSAS("a", "bm90IGtleQ==", "good", sas.TablePermissions{}, time.Time{}, time.Now().Add(time.Hour), sas.KeyRange{}); !errors.Is(err, sas.ErrBadSAS) {
		t.Fatalf("no permissions: %v", err)
	}
}

// tableSAS signs a table SAS with package sas, validating the request
// before the credential as the catalogue expects: a bad request is named
// even when the key is bad too.
func tableSAS(account, key, tableName string, perms sas.TablePermissions, start, expiry time.Time, r sas.KeyRange) (string, error) {
	v := sas.Table{Table: tableName, Permissions: perms, Start: start, Expiry: expiry, KeyRange: r}
	if err := v.Validate(); err != nil {
		return "", err
	}
	c, err := sas.NewCredential(account, key)
	if err != nil {
		return "", err
	}
	return v.Sign(c)
}
