package table_test

import (
	"errors"
	"testing"

	"github.com/tablekit/tablekit/table"
)

// A key of one descending component in one digit: 9 - n, so the
// newest of ten versions sorts first ("desc,pad:1" is the narrowest
// width the tag accepts).
type oneDigitDesc struct {
	table.Meta
	Name    string `table:"Name,pk"`
	Version uint8  `table:"Version,rk,desc,pad:1"`
}

func TestDescendingKeyOfOneDigitIsNineMinusTheValue(t *testing.T) {
	var c table.Codec
	for v, want := range map[uint8]string{0: "9", 3: "6", 9: "0"} {
		_, rk, err := table.KeysOf(&oneDigitDesc{Name: "a", Version: v})
		if err != nil || rk != want {
			t.Errorf("Version %d: RowKey %q, %v; want %q", v, rk, err, want)
			continue
		}
		e := &table.Entity{Meta: table.Meta{PartitionKey: "a", RowKey: rk}}
		body, err := c.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		var back oneDigitDesc
		if err := c.Unmarshal(body, &back); err != nil || back.Version != v {
			t.Errorf("RowKey %q read back as Version %d, %v; want %d", rk, back.Version, err, v)
		}
	}
	_, _, err := table.KeysOf(&oneDigitDesc{Name: "a", Version: 10})
	var ie *table.InputError
	if !errors.Is(err, table.ErrValueOutOfRange) || !errors.As(err, &ie) || ie.Field != "Version" {
		t.Errorf("Version 10 in one digit: %v, want ErrValueOutOfRange on Version", err)
	}
}

// A PartitionKey component that cannot be composed (pad:N holds no
// negative number) is KeyRange's error, as it is every write's: the
// range must not fall back to an empty PartitionKey.
type shardedByNumber struct {
	table.Meta
	Shard int    `table:"Shard,pk,pad:2"`
	ID    string `table:"ID,rk"`
}

func TestKeyRangeRefusesAPartitionKeyItCannotCompose(t *testing.T) {
	for n := range 2 {
		_, err := table.KeyRange(&shardedByNumber{Shard: -1, ID: "x"}, n).Build()
		var ie *table.InputError
		if !errors.Is(err, table.ErrValueOutOfRange) || !errors.As(err, &ie) || ie.Field != "Shard" || ie.Op != "KeyRange" {
			t.Errorf("n=%d: %v, want KeyRange's ErrValueOutOfRange on Shard", n, err)
		}
	}
	got, err := table.KeyRange(&shardedByNumber{Shard: 7}, 0).Build()
	if want := "PartitionKey eq '07'"; err != nil || got != want {
		t.Errorf("Shard 7: %s, %v; want %s", got, err, want)
	}
}
