package table

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/fake"
)

type filtered struct {
	Meta
	Name string
	SSN  string `table:",encrypt"`
}

// A filter that compares an encrypted property would silently match
// nothing (the service holds ciphertext): refuseEncryptedFilter makes it a
// typed input error. Plaintext properties, keys and $select of encrypted
// properties stay allowed.
func TestRefuseEncryptedFilter(t *testing.T) {
	client := fake.NewTableService(nil).NewClient("Filtered", nil)
	tb, err := New[filtered](client, &Options{Encryption: &Encryption{KeyID: "k", Keys: LocalKeys{"k": bytes.Repeat([]byte{1}, 32)}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []Filter{
		Prop("SSN").Eq("078-05-1120"),
		Partition("Sales").And(Prop("SSN").Ne("x")),
		Or(Prop("Name").Eq("Don"), Not(Prop("SSN").Ge("0"))),
	} {
		err := tb.refuseEncryptedFilter(f)
		var ie *InputError
		if !errors.Is(err, ErrEncryptedFilter) || !errors.As(err, &ie) || ie.Field != "SSN" {
			t.Errorf("%s: %v", f, err)
		}
	}
	for _, f := range []Filter{{}, Partition("Sales"), Prop("Name").Eq("Don"), Partition("Sales").And(Prop("RowKey").Eq("1"))} {
		if err := tb.refuseEncryptedFilter(f); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// otherClient is a Client that is not an *aztables.Client: it cannot say
// which table it addresses.
type otherClient struct{ Client }

// The table name ciphertexts are bound to comes from the *aztables.Client,
// or from Encryption.Table; with neither, writes and reads are refused
// before anything is sent.
func TestEncryptionNeedsATableName(t *testing.T) {
	ctx := context.Background()
	svc := fake.NewTableService(nil)
	client := svc.NewClient("Named", nil)
	if _, err := client.CreateTable(ctx, nil); err != nil {
		t.Fatal(err)
	}
	keys := LocalKeys{"k": bytes.Repeat([]byte{1}, 32)}
	if got := clientTableName(client); got != "Named" {
		t.Fatalf("clientTableName = %q", got)
	}
	anon, _ := New[filtered](otherClient{client}, &Options{Encryption: &Encryption{KeyID: "k", Keys: keys}})
	svc.ResetCounts()
	v := &filtered{Meta: Meta{PartitionKey: "p", RowKey: "r"}, SSN: "1"}
	if err := anon.Add(ctx, v, nil); !errors.Is(err, ErrBadOption) || svc.Total() != 0 {
		t.Fatalf("Add without a table name: %v, %d requests", err, svc.Total())
	}
	named, _ := New[filtered](otherClient{client}, &Options{Encryption: &Encryption{KeyID: "k", Keys: keys, Table: "Named"}})
	if err := named.Add(ctx, v, nil); err != nil {
		t.Fatal(err)
	}
	// The same entity read through the SDK client, whose name matches.
	plain, _ := New[filtered](client, &Options{Encryption: &Encryption{KeyID: "k", Keys: keys}})
	if got, err := plain.Get(ctx, "p", "r", nil); err != nil || got.SSN != "1" {
		t.Fatalf("read back: %v", err)
	}
	// A copy restored into another table opens only under the original name.
	copyTo := svc.NewClient("Restored", nil)
	_, _ = copyTo.CreateTable(ctx, nil)
	raw, _ := client.GetEntity(ctx, "p", "r", nil)
	if _, err := copyTo.UpsertEntity(ctx, raw.Value, &aztables.UpsertEntityOptions{UpdateMode: aztables.UpdateModeReplace}); err != nil {
		t.Fatal(err)
	}
	restored, _ := New[filtered](copyTo, &Options{Encryption: &Encryption{KeyID: "k", Keys: keys}})
	if _, err := restored.Get(ctx, "p", "r", nil); !errors.Is(err, ErrIntegrity) {
		t.Fatalf("a copy in another table opened: %v", err)
	}
	restored, _ = New[filtered](copyTo, &Options{Encryption: &Encryption{KeyID: "k", Keys: keys, Table: "Named"}})
	if got, err := restored.Get(ctx, "p", "r", nil); err != nil || got.SSN != "1" {
		t.Fatalf("a restored copy under its original name: %v", err)
	}
}
