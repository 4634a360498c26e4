package integration

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/internal/reqcount"
	"github.com/tablekit/tablekit/internal/seqs"
	"github.com/tablekit/tablekit/table"
)

// encPatient has encrypted fields of several EDM types.
type encPatient struct {
	table.Meta
	Name   string
	SSN    string `table:",encrypt"`
	Salary int64  `table:",encrypt"`
	Notes  []byte `table:",encrypt,omitempty"`
}

// RunEncryption is the tamper matrix of client-side encryption: every way
// of editing, moving or removing what an encrypted entity stores (a
// ciphertext, the encrypted-property list, the wrapped key, the whole
// entity) must make the read fail with a typed integrity error, never
// yield zero values or another entity's data. It also checks that lengths
// are padded and documents what stays undetected: a rollback of the whole
// entity to an earlier write of itself.
func RunEncryption(t *testing.T, env Env) {
	ctx := t.Context()
	keys := table.LocalKeys{"k1": bytes.Repeat([]byte{1}, 32), "k2": bytes.Repeat([]byte{2}, 32)}
	clientA, clientB := env.NewTable(t, &reqcount.Counter{}), env.NewTable(t, &reqcount.Counter{})
	open := func(client *aztables.Client) *table.Table[encPatient] {
		tb, err := table.New[encPatient](client, &table.Options{Encryption: &table.Encryption{KeyID: "k1", Keys: keys}})
		if err != nil {
			t.Fatal(err)
		}
		return tb
	}
	tbA, tbB := open(clientA), open(clientB)
	patient := func(rk, ssn string) *encPatient {
		return &encPatient{Meta: table.Meta{PartitionKey: "Sales", RowKey: rk}, Name: "Don " + rk, SSN: ssn, Salary: 123456789, Notes: []byte("allergic to penicillin " + rk)}
	}
	for _, w := range []struct {
		tb *table.Table[encPatient]
		v  *encPatient
	}{{tbA, patient("000123", "078-05-1120")}, {tbA, patient("000152", "219-09-9999")}, {tbB, patient("000123", "457-55-5462")}} {
		if err := w.tb.Add(ctx, w.v, nil); err != nil {
			t.Fatal(err)
		}
	}
	rawOf := func(client *aztables.Client, rk string) map[string]any {
		resp, err := client.GetEntity(ctx, "Sales", rk, nil)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		_ = json.Unmarshal(resp.Value, &m)
		for k := range m {
			if strings.HasPrefix(k, "odata.") || k == "Timestamp" {
				delete(m, k)
			}
		}
		return m
	}
	put := func(m map[string]any) {
		t.Helper()
		body, _ := json.Marshal(m)
		if _, err := clientA.UpsertEntity(ctx, body, &aztables.UpsertEntityOptions{UpdateMode: aztables.UpdateModeReplace}); err != nil {
			t.Fatal(err)
		}
	}
	mA, mB, mAinB := rawOf(clientA, "000123"), rawOf(clientA, "000152"), rawOf(clientB, "000123")
	fresh := func() map[string]any { return maps.Clone(mA) }
	// envelope edits the encryption envelope (a JSON string property).
	envelope := func(m map[string]any, edit func(e map[string]any)) map[string]any {
		var e map[string]any
		s, _ := m["TkEncryption"].(string)
		if err := json.Unmarshal([]byte(s), &e); err != nil {
			t.Fatalf("envelope: %v", err)
		}
		edit(e)
		b, _ := json.Marshal(e)
		m["TkEncryption"] = string(b)
		return m
	}
	flip := func(b64 string, at func(n int) int) string {
		b, err := base64.StdEncoding.DecodeString(b64)
		if err != nil || len(b) == 0 {
			t.Fatalf("not base64: %q", b64)
		}
		b[at(len(b))] ^= 0x10
		return base64.StdEncoding.EncodeToString(b)
	}
	without := func(list any, name string) []any {
		l, _ := list.([]any)
		return slices.DeleteFunc(slices.Clone(l), func(v any) bool { return v == name })
	}
	cases := []struct {
		name string
		make func() map[string]any
	}{
		{"two encrypted properties swapped", func() map[string]any {
			m := fresh()
			m["SSN"], m["Notes"] = m["Notes"], m["SSN"]
			return m
		}},
		{"ciphertext copied from another entity", func() map[string]any { m := fresh(); m["SSN"] = mB["SSN"]; return m }},
		{"ciphertext copied from the same keys in another table", func() map[string]any { m := fresh(); m["SSN"] = mAinB["SSN"]; return m }},
		{"whole entity copied from another RowKey", func() map[string]any {
			m := maps.Clone(mB)
			m["RowKey"] = "000123"
			return m
		}},
		{"whole entity copied from another table", func() map[string]any { return maps.Clone(mAinB) }},
		{"envelope copied from another entity", func() map[string]any {
			m := fresh()
			m["TkEncryption"] = mB["TkEncryption"]
			return m
		}},
		{"encrypted property deleted", func() map[string]any {
			m := fresh()
			delete(m, "SSN")
			delete(m, "SSN@odata.type")
			return m
		}},
		{"encrypted property and its list entry deleted", func() map[string]any {
			m := fresh()
			delete(m, "SSN")
			delete(m, "SSN@odata.type")
			return envelope(m, func(e map[string]any) { e["p"] = without(e["p"], "SSN") })
		}},
		{"list entry deleted, property kept", func() map[string]any {
			return envelope(fresh(), func(e map[string]any) { e["p"] = without(e["p"], "SSN") })
		}},
		{"list entry added", func() map[string]any {
			return envelope(fresh(), func(e map[string]any) { e["p"] = append(e["p"].([]any), "Name") })
		}},
		{"envelope deleted", func() map[string]any { m := fresh(); delete(m, "TkEncryption"); return m }},
		{"envelope and every encrypted property deleted", func() map[string]any {
			m := fresh()
			for _, k := range []string{"TkEncryption", "SSN", "SSN@odata.type", "Salary", "Salary@odata.type", "Notes", "Notes@odata.type"} {
				delete(m, k)
			}
			return m
		}},
		{"plaintext put in place of a ciphertext", func() map[string]any {
			m := fresh()
			delete(m, "SSN@odata.type")
			m["SSN"] = "000-00-0000"
			return m
		}},
		{"ciphertext truncated", func() map[string]any {
			m := fresh()
			b, _ := base64.StdEncoding.DecodeString(m["SSN"].(string))
			m["SSN"] = base64.StdEncoding.EncodeToString(b[:len(b)-5])
			return m
		}},
		{"bit flipped in a nonce", func() map[string]any {
			m := fresh()
			m["SSN"] = flip(m["SSN"].(string), func(int) int { return 0 })
			return m
		}},
		{"bit flipped in a ciphertext", func() map[string]any {
			m := fresh()
			m["SSN"] = flip(m["SSN"].(string), func(n int) int { return n / 2 })
			return m
		}},
		{"bit flipped in a tag", func() map[string]any {
			m := fresh()
			m["SSN"] = flip(m["SSN"].(string), func(n int) int { return n - 1 })
			return m
		}},
		{"bit flipped in the wrapped key", func() map[string]any {
			return envelope(fresh(), func(e map[string]any) { e["key"] = flip(e["key"].(string), func(n int) int { return n / 2 }) })
		}},
		{"key id changed to another known key", func() map[string]any {
			return envelope(fresh(), func(e map[string]any) { e["kid"] = "k2" })
		}},
		{"bit flipped in the list's tag", func() map[string]any {
			return envelope(fresh(), func(e map[string]any) {
				if s, ok := e["t"].(string); ok {
					e["t"] = flip(s, func(n int) int { return n - 1 })
				}
			})
		}},
		{"version changed", func() map[string]any {
			return envelope(fresh(), func(e map[string]any) { e["v"] = 99 })
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			put(c.make())
			defer put(mA)
			got, err := tbA.Get(ctx, "Sales", "000123", nil)
			var ie *table.IntegrityError
			if !errors.Is(err, table.ErrIntegrity) || !errors.As(err, &ie) {
				t.Errorf("Get = %+v, %v; want a typed integrity error", got, err)
			}
			all, qerr := seqs.Collect(tbA.Query(ctx, &table.QueryOptions{Filter: table.Partition("Sales").And(table.Prop("RowKey").Eq("000123"))}))
			if !errors.Is(qerr, table.ErrIntegrity) {
				t.Errorf("Query = %d entities, %v; want a typed integrity error", len(all), qerr)
			}
		})
	}

	t.Run("untouched entities read back", func(t *testing.T) {
		for rk, ssn := range map[string]string{"000123": "078-05-1120", "000152": "219-09-9999"} {
			if got, err := tbA.Get(ctx, "Sales", rk, nil); err != nil || got.SSN != ssn {
				t.Fatalf("%s: %v", rk, err)
			}
		}
	})

	t.Run("lengths are padded", func(t *testing.T) {
		short, long := patient("len1", "x"), patient("len2", strings.Repeat("x", 17))
		short.Notes, long.Notes = nil, nil
		for _, v := range []*encPatient{short, long} {
			if err := tbA.Add(ctx, v, nil); err != nil {
				t.Fatal(err)
			}
		}
		a, b := rawOf(clientA, "len1")["SSN"].(string), rawOf(clientA, "len2")["SSN"].(string)
		if len(a) != len(b) {
			t.Errorf("a 1- and a 17-character SSN are stored as %d and %d bytes of base64: the length shows", len(a), len(b))
		}
	})

	t.Run("rollback of the whole entity is not detected (documented)", func(t *testing.T) {
		v := patient("rollback", "111-11-1111")
		if err := tbA.Add(ctx, v, nil); err != nil {
			t.Fatal(err)
		}
		old := rawOf(clientA, "rollback")
		v.SSN = "222-22-2222"
		if err := tbA.Update(ctx, v, &table.UpdateOptions{Mode: aztables.UpdateModeReplace}); err != nil {
			t.Fatal(err)
		}
		put(old)
		got, err := tbA.Get(ctx, "Sales", "rollback", nil)
		if err != nil || got.SSN != "111-11-1111" {
			t.Fatalf("%v %+v", err, got)
		}
		t.Logf("%s: an earlier write of the same entity, put back whole, decrypts: rollback protection needs a version the reader knows (RELIABILITY.md)", env.Name)
	})
}
