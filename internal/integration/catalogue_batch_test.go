package integration

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/consistency/blobstore"
	"github.com/tablekit/tablekit/internal/batchraw"
	"github.com/tablekit/tablekit/internal/keyrules"
	"github.com/tablekit/tablekit/internal/poisonq"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/table"
)

// batchAndMessageCases: transactions (typed, raw and planned), the Writer,
// and the consistency package's messages and poison-queue options.
func batchAndMessageCases(t *testing.T, env *catalogueEnv) []badCase {
	t.Helper()
	e := func(pk, rk string) *Employee { return &Employee{Meta: table.Meta{PartitionKey: pk, RowKey: rk}} }
	submit := func(ops ...batch.Op) func(context.Context) error {
		return func(ctx context.Context) error { _, err := batch.Submit(ctx, env.tc, ops, nil); return err }
	}
	// submitPlain sends through a client without tablekit's policy.
	submitPlain := func(ops ...batch.Op) func(context.Context) error {
		return func(ctx context.Context) error { _, err := batch.Submit(ctx, env.plain, ops, nil); return err }
	}
	// raw is a raw operation on (pk, rk) whose entity carries a string
	// property of pad characters.
	raw := func(kind batch.Kind, pk, rk string, pad int) batch.Op {
		return batchraw.Op(kind, []byte(fmt.Sprintf(`{"PartitionKey":%q,"RowKey":%q,"S":%q}`, pk, rk, strings.Repeat("x", pad))), nil)
	}
	// bigRaw is a raw entity within every per-entity limit (14 strings of
	// 30,000 characters, 840,000 bytes as the service counts) whose JSON
	// escapes each '<' as \u003c: six bytes of request a character, so
	// two of them make a request over 4 MiB.
	bigRaw := func(rk string) batch.Op {
		var b strings.Builder
		fmt.Fprintf(&b, `{"PartitionKey":"a","RowKey":%q`, rk)
		for i := 0; i < 14; i++ {
			fmt.Fprintf(&b, `,"S%02d":"%s"`, i, strings.Repeat(`\u003c`, 30000))
		}
		b.WriteString("}")
		return batchraw.Op(batch.KindAdd, []byte(b.String()), nil)
	}
	var wb strings.Builder
	wb.WriteString(`{"PartitionKey":"p","RowKey":"r"`)
	for i := 0; i <= table.MaxUserProperties; i++ {
		fmt.Fprintf(&wb, `,"P%03d":1`, i)
	}
	wb.WriteString("}")
	wideRaw := []byte(wb.String())
	var rawDeletes []batch.Op
	for i := 0; i <= batch.MaxOperations; i++ {
		rawDeletes = append(rawDeletes, raw(batch.KindDelete, "a", fmt.Sprint(i), 0))
	}
	sender := consistency.NewSender(env.qc, nil)
	poison := poisonq.New(env.qc, env.qc)

	return []badCase{
		// transactions
		{"batch: nil value", table.ErrNilValue, submit(batch.Add(nil)), opAt(0, nil)},
		{"batch: value that is not a pointer", table.ErrNotStructPointer, submit(batch.Add(Employee{Meta: table.Meta{PartitionKey: "p", RowKey: "r"}})), opAt(0, nil)},
		{"batch: Update of a value without an ETag", table.ErrNoETag, submit(batch.Update(e("p", "r"), aztables.UpdateModeMerge)), opAt(0, inputField(table.ErrNoETag, "ETag"))},
		{"batch: Delete with an empty IfMatch", table.ErrNoETag, submit(batch.Delete("p", "r").IfMatch("")), opAt(0, inputField(table.ErrNoETag, "IfMatch"))},
		{"batch: operation of an unknown kind", batch.ErrBadOperation, submit(batchraw.Op(batch.Kind(99), []byte(`{"PartitionKey":"p","RowKey":"r"}`), nil)), opAt(0, nil)},
		{"batch: raw entity that is not JSON", table.ErrInvalidValue, submit(batchraw.Op(batch.KindAdd, []byte(`{"PartitionKey":`), nil)), opAt(0, inputRule(table.ErrInvalidValue))},
		{"batch: raw entity with a slash in its PartitionKey", keys.ErrForbiddenChar, submit(batchraw.Op(batch.KindAdd, []byte(`{"PartitionKey":"a/b","RowKey":"r"}`), nil)), opAt(0, validation("PartitionKey"))},
		{"raw batch: bad property name", keys.ErrInvalidName, submit(batchraw.Op(batch.KindAdd, []byte(`{"PartitionKey":"p","RowKey":"r","a b":1}`), nil)), opAt(0, inputRule(keys.ErrInvalidName))},
		{"raw batch: string over 32 K UTF-16 units", table.ErrStringTooLong, submit(raw(batch.KindUpsertReplace, "p", "r", 32*1024+1)), opAt(0, inputField(table.ErrStringTooLong, "S"))},
		{"raw batch: 253 properties", table.ErrTooManyProperties, submit(batchraw.Op(batch.KindAdd, wideRaw, nil)), opAt(0, inputRule(table.ErrTooManyProperties))},
		{"raw batch: DateTime before 1601", table.ErrValueOutOfRange, submit(batchraw.Op(batch.KindUpsertMerge,
			[]byte(`{"PartitionKey":"p","RowKey":"r","T":"1600-01-01T00:00:00Z","T@odata.type":"Edm.DateTime"}`), nil)), opAt(0, inputField(table.ErrValueOutOfRange, "T"))},
		{"raw batch: empty PartitionKey", table.ErrEmptyPartitionKey, submit(raw(batch.KindAdd, "", "r", 0)), opAt(0, nil)},
		{"batch: Delete with a number sign in its RowKey", keys.ErrForbiddenChar, submit(batch.Delete("p", "a#b")), opAt(0, validation("RowKey"))},
		{"batch: single quote in the key of an upsert, client without tablekit's policy", batch.ErrQuoteInKey, submitPlain(batch.Upsert(e("O'Brien", "r"), aztables.UpdateModeReplace)), opAt(0, nil)},
		{"batch: single quote in the key of a raw merge, client without tablekit's policy", batch.ErrQuoteInKey, submitPlain(batchraw.Op(batch.KindUpsertMerge, []byte(`{"PartitionKey":"p","RowKey":"O'Brien"}`), nil)), opAt(0, nil)},
		{"batch: control character in the second operation's RowKey", keys.ErrControlChar, submit(batch.Add(e("p", "1")), batch.Add(e("p", "2\x00"))), opAt(1, nil)},
		{"raw batch: two PartitionKeys", batch.ErrMixedPartitions, submit(raw(batch.KindAdd, "a", "1", 0), raw(batch.KindAdd, "b", "1", 0)), opAt(1, nil)},
		{"raw batch: a RowKey twice", batch.ErrDuplicateRowKey, submit(raw(batch.KindAdd, "a", "1", 0), raw(batch.KindUpsertMerge, "a", "1", 0)), opAt(1, nil)},
		{"raw batch: 101 deletes", batch.ErrTooManyOperations, submit(rawDeletes...), opAt(100, nil)},
		{"raw batch: request over 4 MiB", batch.ErrTooLarge, submit(bigRaw("1"), bigRaw("2")), opAt(1, nil)},
		{"transaction: Append of a 101st operation", batch.ErrTooManyOperations, func(context.Context) error {
			tx := batch.NewTransaction(nil)
			for i := 0; i < batch.MaxOperations; i++ {
				if err := tx.Append(batch.Add(e("p", fmt.Sprint(i)))); err != nil {
					return err
				}
			}
			return tx.Append(batch.Add(e("p", "last")))
		}, opAt(100, nil)},
		{"transaction: Append of another PartitionKey", batch.ErrMixedPartitions, func(context.Context) error {
			tx := batch.NewTransaction(nil)
			if err := tx.Append(batch.Add(e("a", "1"))); err != nil {
				return err
			}
			return tx.Append(batch.Add(e("b", "1")))
		}, opAt(1, nil)},
		{"plan: bad key in the fifth operation", keys.ErrForbiddenChar, func(context.Context) error {
			ops := []batch.Op{batch.Add(e("a", "1")), batch.Add(e("b", "1")), batch.Add(e("a", "2")), batch.Add(e("c", "1")), batch.Add(e("c", "x/y"))}
			_, err := batch.Plan(ops, nil)
			return err
		}, opAt(4, nil)},
		{"writer: bad operation in the stream", keys.ErrForbiddenChar, func(ctx context.Context) error {
			w := batch.NewWriter(env.tc, nil)
			_, err := w.Write(ctx, slices.Values([]batch.Op{batch.Add(e("p", "ok")), batch.Add(e("p", "a?b"))}), nil)
			return err
		}, anyValidation()},

		// messages
		{"message type with a space", consistency.ErrBadType, func(ctx context.Context) error { return sender.Send(ctx, "archive v1", "k", 1, nil) }, nil},
		{"message type without a name", consistency.ErrBadType, func(ctx context.Context) error { return sender.Send(ctx, ".v1", "k", 1, nil) }, nil},
		{"message key over 1 KiB", consistency.ErrBadKey, func(ctx context.Context) error {
			return sender.Send(ctx, "archive.v1", strings.Repeat("k", 1025), 1, nil)
		}, nil},
		{"message sent around a write: bad type", consistency.ErrBadType, func(ctx context.Context) error {
			return sender.SendAround(ctx, "archive", "k", 1, time.Minute, func() error { return errors.New("must not run") }, nil)
		}, nil},
		{"sender with a badly named payload container", keys.ErrInvalidName, func(ctx context.Context) error {
			s := consistency.NewSender(env.qc, &consistency.SenderOptions{Blobs: blobstore.New(env.bc), Container: "Bad_Name"})
			return s.Send(ctx, "archive.v1", "k", strings.Repeat("x", 70*1024), nil)
		}, validation("container")},
		{"poison peek of 33 messages", consistency.ErrBadOption, func(ctx context.Context) error {
			_, err := poison.Peek(ctx, &poisonq.Options{Max: 33 /* the service shows at most 32 */})
			return err
		}, nil},
		{"poison peek of a negative count", consistency.ErrBadOption, func(ctx context.Context) error {
			_, err := poison.Peek(ctx, &poisonq.Options{Max: -1})
			return err
		}, nil},
		{"poison replay with a negative visibility", consistency.ErrBadOption, func(ctx context.Context) error {
			_, err := poison.Replay(ctx, &poisonq.Options{Visibility: -time.Second})
			return err
		}, nil},
		{"poison purge of matching messages with a negative visibility", consistency.ErrBadOption, func(ctx context.Context) error {
			_, err := poison.Purge(ctx, &poisonq.Options{Match: func(*poisonq.Poisoned) bool { return true }, Visibility: -5 * time.Second})
			return err
		}, nil},
		{"poison replay with a visibility under a second", consistency.ErrBadOption, func(ctx context.Context) error {
			_, err := poison.Replay(ctx, &poisonq.Options{Visibility: 500 * time.Millisecond})
			return err
		}, nil},
		{"move request with a bad key", keys.ErrForbiddenChar, func(ctx context.Context) error {
			from, err := table.New[Employee](env.tc, nil)
			if err != nil {
				return err
			}
			to := from
			return consistency.NewMover[Employee](from, to, sender, nil).Request(ctx, "p", "a/b", nil)
		}, anyValidation()},
	}
}

// keyCases: names of tables, queues, containers and blobs, and the key
// builders.
func keyCases() []badCase {
	name := func(f func(string) error, s string) func(context.Context) error {
		return func(context.Context) error { return f(s) }
	}
	return []badCase{
		{"table name starting with a digit", keys.ErrBadSyntax, name(keyrules.ValidateTableName, "1abc"), validation("table")},
		{"table name over 63 characters", keys.ErrTooLong, name(keyrules.ValidateTableName, "t"+strings.Repeat("a", 63)), validation("table")},
		{"table name with a hyphen", keys.ErrForbiddenChar, name(keyrules.ValidateTableName, "my-table"), validation("table")},
		{"queue name with two hyphens in a row", keys.ErrBadSyntax, name(keyrules.ValidateQueueName, "a--b"), validation("queue")},
		{"queue name over 63 characters", keys.ErrTooLong, name(keyrules.ValidateQueueName, strings.Repeat("q", 64)), validation("queue")},
		{"container name of two characters", keys.ErrTooShort, name(keyrules.ValidateContainerName, "ab"), validation("container")},
		{"container name starting with a hyphen", keys.ErrBadSyntax, name(keyrules.ValidateContainerName, "-abc"), validation("container")},
		{"empty blob name", keys.ErrEmpty, name(keyrules.ValidateBlobName, ""), validation("blob")},
		{"blob name over 1,024 characters", keys.ErrTooLong, name(keyrules.ValidateBlobName, strings.Repeat("b", 1025)), validation("blob")},
		{"property name over 255 characters", keys.ErrTooLong, name(keyrules.ValidatePropertyName, strings.Repeat("p", 256)), validation("property")},
		{"shard name of bucket out of range", keys.ErrOutOfRange, func(context.Context) error { _, err := keyrules.ShardName("s", 5, 5); return err }, anyValidation()},
		{"fixed-width number too wide for its width", keys.ErrOutOfRange, func(context.Context) error { _, err := keys.FixedUint(1000, 3); return err }, anyValidation()},
		{"period table of an unknown period", keys.ErrOutOfRange, func(context.Context) error {
			_, err := keys.PeriodTable("logins", keys.Period(0), time.Now(), 0)
			return err
		}, anyValidation()},
		{"inverted ticks of a time before year 1", keys.ErrOutOfRange, func(context.Context) error { return keyrules.CheckTicksRange(time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC)) }, anyValidation()},
	}
}
