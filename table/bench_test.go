package table_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/table"
)

// tenFields is the benchmark entity: ten properties of the common types.
type tenFields struct {
	table.Meta
	FirstName  string
	LastName   string
	Email      string
	Department string
	Age        int
	Salary     int64
	Rating     float64
	Active     bool
	Hired      time.Time
	Level      int32
}

var benchValue = tenFields{
	Meta:      table.Meta{PartitionKey: "Sales", RowKey: "empid_000123"},
	FirstName: "Don", LastName: "Hall", Email: "donh@contoso.com", Department: "Sales",
	Age: 34, Salary: 123456789012, Rating: 4.5, Active: true,
	Hired: time.Date(2012, 3, 4, 5, 6, 7, 0, time.UTC), Level: 3,
}

// handEntity is the same entity built the way the SDK's docs show.
func handEntity(v *tenFields) aztables.EDMEntity {
	return aztables.EDMEntity{
		Entity: aztables.Entity{PartitionKey: v.PartitionKey, RowKey: v.RowKey},
		Properties: map[string]any{
			"FirstName": v.FirstName, "LastName": v.LastName, "Email": v.Email, "Department": v.Department,
			"Age": aztables.EDMInt64(v.Age), "Salary": aztables.EDMInt64(v.Salary), "Rating": v.Rating,
			"Active": v.Active, "Hired": aztables.EDMDateTime(v.Hired), "Level": int32(v.Level),
		},
	}
}

func fromHand(e *aztables.EDMEntity, v *tenFields) {
	v.PartitionKey, v.RowKey = e.PartitionKey, e.RowKey
	v.FirstName, _ = e.Properties["FirstName"].(string)
	v.LastName, _ = e.Properties["LastName"].(string)
	v.Email, _ = e.Properties["Email"].(string)
	v.Department, _ = e.Properties["Department"].(string)
	if a, ok := e.Properties["Age"].(aztables.EDMInt64); ok {
		v.Age = int(a)
	}
	if s, ok := e.Properties["Salary"].(aztables.EDMInt64); ok {
		v.Salary = int64(s)
	}
	v.Rating, _ = e.Properties["Rating"].(float64)
	v.Active, _ = e.Properties["Active"].(bool)
	if h, ok := e.Properties["Hired"].(aztables.EDMDateTime); ok {
		v.Hired = time.Time(h)
	}
	if l, ok := e.Properties["Level"].(int32); ok {
		v.Level = l
	}
}

func BenchmarkMarshalCodec(b *testing.B) {
	var c table.Codec
	v := benchValue
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Marshal(&v); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMarshalHandEDMEntity(b *testing.B) {
	v := benchValue
	b.ReportAllocs()
	for b.Loop() {
		if _, err := json.Marshal(handEntity(&v)); err != nil {
			b.Fatal(err)
		}
	}
}

// serviceJSON is the entity as the service returns it (minimal metadata).
func serviceJSON(b *testing.B) []byte {
	var c table.Codec
	v := benchValue
	raw, err := c.Marshal(&v)
	if err != nil {
		b.Fatal(err)
	}
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	m["odata.etag"] = `W/"datetime'2026-11-21T21%3A15%3A46.9047177Z'"`
	m["Timestamp"] = "2026-11-21T21:15:46.9047177Z"
	out, _ := json.Marshal(m)
	return out
}

func BenchmarkUnmarshalCodec(b *testing.B) {
	var c table.Codec
	data := serviceJSON(b)
	var v tenFields
	b.ReportAllocs()
	for b.Loop() {
		if err := c.Unmarshal(data, &v); err != nil {
			b.Fatal(err)
		}
	}
	if v.Salary != benchValue.Salary {
		b.Fatal("wrong value")
	}
}

func BenchmarkUnmarshalHandEDMEntity(b *testing.B) {
	data := serviceJSON(b)
	var v tenFields
	b.ReportAllocs()
	for b.Loop() {
		var e aztables.EDMEntity
		if err := json.Unmarshal(data, &e); err != nil {
			b.Fatal(err)
		}
		fromHand(&e, &v)
	}
	if v.Salary != benchValue.Salary {
		b.Fatal("wrong value")
	}
}
