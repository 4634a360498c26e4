package integration

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/internal/reqcount"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/table"
)

// oldIDList is an ID list as tablekit stored it before the format moved to
// internal/idlist: encoding/json's Marshal of the []string, HTML escapes
// included. The test builds it here, apart from the code under test.
func oldIDList(t *testing.T, ids []string) string {
	t.Helper()
	b, err := json.Marshal(ids)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// oldChunks cuts a list over string properties as the old writer did: at
// most 32,768 UTF-16 units each, between runes.
func oldChunks(s string) []string {
	var out []string
	for s != "" {
		units, cut := 0, len(s)
		for i, r := range s {
			w := 1
			if r >= 0x10000 {
				w = 2
			}
			if units+w > table.MaxStringUTF16 {
				cut = i
				break
			}
			units += w
		}
		out = append(out, s[:cut])
		s = s[cut:]
	}
	return out
}

// RunIDListFormat checks that the index-entity lists keep their stored
// format: lists written by older versions (index entities cut over
// several string properties, and index blobs) read back, and a change
// writes the same bytes the old writer would have. An ID that is not
// valid UTF-8 is refused before any request (stored, JSON would turn it
// into U+FFFD and the list would name another ID).
func RunIDListFormat(t *testing.T, env Env) {
	ctx := t.Context()
	// Multi-byte text stays in the first bytes of each request (see
	// DESIGN.md on Azurite's 64 KiB chunk bug).
	ids := []string{"O'Brien <jr> & co", "é😀", "\u2028"}
	for i := range 2800 {
		ids = append(ids, fmt.Sprintf("emp%09d", i))
	}

	t.Run("index entities written by the old writer", func(t *testing.T) {
		c := &reqcount.Counter{}
		client := env.NewTable(t, c)
		x, err := patterns.NewIndexEntities[Staff](tableOf(table.New[Staff](client, nil)), "lname_", func(s *Staff) string { return s.LastName }, nil)
		if err != nil {
			t.Fatal(err)
		}
		enc, _ := keys.EncodeTuple("Jones")
		old := &table.Entity{Meta: table.Meta{PartitionKey: "Sales", RowKey: "lname_" + enc + "0000"}}
		old.Set("Value", table.ValueOf("Jones"))
		chunks := oldChunks(oldIDList(t, ids))
		if len(chunks) != 2 {
			t.Fatalf("the old list should take two properties, took %d", len(chunks))
		}
		for i, ch := range chunks {
			old.Set(fmt.Sprintf("IDs%02d", i), table.ValueOf(ch))
		}
		if err := x.Table().Entities().Add(ctx, old, nil); err != nil {
			t.Fatal(err)
		}
		got, err := x.Lookup(ctx, "Sales", "Jones", nil)
		if err != nil || !slices.Equal(got, ids) {
			t.Fatalf("Lookup of an old list: %d IDs (first %q), %v; want %d", len(got), first(got), err, len(ids))
		}
		if _, err := x.Add(ctx, staff("new", "Ann", "Jones", "ann@contoso.com", 30), nil); err != nil {
			t.Fatal(err)
		}
		stored, err := x.Table().Entities().Get(ctx, "Sales", old.RowKey, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := oldChunks(oldIDList(t, append(slices.Clone(ids), "empid_new")))
		for i, w := range want {
			v, _ := stored.Get(fmt.Sprintf("IDs%02d", i))
			if s, _ := v.AsString(); s != w {
				t.Fatalf("IDs%02d after Add differs from the old writer's (%d vs %d bytes)", i, len(s), len(w))
			}
		}
		if _, more := stored.Get(fmt.Sprintf("IDs%02d", len(want))); more {
			t.Fatalf("Add wrote more properties than the old writer (%d)", len(want))
		}
	})

	t.Run("index blob written by the old writer", func(t *testing.T) {
		c := &reqcount.Counter{}
		bc, container := env.NewContainer(t, c)
		b, err := patterns.NewBlobIndex(bc, container, "lname/")
		if err != nil {
			t.Fatal(err)
		}
		enc, _ := keys.EncodeTuple("Jones")
		short := ids[:5]
		if _, err := bc.UploadBuffer(ctx, container, "lname/"+enc, []byte(oldIDList(t, short)), nil); err != nil {
			t.Fatal(err)
		}
		got, err := b.IDs(ctx, "Jones", nil)
		if err != nil || !slices.Equal(got, short) {
			t.Fatalf("IDs of an old blob: %q, %v; want %q", got, err, short)
		}
		if err := b.Add(ctx, "Jones", "Sales|x", nil); err != nil {
			t.Fatal(err)
		}
		resp, err := bc.DownloadStream(ctx, container, "lname/"+enc, nil)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if want := oldIDList(t, append(slices.Clone(short), "Sales|x")); string(data) != want {
			t.Fatalf("blob after Add:\n%s\nthe old writer's:\n%s", data, want)
		}
		// A blob that is not a list is an error that says so, not an empty list.
		enc, _ = keys.EncodeTuple("Broken")
		if _, err := bc.UploadBuffer(ctx, container, "lname/"+enc, []byte(`{"ids":["a"]}`), nil); err != nil {
			t.Fatal(err)
		}
		if got, err := b.IDs(ctx, "Broken", nil); err == nil || !strings.Contains(err.Error(), "not an array") {
			t.Fatalf("IDs of a malformed blob: %q, %v", got, err)
		}
	})

	t.Run("an ID that is not UTF-8 is refused before any request", func(t *testing.T) {
		c := &reqcount.Counter{}
		client := env.NewTable(t, c)
		bc, container := env.NewContainer(t, c)
		x, _ := patterns.NewIndexEntities[Staff](tableOf(table.New[Staff](client, nil)), "lname_", func(s *Staff) string { return s.LastName }, nil)
		remote, _ := patterns.NewRemoteIndexEntities(tableOf(table.New[table.Entity](client, nil)), "lastnames", "lname_", nil)
		blobs, _ := patterns.NewBlobIndex(bc, container, "lname/")
		bad := "emp\xff"
		// IndexEntities' IDs are RowKeys, which the key validation refuses
		// (the error comes from batch, hence no Op check for it).
		calls := map[string]func() error{
			"IndexEntities.Add": func() error {
				_, err := x.Add(ctx, &Staff{Meta: table.Meta{PartitionKey: "Sales", RowKey: bad}, LastName: "Jones"}, nil)
				return err
			},
			"RemoteIndexEntities.Add": func() error { return remote.Add(ctx, "Jones", bad, nil) },
			"BlobIndex.Add":           func() error { return blobs.Add(ctx, "Jones", bad, nil) },
		}
		for _, op := range slices.Sorted(maps.Keys(calls)) {
			c.Reset()
			err := calls[op]()
			var ie *table.InputError
			if !errors.As(err, &ie) || (ie.Op != op && op != "IndexEntities.Add") || !errors.Is(err, keys.ErrInvalidUTF8) || c.N() != 0 {
				t.Errorf("%s with a non-UTF-8 ID: %v after %d requests; want an *table.InputError of %s (keys.ErrInvalidUTF8) before any request", op, err, c.N(), op)
			}
		}
	})
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}
