package table_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/internal/keyrules"
	"github.com/tablekit/tablekit/internal/seqs"
	"github.com/tablekit/tablekit/internal/tableio"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/table"
)

type employee struct {
	table.Meta
	FirstName string
	LastName  string `table:"Surname"`
	Age       int
	Secret    string `table:"-"`
	note      string //lint:ignore U1000 unexported fields are skipped: this one shows it
	Hired     *time.Time
	Address   address `table:",json"`
	Rating    float64 `table:",omitempty"`
}

type address struct{ City string }

func TestPlanErrors(t *testing.T) {
	client := fake.NewTableService(nil).NewClient("t", nil)
	type noMeta struct{ Name string }
	type nested struct {
		table.Meta
		A address
	}
	type mapField struct {
		table.Meta
		M map[string]int
	}
	type sliceField struct {
		table.Meta
		S []string
	}
	type uint64Field struct {
		table.Meta
		U uint64
	}
	type badName struct {
		table.Meta
		X string `table:"bad name"`
	}
	type dupName struct {
		table.Meta
		A string `table:"X"`
		B string `table:"X"`
	}
	type badOpt struct {
		table.Meta
		A string `table:",sometimes"`
	}
	check := func(name string, err error, rule error) {
		t.Helper()
		var ie *table.InputError
		if !errors.Is(err, rule) || !errors.As(err, &ie) {
			t.Errorf("%s: %v, want %v", name, err, rule)
		}
	}
	_, err := table.New[noMeta](client, nil)
	check("no Meta", err, table.ErrNoMeta)
	_, err = table.New[nested](client, nil)
	check("nested struct", err, table.ErrUnsupportedType)
	_, err = table.New[mapField](client, nil)
	check("map", err, table.ErrUnsupportedType)
	_, err = table.New[sliceField](client, nil)
	check("slice", err, table.ErrUnsupportedType)
	_, err = table.New[uint64Field](client, nil)
	check("uint64", err, table.ErrUnsupportedType)
	_, err = table.New[badName](client, nil)
	check("bad name", err, keys.ErrInvalidName)
	_, err = table.New[dupName](client, nil)
	check("duplicate name", err, table.ErrUnsupportedType)
	_, err = table.New[badOpt](client, nil)
	check("unknown option", err, table.ErrUnsupportedType)
	_, err = table.New[int](client, nil)
	check("not a struct", err, table.ErrNotStructPointer)
	_, err = table.New[employee](nil, nil)
	check("nil client", err, table.ErrNilValue)
	var nilClient *aztables.Client
	_, err = table.New[employee](nilClient, nil)
	check("typed nil client", err, table.ErrNilValue)

	_, err = tableio.Marshal(nil)
	check("Marshal nil", err, table.ErrNilValue)
	_, err = tableio.Marshal(employee{})
	check("Marshal non-pointer", err, table.ErrNotStructPointer)
	var np *employee
	_, err = tableio.Marshal(np)
	check("Marshal nil pointer", err, table.ErrNilValue)
	err = tableio.Unmarshal([]byte(`{"PartitionKey":"p","RowKey":"r","Age":"x"}`), &employee{})
	check("Unmarshal bad Int64", err, table.ErrInvalidValue)
	err = tableio.Unmarshal([]byte(`{"PartitionKey":"p"`), &employee{})
	check("Unmarshal malformed", err, table.ErrInvalidValue)
	err = tableio.Unmarshal([]byte(`{"PartitionKey":"p","Surname":{"a":1}}`), &employee{})
	check("Unmarshal nested", err, table.ErrInvalidValue)
}

func TestCodecShape(t *testing.T) {
	deadline(t, loopDeadline)
	hired := time.Date(2012, 3, 4, 5, 6, 7, 890000000, time.UTC)
	e := &employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: "000123"}, FirstName: "Ann", LastName: "Jones", Age: 40,
		Secret: "s", Hired: &hired, Address: address{City: "Seattle"}}
	b, err := tableio.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"PartitionKey":"Sales","RowKey":"000123","FirstName":"Ann","Surname":"Jones","Age@odata.type":"Edm.Int64","Age":"40",` +
		`"Hired@odata.type":"Edm.DateTime","Hired":"2012-03-04T05:06:07.8900000Z","Address":"{\"City\":\"Seattle\"}"}`
	if string(b) != want {
		t.Fatalf("Marshal:\n got %s\nwant %s", b, want)
	}
	if !json.Valid(b) {
		t.Fatal("not JSON")
	}
	var back employee
	if err := tableio.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.FirstName != "Ann" || back.LastName != "Jones" || back.Age != 40 || !back.Hired.Equal(hired) || back.Address.City != "Seattle" || back.Secret != "" {
		t.Fatalf("Unmarshal = %+v", back)
	}
	// Unmarshal zeroes first: absent properties do not keep stale values.
	if err := tableio.Unmarshal([]byte(`{"PartitionKey":"Sales","RowKey":"1"}`), &back); err != nil || back.FirstName != "" || back.Hired != nil {
		t.Fatalf("not zeroed: %+v %v", back, err)
	}
	// Numbers that went through float64 in the SDK still decode into ints.
	if err := tableio.Unmarshal([]byte(`{"PartitionKey":"p","RowKey":"r","Age":4e1,"Rating":2}`), &back); err != nil || back.Age != 40 || back.Rating != 2 {
		t.Fatalf("float forms: %+v %v", back, err)
	}
	// JSON escapes in keys and values.
	if err := tableio.Unmarshal([]byte(`{"PartitionKey":"a\"b\u00e9","RowKey":"\ud83d\ude00","FirstName":"x\ny"}`), &back); err != nil ||
		back.PartitionKey != "a\"bé" || back.RowKey != "😀" || back.FirstName != "x\ny" {
		t.Fatalf("escapes: %+v %v", back, err)
	}
	// Control characters and U+2028 are escaped on the way out.
	e.FirstName = "a\x01\u2028\"\\"
	b, _ = tableio.Marshal(e)
	if !bytes.Contains(b, []byte(`"a\u0001\u2028\"\\"`)) {
		t.Fatalf("escaping: %s", b)
	}
	e.FirstName = "bad \xff"
	if _, err := tableio.Marshal(e); !errors.Is(err, table.ErrInvalidValue) {
		t.Fatalf("invalid UTF-8: %v", err)
	}
}

func TestEntitySizeCountsLikeTheService(t *testing.T) {
	type blob struct {
		table.Meta
		A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P string
	}
	// 16 strings of 32 K UTF-16 units: 16 * (8 + 2 + 4 + 65536) > 1 MiB.
	s := strings.Repeat("x", table.MaxStringUTF16)
	v := &blob{Meta: table.Meta{PartitionKey: "p", RowKey: "r"}, A: s, B: s, C: s, D: s, E: s, F: s, G: s, H: s, I: s, J: s, K: s, L: s, M: s, N: s, O: s, P: s}
	if _, err := tableio.Marshal(v); !errors.Is(err, table.ErrEntityTooLarge) {
		t.Fatalf("16 x 64 KiB: %v", err)
	}
	v.P = ""
	if _, err := tableio.Marshal(v); err != nil {
		t.Fatalf("15 x 64 KiB fits: %v", err)
	}
}

func TestQueryFollowsShortAndEmptyPages(t *testing.T) {
	svc := fake.NewTableService(&fake.TableServiceOptions{Paging: &fake.Paging{PageSize: 3, EmptyPageEvery: 2}})
	sc := svc.NewServiceClient(nil)
	ctx := t.Context()
	if _, err := sc.CreateTable(ctx, "emps", nil); err != nil {
		t.Fatal(err)
	}
	tb, _ := table.New[employee](sc.NewClient("emps"), nil)
	for i := 0; i < 10; i++ {
		pk := "Marketing"
		if i%2 == 0 {
			pk = "Sales"
		}
		e := &employee{Meta: table.Meta{PartitionKey: pk, RowKey: keyrules.Uint64(uint64(i))}}
		if err := tb.Add(ctx, e, nil); err != nil {
			t.Fatal(err)
		}
	}
	svc.ResetCounts()
	got, err := seqs.Collect(tb.Query(ctx, nil))
	if err != nil || len(got) != 10 {
		t.Fatalf("got %d, %v", len(got), err)
	}
	pages := svc.Count(fake.OpQueryEntities)
	// 5 per partition in pages of 3 split at the partition: 3, 2, 3, 2,
	// and an empty page with a token before each of the last three: 7.
	if pages != 7 {
		t.Fatalf("query took %d requests, want 7", pages)
	}
	// One page at a time, resuming from the token.
	var n, empty int
	token := ""
	for {
		p, err := tb.QueryPage(ctx, token, nil)
		if err != nil {
			t.Fatal(err)
		}
		n += len(p.Items)
		if len(p.Items) == 0 {
			empty++
		}
		if p.Next == "" {
			break
		}
		token = p.Next
	}
	if n != 10 || empty == 0 {
		t.Fatalf("pages returned %d entities with %d empty pages", n, empty)
	}
}
