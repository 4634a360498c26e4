package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/eventstream"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/internal/batchraw"
	"github.com/tablekit/tablekit/internal/keyrules"
	"github.com/tablekit/tablekit/internal/seqs"
	"github.com/tablekit/tablekit/internal/tableio"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/sas"
	"github.com/tablekit/tablekit/table"
)

type badCase struct {
	name string
	want error
	call func(ctx context.Context) error
	// typed, when set, checks the typed error in the chain (errors.As) and
	// its fields beyond the sentinel: an *table.InputError's Rule, a
	// *batch.OpError's Index, a *keys.ValidationError's What.
	typed *typedCheck
}

// typedCheck is a check of the typed error in a chain, and how
// RELIABILITY.md describes it.
type typedCheck struct {
	doc   string
	check func(err error) error
}

// plainCase is a case checked by its sentinel alone (the first 62).
type plainCase struct {
	name string
	want error
	call func(ctx context.Context) error
}

// catalogueEnv holds the fake services every case runs against and the
// clients of the one table, queue and container named "catalogue".
type catalogueEnv struct {
	tables *fake.TableService
	queues *fake.QueueService
	blobs  *fake.BlobService
	tc     *aztables.Client
	// plain is a client of the same table without tablekit's policy (the
	// SDK's path), for the inputs only that path refuses.
	plain *aztables.Client
	qc    *azqueue.QueueClient
	bc    *azblob.Client
}

// requests is every request the fake services have received since the
// last ResetCounts.
func (e *catalogueEnv) requests() int { return e.tables.Total() + e.queues.Total() + e.blobs.Total() }

// TestBadInputCatalogue: every bad input gets its typed error before any
// request, and nothing is written. Each case is listed in RELIABILITY.md.
func TestBadInputCatalogue(t *testing.T) {
	ctx := t.Context()
	tables, queues, blobs := fake.NewTableService(nil), fake.NewQueueService(nil), fake.NewBlobService(nil)
	tc := tables.NewClient("catalogue", nil)
	if _, err := tc.CreateTable(ctx, nil); err != nil {
		t.Fatal(err)
	}
	qc := queues.NewQueueClient("catalogue", nil)
	_, _ = qc.Create(ctx, nil)
	bc := blobs.NewClient(nil)
	_, _ = bc.CreateContainer(ctx, "catalogue", nil)
	sdkClient, err := aztables.NewClientWithNoCredential(tables.URL()+"catalogue", &aztables.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: tables}})
	if err != nil {
		t.Fatal(err)
	}
	env := &catalogueEnv{tables: tables, queues: queues, blobs: blobs, tc: tc, plain: sdkClient, qc: qc, bc: bc}
	// Cases that need state from a service (a real continuation token)
	// build it on services of their own before the counters start.
	more := rawEntityCases(t, env)
	more = append(more, batchAndMessageCases(t, env)...)
	more = append(more, keyCases()...)
	more = append(more, patternCases(t, env)...)
	tables.ResetCounts()
	queues.ResetCounts()
	blobs.ResetCounts()

	emps, _ := table.New[Employee](tc, nil)
	kept, _ := table.New[Kept](tc, nil)
	types, _ := table.New[Types](tc, nil)
	e := func(pk, rk string) *Employee { return &Employee{Meta: table.Meta{PartitionKey: pk, RowKey: rk}} }
	add := func(v *Employee) func(context.Context) error {
		return func(ctx context.Context) error { return emps.Add(ctx, v, nil) }
	}
	wide := table.Extra{}
	for i := 0; i < 253; i++ {
		wide[fmt.Sprintf("P%03d", i)] = table.Property{Value: []byte("1")}
	}
	huge := table.Extra{}
	for i := 0; i < 20; i++ {
		huge[fmt.Sprintf("S%02d", i)] = table.Property{Value: []byte(`"` + strings.Repeat("x", 30000) + `"`)}
	}
	type secret struct {
		table.Meta
		SSN string `table:",encrypt"`
	}
	secrets, _ := table.New[secret](tc, &table.Options{Encryption: &table.Encryption{KeyID: "k", Keys: table.LocalKeys{"k": make([]byte, 32)}}})
	type noMeta struct{ Name string }
	type withMap struct {
		table.Meta
		M map[string]int
	}
	type withUint64 struct {
		table.Meta
		U uint64
	}
	var many []table.Filter
	for i := 0; i < 16; i++ {
		many = append(many, table.Prop("Age").Ne(int32(i)))
	}
	var ops101 []batch.Op
	for i := 0; i < 101; i++ {
		ops101 = append(ops101, batch.Add(e("p", fmt.Sprint(i))))
	}
	big := func(rk string) *Kept {
		x := table.Extra{}
		for i := 0; i < 14; i++ {
			x[fmt.Sprintf("S%02d", i)] = table.Property{Value: []byte(`"` + strings.Repeat("<", 30000) + `"`)}
		}
		return &Kept{Meta: table.Meta{PartitionKey: "p", RowKey: rk}, Other: x}
	}
	sender := consistency.NewSender(qc, nil)
	worker := consistency.NewWorker(qc, qc, nil)
	emailIdx := func(s *Staff) string { return s.Email }
	var fifty []patterns.IndexDef[Staff]
	for i := 0; i < 50; i++ {
		fifty = append(fifty, patterns.IndexDef[Staff]{Name: fmt.Sprint(i), Prefix: fmt.Sprintf("i%02d_", i), Value: emailIdx})
	}
	hugeWide := map[string]any{}
	for i := 0; i < 140; i++ {
		hugeWide[fmt.Sprintf("S%03d", i)] = strings.Repeat("x", 31*1024)
	}
	ds, _ := patterns.NewDataSeries[int64](tableOf(table.New[table.Entity](tc, nil)), "H", 24)
	lt, _ := patterns.NewLogTail[Claim](tableOf(table.New[Claim](tc, nil)), nil)
	idx, _ := patterns.OpenModel(ctx, tableOf(table.New[Staff](tc, nil)), &patterns.ModelOptions[Staff]{Name: "idx", Primary: "empid_", Copies: staffIndexes()})
	none := azcore.ETag("")

	plain := []plainCase{
		// keys and names
		{"PartitionKey with a slash", keys.ErrForbiddenChar, add(e("a/b", "r"))},
		{"RowKey with a number sign", keys.ErrForbiddenChar, add(e("p", "a#b"))},
		{"RowKey with a question mark", keys.ErrForbiddenChar, add(e("p", "a?b"))},
		{"RowKey with a backslash", keys.ErrForbiddenChar, add(e("p", `a\b`))},
		{"key with a control character", keys.ErrControlChar, add(e("p\x01", "r"))},
		{"key with a C1 control character", keys.ErrControlChar, add(e("p", "r\u0085"))},
		{"key over 1 KiB", keys.ErrTooLong, add(e("p", strings.Repeat("k", 513)))},
		{"key of invalid UTF-8", keys.ErrInvalidUTF8, add(e("p\xff", "r"))},
		{"table name too short", keys.ErrTooShort, func(context.Context) error { return keyrules.ValidateTableName("ab") }},
		{"reserved table name", keys.ErrReserved, func(context.Context) error { return keyrules.ValidateTableName("Tables") }},
		{"queue name in capitals", keys.ErrForbiddenChar, func(context.Context) error { return keyrules.ValidateQueueName("Archive") }},
		{"container name with an underscore", keys.ErrForbiddenChar, func(context.Context) error { return keyrules.ValidateContainerName("a_b") }},
		{"blob name ending in a slash", keys.ErrBadSyntax, func(context.Context) error { return keyrules.ValidateBlobName("photos/") }},
		{"compound key component holding the separator", keys.ErrForbiddenChar, func(context.Context) error { _, err := keys.Compound{}.Join("a_b", "c"); return err }},
		{"property name with a space", keys.ErrInvalidName, func(ctx context.Context) error {
			return kept.Add(ctx, &Kept{Meta: table.Meta{PartitionKey: "p", RowKey: "r"}, Other: table.Extra{"Manager Rating": {Value: []byte("1")}}}, nil)
		}},
		// entity shapes and limits
		{"nil value", table.ErrNilValue, func(ctx context.Context) error { return emps.Add(ctx, nil, nil) }},
		{"non-pointer value", table.ErrNotStructPointer, func(context.Context) error { _, err := tableio.Marshal(Employee{}); return err }},
		{"struct without Meta", table.ErrNoMeta, func(context.Context) error { _, err := table.New[noMeta](tc, nil); return err }},
		{"map field without the json option", table.ErrUnsupportedType, func(context.Context) error { _, err := table.New[withMap](tc, nil); return err }},
		{"merge of an entity with encrypted fields", table.ErrMergeEncrypted, func(ctx context.Context) error {
			return secrets.Upsert(ctx, &secret{Meta: table.Meta{PartitionKey: "p", RowKey: "r"}, SSN: "078-05-1120"}, &table.UpsertOptions{Mode: aztables.UpdateModeMerge})
		}},
		{"encrypted type through a plaintext path (batch)", table.ErrEncryptedType, func(context.Context) error {
			return batch.NewTransaction(nil).Append(batch.Add(&secret{Meta: table.Meta{PartitionKey: "p", RowKey: "r"}}))
		}},
		{"encrypted type without Options.Encryption", table.ErrBadOption, func(context.Context) error { _, err := table.New[secret](tc, nil); return err }},
		{"uint64 field", table.ErrUnsupportedType, func(context.Context) error { _, err := table.New[withUint64](tc, nil); return err }},
		{"253 properties", table.ErrTooManyProperties, func(ctx context.Context) error {
			return kept.Add(ctx, &Kept{Meta: table.Meta{PartitionKey: "p", RowKey: "r"}, Other: wide}, nil)
		}},
		{"entity over 1 MiB", table.ErrEntityTooLarge, func(ctx context.Context) error {
			return kept.Add(ctx, &Kept{Meta: table.Meta{PartitionKey: "p", RowKey: "r"}, Other: huge}, nil)
		}},
		{"string over 32 K UTF-16 units", table.ErrStringTooLong, func(ctx context.Context) error {
			return kept.Add(ctx, &Kept{Meta: table.Meta{PartitionKey: "p", RowKey: "r"}, Name: strings.Repeat("x", 32*1024+1)}, nil)
		}},
		{"binary over 64 KiB", table.ErrBinaryTooLong, func(ctx context.Context) error {
			return types.Add(ctx, &Types{Meta: table.Meta{PartitionKey: "p", RowKey: "r"}, T: time.Now(), Bin: make([]byte, 64*1024+1)}, nil)
		}},
		{"DateTime before 1601", table.ErrValueOutOfRange, func(ctx context.Context) error {
			return types.Add(ctx, &Types{Meta: table.Meta{PartitionKey: "p", RowKey: "r"}, T: time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC)}, nil)
		}},
		{"string of invalid UTF-8", table.ErrInvalidValue, func(ctx context.Context) error {
			return kept.Add(ctx, &Kept{Meta: table.Meta{PartitionKey: "p", RowKey: "r"}, Name: "a\xffb"}, nil)
		}},
		{"Update without an ETag", table.ErrNoETag, func(ctx context.Context) error { return emps.Update(ctx, e("p", "r"), nil) }},
		{"Delete with an empty IfMatch", table.ErrNoETag, func(ctx context.Context) error {
			return emps.Delete(ctx, "p", "r", &table.DeleteOptions{IfMatch: &none})
		}},
		{"Modify without a change func", table.ErrNilValue, func(ctx context.Context) error { _, err := emps.Modify(ctx, "p", "r", nil, nil); return err }},
		{"nil client", table.ErrNilValue, func(context.Context) error { _, err := table.New[Employee](nil, nil); return err }},
		// filters and queries
		{"filter of 16 comparisons", table.ErrBadFilter, func(ctx context.Context) error {
			_, err := seqs.Collect(emps.Query(ctx, &table.QueryOptions{Filter: table.And(many...)}))
			return err
		}},
		{"filter literal of an unsupported type", table.ErrBadFilter, func(ctx context.Context) error {
			_, err := seqs.Collect(emps.Query(ctx, &table.QueryOptions{Filter: table.Prop("Age").Eq(struct{}{})}))
			return err
		}},
		{"Top over 1000 for a page", table.ErrBadOption, func(ctx context.Context) error {
			_, err := emps.QueryPage(ctx, "", &table.QueryOptions{Top: 1001})
			return err
		}},
		{"continuation token not from Page.Next", table.ErrBadToken, func(ctx context.Context) error { _, err := emps.QueryPage(ctx, "forged", nil); return err }},
		{"select of a bad property name", keys.ErrInvalidName, func(ctx context.Context) error {
			_, err := seqs.Collect(emps.Query(ctx, &table.QueryOptions{Select: []string{"bad name"}}))
			return err
		}},
		// transactions
		{"empty transaction", batch.ErrEmpty, func(ctx context.Context) error { _, err := batch.Submit(ctx, tc, nil, nil); return err }},
		{"101 operations", batch.ErrTooManyOperations, func(ctx context.Context) error { _, err := batch.Submit(ctx, tc, ops101, nil); return err }},
		{"two PartitionKeys in a transaction", batch.ErrMixedPartitions, func(ctx context.Context) error {
			_, err := batch.Submit(ctx, tc, []batch.Op{batch.Add(e("a", "1")), batch.Add(e("b", "1"))}, nil)
			return err
		}},
		{"a RowKey twice in a transaction", batch.ErrDuplicateRowKey, func(ctx context.Context) error {
			_, err := batch.Submit(ctx, tc, []batch.Op{batch.Add(e("a", "1")), batch.Delete("a", "1")}, nil)
			return err
		}},
		{"transaction request over 4 MiB", batch.ErrTooLarge, func(ctx context.Context) error {
			_, err := batch.Submit(ctx, tc, []batch.Op{batch.Add(big("1")), batch.Add(big("2"))}, nil)
			return err
		}},
		{"single quote in the key of a batch update, client without tablekit's policy", batch.ErrQuoteInKey, func(ctx context.Context) error {
			_, err := batch.Submit(ctx, env.plain, []batch.Op{batch.Update(e("p", "O'Brien"), aztables.UpdateModeMerge).IfMatch(azcore.ETagAny)}, nil)
			return err
		}},
		{"raw entity without keys", table.ErrInvalidValue, func(ctx context.Context) error {
			_, err := batch.Submit(ctx, tc, []batch.Op{batchraw.Op(batch.KindAdd, []byte(`{"Name":"x"}`), nil)}, nil)
			return err
		}},
		// messages
		{"message type without a version", consistency.ErrBadType, func(ctx context.Context) error { return sender.Send(ctx, "archive", "k", 1, nil) }},
		{"message without a key", consistency.ErrNoKey, func(ctx context.Context) error { return sender.Send(ctx, "archive.v1", "", 1, nil) }},
		{"message key of invalid UTF-8", consistency.ErrBadKey, func(ctx context.Context) error { return sender.Send(ctx, "archive.v1", "k\xff", 1, nil) }},
		{"message over 64 KiB without a blob store", consistency.ErrMessageTooLarge, func(ctx context.Context) error {
			return sender.Send(ctx, "archive.v1", "k", strings.Repeat("x", 70*1024), nil)
		}},
		{"handler for a type without a version", consistency.ErrBadType, func(context.Context) error {
			return worker.Handle("archive", func(context.Context, *consistency.Message) error { return nil })
		}},
		// patterns and options
		{"50 intra-partition indexes", patterns.ErrBadDefinition, func(context.Context) error {
			_, err := patterns.OpenModel(ctx, tableOf(table.New[Staff](tc, nil)), &patterns.ModelOptions[Staff]{Name: "idx", Primary: "empid_", Copies: fifty})
			return err
		}},
		{"index prefixes that overlap", patterns.ErrBadDefinition, func(context.Context) error {
			_, err := patterns.OpenModel(ctx, tableOf(table.New[Staff](tc, nil)), &patterns.ModelOptions[Staff]{Name: "idx", Primary: "empid_", Copies: []patterns.IndexDef[Staff]{{Name: "a", Prefix: "empid_x", Value: emailIdx}}})
			return err
		}},
		{"entity without the primary prefix", patterns.ErrNotPrimary, func(ctx context.Context) error {
			v := staff("x", "a", "b", "c@x.com", 1)
			v.RowKey = "000123"
			return idx.Add(ctx, v, nil)
		}},
		{"data series of 253 slots", patterns.ErrBadDefinition, func(context.Context) error {
			_, err := patterns.NewDataSeries[int64](tableOf(table.New[table.Entity](tc, nil)), "H", 253)
			return err
		}},
		{"data series slot out of range", table.ErrValueOutOfRange, func(ctx context.Context) error { _, err := ds.Set(ctx, "p", "r", 24, 1, nil); return err }},
		{"zero shards", patterns.ErrBadDefinition, func(context.Context) error {
			_, err := patterns.NewSharded[Event](tableOf(table.New[Event](tc, nil)), "events", 0)
			return err
		}},
		{"wide entity too wide for one transaction", table.ErrEntityTooLarge, func(ctx context.Context) error {
			return patterns.NewWideEntity(tableOf(table.New[table.Entity](tc, nil))).Add(ctx, &patterns.Wide{PartitionKey: "p", RowKey: "r", Properties: hugeWide}, nil)
		}},
		{"log tail of zero entries", table.ErrBadOption, func(ctx context.Context) error { _, err := lt.Latest(ctx, "p", 0, nil); return err }},
		{"SAS without permissions", sas.ErrBadSAS, func(context.Context) error {
			_, err := tableSAS("a", "bm90IGtleQ==", "good", sas.TablePermissions{}, time.Time{}, time.Now().Add(time.Hour), sas.KeyRange{})
			return err
		}},
		{"table-per-period prefix that makes a bad table name", patterns.ErrBadDefinition, func(context.Context) error {
			_, err := patterns.NewRollingTables[Claim](tables.NewServiceClient(nil), "bad-prefix", keys.Daily, nil)
			return err
		}},
		{"blob log in a badly named container", patterns.ErrBadDefinition, func(context.Context) error { _, err := patterns.NewBlobLog(bc, "Bad_Name", "x", nil); return err }},
		{"large entity field that is not []byte or string", patterns.ErrBadDefinition, func(context.Context) error {
			_, err := patterns.NewLargeEntity[Staff](tableOf(table.New[Staff](tc, nil)), bc, "catalogue", []string{"Age"}, 0, nil)
			return err
		}},
	}
	var cases []badCase
	for _, c := range plain {
		cases = append(cases, badCase{name: c.name, want: c.want, call: c.call})
	}
	cases = append(cases, more...)
	// Building the cases opened models, each with one read of its
	// indexes' state (OpenModel): the count starts after them.
	if n := tables.Count(fake.OpGetEntity); n != tables.Total() || queues.Total()+blobs.Total() != 0 {
		t.Fatalf("building the cases sent more than OpenModel's reads: %v %v %v", tables.Counts(), queues.Counts(), blobs.Counts())
	}
	tables.ResetCounts()
	doc, _ := os.ReadFile("../../RELIABILITY.md")
	seen := map[string]bool{}
	for i, c := range cases {
		if seen[c.name] {
			t.Errorf("two cases named %q", c.name)
		}
		seen[c.name] = true
		before := env.requests()
		err := c.call(ctx)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		} else if c.typed != nil {
			if terr := c.typed.check(err); terr != nil {
				t.Errorf("%s: %v: %v", c.name, err, terr)
			}
		}
		// Counted per case, so a case that sends names itself.
		if n := env.requests() - before; n != 0 {
			t.Errorf("%s: sent %d requests: %v %v %v", c.name, n, tables.Counts(), queues.Counts(), blobs.Counts())
		}
		if row := catalogueRow(i+1, c); !strings.Contains(string(doc), row) {
			t.Errorf("RELIABILITY.md does not list case %d; the row:\n%s", i+1, row)
		}
	}
	if n := tables.Total() + queues.Total() + blobs.Total(); n != 0 {
		t.Fatalf("bad inputs sent %d requests: %v %v %v", n, tables.Counts(), queues.Counts(), blobs.Counts())
	}
	if tables.Len("catalogue") != 0 || queues.Len("catalogue") != 0 || len(blobs.Names("catalogue")) != 0 {
		t.Fatal("a bad input wrote something")
	}
	if len(cases) < 100 {
		t.Fatalf("the catalogue has %d cases; at least 100", len(cases))
	}
	// The control: one real request to each service through the same
	// clients moves the counters by exactly three, so the zeros above come
	// from counters that count.
	before := env.requests()
	_, _ = tc.GetEntity(ctx, "p", "r", nil)
	_, _ = qc.GetProperties(ctx, nil)
	_, _ = bc.DeleteBlob(ctx, "catalogue", "absent", nil)
	if n := env.requests() - before; n != 3 {
		t.Fatalf("three control requests counted as %d", n)
	}
	t.Logf("%d bad inputs, each a typed error, no request, nothing written", len(cases))
}

// catalogueRow is case n's row in RELIABILITY.md's table: the bad input,
// the sentinel errors.Is matches, and the typed error that carries it.
func catalogueRow(n int, c badCase) string {
	e := "`" + sentinelName(c.want) + "`"
	if c.typed != nil {
		e += " " + c.typed.doc
	}
	return fmt.Sprintf("| %d | %s | %s |", n, c.name, e)
}

// sentinelName is the Go name of a sentinel error of tablekit, as
// RELIABILITY.md writes it.
func sentinelName(err error) string {
	names := map[error]string{
		keys.ErrInvalidKey: "keys.ErrInvalidKey", keys.ErrInvalidName: "keys.ErrInvalidName",
		keys.ErrEmpty: "keys.ErrEmpty", keys.ErrTooLong: "keys.ErrTooLong", keys.ErrTooShort: "keys.ErrTooShort",
		keys.ErrForbiddenChar: "keys.ErrForbiddenChar", keys.ErrControlChar: "keys.ErrControlChar",
		keys.ErrInvalidUTF8: "keys.ErrInvalidUTF8", keys.ErrBadSyntax: "keys.ErrBadSyntax",
		keys.ErrReserved: "keys.ErrReserved", keys.ErrOutOfRange: "table.ErrValueOutOfRange / keys.ErrOutOfRange", // one error, two names

		table.ErrNilValue: "table.ErrNilValue", table.ErrNotStructPointer: "table.ErrNotStructPointer",
		table.ErrUnsupportedType: "table.ErrUnsupportedType", table.ErrNoMeta: "table.ErrNoMeta",
		table.ErrTooManyProperties: "table.ErrTooManyProperties", table.ErrEntityTooLarge: "table.ErrEntityTooLarge",
		table.ErrStringTooLong: "table.ErrStringTooLong", table.ErrBinaryTooLong: "table.ErrBinaryTooLong",
		table.ErrInvalidValue: "table.ErrInvalidValue",
		table.ErrNoETag:       "table.ErrNoETag", table.ErrBadOption: "table.ErrBadOption",
		table.ErrBadFilter: "table.ErrBadFilter", table.ErrBadToken: "table.ErrBadToken",
		table.ErrEmptyPartitionKey: "table.ErrEmptyPartitionKey", table.ErrEncryptedType: "table.ErrEncryptedType", table.ErrMergeEncrypted: "table.ErrMergeEncrypted",

		batch.ErrEmpty: "batch.ErrEmpty", batch.ErrTooManyOperations: "batch.ErrTooManyOperations",
		batch.ErrTooLarge: "batch.ErrTooLarge", batch.ErrMixedPartitions: "batch.ErrMixedPartitions",
		batch.ErrDuplicateRowKey: "batch.ErrDuplicateRowKey", batch.ErrQuoteInKey: "batch.ErrQuoteInKey",
		batch.ErrBadOperation: "batch.ErrBadOperation",

		consistency.ErrBadType: "consistency.ErrBadType", consistency.ErrNoKey: "consistency.ErrNoKey",
		consistency.ErrBadKey: "consistency.ErrBadKey", consistency.ErrMessageTooLarge: "consistency.ErrMessageTooLarge",
		consistency.ErrMalformed: "consistency.ErrMalformed", consistency.ErrBadOption: "consistency.ErrBadOption",

		patterns.ErrBadDefinition: "patterns.ErrBadDefinition", patterns.ErrUnknownIndex: "patterns.ErrUnknownIndex",
		patterns.ErrNotUnique: "patterns.ErrNotUnique", patterns.ErrNotPrimary: "patterns.ErrNotPrimary",
		sas.ErrBadSAS: "sas.ErrBadSAS", eventstream.ErrBadDefinition: "eventstream.ErrBadDefinition",
	}
	if n, ok := names[err]; ok {
		return n
	}
	return err.Error()
}

// TestCatalogueChecksCanFail: each typed check refuses an error that is
// not the one it names, so a case whose check passes proved something.
func TestCatalogueChecksCanFail(t *testing.T) {
	plain := fmt.Errorf("wrapped: %w", table.ErrInvalidValue)
	field := &table.InputError{Op: "Add", Field: "A", Rule: table.ErrInvalidValue}
	op := &batch.OpError{Index: 0, Err: field}
	ve := keyrules.ValidateQueueName("Bad")
	for name, fails := range map[string]error{
		"inputRule of a bare sentinel":     inputRule(table.ErrInvalidValue).check(plain),
		"inputRule of another rule":        inputRule(table.ErrNoETag).check(field),
		"inputField of another field":      inputField(table.ErrInvalidValue, "B").check(field),
		"validation of another name":       validation("table").check(ve),
		"validation without one":           validation("table").check(plain),
		"opAt of another index":            opAt(1, nil).check(op),
		"opAt whose inner check fails":     opAt(0, inputField(table.ErrInvalidValue, "B")).check(op),
		"opAt without an OpError in chain": opAt(0, nil).check(field),
	} {
		if fails == nil {
			t.Errorf("%s: passed", name)
		}
	}
	if err := opAt(0, inputField(table.ErrInvalidValue, "A")).check(op); err != nil {
		t.Errorf("a matching OpError: %v", err)
	}
	if err := validation("queue").check(ve); err != nil {
		t.Errorf("a matching ValidationError: %v", err)
	}
}
