package table

import (
	"bytes"
	"context"
	"reflect"
	"testing"

	"github.com/tablekit/tablekit/fake"
)

type benchPatient struct {
	Meta
	Name   string
	SSN    string `table:",encrypt"`
	Salary int64  `table:",encrypt"`
	Notes  []byte `table:",encrypt"`
}

func benchTable(b *testing.B) (*Table[benchPatient], []byte) {
	client := fake.NewTableService(nil).NewClient("Patients", nil)
	tb, err := New[benchPatient](client, &Options{Encryption: &Encryption{KeyID: "k", Keys: LocalKeys{"k": bytes.Repeat([]byte{1}, 32)}}})
	if err != nil {
		b.Fatal(err)
	}
	v := &benchPatient{Meta: Meta{PartitionKey: "Sales", RowKey: "000123"}, Name: "Don Hall", SSN: "078-05-1120", Salary: 123456789, Notes: bytes.Repeat([]byte("n"), 200)}
	plain, err := tb.plan.encode(nil, reflect.ValueOf(v).Elem(), nil)
	if err != nil {
		b.Fatal(err)
	}
	return tb, plain
}

// BenchmarkEncryptEntity seals one entity of three encrypted properties
// (the content key wrapped by LocalKeys); no request.
func BenchmarkEncryptEntity(b *testing.B) {
	tb, plain := benchTable(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tb.encrypt(ctx, plain); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecryptEntity opens it again.
func BenchmarkDecryptEntity(b *testing.B) {
	tb, plain := benchTable(b)
	ctx := context.Background()
	sealed, err := tb.encrypt(ctx, plain)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tb.decrypt(ctx, sealed, true); err != nil {
			b.Fatal(err)
		}
	}
}
