package integration

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/internal/seqs"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/table"
)

// inputRule checks that the chain holds a *table.InputError whose Rule is
// (or wraps) rule: the error says which rule broke, not only that one did.
func inputRule(rule error) *typedCheck {
	return &typedCheck{doc: "in a `*table.InputError`", check: func(err error) error {
		var ie *table.InputError
		if !errors.As(err, &ie) {
			return errors.New("no *table.InputError in the chain")
		}
		if !errors.Is(ie.Rule, rule) {
			return fmt.Errorf("InputError.Rule is %v, want %v", ie.Rule, rule)
		}
		return nil
	}}
}

// inputField is inputRule that also names the field or property at fault.
func inputField(rule error, field string) *typedCheck {
	return &typedCheck{doc: fmt.Sprintf("in a `*table.InputError` of field `%s`", field), check: func(err error) error {
		if e := inputRule(rule).check(err); e != nil {
			return e
		}
		var ie *table.InputError
		errors.As(err, &ie)
		if ie.Field != field {
			return fmt.Errorf("InputError.Field is %q, want %q", ie.Field, field)
		}
		return nil
	}}
}

// validation checks that the chain holds a *keys.ValidationError whose
// What names the thing refused ("table name", "PartitionKey", ...).
func validation(what string) *typedCheck {
	return &typedCheck{doc: fmt.Sprintf("in a `*keys.ValidationError` of the %s", what), check: func(err error) error {
		var ve *keys.ValidationError
		if !errors.As(err, &ve) {
			return errors.New("no *keys.ValidationError in the chain")
		}
		if !strings.Contains(ve.What, what) {
			return fmt.Errorf("ValidationError.What is %q, want %q", ve.What, what)
		}
		return nil
	}}
}

// anyValidation checks that the chain holds a *keys.ValidationError: the
// value, rule and position, not only a message.
func anyValidation() *typedCheck {
	return &typedCheck{doc: "in a `*keys.ValidationError`", check: func(err error) error {
		var ve *keys.ValidationError
		if !errors.As(err, &ve) {
			return errors.New("no *keys.ValidationError in the chain")
		}
		return nil
	}}
}

// opAt checks that the chain holds a *batch.OpError for the operation at
// index, then runs inner (if any) on the error.
func opAt(index int, inner *typedCheck) *typedCheck {
	doc := fmt.Sprintf("in a `*batch.OpError` of operation %d", index)
	if inner != nil {
		doc += ", " + inner.doc
	}
	return &typedCheck{doc: doc, check: func(err error) error {
		var oe *batch.OpError
		if !errors.As(err, &oe) {
			return errors.New("no *batch.OpError in the chain")
		}
		if oe.Index != index {
			return fmt.Errorf("OpError.Index is %d, want %d", oe.Index, index)
		}
		if inner != nil {
			return inner.check(err)
		}
		return nil
	}}
}

// rawEntity is an Entity with keys p/r and the given properties.
func rawEntity(props map[string]table.Value) *table.Entity {
	return &table.Entity{Meta: table.Meta{PartitionKey: "p", RowKey: "r"}, Properties: props}
}

// rawEntityCases: the untyped API (table.Entity and table.Value), the
// properties a struct does not name (table.Extra), continuation tokens and
// query options. They are checked exactly as typed values are.
func rawEntityCases(t *testing.T, env *catalogueEnv) []badCase {
	t.Helper()
	ents, err := table.New[table.Entity](env.tc, nil)
	if err != nil {
		t.Fatal(err)
	}
	kept, err := table.New[Kept](env.tc, nil)
	if err != nil {
		t.Fatal(err)
	}
	emps, err := table.New[Employee](env.tc, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Real tokens, made on a service of their own so that nothing is
	// written to the catalogue's: one of a filtered query of a table
	// named like the catalogue's, one of another table.
	elsewhere := fake.NewTableService(nil)
	tokenOf := func(name string, f table.Filter) string {
		c := elsewhere.NewClient(name, nil)
		if _, err := c.CreateTable(t.Context(), nil); err != nil {
			t.Fatal(err)
		}
		tb, err := table.New[Employee](c, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 3; i++ {
			if err := tb.Add(t.Context(), &Employee{Meta: table.Meta{PartitionKey: "q", RowKey: fmt.Sprint(i)}}, nil); err != nil {
				t.Fatal(err)
			}
		}
		p, err := tb.QueryPage(t.Context(), "", &table.QueryOptions{Filter: f, Top: 1})
		if err != nil || p.Next == "" {
			t.Fatalf("no continuation token: %v", err)
		}
		return p.Next
	}
	filtered := tokenOf("catalogue", table.Partition("q"))
	foreign := tokenOf("elsewhere", table.Filter{})
	// A Table learns its table's name from its first page (a read of the
	// empty table, before the counters start); a foreign table's token is
	// refused before any request from then on, and after the first
	// response before it.
	learned, err := table.New[Employee](env.tc, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := learned.QueryPage(t.Context(), "", nil); err != nil {
		t.Fatal(err)
	}
	// One character of the token's payload changed: still base64, still
	// JSON, but no longer what Page.Next signed.
	edited := []byte(foreign)
	i := len(edited) - 8
	if edited[i] == 'A' {
		edited[i] = 'B'
	} else {
		edited[i] = 'A'
	}
	add := func(v *table.Entity) func(context.Context) error {
		return func(ctx context.Context) error { return ents.Add(ctx, v, nil) }
	}
	addKept := func(x table.Extra) func(context.Context) error {
		return func(ctx context.Context) error {
			return kept.Add(ctx, &Kept{Meta: table.Meta{PartitionKey: "p", RowKey: "r"}, Other: x}, nil)
		}
	}
	wide := map[string]table.Value{}
	for i := 0; i < table.MaxUserProperties+1; i++ {
		wide[fmt.Sprintf("P%03d", i)] = table.ValueOf(int32(1))
	}
	// 20 strings of 30,000 characters: each within the 32 K limit, together
	// (two bytes a character, as the service counts) over 1 MiB.
	huge := map[string]table.Value{}
	for i := 0; i < 20; i++ {
		huge[fmt.Sprintf("S%02d", i)] = table.ValueOf(strings.Repeat("x", 30000))
	}
	etag := azcore.ETag("W/\"1\"")
	// A token as Page.Next encodes one, but without its "tk1." version
	// prefix, and one whose payload is not base64.
	bare := base64.RawURLEncoding.EncodeToString([]byte(`{"p":"p","r":"r"}`))

	return []badCase{
		// table.Entity and table.Value
		{"raw entity: property name with a space", keys.ErrInvalidName,
			add(rawEntity(map[string]table.Value{"Manager Rating": table.ValueOf(int32(1))})), inputRule(keys.ErrInvalidName)},
		{"raw entity: property name starting with a digit", keys.ErrInvalidName,
			add(rawEntity(map[string]table.Value{"1stName": table.ValueOf("a")})), inputRule(keys.ErrInvalidName)},
		{"raw entity: property name over 255 characters", keys.ErrTooLong,
			add(rawEntity(map[string]table.Value{strings.Repeat("P", 256): table.ValueOf(int32(1))})), inputRule(keys.ErrTooLong)},
		{"raw entity: property named PartitionKey", keys.ErrInvalidName,
			add(rawEntity(map[string]table.Value{"PartitionKey": table.ValueOf("q")})), inputRule(keys.ErrInvalidName)},
		{"raw entity: property named Timestamp", keys.ErrInvalidName,
			add(rawEntity(map[string]table.Value{"Timestamp": table.ValueOf(time.Now())})), inputRule(keys.ErrInvalidName)},
		{"raw entity: property name with an OData annotation suffix", keys.ErrInvalidName,
			add(rawEntity(map[string]table.Value{"Age@odata.type": table.ValueOf("Edm.Int64")})), inputRule(keys.ErrInvalidName)},
		{"raw entity: 253 properties", table.ErrTooManyProperties, add(rawEntity(wide)), inputRule(table.ErrTooManyProperties)},
		{"raw entity: string over 32 K UTF-16 units", table.ErrStringTooLong,
			add(rawEntity(map[string]table.Value{"S": table.ValueOf(strings.Repeat("x", 32*1024+1))})), inputField(table.ErrStringTooLong, "S")},
		{"raw entity: string of 16 K astral characters (32 K + 2 UTF-16 units)", table.ErrStringTooLong,
			add(rawEntity(map[string]table.Value{"S": table.ValueOf(strings.Repeat("😀", 16*1024+1))})), inputField(table.ErrStringTooLong, "S")},
		{"raw entity: binary over 64 KiB", table.ErrBinaryTooLong,
			add(rawEntity(map[string]table.Value{"B": table.ValueOf(make([]byte, 64*1024+1))})), inputField(table.ErrBinaryTooLong, "B")},
		{"raw entity: DateTime before 1601", table.ErrValueOutOfRange,
			add(rawEntity(map[string]table.Value{"T": table.ValueOf(time.Date(1600, 12, 31, 23, 59, 59, 0, time.UTC))})), inputField(table.ErrValueOutOfRange, "T")},
		{"raw entity: DateTime after 9999", table.ErrValueOutOfRange,
			add(rawEntity(map[string]table.Value{"T": table.ValueOf(time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC))})), inputField(table.ErrValueOutOfRange, "T")},
		{"raw entity: zero Value", table.ErrInvalidValue,
			add(rawEntity(map[string]table.Value{"Z": {}})), inputField(table.ErrInvalidValue, "Z")},
		{"raw entity: string of invalid UTF-8", table.ErrInvalidValue,
			add(rawEntity(map[string]table.Value{"S": table.ValueOf("a\xffb")})), inputField(table.ErrInvalidValue, "S")},
		{"raw entity over 1 MiB", table.ErrEntityTooLarge, add(rawEntity(huge)), inputRule(table.ErrEntityTooLarge)},
		{"raw entity: PartitionKey with a slash", keys.ErrForbiddenChar,
			add(&table.Entity{Meta: table.Meta{PartitionKey: "a/b", RowKey: "r"}}), validation("PartitionKey")},
		{"raw entity: RowKey with a control character", keys.ErrControlChar,
			add(&table.Entity{Meta: table.Meta{PartitionKey: "p", RowKey: "r\n"}}), validation("RowKey")},
		{"raw entity: empty PartitionKey", table.ErrEmptyPartitionKey,
			add(&table.Entity{Meta: table.Meta{PartitionKey: "", RowKey: "r"}}), inputField(table.ErrEmptyPartitionKey, "PartitionKey")},
		{"Upsert with an empty PartitionKey", table.ErrEmptyPartitionKey, func(ctx context.Context) error {
			return emps.Upsert(ctx, &Employee{Meta: table.Meta{RowKey: "r"}}, nil)
		}, inputField(table.ErrEmptyPartitionKey, "PartitionKey")},
		{"Get with an empty PartitionKey", table.ErrEmptyPartitionKey, func(ctx context.Context) error {
			_, err := emps.Get(ctx, "", "r", nil)
			return err
		}, inputField(table.ErrEmptyPartitionKey, "PartitionKey")},
		{"raw entity: nil", table.ErrNilValue, add(nil), inputRule(table.ErrNilValue)},
		{"raw entity: Upsert with a zero Value", table.ErrInvalidValue, func(ctx context.Context) error {
			return ents.Upsert(ctx, rawEntity(map[string]table.Value{"Z": {}}), nil)
		}, inputField(table.ErrInvalidValue, "Z")},
		{"raw entity: Update with 253 properties", table.ErrTooManyProperties, func(ctx context.Context) error {
			v := rawEntity(wide)
			v.ETag = etag
			return ents.Update(ctx, v, nil)
		}, inputRule(table.ErrTooManyProperties)},
		{"raw entity: Update without an ETag", table.ErrNoETag, func(ctx context.Context) error {
			return ents.Update(ctx, rawEntity(map[string]table.Value{"A": table.ValueOf(int32(1))}), nil)
		}, inputRule(table.ErrNoETag)},
		{"raw entity: Update with a DateTime after 9999", table.ErrValueOutOfRange, func(ctx context.Context) error {
			v := rawEntity(map[string]table.Value{"T": table.ValueOf(time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC))})
			v.ETag = etag
			return ents.Update(ctx, v, nil)
		}, inputField(table.ErrValueOutOfRange, "T")},
		{"raw entity in a batch: binary over 64 KiB", table.ErrBinaryTooLong, func(ctx context.Context) error {
			_, err := batch.Submit(ctx, env.tc, []batch.Op{batch.Add(rawEntity(map[string]table.Value{"B": table.ValueOf(make([]byte, 64*1024+1))}))}, nil)
			return err
		}, opAt(0, inputField(table.ErrBinaryTooLong, "B"))},
		{"raw entity in a batch: property name with a space", keys.ErrInvalidName, func(ctx context.Context) error {
			ok := rawEntity(map[string]table.Value{"A": table.ValueOf(int32(1))})
			bad := &table.Entity{Meta: table.Meta{PartitionKey: "p", RowKey: "r2"}, Properties: map[string]table.Value{"a b": table.ValueOf(int32(1))}}
			_, err := batch.Submit(ctx, env.tc, []batch.Op{batch.Upsert(ok, aztables.UpdateModeMerge), batch.Upsert(bad, aztables.UpdateModeMerge)}, nil)
			return err
		}, opAt(1, inputRule(keys.ErrInvalidName))},

		{"Get with a slash in the RowKey", keys.ErrForbiddenChar, func(ctx context.Context) error { _, err := ents.Get(ctx, "p", "a/b", nil); return err }, validation("RowKey")},
		{"Delete with a number sign in the PartitionKey", keys.ErrForbiddenChar, func(ctx context.Context) error { return ents.Delete(ctx, "a#b", "r", nil) }, validation("PartitionKey")},
		{"Modify with a control character in the RowKey", keys.ErrControlChar, func(ctx context.Context) error {
			_, err := ents.Modify(ctx, "p", "r\x1f", func(*table.Entity) error { return nil }, nil)
			return err
		}, validation("RowKey")},

		// table.Extra: the properties a struct does not name
		{"Extra: value that is not JSON", table.ErrInvalidValue,
			addKept(table.Extra{"X": {Value: []byte(`{`)}}), inputField(table.ErrInvalidValue, "X")},
		{"Extra: EDM type that does not exist", table.ErrInvalidValue,
			addKept(table.Extra{"X": {Type: "Edm.Decimal", Value: []byte(`"1.5"`)}}), inputField(table.ErrInvalidValue, "X")},
		{"Extra: Int64 that is not a number", table.ErrInvalidValue,
			addKept(table.Extra{"X": {Type: table.EdmInt64, Value: []byte(`"twelve"`)}}), inputField(table.ErrInvalidValue, "X")},
		{"Extra: GUID that is not a GUID", table.ErrInvalidValue,
			addKept(table.Extra{"X": {Type: table.EdmGUID, Value: []byte(`"nope"`)}}), inputField(table.ErrInvalidValue, "X")},
		{"Extra: JSON object as a value", table.ErrInvalidValue,
			addKept(table.Extra{"X": {Value: []byte(`{"a":1}`)}}), inputField(table.ErrInvalidValue, "X")},
		{"Extra: JSON array as a value", table.ErrInvalidValue,
			addKept(table.Extra{"X": {Value: []byte(`[1,2]`)}}), inputField(table.ErrInvalidValue, "X")},
		{"Extra: string over 32 K UTF-16 units", table.ErrStringTooLong,
			addKept(table.Extra{"X": {Value: []byte(`"` + strings.Repeat("x", 32*1024+1) + `"`)}}), inputField(table.ErrStringTooLong, "X")},
		{"Extra: binary over 64 KiB", table.ErrBinaryTooLong,
			addKept(table.Extra{"X": {Type: table.EdmBinary, Value: []byte(`"` + base64.StdEncoding.EncodeToString(make([]byte, 64*1024+1)) + `"`)}}), inputField(table.ErrBinaryTooLong, "X")},
		{"Extra: DateTime before 1601", table.ErrValueOutOfRange,
			addKept(table.Extra{"X": {Type: table.EdmDateTime, Value: []byte(`"1600-01-01T00:00:00Z"`)}}), inputField(table.ErrValueOutOfRange, "X")},
		{"Extra: property named RowKey", keys.ErrInvalidName,
			addKept(table.Extra{"RowKey": {Value: []byte(`"q"`)}}), inputRule(keys.ErrInvalidName)},

		// continuation tokens and query options
		{"continuation token of garbled base64", table.ErrBadToken, func(ctx context.Context) error {
			_, err := emps.QueryPage(ctx, "tk1.!!not base64!!", nil)
			return err
		}, inputRule(table.ErrBadToken)},
		{"continuation token without its version prefix", table.ErrBadToken, func(ctx context.Context) error {
			_, err := emps.QueryPage(ctx, bare, nil)
			return err
		}, inputRule(table.ErrBadToken)},
		{"continuation token cut short", table.ErrBadToken, func(ctx context.Context) error {
			tok := "tk1." + base64.RawURLEncoding.EncodeToString([]byte(`{"p":"p","r":"r"}`))
			_, err := emps.QueryPage(ctx, tok[:len(tok)-5], nil)
			return err
		}, inputRule(table.ErrBadToken)},
		{"continuation token of another filter", table.ErrBadToken, func(ctx context.Context) error {
			_, err := emps.QueryPage(ctx, filtered, nil)
			return err
		}, inputField(table.ErrBadToken, "token")},
		{"continuation token of another table, once a page named the table", table.ErrBadToken, func(ctx context.Context) error {
			_, err := learned.QueryPage(ctx, foreign, nil)
			return err
		}, inputField(table.ErrBadToken, "token")},
		{"continuation token with one character changed", table.ErrBadToken, func(ctx context.Context) error {
			_, err := emps.QueryPage(ctx, string(edited), nil)
			return err
		}, inputField(table.ErrBadToken, "token")},
		{"negative Top for a page", table.ErrBadOption, func(ctx context.Context) error {
			_, err := emps.QueryPage(ctx, "", &table.QueryOptions{Top: -1})
			return err
		}, inputField(table.ErrBadOption, "Top")},
		{"negative Top for a query", table.ErrBadOption, func(ctx context.Context) error {
			_, err := seqs.Collect(emps.Query(ctx, &table.QueryOptions{Top: -1}))
			return err
		}, inputRule(table.ErrBadOption)},
		{"filter on a bad property name", keys.ErrInvalidName, func(ctx context.Context) error {
			_, err := seqs.Collect(emps.Query(ctx, &table.QueryOptions{Filter: table.Prop("bad name").Eq(1)}))
			return err
		}, inputField(keys.ErrInvalidName, "bad name")},
		{"filter string literal of invalid UTF-8", table.ErrBadFilter, func(ctx context.Context) error {
			_, err := seqs.Collect(emps.Query(ctx, &table.QueryOptions{Filter: table.Prop("FirstName").Eq("a\xff")}))
			return err
		}, inputRule(table.ErrBadFilter)},
		{"raw entity query: filter of 16 comparisons", table.ErrBadFilter, func(ctx context.Context) error {
			var fs []table.Filter
			for i := 0; i < 16; i++ {
				fs = append(fs, table.Prop("N").Eq(int32(i)))
			}
			_, err := ents.QueryPage(ctx, "", &table.QueryOptions{Filter: table.Or(fs...)})
			return err
		}, inputRule(table.ErrBadFilter)},
		{"raw query: select of a bad property name", keys.ErrInvalidName, func(ctx context.Context) error {
			for _, err := range ents.Query(ctx, &table.QueryOptions{Select: []string{"a-b"}}) {
				return err
			}
			return nil
		}, anyValidation()},
	}
}
