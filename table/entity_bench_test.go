package table_test

import (
	"encoding/json"
	"testing"

	"github.com/tablekit/tablekit/internal/benchkit"
	"github.com/tablekit/tablekit/internal/tableio"
	"github.com/tablekit/tablekit/table"
)

// BenchmarkMarshalEntity encodes the ten-field entity of the typed codec's
// benchmarks as a raw Entity (checks included), beside
// BenchmarkMarshalCodec.
func BenchmarkMarshalEntity(b *testing.B) {
	var e table.Entity
	if err := tableio.Unmarshal(benchkit.ServiceJSON(), &e); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tableio.Marshal(&e); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkUnmarshalEntity decodes the service's JSON of that entity into
// a raw Entity, beside BenchmarkUnmarshalCodec.
func BenchmarkUnmarshalEntity(b *testing.B) {
	data := benchkit.ServiceJSON()
	b.ReportAllocs()
	for b.Loop() {
		var e table.Entity
		if err := tableio.Unmarshal(data, &e); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkUnmarshalMap is what patterns did before the raw Entity:
// json.Unmarshal into map[string]any (and they still had to pair the
// annotations themselves).
func BenchmarkUnmarshalMap(b *testing.B) {
	data := benchkit.ServiceJSON()
	b.ReportAllocs()
	for b.Loop() {
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			b.Fatal(err)
		}
	}
}
