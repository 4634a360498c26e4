package table_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/internal/benchkit"
	"github.com/tablekit/tablekit/internal/tableio"
	"github.com/tablekit/tablekit/internal/testenv"
	"github.com/tablekit/tablekit/table"
)

func BenchmarkMarshalCodec(b *testing.B) {
	v := benchkit.Ten
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tableio.Marshal(&v); err != nil {
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
	data := benchkit.ServiceJSON()
	var v benchkit.TenFields
	b.ReportAllocs()
	for b.Loop() {
		if err := tableio.Unmarshal(data, &v); err != nil {
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

// BenchmarkAddAzurite compares one Add the naive way (the SDK's AddEntity,
// which lets the service echo the whole entity back) with table.Add, which
// asks for no content: the ETag arrives in a header either way.
//
//	scripts/azurite run -- go test -run '^$' -bench AddAzurite -count 3 ./table/
func BenchmarkAddAzurite(b *testing.B) {
	v := benchkit.Ten
	b.Run("naive-echo", func(b *testing.B) {
		client := testenv.NewTable(b, "benchadd")
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			v.RowKey = fmt.Sprintf("%09d", i)
			i++
			body, _ := tableio.Marshal(&v)
			if _, err := client.AddEntity(b.Context(), body, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("tablekit", func(b *testing.B) {
		tb, _ := table.New[benchkit.TenFields](testenv.NewTable(b, "benchadd"), nil)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			v.RowKey = fmt.Sprintf("%09d", i)
			i++
			if err := tb.Add(b.Context(), &v, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}
