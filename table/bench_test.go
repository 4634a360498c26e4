package table_test

import (
	"encoding/json"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/internal/benchkit"
	"github.com/tablekit/tablekit/table"
)

func BenchmarkMarshalCodec(b *testing.B) {
	var c table.Codec
	v := benchkit.Ten
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Marshal(&v); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMarshalHandEDMEntity(b *testing.B) {
	v := benchkit.Ten
	b.ReportAllocs()
	for b.Loop() {
		if _, err := json.Marshal(benchkit.HandEntity(&v)); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkUnmarshalCodec(b *testing.B) {
	var c table.Codec
	data := benchkit.ServiceJSON()
	var v benchkit.TenFields
	b.ReportAllocs()
	for b.Loop() {
		if err := c.Unmarshal(data, &v); err != nil {
			b.Fatal(err)
		}
	}
	if v.Salary != benchkit.Ten.Salary {
		b.Fatal("wrong value")
	}
}

func BenchmarkUnmarshalHandEDMEntity(b *testing.B) {
	data := benchkit.ServiceJSON()
	var v benchkit.TenFields
	b.ReportAllocs()
	for b.Loop() {
		var e aztables.EDMEntity
		if err := json.Unmarshal(data, &e); err != nil {
			b.Fatal(err)
		}
		benchkit.FromHand(&e, &v)
	}
	if v.Salary != benchkit.Ten.Salary {
		b.Fatal("wrong value")
	}
}
