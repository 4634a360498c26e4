package apishape_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/tablekit/tablekit/accounts"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/eventstream"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/faults"
	"github.com/tablekit/tablekit/internal/apishape"
	"github.com/tablekit/tablekit/internal/keyrules"
	"github.com/tablekit/tablekit/internal/svcanswer"
	"github.com/tablekit/tablekit/internal/testenv"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/sas"
	"github.com/tablekit/tablekit/table"
)

// sentinels are the exported Err... values of the public packages, by
// name. TestErrorCatalogue fails when one is declared and not listed here.
func sentinels() map[string]error {
	return map[string]error{
		"accounts.ErrBadConfig":           accounts.ErrBadConfig,
		"accounts.ErrChangedDuringMove":   accounts.ErrChangedDuringMove,
		"batch.ErrBadOperation":           batch.ErrBadOperation,
		"batch.ErrBadOption":              batch.ErrBadOption,
		"batch.ErrDuplicateRowKey":        batch.ErrDuplicateRowKey,
		"batch.ErrEmpty":                  batch.ErrEmpty,
		"batch.ErrMixedPartitions":        batch.ErrMixedPartitions,
		"batch.ErrQuoteInKey":             batch.ErrQuoteInKey,
		"batch.ErrTooLarge":               batch.ErrTooLarge,
		"batch.ErrTooManyOperations":      batch.ErrTooManyOperations,
		"consistency.ErrBadKey":           consistency.ErrBadKey,
		"consistency.ErrBadOption":        consistency.ErrBadOption,
		"consistency.ErrBadPayload":       consistency.ErrBadPayload,
		"consistency.ErrBadType":          consistency.ErrBadType,
		"consistency.ErrDuplicateHandler": consistency.ErrDuplicateHandler,
		"consistency.ErrClaimLost":        consistency.ErrClaimLost,
		"consistency.ErrMalformed":        consistency.ErrMalformed,
		"consistency.ErrMessageTooLarge":  consistency.ErrMessageTooLarge,
		"consistency.ErrNilHandler":       consistency.ErrNilHandler,
		"consistency.ErrNoKey":            consistency.ErrNoKey,
		"consistency.ErrSourceChanged":    consistency.ErrSourceChanged,
		"eventstream.ErrBadDefinition":    eventstream.ErrBadDefinition,
		"eventstream.ErrConflict":         eventstream.ErrConflict,
		"eventstream.ErrCorrupt":          eventstream.ErrCorrupt,
		"eventstream.ErrDuplicateEvent":   eventstream.ErrDuplicateEvent,
		"eventstream.ErrReservedRowKey":   eventstream.ErrReservedRowKey,
		"faults.ErrInjected":              faults.ErrInjected,
		"keys.ErrBadSyntax":               keys.ErrBadSyntax,
		"keys.ErrControlChar":             keys.ErrControlChar,
		"keys.ErrEmpty":                   keys.ErrEmpty,
		"keys.ErrForbiddenChar":           keys.ErrForbiddenChar,
		"keys.ErrInvalidKey":              keys.ErrInvalidKey,
		"keys.ErrInvalidName":             keys.ErrInvalidName,
		"keys.ErrInvalidUTF8":             keys.ErrInvalidUTF8,
		"keys.ErrOutOfRange":              keys.ErrOutOfRange,
		"keys.ErrReserved":                keys.ErrReserved,
		"keys.ErrTooLong":                 keys.ErrTooLong,
		"keys.ErrTooShort":                keys.ErrTooShort,
		"patterns.ErrBadDefinition":       patterns.ErrBadDefinition,
		"patterns.ErrBlobMismatch":        patterns.ErrBlobMismatch,
		"patterns.ErrBlobMissing":         patterns.ErrBlobMissing,
		"patterns.ErrNotPrimary":          patterns.ErrNotPrimary,
		"patterns.ErrNotUnique":           patterns.ErrNotUnique,
		"patterns.ErrPutWindow":           patterns.ErrPutWindow,
		"patterns.ErrStaleRead":           patterns.ErrStaleRead,
		"patterns.ErrIndexDeclaration":    patterns.ErrIndexDeclaration,
		"patterns.ErrIndexNotReady":       patterns.ErrIndexNotReady,
		"patterns.ErrUnknownIndex":        patterns.ErrUnknownIndex,
		"sas.ErrBadSAS":                   sas.ErrBadSAS,
		"sas.ErrPolicyExists":             sas.ErrPolicyExists,
		"sas.ErrTooManyPolicies":          sas.ErrTooManyPolicies,
		"table.ErrAlreadyExists":          table.ErrAlreadyExists,
		"table.ErrBadFilter":              table.ErrBadFilter,
		"table.ErrBadOption":              table.ErrBadOption,
		"table.ErrBadRequest":             table.ErrBadRequest,
		"table.ErrBadToken":               table.ErrBadToken,
		"table.ErrBinaryTooLong":          table.ErrBinaryTooLong,
		"table.ErrDecrypt":                table.ErrDecrypt,
		"table.ErrDuplicateProperty":      table.ErrDuplicateProperty,
		"table.ErrEmptyPartitionKey":      table.ErrEmptyPartitionKey,
		"table.ErrEncryptedFilter":        table.ErrEncryptedFilter,
		"table.ErrEncryptedType":          table.ErrEncryptedType,
		"table.ErrEntityTooLarge":         table.ErrEntityTooLarge,
		"table.ErrInflatedTooLarge":       table.ErrInflatedTooLarge,
		"table.ErrIntegrity":              table.ErrIntegrity,
		"table.ErrInvalidValue":           table.ErrInvalidValue,
		"table.ErrKeyLayout":              table.ErrKeyLayout,
		"table.ErrKeyMismatch":            table.ErrKeyMismatch,
		"table.ErrLostRace":               table.ErrLostRace,
		"table.ErrMergeEncrypted":         table.ErrMergeEncrypted,
		"table.ErrNilValue":               table.ErrNilValue,
		"table.ErrNoChange":               table.ErrNoChange,
		"table.ErrNoETag":                 table.ErrNoETag,
		"table.ErrNoMeta":                 table.ErrNoMeta,
		"table.ErrNotFound":               table.ErrNotFound,
		"table.ErrNotStructPointer":       table.ErrNotStructPointer,
		"table.ErrOtherRowKind":           table.ErrOtherRowKind,
		"table.ErrPartialValue":           table.ErrPartialValue,
		"table.ErrPreconditionFailed":     table.ErrPreconditionFailed,
		"table.ErrStringTooLong":          table.ErrStringTooLong,
		"table.ErrTableBeingDeleted":      table.ErrTableBeingDeleted,
		"table.ErrTableNotFound":          table.ErrTableNotFound,
		"table.ErrQueueNotFound":          table.ErrQueueNotFound,
		"table.ErrContainerNotFound":      table.ErrContainerNotFound,
		"table.ErrThrottled":              table.ErrThrottled,
		"table.ErrTooManyProperties":      table.ErrTooManyProperties,
		"table.ErrUnsupportedType":        table.ErrUnsupportedType,
		"table.ErrValueOutOfRange":        table.ErrValueOutOfRange,
	}
}

// secretSig is a SAS signature carried by a transport error's URL: no
// Error() may show it.
const secretSig = "c2VjcmV0U0lHbmF0dXJl"

// transportFailure is what Go's HTTP client returns when no answer came:
// its text holds the request URL, SAS signature included, and its cause
// here spans two lines.
func transportFailure() error {
	return &url.Error{Op: "Get", URL: "https://acct.table.core.windows.net/T()?sv=2023&sig=" + secretSig + "&sp=r",
		Err: errors.New("read: connection reset\nby peer")}
}

// answers are errors a backend really returned, each with the service's
// *azcore.ResponseError in its chain (none is built by hand).
type answers struct {
	notFound error                   // Get of a missing entity: *table.ServiceError, 404
	stale    error                   // Update with an old ETag: *table.ServiceError, 412
	conflict *table.ConflictError    // Modify that lost its only attempt
	tx       *batch.TransactionError // Add of an entity that exists, at operation 1: 409
	blob     error                   // the Blob client's 404 for a missing blob
}

type row struct {
	table.Meta
	N int64
}

// realAnswers provokes each answer from the backend: tc's table and bc's
// container exist.
func realAnswers(t *testing.T, tc *aztables.Client, bc *azblob.Client, container string) answers {
	ctx := t.Context()
	tbl, err := table.New[row](tc, nil)
	if err != nil {
		t.Fatal(err)
	}
	var a answers
	_, a.notFound = tbl.Get(ctx, "p", "missing", nil)
	v := &row{Meta: table.Meta{PartitionKey: "p", RowKey: "r"}}
	if err := tbl.Add(ctx, v, nil); err != nil {
		t.Fatal(err)
	}
	old := *v
	if err := tbl.Update(ctx, v, nil); err != nil {
		t.Fatal(err)
	}
	a.stale = tbl.Update(ctx, &old, nil)
	_, err = tbl.Modify(ctx, "p", "r", func(r *row) error {
		// Another writer changes the entity between Modify's read and
		// its write: the write meets 412, and one attempt is all it has.
		cur, err := tbl.Get(ctx, "p", "r", nil)
		if err != nil {
			return err
		}
		cur.N++
		if err := tbl.Update(ctx, cur, nil); err != nil {
			return err
		}
		r.N = 100
		return nil
	}, &table.ModifyOptions{MaxAttempts: 1})
	if !errors.As(err, &a.conflict) {
		t.Fatalf("Modify that lost its only attempt: %v; want a *table.ConflictError", err)
	}
	_, err = batch.Submit(ctx, tc, []batch.Op{batch.Add(&row{Meta: table.Meta{PartitionKey: "p", RowKey: "q"}}), batch.Add(&row{Meta: table.Meta{PartitionKey: "p", RowKey: "r"}})}, nil)
	if !errors.As(err, &a.tx) {
		t.Fatalf("transaction adding an existing entity: %v; want a *batch.TransactionError", err)
	}
	_, a.blob = bc.DownloadStream(ctx, container, "missing", nil)
	for name, err := range map[string]error{"notFound": a.notFound, "stale": a.stale, "conflict": a.conflict, "tx": a.tx, "blob": a.blob} {
		var re *azcore.ResponseError
		if !errors.As(err, &re) {
			t.Fatalf("%s: %v has no *azcore.ResponseError: the backend did not answer as expected", name, err)
		}
	}
	return a
}

// instances are values of every exported error type, each wrapping what
// it wraps in use: a real service answer where it carries one, and a
// transport failure with a SAS signature in its URL.
func instances(a answers) map[string][]error {
	panicked := func() (pe *consistency.PanicError) {
		defer func() {
			r := recover()
			pe = &consistency.PanicError{Type: "t", Key: "k", Value: r, Stack: debug.Stack()}
		}()
		panic(errors.New("boom\nsecond line"))
	}()
	return map[string][]error{
		"batch.OpError": {&batch.OpError{Index: 3, Kind: batch.KindAdd, PartitionKey: "p", RowKey: "r\nx", Err: batch.ErrDuplicateRowKey}},
		"batch.TransactionError": {a.tx,
			&batch.TransactionError{Index: -1, Err: a.stale}, &batch.TransactionError{Index: -1, Err: transportFailure()}},
		"batch.WriteError": {&batch.WriteError{Failures: []*batch.TransactionError{a.tx, a.tx}}},
		"consistency.FailureReport": {&consistency.FailureReport{Retried: 1, ByType: map[string]consistency.TypeFailures{
			"a": {Retried: 1, LastError: a.blob}, "b": {Poisoned: 1, LastError: transportFailure()}}}},
		"consistency.PanicError": {panicked},

		"keys.ValidationError":     {keyrules.ValidatePartitionKey("a/b\nc")},
		"patterns.ValueTakenError": {&patterns.ValueTakenError{Index: "email", Value: "a\nb", PartitionKey: "p", Err: a.tx.Err}},
		"table.ConflictError":      {a.conflict, &table.ConflictError{Attempts: 2, Err: transportFailure()}},
		"table.InputError":         {&table.InputError{Op: "Get", Type: "T", Field: "F", Rule: table.ErrInvalidValue, Detail: strconv.Quote("x\ny")}},
		"table.IntegrityError": {&table.IntegrityError{Type: "T", Table: "t", PartitionKey: "p", RowKey: "r", Reason: "unwrap failed", Err: a.notFound},
			&table.IntegrityError{Type: "T", Table: "t", PartitionKey: "p", RowKey: "r", Reason: "unwrap failed", Err: transportFailure()}},
		"table.ServiceError": {a.notFound, a.stale,
			&table.ServiceError{Op: "Get", Table: "t", PartitionKey: "p", RowKey: "r", Err: transportFailure()}},
		"table.UnknownTypeError": {&table.UnknownTypeError{PartitionKey: "p", RowKey: "r", Type: "a\nb"}},
	}
}

// TestErrorCatalogue: every error type and sentinel of the public packages
// prints one line; where the service answered, the line has its status
// and error code, and errors.As still finds the *azcore.ResponseError;
// no line shows a SAS signature. The catalogue is found by parsing the
// packages, so an error type or sentinel added without an instance here
// fails the test. It runs on the fake and, with
// TABLEKIT_CONNECTION_STRING set, on that account too.
func TestErrorCatalogue(t *testing.T) {
	decls, err := apishape.DiscoverErrors("../..")
	if err != nil {
		t.Fatal(err)
	}
	if len(decls.Types) < 10 || len(decls.Sentinels) < 50 {
		t.Fatalf("found %d error types and %d sentinels: is the module root ../..?", len(decls.Types), len(decls.Sentinels))
	}
	sent := sentinels()
	for _, name := range decls.Sentinels {
		err, ok := sent[name]
		if !ok {
			t.Errorf("sentinel %s is not in the catalogue: add it to sentinels()", name)
			continue
		}
		if s := err.Error(); strings.ContainsAny(s, "\r\n") {
			t.Errorf("%s: Error() spans lines: %q", name, s)
		}
	}
	for name := range sent {
		if !slices.Contains(decls.Sentinels, name) {
			t.Errorf("sentinels() lists %s, which the packages no longer declare", name)
		}
	}

	backends := map[string]func(t *testing.T) answers{"fake": func(t *testing.T) answers {
		ts := fake.NewTableService(nil)
		tc := ts.NewClient("catalogue", nil)
		if _, err := tc.CreateTable(t.Context(), nil); err != nil {
			t.Fatal(err)
		}
		bc := fake.NewBlobService(nil).NewClient(nil)
		if _, err := bc.CreateContainer(t.Context(), "catalogue", nil); err != nil {
			t.Fatal(err)
		}
		return realAnswers(t, tc, bc, "catalogue")
	}}
	if os.Getenv("TABLEKIT_CONNECTION_STRING") != "" || testenv.Required() {
		backends["account"] = func(t *testing.T) answers {
			tc := testenv.NewTable(t, "catalogue")
			bc, err := azblob.NewClientFromConnectionString(testenv.ConnectionString(t), nil)
			if err != nil {
				t.Fatal(err)
			}
			container := strings.ToLower(testenv.UniqueName("catalogue"))
			if _, err := bc.CreateContainer(t.Context(), container, nil); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _, _ = bc.DeleteContainer(context.Background(), container, nil) })
			return realAnswers(t, tc, bc, container)
		}
	}
	for backend, answer := range backends {
		t.Run(backend, func(t *testing.T) {
			inst := instances(answer(t))
			for _, name := range decls.Types {
				errs, ok := inst[name]
				if !ok {
					t.Errorf("error type %s is not in the catalogue: add instances of it to instances()", name)
					continue
				}
				for i, err := range errs {
					checkLine(t, fmt.Sprintf("%s #%d", name, i), err)
				}
				if name == "consistency.PanicError" && !strings.Contains(errs[0].Error(), "errcatalogue_test.go:") {
					t.Errorf("%s: the line does not name where the handler panicked: %s", name, errs[0])
				}
			}
			for name := range inst {
				if !slices.Contains(decls.Types, name) {
					t.Errorf("instances() has %s, which the packages no longer declare", name)
				}
			}
		})
	}
}

// checkLine asserts err's text is one line without a SAS signature and,
// when the service answered, names its status and error code while the
// *azcore.ResponseError stays reachable.
func checkLine(t *testing.T, name string, err error) {
	t.Helper()
	s := err.Error()
	if strings.ContainsAny(s, "\r\n") {
		t.Errorf("%s: Error() spans lines:\n%s", name, s)
	}
	if strings.Contains(s, secretSig) {
		t.Errorf("%s: Error() shows the SAS signature: %s", name, s)
	}
	status, code := svcanswer.StatusCode(err), svcanswer.ErrorCode(err)
	if status == 0 {
		return
	}
	var re *azcore.ResponseError
	if !errors.As(err, &re) {
		t.Errorf("%s: status %d but no *azcore.ResponseError in the chain", name, status)
	}
	if status == http.StatusAccepted {
		// The envelope of a transaction whose failed operation's answer
		// is inside it (an error that hides its *batch.TransactionError
		// from retry loops): the line must carry that answer instead.
		if !operationAnswer.MatchString(s) {
			t.Errorf("%s: Error() of a failed transaction lacks the failed operation's status and code: %s", name, s)
		}
		return
	}
	if !strings.Contains(s, strconv.Itoa(status)) || !strings.Contains(s, code) {
		t.Errorf("%s: Error() lacks the service's status %d or code %q: %s", name, status, code, s)
	}
}

// operationAnswer is a failed operation's status and error code as a line
// shows them ("409 EntityAlreadyExists").
var operationAnswer = regexp.MustCompile(`\b[45]\d\d [A-Z][A-Za-z]+\b`)
