package benchkit

import (
	"encoding/json"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/internal/tableio"
	"github.com/tablekit/tablekit/table"
)

// TenFields is the codec benchmark's entity: ten common properties.
type TenFields struct {
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

// Ten is the value the codec benchmarks encode.
var Ten = TenFields{
	Meta:      table.Meta{PartitionKey: "Sales", RowKey: "empid_000123"},
	FirstName: "Don", LastName: "Hall", Email: "donh@contoso.com", Department: "Sales",
	Age: 34, Salary: 123456789012, Rating: 4.5, Active: true,
	Hired: time.Date(2012, 3, 4, 5, 6, 7, 0, time.UTC), Level: 3,
}

// HandEntity builds the entity the way the SDK's documentation shows.
func HandEntity(v *TenFields) aztables.EDMEntity {
	return aztables.EDMEntity{
		Entity: aztables.Entity{PartitionKey: v.PartitionKey, RowKey: v.RowKey},
		Properties: map[string]any{
			"FirstName": v.FirstName, "LastName": v.LastName, "Email": v.Email, "Department": v.Department,
			"Age": aztables.EDMInt64(v.Age), "Salary": aztables.EDMInt64(v.Salary), "Rating": v.Rating,
			"Active": v.Active, "Hired": aztables.EDMDateTime(v.Hired), "Level": int32(v.Level),
		},
	}
}

// FromHand reads a hand-decoded entity back into the struct.
func FromHand(e *aztables.EDMEntity, v *TenFields) {
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

// ServiceJSON is Ten as the service returns it (minimal metadata).
func ServiceJSON() []byte {
	v := Ten
	raw, _ := tableio.Marshal(&v)
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	m["odata.etag"] = `W/"datetime'2026-11-21T21%3A15%3A46.9047177Z'"`
	m["Timestamp"] = "2026-11-21T21:15:46.9047177Z"
	out, _ := json.Marshal(m)
	return out
}
