package patterns_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/table"
)

// sealed has a field only the handle's encryption can write.
type sealed struct {
	table.Meta
	Email string
	Note  string `table:",encrypt"`
}

const plainNote = "the note nobody may read in storage"

func sealedOptions() *table.Options {
	return &table.Options{Encryption: &table.Encryption{KeyID: "k1", Keys: table.LocalKeys{"k1": bytes.Repeat([]byte{7}, 32)}}}
}

// storedClear fails t when a stored row of tbl holds the note in clear.
func storedClear(t *testing.T, tbl *table.Table[table.Entity]) {
	t.Helper()
	n := 0
	for e, err := range tbl.Query(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		n++
		if strings.Contains(fmt.Sprint(e.Properties), plainNote) {
			t.Fatalf("row (%q, %q) stores the encrypted field in clear: %v", e.PartitionKey, e.RowKey, e.Properties)
		}
	}
	if n == 0 {
		t.Fatal("no rows stored")
	}
}

// The patterns take the handle, so a type with an encrypted field works
// with them and is stored encrypted: before, each called table.New on the
// client without options and refused the type. (IntraPartitionIndex.Add
// still writes through batch's plain encoding, which refuses encrypted
// fields; that is the entity model's to settle.)
func TestPatternsUseTheHandlesEncryptionOnFake(t *testing.T) {
	ctx := context.Background()
	svc := fake.NewTableService(nil)
	handle := func(name string) *table.Table[sealed] {
		c := svc.NewClient(name, nil)
		if _, err := c.CreateTable(ctx, nil); err != nil {
			t.Fatal(err)
		}
		tbl, err := table.New[sealed](c, sealedOptions())
		if err != nil {
			t.Fatal(err)
		}
		return tbl
	}
	v := func(pk, rk string) *sealed {
		return &sealed{Meta: table.Meta{PartitionKey: pk, RowKey: rk}, Email: "a@contoso.com", Note: plainNote}
	}

	t.Run("LogTail", func(t *testing.T) {
		tbl := handle("Log")
		l, err := patterns.NewLogTail(tbl, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Append(ctx, "p", v("p", ""), nil); err != nil {
			t.Fatal(err)
		}
		got, err := l.Latest(ctx, "p", 1, nil)
		if err != nil || len(got) != 1 || got[0].Note != plainNote {
			t.Fatalf("Latest: %v, %v", got, err)
		}
		storedClear(t, tbl.Entities())
	})
	t.Run("Sharded", func(t *testing.T) {
		tbl := handle("Shards")
		s, err := patterns.NewSharded(tbl, "events", 2)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Append(ctx, "k", v("", "r1"), nil); err != nil {
			t.Fatal(err)
		}
		n := 0
		for got, err := range s.Read(ctx, nil) {
			if err != nil || got.Note != plainNote {
				t.Fatalf("Read: %v, %v", got, err)
			}
			n++
		}
		if n != 1 {
			t.Fatalf("Read: %d entities, want 1", n)
		}
		storedClear(t, tbl.Entities())
	})
	t.Run("RollingTables", func(t *testing.T) {
		now := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
		r, err := patterns.NewRollingTables[sealed](svc.NewServiceClient(nil), "Sealed", keys.Daily, &patterns.RollingTablesOptions{Table: sealedOptions(), Now: func() time.Time { return now }})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Add(ctx, now, v("p", "r"), nil); err != nil {
			t.Fatal(err)
		}
		n := 0
		for got, err := range r.Query(ctx, now.Add(-time.Hour), now.Add(time.Hour), nil) {
			if err != nil || got.Note != plainNote {
				t.Fatalf("Query: %v, %v", got, err)
			}
			n++
		}
		if n != 1 {
			t.Fatalf("Query: %d entities, want 1", n)
		}
		day, err := r.TableFor(ctx, now, nil)
		if err != nil {
			t.Fatal(err)
		}
		storedClear(t, day.Entities())
	})
	t.Run("RollingTables without the options refuses the type", func(t *testing.T) {
		_, err := patterns.NewRollingTables[sealed](svc.NewServiceClient(nil), "Sealed", keys.Daily, nil)
		if err == nil {
			t.Fatal("NewRollingTables of a type with an encrypted field and no Table options: no error")
		}
	})
}

// A nil handle is a definition error, before any request.
func TestPatternsRefuseANilHandle(t *testing.T) {
	if _, err := patterns.NewLogTail[sealed](nil, nil); !errors.Is(err, patterns.ErrBadDefinition) {
		t.Errorf("NewLogTail(nil): %v, want ErrBadDefinition", err)
	}
	if _, err := patterns.NewSharded[sealed](nil, "events", 2); !errors.Is(err, patterns.ErrBadDefinition) {
		t.Errorf("NewSharded(nil): %v, want ErrBadDefinition", err)
	}
	if _, err := patterns.OpenModel[sealed](context.Background(), nil, &patterns.ModelOptions[sealed]{Name: "m"}); !errors.Is(err, patterns.ErrBadDefinition) {
		t.Errorf("OpenModel(ctx, nil): %v, want ErrBadDefinition", err)
	}
	if _, err := patterns.NewDataSeries[int64](nil, "H", 24); !errors.Is(err, patterns.ErrBadDefinition) {
		t.Errorf("NewDataSeries(nil): %v, want ErrBadDefinition", err)
	}
}
