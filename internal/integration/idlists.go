package integration

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/consistency"
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
		x, err := patterns.OpenModel(ctx, tableOf(table.New[Staff](client, nil)), &patterns.ModelOptions[Staff]{Name: "staff", Primary: "empid_",
			Lists: []patterns.ListDef[Staff]{{Name: "lname", Prefix: "lname_", Value: func(s *Staff) string { return s.LastName }}}})
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := table.New[table.Entity](client, nil)
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
		if err := raw.Add(ctx, old, nil); err != nil {
			t.Fatal(err)
		}
		owners, err := x.IDs(ctx, "lname", "Sales", "Jones", nil)
		var got []string
		for _, o := range owners {
			got = append(got, o.RowKey)
		}
		if err != nil || !slices.Equal(got, ids) {
			t.Fatalf("IDs of an old list: %d IDs (first %q), %v; want %d", len(got), first(got), err, len(ids))
		}
		if err := x.Add(ctx, staff("new", "Ann", "Jones", "ann@contoso.com", 30), nil); err != nil {
			t.Fatal(err)
		}
		stored, err := raw.Get(ctx, "Sales", old.RowKey, nil)
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
		q, poison := env.NewQueue(t, nil), env.NewQueue(t, nil)
		b, err := patterns.OpenModel(ctx, tableOf(table.New[Staff](env.NewTable(t, c), nil)), &patterns.ModelOptions[Staff]{Name: "staff", Queue: q,
			RemoteLists: []patterns.ListDef[Staff]{{Name: "lname", Value: func(s *Staff) string { return s.LastName }, Blobs: bc, Container: container, Prefix: "lname/"}}})
		if err != nil {
			t.Fatal(err)
		}
		w := consistency.NewWorker(q, poison, quick(nil))
		_ = w.Handle(b.MessageType(), b.Process)
		enc, _ := keys.EncodeTuple("Jones")
		var short []string
		for _, id := range ids[:5] {
			short = append(short, listID("Sales", id))
		}
		if _, err := bc.UploadBuffer(ctx, container, "lname/"+enc, []byte(oldIDList(t, short)), nil); err != nil {
			t.Fatal(err)
		}
		owners, err := b.IDs(ctx, "lname", "", "Jones", nil)
		var got []string
		for _, o := range owners {
			got = append(got, listID(o.PartitionKey, o.RowKey))
		}
		if err != nil || !slices.Equal(got, short) {
			t.Fatalf("IDs of an old blob: %q, %v; want %q", got, err, short)
		}
		if err := b.Add(ctx, staff("x", "Ann", "Jones", "ann@contoso.com", 30), nil); err != nil {
			t.Fatal(err)
		}
		drainAll(t, q, w)
		resp, err := bc.DownloadStream(ctx, container, "lname/"+enc, nil)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if want := oldIDList(t, append(slices.Clone(short), listID("Sales", "empid_x"))); string(data) != want {
			t.Fatalf("blob after Add:\n%s\nthe old writer's:\n%s", data, want)
		}
		// A blob that is not a list is an error that says so, not an empty list.
		enc, _ = keys.EncodeTuple("Broken")
		if _, err := bc.UploadBuffer(ctx, container, "lname/"+enc, []byte(`{"ids":["a"]}`), nil); err != nil {
			t.Fatal(err)
		}
		if got, err := b.IDs(ctx, "lname", "", "Broken", nil); err == nil || !strings.Contains(err.Error(), "not an array") {
			t.Fatalf("IDs of a malformed blob: %q, %v", got, err)
		}
	})

	t.Run("an ID that is not UTF-8 is refused before any request", func(t *testing.T) {
		// An ID is the tuple of a primary's keys, and keys are valid UTF-8:
		// a primary whose key is not is refused before any request, with
		// every kind of list declared.
		c := &reqcount.Counter{}
		client := env.NewTable(t, c)
		bc, container := env.NewContainer(t, c)
		lists := env.NewTable(t, c)
		m, err := patterns.OpenModel(ctx, tableOf(table.New[Staff](client, nil)), &patterns.ModelOptions[Staff]{Name: "staff", Primary: "empid_", Queue: env.NewQueue(t, c),
			Lists: []patterns.ListDef[Staff]{{Name: "lname", Prefix: "lname_", Value: func(s *Staff) string { return s.LastName }}},
			RemoteLists: []patterns.ListDef[Staff]{
				{Name: "remote", Value: func(s *Staff) string { return s.LastName }, Table: tableOf(table.New[table.Entity](lists, nil)), Partition: "lastnames", Prefix: "lname_"},
				{Name: "blobs", Value: func(s *Staff) string { return s.LastName }, Blobs: bc, Container: container, Prefix: "lname/"},
			}})
		if err != nil {
			t.Fatal(err)
		}
		c.Reset()
		err = m.Add(ctx, &Staff{Meta: table.Meta{PartitionKey: "Sales", RowKey: "empid_emp\xff"}, LastName: "Jones"}, nil)
		var ie *table.InputError
		if !errors.As(err, &ie) || !errors.Is(err, keys.ErrInvalidUTF8) || c.N() != 0 {
			t.Errorf("Add with a non-UTF-8 key: %v after %d requests; want an *table.InputError (keys.ErrInvalidUTF8) before any request", err, c.N())
		}
	})
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}
