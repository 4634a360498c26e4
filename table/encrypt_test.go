package table_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/internal/seqs"
	"github.com/tablekit/tablekit/internal/tableio"
	"github.com/tablekit/tablekit/table"
)

type Patient struct {
	table.Meta
	Name   string
	SSN    string    `table:",encrypt"`
	Salary int64     `table:",encrypt"`
	Hired  time.Time `table:",encrypt"`
	Notes  []byte    `table:",encrypt,omitempty"`
}

func keyOf(b byte) []byte { return bytes.Repeat([]byte{b}, 32) }

func encrypted(t *testing.T, client table.Client, keyID string, keys table.LocalKeys) *table.Table[Patient] {
	t.Helper()
	tb, err := table.New[Patient](client, &table.Options{Encryption: &table.Encryption{KeyID: keyID, Keys: keys}})
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

func newPatients(t *testing.T) (*fake.TableService, *aztables.Client) {
	svc := fake.NewTableService(nil)
	client := svc.NewClient("Patients", nil)
	if _, err := client.CreateTable(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	return svc, client
}

func don() *Patient {
	return &Patient{Meta: table.Meta{PartitionKey: "Sales", RowKey: "000123"}, Name: "Don Hall", SSN: "078-05-1120",
		Salary: 123456789, Hired: time.Date(2012, 3, 4, 5, 6, 7, 0, time.UTC), Notes: []byte("allergic to penicillin")}
}

func TestEncryptedRoundTrip(t *testing.T) {
	ctx := t.Context()
	_, client := newPatients(t)
	tb := encrypted(t, client, "k1", table.LocalKeys{"k1": keyOf(1)})
	want := don()
	if err := tb.Add(ctx, want, nil); err != nil {
		t.Fatal(err)
	}
	got, err := tb.Get(ctx, "Sales", "000123", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != want.Name || got.SSN != want.SSN || got.Salary != want.Salary || !got.Hired.Equal(want.Hired) || !bytes.Equal(got.Notes, want.Notes) {
		t.Fatalf("round trip: %+v", got)
	}
	// What the service holds: ciphertext as binary, the plain field plain.
	raw, _ := client.GetEntity(ctx, "Sales", "000123", nil)
	for _, secret := range []string{"078-05-1120", "123456789", "2012-03-04", "penicillin", "YWxsZXJnaWM"} {
		if bytes.Contains(raw.Value, []byte(secret)) {
			t.Errorf("%q stored in plaintext: %s", secret, raw.Value)
		}
	}
	var stored map[string]any
	_ = json.Unmarshal(raw.Value, &stored)
	if stored["SSN@odata.type"] != "Edm.Binary" || stored["Name"] != "Don Hall" || stored["TkEncryption"] == nil {
		t.Fatalf("stored shape: %s", raw.Value)
	}
	// Queries decrypt too, with or without $select.
	for _, sel := range [][]string{nil, {"SSN"}, {"Name"}} {
		all, err := seqs.Collect(tb.Query(ctx, &table.QueryOptions{Select: sel}))
		if err != nil || len(all) != 1 {
			t.Fatalf("query %v: %v", sel, err)
		}
		if (sel == nil || sel[0] == "SSN") && all[0].SSN != want.SSN {
			t.Fatalf("query %v: SSN %q", sel, all[0].SSN)
		}
		if sel != nil && sel[0] == "Name" && (all[0].SSN != "" || all[0].Name != want.Name) {
			t.Fatalf("query %v: %+v", sel, all[0])
		}
	}
	// Two writes of the same value never share a ciphertext.
	again := don()
	again.RowKey = "000124"
	_ = tb.Add(ctx, again, nil)
	raw2, _ := client.GetEntity(ctx, "Sales", "000124", nil)
	var s1, s2 map[string]any
	_ = json.Unmarshal(raw.Value, &s1)
	_ = json.Unmarshal(raw2.Value, &s2)
	if s1["SSN"] == s2["SSN"] {
		t.Fatal("equal values encrypted to equal ciphertexts")
	}
}

func TestEncryptedWrongKeyAndTampering(t *testing.T) {
	ctx := t.Context()
	_, client := newPatients(t)
	tb := encrypted(t, client, "k1", table.LocalKeys{"k1": keyOf(1)})
	a, b := don(), don()
	b.RowKey, b.SSN = "000152", "219-09-9999"
	_ = tb.Add(ctx, a, nil)
	_ = tb.Add(ctx, b, nil)

	for name, keys := range map[string]table.LocalKeys{"wrong key": {"k1": keyOf(2)}, "unknown key": {"k9": keyOf(1)}} {
		_, err := encrypted(t, client, "k1", keys).Get(ctx, "Sales", "000123", nil)
		if !errors.Is(err, table.ErrDecrypt) {
			t.Errorf("%s: %v", name, err)
		}
	}

	rawOf := func(rk string) map[string]any {
		resp, _ := client.GetEntity(ctx, "Sales", rk, nil)
		var m map[string]any
		_ = json.Unmarshal(resp.Value, &m)
		for k := range m {
			if k == "odata.etag" || k == "Timestamp" || k == "odata.metadata" {
				delete(m, k)
			}
		}
		return m
	}
	put := func(m map[string]any) {
		body, _ := json.Marshal(m)
		if _, err := client.UpsertEntity(ctx, body, &aztables.UpsertEntityOptions{UpdateMode: aztables.UpdateModeReplace}); err != nil {
			t.Fatal(err)
		}
	}
	mA, mB := rawOf("000123"), rawOf("000152")
	cases := map[string]func() map[string]any{
		"ciphertext moved from another entity": func() map[string]any { m := rawOf("000123"); m["SSN"] = mB["SSN"]; return m },
		"ciphertext flipped": func() map[string]any {
			m := rawOf("000123")
			sealed, err := base64.StdEncoding.DecodeString(m["SSN"].(string))
			if err != nil {
				t.Fatal(err)
			}
			sealed[len(sealed)/2] ^= 1
			m["SSN"] = base64.StdEncoding.EncodeToString(sealed)
			return m
		},
		"encrypted property removed": func() map[string]any { m := rawOf("000123"); delete(m, "SSN"); delete(m, "SSN@odata.type"); return m },
		"plaintext put in its place": func() map[string]any {
			m := rawOf("000123")
			delete(m, "TkEncryption")
			delete(m, "SSN@odata.type")
			m["SSN"] = "000-00-0000"
			return m
		},
		"wrapped key from another entity": func() map[string]any {
			m := rawOf("000123")
			m["TkEncryption"] = mB["TkEncryption"]
			return m
		},
	}
	for name, mk := range cases {
		put(mk())
		if _, err := tb.Get(ctx, "Sales", "000123", nil); !errors.Is(err, table.ErrDecrypt) {
			t.Errorf("%s: Get = %v, want ErrDecrypt", name, err)
		}
		put(mA)
		if _, err := tb.Get(ctx, "Sales", "000123", nil); err != nil {
			t.Fatalf("restored: %v", err)
		}
	}
}

func TestEncryptedRefusals(t *testing.T) {
	ctx := t.Context()
	svc, client := newPatients(t)
	tb := encrypted(t, client, "k1", table.LocalKeys{"k1": keyOf(1)})
	v := don()
	_ = tb.Add(ctx, v, nil)
	svc.ResetCounts()
	_, errMarshal := tableio.Marshal(v)
	errUnmarshal := tableio.Unmarshal([]byte(`{"PartitionKey":"a","RowKey":"b"}`), &Patient{})
	_, errEncode := tableio.For(tb).Encode(v)
	errAppend := batch.NewTransaction(nil).Append(batch.Add(v))
	errRegister := table.Register[Patient](table.NewRegistry(nil), "Patient")
	_, errNew := table.New[Patient](client, nil)
	for name, c := range map[string]struct {
		err  error
		rule error
	}{
		"Codec.Marshal":                  {errMarshal, table.ErrEncryptedType},
		"Codec.Unmarshal":                {errUnmarshal, table.ErrEncryptedType},
		"Table.Encode":                   {errEncode, table.ErrEncryptedType},
		"batch.Add":                      {errAppend, table.ErrEncryptedType},
		"Register":                       {errRegister, table.ErrEncryptedType},
		"New without Encryption":         {errNew, table.ErrBadOption},
		"Upsert with Merge":              {tb.Upsert(ctx, v, &table.UpsertOptions{Mode: aztables.UpdateModeMerge}), table.ErrMergeEncrypted},
		"Update with Merge":              {tb.Update(ctx, v, &table.UpdateOptions{Mode: aztables.UpdateModeMerge}), table.ErrMergeEncrypted},
		"Modify with Merge":              {modifyMerge(ctx, tb), table.ErrMergeEncrypted},
		"Update with Replace is allowed": {tb.Update(ctx, v, &table.UpdateOptions{Mode: aztables.UpdateModeReplace}), nil},
	} {
		if !errors.Is(c.err, c.rule) || (c.rule == nil && c.err != nil) {
			t.Errorf("%s: %v, want %v", name, c.err, c.rule)
		}
	}
	// Only the allowed Update and Modify's read reached the service.
	if n := svc.Total(); n != 2 {
		t.Fatalf("%d requests, want 2 (Modify's read, the Replace update): %v", n, svc.Counts())
	}
	// The default mode of an encrypted type is Replace: Update and Upsert
	// with nil options write the whole value, one request each.
	if err := tb.Update(ctx, v, nil); err != nil {
		t.Fatalf("Update with the default mode: %v", err)
	}
	if err := tb.Upsert(ctx, v, nil); err != nil {
		t.Fatalf("Upsert with the default mode: %v", err)
	}
	if n := svc.Total(); n != 4 {
		t.Fatalf("%d requests, want 4: %v", n, svc.Counts())
	}
}

func modifyMerge(ctx context.Context, tb *table.Table[Patient]) error {
	_, err := tb.Modify(ctx, "Sales", "000123", func(p *Patient) error { p.Name = "D. Hall"; return nil }, &table.ModifyOptions{Mode: aztables.UpdateModeMerge})
	return err
}

func TestEncryptionKeyRotation(t *testing.T) {
	ctx := t.Context()
	_, client := newPatients(t)
	k1, k2 := keyOf(1), keyOf(2)
	old := encrypted(t, client, "k1", table.LocalKeys{"k1": k1})
	a, b := don(), don()
	b.RowKey = "000152"
	_ = old.Add(ctx, a, nil)
	_ = old.Add(ctx, b, nil)

	// New writes use k2; k1 stays known until every entity moved.
	both := encrypted(t, client, "k2", table.LocalKeys{"k1": k1, "k2": k2})
	if _, err := both.Get(ctx, "Sales", "000152", nil); err != nil {
		t.Fatalf("an entity under the old key: %v", err)
	}
	if _, err := both.Modify(ctx, "Sales", "000123", func(p *Patient) error { return nil }, nil); err != nil {
		t.Fatal(err)
	}
	kidOf := func(rk string) string {
		resp, _ := client.GetEntity(ctx, "Sales", rk, nil)
		var m map[string]any
		_ = json.Unmarshal(resp.Value, &m)
		var env struct{ Kid string }
		_ = json.Unmarshal([]byte(m["TkEncryption"].(string)), &env)
		return env.Kid
	}
	if kidOf("000123") != "k2" || kidOf("000152") != "k1" {
		t.Fatalf("key ids: %q %q", kidOf("000123"), kidOf("000152"))
	}
	newOnly := encrypted(t, client, "k2", table.LocalKeys{"k2": k2})
	if got, err := newOnly.Get(ctx, "Sales", "000123", nil); err != nil || got.SSN != a.SSN {
		t.Fatalf("rewritten entity with k2 alone: %v", err)
	}
	if _, err := newOnly.Get(ctx, "Sales", "000152", nil); !errors.Is(err, table.ErrDecrypt) {
		t.Fatalf("an entity not rewritten needs k1: %v", err)
	}
}

// An integrity failure names the entity, the property and the reason, and
// matches both ErrIntegrity and ErrDecrypt; PadTo decides the buckets.
func TestIntegrityErrorAndPadding(t *testing.T) {
	ctx := t.Context()
	_, client := newPatients(t)
	tb := encrypted(t, client, "k1", table.LocalKeys{"k1": keyOf(1)})
	v := don()
	if err := tb.Add(ctx, v, nil); err != nil {
		t.Fatal(err)
	}
	resp, _ := client.GetEntity(ctx, "Sales", "000123", nil)
	var m map[string]any
	_ = json.Unmarshal(resp.Value, &m)
	m["Salary"] = m["SSN"]
	body, _ := json.Marshal(m)
	if _, err := client.UpsertEntity(ctx, body, &aztables.UpsertEntityOptions{UpdateMode: aztables.UpdateModeReplace}); err != nil {
		t.Fatal(err)
	}
	_, err := tb.Get(ctx, "Sales", "000123", nil)
	var ie *table.IntegrityError
	if !errors.As(err, &ie) || !errors.Is(err, table.ErrIntegrity) || !errors.Is(err, table.ErrDecrypt) ||
		ie.Property != "Salary" || ie.Table != "Patients" || ie.PartitionKey != "Sales" || ie.RowKey != "000123" {
		t.Fatalf("moved ciphertext: %#v", err)
	}

	sizes := func(padTo int) (int, int) {
		tb, err := table.New[Patient](client, &table.Options{Encryption: &table.Encryption{KeyID: "k1", Keys: table.LocalKeys{"k1": keyOf(1)}, PadTo: padTo}})
		if err != nil {
			t.Fatal(err)
		}
		var out [2]int
		for i, ssn := range []string{"1", "12345"} {
			p := don()
			p.RowKey, p.SSN = fmt.Sprintf("pad%d_%d", padTo, i), ssn
			if err := tb.Add(ctx, p, nil); err != nil {
				t.Fatal(err)
			}
			resp, _ := client.GetEntity(ctx, "Sales", p.RowKey, nil)
			var m map[string]any
			_ = json.Unmarshal(resp.Value, &m)
			b, _ := base64.StdEncoding.DecodeString(m["SSN"].(string))
			out[i] = len(b)
		}
		return out[0], out[1]
	}
	if a, b := sizes(0); a != b {
		t.Errorf("default padding: %d and %d bytes", a, b)
	}
	if a, b := sizes(-1); b-a != 4 {
		t.Errorf("no padding: %d and %d bytes, want 4 apart", a, b)
	}
}
