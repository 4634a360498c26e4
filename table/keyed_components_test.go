package table_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/internal/tableio"
	"github.com/tablekit/tablekit/keys"
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
	for v, want := range map[uint8]string{0: "9", 3: "6", 9: "0"} {
		_, rk, err := table.KeysOf(&oneDigitDesc{Name: "a", Version: v})
		if err != nil || rk != want {
			t.Errorf("Version %d: RowKey %q, %v; want %q", v, rk, err, want)
			continue
		}
		e := &table.Entity{Meta: table.Meta{PartitionKey: "a", RowKey: rk}}
		body, err := tableio.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		var back oneDigitDesc
		if err := tableio.Unmarshal(body, &back); err != nil || back.Version != v {
			t.Errorf("RowKey %q read back as Version %d, %v; want %d", rk, back.Version, err, v)
		}
	}
	_, _, err := table.KeysOf(&oneDigitDesc{Name: "a", Version: 10})
	var ie *table.InputError
	if !errors.Is(err, table.ErrValueOutOfRange) || !errors.As(err, &ie) || ie.Field != "Version" {
		t.Errorf("Version 10 in one digit: %v, want ErrValueOutOfRange on Version", err)
	}
}

// A key of one ascending component in one digit ("pad:1", the narrowest
// width): the digit itself, not the 20 digits of an unpadded integer; a
// value of two digits is refused.
type oneDigit struct {
	table.Meta
	Name    string `table:"Name,pk"`
	Version uint8  `table:"Version,rk,pad:1"`
}

func TestFixedKeyOfOneDigitIsTheDigit(t *testing.T) {
	for _, v := range []uint8{0, 7, 9} {
		_, rk, err := table.KeysOf(&oneDigit{Name: "a", Version: v})
		if want := string(rune('0' + v)); err != nil || rk != want {
			t.Errorf("Version %d: RowKey %q, %v; want %q", v, rk, err, want)
		}
	}
	if _, _, err := table.KeysOf(&oneDigit{Name: "a", Version: 10}); !errors.Is(err, keys.ErrOutOfRange) {
		t.Errorf("Version 10 in one digit: %v, want keys.ErrOutOfRange", err)
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

type tupleKeyed struct {
	table.Meta
	S string `table:"S,pk,tuple"`
	N int    `table:"N,rk"`
}

// A tuple component read back from the keys alone (an entity written by
// other code, without the component properties) is the string that was
// encoded, for every character the encoding escapes and for the plain ones.
func TestTupleComponentReadsBackFromTheKeysAlone(t *testing.T) {
	for _, s := range []string{"plain", "a&b", "a'b", "a.b", "a/b", "a>b", "a?b", "a[b", `a\b`, `a"b`, "a~b", "a!b", "é"} {
		pk, rk, err := table.KeysOf(&tupleKeyed{S: s, N: 1})
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		body, err := tableio.Marshal(&table.Entity{Meta: table.Meta{PartitionKey: pk, RowKey: rk}})
		if err != nil {
			t.Fatal(err)
		}
		var back tupleKeyed
		if err := tableio.Unmarshal(body, &back); err != nil || back.S != s || back.N != 1 {
			t.Errorf("%q: keys %q %q read back as %q, %d, %v", s, pk, rk, back.S, back.N, err)
		}
	}
	// An escape character with nothing after it is no tuple encoding: the
	// key is another's, and refused, not read as the character.
	_, rk, err := table.KeysOf(&tupleKeyed{S: "x", N: 1})
	if err != nil {
		t.Fatal(err)
	}
	// So is a component of a byte the encoding always escapes (a space,
	// a double quote) standing alone.
	for _, pk := range []string{"&!", "[!", ".!", ">!", " !", "\"!"} {
		body, err := tableio.Marshal(&table.Entity{Meta: table.Meta{PartitionKey: pk, RowKey: rk}})
		if err != nil {
			t.Fatal(err)
		}
		var back tupleKeyed
		if err := tableio.Unmarshal(body, &back); !errors.Is(err, table.ErrInvalidValue) {
			t.Errorf("PartitionKey %q: read as %q, %v; want ErrInvalidValue", pk, back.S, err)
		}
	}
}

// A ticks component in the keys that is no tick count is a decode error,
// not a zero time.
func TestKeysWithABadTicksComponentAreRefused(t *testing.T) {
	for _, rk := range []string{"order_2026!notticks!o-17!", "order_2026!" + strings.Repeat("9", 25) + "!o-17!"} {
		body, err := tableio.Marshal(&table.Entity{Meta: table.Meta{PartitionKey: "C042!", RowKey: rk}})
		if err != nil {
			t.Fatal(err)
		}
		var v keyedOrder
		if err := tableio.Unmarshal(body, &v); !errors.Is(err, table.ErrInvalidValue) || !strings.Contains(err.Error(), "Placed") {
			t.Errorf("RowKey %q: %v, want ErrInvalidValue naming Placed", rk, err)
		}
	}
}

// pad:N takes a width of 1 to 20 digits; pad:0 is refused, not read as pad.
func TestPadWidthZeroIsRefused(t *testing.T) {
	client := fake.NewTableService(nil).NewClient("t", nil)
	type padZero struct {
		table.Meta
		N int `table:"N,pk,pad:0"`
	}
	_, err := table.New[padZero](client, nil)
	if !errors.Is(err, table.ErrKeyLayout) || !strings.Contains(err.Error(), "pad:0") {
		t.Fatalf("pad:0: %v, want ErrKeyLayout", err)
	}
	type padOne struct {
		table.Meta
		N int `table:"N,pk,pad:1"`
	}
	if _, err := table.New[padOne](client, nil); err != nil {
		t.Fatalf("pad:1: %v", err)
	}
}

// A key of one plain string component is the string itself, with no
// terminator: the guide's "Sales".
func TestOneStringComponentIsTheKeyItself(t *testing.T) {
	type dept struct {
		table.Meta
		Name string `table:"Name,pk"`
		ID   string `table:"ID,rk"`
	}
	pk, rk, err := table.KeysOf(&dept{Name: "Sales", ID: "000123"})
	if err != nil || pk != "Sales" || rk != "000123" {
		t.Fatalf("KeysOf = %q, %q, %v; want Sales, 000123", pk, rk, err)
	}
}

// MetaOf, which batch and the patterns route writes by, refuses composed
// keys the service would refuse and leaves Meta as it was.
func TestMetaOfRefusesAComposedKeyTheServiceWouldRefuse(t *testing.T) {
	type rawKeyed struct {
		table.Meta
		A string `table:"A,pk,raw"`
		N int    `table:"N,rk,pad:3"`
	}
	v := &rawKeyed{A: "a/b", N: 1}
	m, err := tableio.MetaOf(v)
	var ie *table.InputError
	if m != nil || !errors.Is(err, keys.ErrForbiddenChar) || !errors.As(err, &ie) || ie.Op != "MetaOf" {
		t.Fatalf("MetaOf of PartitionKey a/b: %v, %v; want MetaOf's ErrForbiddenChar", m, err)
	}
	if v.PartitionKey != "" || v.RowKey != "" {
		t.Fatalf("a refused key was written into Meta: %q %q", v.PartitionKey, v.RowKey)
	}
	if m, err := tableio.MetaOf(&rawKeyed{A: "a", N: 1}); err != nil || m.PartitionKey != "a" || m.RowKey != "001" {
		t.Fatalf("MetaOf of a, 1: %+v, %v", m, err)
	}
}

// rawAndSmall has a raw PartitionKey component and an int8 RowKey
// component in three digits.
type rawAndSmall struct {
	table.Meta
	Region string `table:"Region,pk,raw"`
	N      int8   `table:"N,rk,pad:3"`
}

// Components read back from the keys alone (an entity written by other
// code): a raw one is the key's text, a number the value of its digits;
// digits that overflow the field's type are refused, naming the value.
func TestRawAndNumberComponentsReadBackFromTheKeysAlone(t *testing.T) {
	var back rawAndSmall
	if err := tableio.Unmarshal([]byte(`{"PartitionKey":"eu-west","RowKey":"042"}`), &back); err != nil || back.Region != "eu-west" || back.N != 42 {
		t.Fatalf("read back as %q, %d, %v; want eu-west, 42", back.Region, back.N, err)
	}
	err := tableio.Unmarshal([]byte(`{"PartitionKey":"eu-west","RowKey":"200"}`), &back)
	if !errors.Is(err, table.ErrInvalidValue) || !strings.Contains(err.Error(), "200 overflows int8") {
		t.Fatalf("RowKey 200 into an int8: %v; want ErrInvalidValue saying 200 overflows int8", err)
	}
}

// TestOneOutOfRangeErrorForKeysAndValues: a number that does not fit its
// key component is out of range whichever way it is padded, and keys
// and table name one error for it, so a caller checks either name and
// meets both paths (before, an ascending pad:1 said keys.ErrOutOfRange,
// a descending one table.ErrValueOutOfRange, and neither matched the
// other).
func TestOneOutOfRangeErrorForKeysAndValues(t *testing.T) {
	_, _, asc := table.KeysOf(&oneDigit{Name: "a", Version: 10})
	_, _, desc := table.KeysOf(&oneDigitDesc{Name: "a", Version: 10})
	_, direct := keys.FixedUint(10, 1)
	for name, err := range map[string]error{"pad:1": asc, "desc,pad:1": desc, "keys.FixedUint": direct} {
		if !errors.Is(err, keys.ErrOutOfRange) || !errors.Is(err, table.ErrValueOutOfRange) {
			t.Errorf("%s, 10 in one digit: %v; want both keys.ErrOutOfRange and table.ErrValueOutOfRange", name, err)
		}
	}
}
