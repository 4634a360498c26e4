package conformance

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tablekit/tablekit/internal/svcanswer"
	"github.com/tablekit/tablekit/internal/tableio"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/internal/keyrules"
	"github.com/tablekit/tablekit/internal/reqcount"
	"github.com/tablekit/tablekit/internal/seqs"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/table"
)

// employee is the guide's employee entity.
type employee struct {
	table.Meta
	FirstName  string
	LastName   string
	Age        int
	Email      string `table:",omitempty"`
	Department string `table:"Dept,omitempty"`
}

// allTypes has a field of every EDM type.
type allTypes struct {
	table.Meta
	S     string
	B     bool
	I32   int32
	I64   int64
	U32   uint32
	F64   float64
	F32   float32
	T     time.Time
	Bin   []byte
	G     table.GUID
	PS    *string
	PI    *int64
	Level level
	Tags  []string `table:",json"`
}

// level is an encoding.TextMarshaler.
type level int

func (l level) MarshalText() ([]byte, error) { return []byte([]string{"low", "high"}[l]), nil }
func (l *level) UnmarshalText(b []byte) error {
	switch string(b) {
	case "low":
		*l = 0
	case "high":
		*l = 1
	default:
		return errors.New("bad level")
	}
	return nil
}

// keptEntity has a catch-all for properties it does not name.
type keptEntity struct {
	table.Meta
	Name  string
	Other table.Extra
}

func newEmployees(t *testing.T, env backend) (*table.Table[employee], *reqcount.Counter, *aztables.Client) {
	c := &reqcount.Counter{}
	client := env.NewTable(t, c)
	tb, err := table.New[employee](client, nil)
	if err != nil {
		t.Fatal(err)
	}
	return tb, c, client
}

func wantRequests(t *testing.T, c *reqcount.Counter, n int, what string) {
	t.Helper()
	if got := c.N(); got != n {
		t.Errorf("%s cost %d requests, want %d", what, got, n)
	}
	c.Reset()
}

// runTable runs every behaviour package table relies on.
func runTable(t *testing.T, env backend) {
	ctx := t.Context()

	t.Run("CRUD semantics and codes", func(t *testing.T) {
		tb, c, _ := newEmployees(t, env)
		e := &employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: "000123"}, FirstName: "Don", LastName: "Hall", Age: 34}
		if err := tb.Add(ctx, e, nil); err != nil {
			t.Fatal(err)
		}
		wantRequests(t, c, 1, "Add")
		if e.ETag == "" || e.Timestamp.IsZero() {
			t.Fatalf("Add did not write back ETag and Timestamp: %+v", e.Meta)
		}
		got, err := tb.Get(ctx, "Sales", "000123", nil)
		if err != nil {
			t.Fatal(err)
		}
		wantRequests(t, c, 1, "Get")
		if got.ETag != e.ETag || !got.Timestamp.Equal(e.Timestamp) || got.FirstName != "Don" || got.Age != 34 {
			t.Fatalf("Get = %+v, want what Add wrote: %+v", got, e)
		}

		err = tb.Add(ctx, e, nil)
		var re *azcore.ResponseError
		if !errors.Is(err, table.ErrAlreadyExists) || !errors.As(err, &re) || re.StatusCode != 409 || re.ErrorCode != "EntityAlreadyExists" {
			t.Fatalf("second Add: %v", err)
		}

		stale := *got
		got.Age = 35
		if err := tb.Update(ctx, got, &table.UpdateOptions{Mode: aztables.UpdateModeReplace}); err != nil {
			t.Fatal(err)
		}
		if got.ETag == stale.ETag {
			t.Fatal("Update did not write back a new ETag")
		}
		stale.Age = 99
		if err := tb.Update(ctx, &stale, nil); !table.Is(err, table.ErrPreconditionFailed) || svcanswer.ErrorCode(err) != "UpdateConditionNotSatisfied" {
			t.Fatalf("Update with a stale ETag: %v", err)
		}
		c.Reset()
		noETag := &employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: "000123"}}
		if err := tb.Update(ctx, noETag, nil); !errors.Is(err, table.ErrNoETag) {
			t.Fatalf("Update without an ETag: %v", err)
		}
		wantRequests(t, c, 0, "Update without an ETag")
		missing := &employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: "000999"}}
		if err := tb.Update(ctx, missing, &table.UpdateOptions{IfMatch: to.Ptr(azcore.ETagAny)}); !table.Is(err, table.ErrNotFound) {
			t.Fatalf("Update(AnyETag) of a missing entity must not upsert: %v", err)
		}
		if _, err := tb.Get(ctx, "Sales", "000999", nil); !errors.Is(err, table.ErrNotFound) || svcanswer.ErrorCode(err) != "ResourceNotFound" {
			t.Fatalf("Get of a missing entity: %v", err)
		}

		// Upsert merge keeps properties it does not send; replace drops them.
		part := &employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: "000123"}, Email: "don@contoso.com"}
		if err := tb.Upsert(ctx, part, nil); err != nil {
			t.Fatal(err)
		}
		merged, _ := tb.Get(ctx, "Sales", "000123", nil)
		if merged.Email != "don@contoso.com" || merged.Age != 0 {
			// FirstName etc. were sent as "" and 0 by the struct, so merge overwrote them;
			// Email was added.
			t.Fatalf("after merge: %+v", merged)
		}
		rep := &employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: "000123"}, FirstName: "Only"}
		if err := tb.Upsert(ctx, rep, &table.UpsertOptions{Mode: aztables.UpdateModeReplace}); err != nil {
			t.Fatal(err)
		}
		replaced, _ := tb.Get(ctx, "Sales", "000123", nil)
		if replaced.Email != "" || replaced.FirstName != "Only" {
			t.Fatalf("after replace: %+v", replaced)
		}
		if err := tb.Upsert(ctx, &employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: "000152"}}, nil); err != nil {
			t.Fatalf("Upsert of a new entity: %v", err)
		}

		staleTag := stale.ETag
		if err := tb.Delete(ctx, "Sales", "000123", &table.DeleteOptions{IfMatch: &staleTag}); !table.Is(err, table.ErrPreconditionFailed) {
			t.Fatalf("Delete with a stale ETag: %v", err)
		}
		c.Reset()
		if err := tb.DeleteValue(ctx, replaced, nil); err != nil {
			t.Fatal(err)
		}
		wantRequests(t, c, 1, "Delete")
		if err := tb.Delete(ctx, "Sales", "000123", nil); !table.Is(err, table.ErrNotFound) {
			t.Fatalf("Delete of a missing entity: %v", err)
		}
		if err := tb.Delete(ctx, "Sales", "000123", &table.DeleteOptions{IfExists: true}); err != nil {
			t.Fatalf("Delete IfExists of a missing entity: %v", err)
		}
	})

	t.Run("an insert asked for no content answers with the ETag alone", func(t *testing.T) {
		_, _, client := newEmployees(t, env)
		echo, err := client.AddEntity(ctx, []byte(`{"PartitionKey":"Sales","RowKey":"echo","LastName":"Hall"}`), nil)
		if err != nil || echo.ETag == "" || !bytes.Contains(echo.Value, []byte(`"LastName":"Hall"`)) {
			t.Fatalf("default insert: %s %q %v", echo.Value, echo.ETag, err)
		}
		quiet, err := client.AddEntity(policy.WithHTTPHeader(ctx, http.Header{"Prefer": {"return-no-content"}}),
			[]byte(`{"PartitionKey":"Sales","RowKey":"quiet","LastName":"Hall"}`), nil)
		if err != nil || quiet.ETag == "" || bytes.Contains(quiet.Value, []byte("Hall")) {
			t.Fatalf("insert with return-no-content: %s %q %v", quiet.Value, quiet.ETag, err)
		}
		// The header's ETag is the entity's: it guards an update.
		if _, err := client.UpdateEntity(ctx, []byte(`{"PartitionKey":"Sales","RowKey":"quiet","LastName":"Jones"}`),
			&aztables.UpdateEntityOptions{IfMatch: &quiet.ETag, UpdateMode: aztables.UpdateModeReplace}); err != nil {
			t.Fatalf("update guarded by the no-content ETag: %v", err)
		}
	})

	t.Run("encrypted properties are stored as binary and read back", func(t *testing.T) {
		type Secret struct {
			table.Meta
			Name  string
			SSN   string    `table:",encrypt"`
			Since time.Time `table:",encrypt"`
			Blob  []byte    `table:",encrypt"`
		}
		_, c, client := newEmployees(t, env)
		keys := table.LocalKeys{"k1": bytes.Repeat([]byte{7}, 32)}
		tb, err := table.New[Secret](client, &table.Options{Encryption: &table.Encryption{KeyID: "k1", Keys: keys}})
		if err != nil {
			t.Fatal(err)
		}
		c.Reset()
		v := &Secret{Meta: table.Meta{PartitionKey: "Sales", RowKey: "000123"}, Name: "Don", SSN: "078-05-1120",
			Since: time.Date(2012, 3, 4, 5, 6, 7, 123456700, time.UTC), Blob: bytes.Repeat([]byte{1}, 40_000)}
		if err := tb.Add(ctx, v, nil); err != nil {
			t.Fatal(err)
		}
		got, err := tb.Get(ctx, "Sales", "000123", nil)
		if err != nil || got.SSN != v.SSN || !got.Since.Equal(v.Since) || !bytes.Equal(got.Blob, v.Blob) || got.Name != "Don" {
			t.Fatalf("round trip: %v", err)
		}
		wantRequests(t, c, 2, "encrypted Add + Get")
		raw, _ := client.GetEntity(ctx, "Sales", "000123", nil)
		if bytes.Contains(raw.Value, []byte("078-05-1120")) || !bytes.Contains(raw.Value, []byte(`"SSN@odata.type":"Edm.Binary"`)) {
			t.Fatalf("stored: %.300s", raw.Value)
		}
		if err := tb.Upsert(ctx, v, &table.UpsertOptions{Mode: aztables.UpdateModeMerge}); !errors.Is(err, table.ErrMergeEncrypted) {
			t.Fatalf("merge: %v", err)
		}
		wantRequests(t, c, 1, "a refused merge (the raw read above only)")
	})

	t.Run("EDM round trips at the extremes", func(t *testing.T) {
		c := &reqcount.Counter{}
		tb, err := table.New[allTypes](env.NewTable(t, c), nil)
		if err != nil {
			t.Fatal(err)
		}
		s := "ünïcödé ✓ 😀 'quote' \"dq\" \\ \n"
		i := int64(math.MinInt64)
		g, _ := table.ParseGUID("4d3c2b1a-0f1e-2d3c-4b5a-696887766554")
		cases := []allTypes{
			{S: "", B: false, I32: math.MinInt32, I64: math.MinInt64, U32: 0, F64: 2.0, F32: 2.0, T: time.Date(1601, 1, 1, 0, 0, 0, 0, time.UTC), Bin: []byte{}, Tags: []string{}},
			{S: s, B: true, I32: math.MaxInt32, I64: math.MaxInt64, U32: math.MaxUint32, F64: -1.5e308, F32: math.MaxFloat32, T: time.Date(9999, 12, 31, 23, 59, 59, 999999900, time.UTC), Bin: bytes.Repeat([]byte{0, 0xff, 0x7f}, table.MaxBinaryBytes/3), G: g, PS: &s, PI: &i, Level: 1, Tags: []string{"a", "b"}},
			{S: strings.Repeat("é", 30000), F64: math.SmallestNonzeroFloat64, T: time.Date(2026, 11, 21, 10, 0, 0, 123456700, time.UTC)},
			{F64: math.Inf(1), F32: float32(math.Inf(-1)), T: time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)},
			{F64: 0.1, F32: 0.1, T: time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)},
		}
		for n, want := range cases {
			want.PartitionKey, want.RowKey = "p", fmt.Sprint(n)
			in := want
			if err := tb.Add(ctx, &in, nil); err != nil {
				t.Fatalf("case %d: %v", n, err)
			}
			got, err := tb.Get(ctx, "p", want.RowKey, nil)
			if err != nil {
				t.Fatalf("case %d: %v", n, err)
			}
			want.Meta = got.Meta
			if !equalTypes(*got, want) {
				t.Errorf("case %d round trip:\n got %+v\nwant %+v", n, *got, want)
			}
		}
	})

	t.Run("time is kept at 100 ns, UTC", func(t *testing.T) {
		c := &reqcount.Counter{}
		tb, _ := table.New[allTypes](env.NewTable(t, c), nil)
		at := time.Date(2026, 11, 21, 11, 0, 0, 123456789, time.FixedZone("CET", 3600))
		v := &allTypes{Meta: table.Meta{PartitionKey: "p", RowKey: "t"}, T: at}
		if err := tb.Add(ctx, v, nil); err != nil {
			t.Fatal(err)
		}
		got, _ := tb.Get(ctx, "p", "t", nil)
		if !got.T.Equal(at.Truncate(100)) || got.T.Location() != time.UTC {
			t.Fatalf("T = %v, want %v in UTC", got.T, at.Truncate(100))
		}
	})

	t.Run("ordering, paging and continuation tokens", func(t *testing.T) {
		tb, c, client := newEmployees(t, env)
		var want []string
		for _, pk := range []string{"Sales", "Marketing"} {
			var actions []aztables.TransactionAction
			for i := 0; i < 25; i++ {
				e := &employee{Meta: table.Meta{PartitionKey: pk, RowKey: keys.Int64(int64(24 - i))}, Age: i}
				body, err := tableio.For(tb).Encode(e)
				if err != nil {
					t.Fatal(err)
				}
				actions = append(actions, aztables.TransactionAction{ActionType: aztables.TransactionTypeAdd, Entity: body})
			}
			if _, err := client.SubmitTransaction(ctx, actions, nil); err != nil {
				t.Fatal(err)
			}
		}
		for _, pk := range []string{"Marketing", "Sales"} {
			for i := 0; i < 25; i++ {
				want = append(want, pk+"/"+keys.Int64(int64(i)))
			}
		}
		c.Reset()
		all, err := seqs.Collect(tb.Query(ctx, nil))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range all {
			got = append(got, e.PartitionKey+"/"+e.RowKey)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("order:\n got %q\nwant %q", got, want)
		}
		// Two partitions: the service may end a page where one ends, and
		// send an empty page with a token: the fake ends it there, the
		// adversarial fake also sends the empty page.
		wantPagedRequests(t, env, c, 1, 2, 3, "query of 50 entities over two partitions")

		// Pages of 10 with tokens that survive a restart (a string).
		var paged []string
		token := ""
		for pages := 0; ; pages++ {
			p, err := tb.QueryPage(ctx, token, &table.QueryOptions{Filter: table.Partition("Sales"), Top: 10})
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range p.Items {
				paged = append(paged, e.RowKey)
			}
			if p.Next == "" {
				break
			}
			if pages > 10 {
				t.Fatal("paging does not end")
			}
			token = string([]byte(p.Next)) // as if stored and read back
		}
		if len(paged) != 25 || !slices.IsSorted(paged) {
			t.Fatalf("paged %d: %q", len(paged), paged)
		}

		// Top caps the whole query.
		top, err := seqs.Collect(tb.Query(ctx, &table.QueryOptions{Filter: table.Partition("Sales"), Top: 7}))
		if err != nil || len(top) != 7 || top[0].RowKey != keys.Int64(0) {
			t.Fatalf("Top 7: %d, %v", len(top), err)
		}
		c.Reset()
		if _, err := tb.QueryPage(ctx, "", &table.QueryOptions{Top: 1001}); !errors.Is(err, table.ErrBadOption) {
			t.Fatalf("Top 1001: %v", err)
		}
		if _, err := tb.QueryPage(ctx, "garbage", nil); !errors.Is(err, table.ErrBadToken) {
			t.Fatalf("bad token: %v", err)
		}
		wantRequests(t, c, 0, "bad Top and token")
	})

	t.Run("$select projects", func(t *testing.T) {
		tb, _, _ := newEmployees(t, env)
		e := &employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: "000123"}, FirstName: "Don", LastName: "Hall", Age: 34, Email: "don@contoso.com"}
		if err := tb.Add(ctx, e, nil); err != nil {
			t.Fatal(err)
		}
		got, err := seqs.Collect(tb.Query(ctx, &table.QueryOptions{Select: []string{"Email", "Age"}}))
		if err != nil || len(got) != 1 {
			t.Fatalf("select: %v %v", got, err)
		}
		g := got[0]
		if g.Email != "don@contoso.com" || g.Age != 34 || g.FirstName != "" || g.PartitionKey != "Sales" || g.RowKey != "000123" || g.ETag == "" {
			t.Fatalf("projection = %+v", g)
		}
	})

	t.Run("filters quote strings and type literals", func(t *testing.T) {
		c := &reqcount.Counter{}
		tb, _ := table.New[allTypes](env.NewTable(t, c), nil)
		g, _ := table.ParseGUID("4d3c2b1a-0f1e-2d3c-4b5a-696887766554")
		at := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
		rows := []allTypes{
			{Meta: table.Meta{PartitionKey: "p", RowKey: "O'Brien"}, S: "it's", I64: 1 << 40, I32: 7, F64: 2.5, T: at, G: g, Bin: []byte{1, 2}, B: true},
			{Meta: table.Meta{PartitionKey: "p", RowKey: "Smith"}, S: "its", I64: 5, I32: 8, F64: 1.5, T: at.Add(-time.Hour), Bin: []byte{3}},
		}
		for i := range rows {
			if err := tb.Add(ctx, &rows[i], nil); err != nil {
				t.Fatal(err)
			}
		}
		filters := map[string]table.Filter{
			"RowKey with a quote":   table.Partition("p").And(table.Prop("RowKey").Eq("O'Brien")),
			"string with a quote":   table.Prop("S").Eq("it's"),
			"Int64 literal":         table.Prop("I64").Gt(int64(1 << 39)),
			"Int32 literal":         table.Prop("I32").Eq(int32(7)),
			"Double literal":        table.Prop("F64").Ge(2.0),
			"datetime literal":      table.Prop("T").Gt(at.Add(-time.Minute)),
			"guid literal":          table.Prop("G").Eq(g),
			"binary literal":        table.Prop("Bin").Eq([]byte{1, 2}),
			"bool literal":          table.Prop("B").Eq(true),
			"not":                   table.Not(table.Prop("RowKey").Eq("Smith")),
			"or":                    table.Or(table.Prop("RowKey").Eq("O'Brien"), table.Prop("RowKey").Eq("nobody")),
			"prefix range":          table.RowPrefix("p", "O'"),
			"injection is a string": table.Or(table.Prop("RowKey").Eq("O'Brien"), table.Prop("RowKey").Eq("x') or (RowKey ne '")),
		}
		for name, f := range filters {
			got, err := seqs.Collect(tb.Query(ctx, &table.QueryOptions{Filter: f}))
			if err != nil {
				t.Fatalf("%s (%s): %v", name, f, err)
			}
			if len(got) != 1 || got[0].RowKey != "O'Brien" {
				var rks []string
				for _, g := range got {
					rks = append(rks, g.RowKey)
				}
				t.Errorf("%s (%s) matched %q, want only O'Brien", name, f, rks)
			}
		}
	})

	t.Run("unnamed properties survive a read-modify-write", func(t *testing.T) {
		c := &reqcount.Counter{}
		client := env.NewTable(t, c)
		raw := map[string]any{"PartitionKey": "p", "RowKey": "r", "Name": "n",
			"Big": "9223372036854775807", "Big@odata.type": "Edm.Int64",
			"When": "2026-11-21T10:00:00.1234567Z", "When@odata.type": "Edm.DateTime",
			"Small": 5, "Text": "x"}
		body, _ := json.Marshal(raw)
		if _, err := client.AddEntity(ctx, body, nil); err != nil {
			t.Fatal(err)
		}
		tb, _ := table.New[keptEntity](client, nil)
		v, err := tb.Get(ctx, "p", "r", nil)
		if err != nil {
			t.Fatal(err)
		}
		v.Name = "changed"
		if err := tb.Update(ctx, v, &table.UpdateOptions{Mode: aztables.UpdateModeReplace}); err != nil {
			t.Fatal(err)
		}
		resp, err := client.GetEntity(ctx, "p", "r", nil)
		if err != nil {
			t.Fatal(err)
		}
		var back map[string]any
		_ = json.Unmarshal(resp.Value, &back)
		if back["Name"] != "changed" || back["Big"] != "9223372036854775807" || back["Big@odata.type"] != "Edm.Int64" ||
			back["When@odata.type"] != "Edm.DateTime" || back["Small"] != float64(5) || back["Text"] != "x" {
			t.Fatalf("after replace the unnamed properties are %v", back)
		}
	})

	t.Run("bad input is refused before any request", func(t *testing.T) {
		c := &reqcount.Counter{}
		client := env.NewTable(t, c)
		tb, _ := table.New[keptEntity](client, nil)
		wide := table.Extra{}
		for i := 0; i < table.MaxUserProperties; i++ {
			wide[fmt.Sprintf("P%03d", i)] = table.Property{Value: []byte("1")}
		}
		huge := table.Extra{}
		for i := 0; i < 20; i++ {
			huge[fmt.Sprintf("S%02d", i)] = table.Property{Value: []byte(`"` + strings.Repeat("x", 30000) + `"`)}
		}
		cases := map[string]struct {
			v    *keptEntity
			rule error
		}{
			"253 properties":      {&keptEntity{Meta: table.Meta{PartitionKey: "p", RowKey: "r"}, Name: "n", Other: wide}, table.ErrTooManyProperties},
			"entity over 1 MiB":   {&keptEntity{Meta: table.Meta{PartitionKey: "p", RowKey: "r"}, Other: huge}, table.ErrEntityTooLarge},
			"bad property name":   {&keptEntity{Meta: table.Meta{PartitionKey: "p", RowKey: "r"}, Other: table.Extra{"bad name": {Value: []byte("1")}}}, keys.ErrInvalidName},
			"string over 32K":     {&keptEntity{Meta: table.Meta{PartitionKey: "p", RowKey: "r"}, Name: strings.Repeat("x", table.MaxStringUTF16+1)}, table.ErrStringTooLong},
			"slash in RowKey":     {&keptEntity{Meta: table.Meta{PartitionKey: "p", RowKey: "a/b"}}, keys.ErrForbiddenChar},
			"control char in key": {&keptEntity{Meta: table.Meta{PartitionKey: "p\x01", RowKey: "r"}}, keys.ErrControlChar},
			"key over 1 KiB":      {&keptEntity{Meta: table.Meta{PartitionKey: "p", RowKey: strings.Repeat("k", 513)}}, keys.ErrTooLong},
			"nil value":           {nil, table.ErrNilValue},
		}
		for name, tc := range cases {
			for op, call := range map[string]func() error{
				"Add":    func() error { return tb.Add(ctx, tc.v, nil) },
				"Upsert": func() error { return tb.Upsert(ctx, tc.v, nil) },
				"Update": func() error { return tb.Update(ctx, tc.v, &table.UpdateOptions{IfMatch: to.Ptr(azcore.ETagAny)}) },
			} {
				err := call()
				var ie *table.InputError
				if !errors.Is(err, tc.rule) || !errors.As(err, &ie) {
					t.Errorf("%s %s: %v, want %v", op, name, err, tc.rule)
				}
			}
		}
		ttb, _ := table.New[allTypes](client, nil)
		old := &allTypes{Meta: table.Meta{PartitionKey: "p", RowKey: "r"}, T: time.Date(1600, 12, 31, 0, 0, 0, 0, time.UTC)}
		if err := ttb.Add(ctx, old, nil); !errors.Is(err, table.ErrValueOutOfRange) {
			t.Errorf("DateTime before 1601: %v", err)
		}
		bin := &allTypes{Meta: table.Meta{PartitionKey: "p", RowKey: "r"}, T: time.Now(), Bin: make([]byte, table.MaxBinaryBytes+1)}
		if err := ttb.Add(ctx, bin, nil); !errors.Is(err, table.ErrBinaryTooLong) {
			t.Errorf("binary over 64 KiB: %v", err)
		}
		var many []table.Filter
		for i := 0; i < 16; i++ {
			many = append(many, table.Prop("Name").Ne(fmt.Sprint(i)))
		}
		if _, err := seqs.Collect(tb.Query(ctx, &table.QueryOptions{Filter: table.And(many...)})); !errors.Is(err, table.ErrBadFilter) {
			t.Errorf("16 comparisons: %v", err)
		}
		if _, err := tb.Get(ctx, "p", "a#b", nil); !errors.Is(err, keys.ErrForbiddenChar) {
			t.Errorf("Get with a bad key: %v", err)
		}
		if err := tb.Delete(ctx, "p?", "r", nil); !errors.Is(err, keys.ErrForbiddenChar) {
			t.Errorf("Delete with a bad key: %v", err)
		}
		if _, err := tb.Modify(ctx, "p", "r", nil, nil); !errors.Is(err, table.ErrNilValue) {
			t.Errorf("Modify with nil func: %v", err)
		}
		wantRequests(t, c, 0, "bad input")
	})

	t.Run("Modify: two requests alone, no lost update under contention", func(t *testing.T) {
		tb, c, _ := newEmployees(t, env)
		if err := tb.Add(ctx, &employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: "counter"}}, nil); err != nil {
			t.Fatal(err)
		}
		c.Reset()
		if _, err := tb.Modify(ctx, "Sales", "counter", func(e *employee) error { e.Age++; return nil }, nil); err != nil {
			t.Fatal(err)
		}
		wantRequests(t, c, 2, "uncontended Modify")
		if v, err := tb.Modify(ctx, "Sales", "counter", func(e *employee) error { return table.ErrNoChange }, nil); err != nil || v.Age != 1 {
			t.Fatalf("ErrNoChange: %v %v", v, err)
		}
		wantRequests(t, c, 1, "Modify with no change")

		const writers, each = 4, 5
		var wg sync.WaitGroup
		errs := make(chan error, writers*each)
		for w := 0; w < writers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < each; i++ {
					_, err := tb.Modify(ctx, "Sales", "counter", func(e *employee) error { e.Age++; return nil },
						&table.ModifyOptions{MaxAttempts: 100, BaseDelay: time.Millisecond, MaxDelay: 20 * time.Millisecond})
					errs <- err
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		got, _ := tb.Get(ctx, "Sales", "counter", nil)
		if got.Age != 1+writers*each {
			t.Fatalf("counter = %d, want %d: an update was lost", got.Age, 1+writers*each)
		}

		created, err := tb.Modify(ctx, "Sales", "new", func(e *employee) error { e.FirstName = "made"; return nil }, &table.ModifyOptions{Create: true})
		if err != nil || created.FirstName != "made" || created.ETag == "" {
			t.Fatalf("Modify Create: %+v %v", created, err)
		}
		if _, err := tb.Modify(ctx, "Sales", "absent", func(e *employee) error { return nil }, nil); !table.Is(err, table.ErrNotFound) {
			t.Fatalf("Modify of a missing entity: %v", err)
		}
		// Giving up says how many attempts were made.
		_, err = tb.Modify(ctx, "Sales", "counter", func(e *employee) error {
			// Another writer changes it between our read and our write, every time.
			other, _ := tb.Get(ctx, "Sales", "counter", nil)
			other.Age += 100
			if err := tb.Update(ctx, other, nil); err != nil {
				return err
			}
			e.Age++
			return nil
		}, &table.ModifyOptions{MaxAttempts: 3, BaseDelay: time.Millisecond})
		var ce *table.ConflictError
		if !errors.As(err, &ce) || ce.Attempts != 3 || !table.Is(err, table.ErrPreconditionFailed) {
			t.Fatalf("giving up: %v", err)
		}
	})

	t.Run("a query of n <= 1000 entities in one partition is one request", func(t *testing.T) {
		tb, c, client := newEmployees(t, env)
		for b := 0; b < 10; b++ {
			var actions []aztables.TransactionAction
			for i := 0; i < 100; i++ {
				body, _ := tableio.For(tb).Encode(&employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: keyrules.Uint64(uint64(b*100 + i))}})
				actions = append(actions, aztables.TransactionAction{ActionType: aztables.TransactionTypeAdd, Entity: body})
			}
			if _, err := client.SubmitTransaction(ctx, actions, nil); err != nil {
				t.Fatal(err)
			}
		}
		c.Reset()
		got, err := seqs.Collect(tb.Query(ctx, &table.QueryOptions{Filter: table.Partition("Sales")}))
		if err != nil || len(got) != 1000 {
			t.Fatalf("got %d, %v", len(got), err)
		}
		wantRequests(t, c, 1, "query of 1000 entities")
		got, err = seqs.Collect(tb.Query(ctx, &table.QueryOptions{Filter: table.RowPrefix("Sales", keyrules.Uint64(0)[:18]), Top: 100}))
		if err != nil || len(got) != 100 {
			t.Fatalf("prefix: got %d, %v", len(got), err)
		}
		wantRequests(t, c, 1, "range query of 100 entities")
	})

	t.Run("tables: create twice, delete missing", func(t *testing.T) {
		c := &reqcount.Counter{}
		client := env.NewTable(t, c)
		if _, err := client.CreateTable(ctx, nil); !table.Is(err, table.ErrAlreadyExists) || svcanswer.ErrorCode(err) != "TableAlreadyExists" {
			t.Fatalf("create existing table: %v", err)
		}
		tb, _ := table.New[employee](client, nil)
		if _, err := client.Delete(ctx, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := tb.Get(ctx, "p", "r", nil); !table.Is(err, table.ErrTableNotFound) || table.Is(err, table.ErrNotFound) {
			t.Fatalf("Get in a deleted table: %v; want ErrTableNotFound, not a missing entity", err)
		}
	})
}

func equalTypes(a, b allTypes) bool {
	eqF := func(x, y float64) bool { return x == y || (math.IsNaN(x) && math.IsNaN(y)) }
	ptrEq := func(x, y *string) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	ptrEqI := func(x, y *int64) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	return a.Meta == b.Meta && a.S == b.S && a.B == b.B && a.I32 == b.I32 && a.I64 == b.I64 && a.U32 == b.U32 &&
		eqF(a.F64, b.F64) && eqF(float64(a.F32), float64(b.F32)) && a.T.Equal(b.T) && bytes.Equal(a.Bin, b.Bin) &&
		a.G == b.G && ptrEq(a.PS, b.PS) && ptrEqI(a.PI, b.PI) && a.Level == b.Level && slices.Equal(a.Tags, b.Tags)
}
