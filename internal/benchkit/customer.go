package benchkit

import (
	"fmt"
	"time"

	"github.com/tablekit/tablekit/internal/keyrules"
	"github.com/tablekit/tablekit/table"
)

// Customer is a CRM's customer entity of forty properties (six EDM
// types): the widest of the point-Get rows, for how a read's cost moves
// with the entity's width. The service allows 252 properties besides the
// keys and Timestamp.
type Customer struct {
	table.Meta
	CustomerID        int64
	FirstName         string
	MiddleName        string
	LastName          string
	Email             string
	Phone             string
	Mobile            string
	Company           string
	JobTitle          string
	Department        string
	Street1           string
	Street2           string
	City              string
	Region            string
	PostalCode        string
	Country           string
	BillingStreet     string
	BillingCity       string
	BillingPostalCode string
	BillingCountry    string
	Language          string
	Currency          string
	TimeZone          string
	Segment           string
	Source            string
	Referrer          string
	Notes             string
	Age               int32
	Visits            int32
	Orders            int32
	LifetimeValue     float64
	Discount          float64
	Score             float64
	Created           time.Time
	Updated           time.Time
	LastOrder         time.Time
	Active            bool
	Newsletter        bool
	VIP               bool
	Verified          bool
}

// HandCustomer is Customer as a careful hand-written program declares it
// for encoding/json: the Int64 as a string and each DateTime with its
// annotation beside it.
type HandCustomer struct {
	PartitionKey, RowKey string
	CustomerIDType       string `json:"CustomerID@odata.type,omitempty"`
	CustomerID           int64  `json:"CustomerID,string"`
	FirstName            string
	MiddleName           string
	LastName             string
	Email                string
	Phone                string
	Mobile               string
	Company              string
	JobTitle             string
	Department           string
	Street1              string
	Street2              string
	City                 string
	Region               string
	PostalCode           string
	Country              string
	BillingStreet        string
	BillingCity          string
	BillingPostalCode    string
	BillingCountry       string
	Language             string
	Currency             string
	TimeZone             string
	Segment              string
	Source               string
	Referrer             string
	Notes                string
	Age                  int32
	Visits               int32
	Orders               int32
	LifetimeValue        float64
	Discount             float64
	Score                float64
	CreatedType          string `json:"Created@odata.type,omitempty"`
	Created              time.Time
	UpdatedType          string `json:"Updated@odata.type,omitempty"`
	Updated              time.Time
	LastOrderType        string `json:"LastOrder@odata.type,omitempty"`
	LastOrder            time.Time
	Active               bool
	Newsletter           bool
	VIP                  bool
	Verified             bool
}

// Customers returns n customers of the partition "p00".
func Customers(n int) []*Customer {
	cs := make([]*Customer, n)
	day := time.Date(2021, 3, 1, 12, 0, 0, 0, time.UTC)
	for i := range cs {
		cs[i] = &Customer{Meta: table.Meta{PartitionKey: "p00", RowKey: keyrules.Uint64(uint64(i))},
			CustomerID:        int64(500000 + i),
			FirstName:         "Jane",
			MiddleName:        "Ann",
			LastName:          fmt.Sprint("Jones", i),
			Email:             fmt.Sprintf("jane.jones%d@contoso.com", i),
			Phone:             "+44 20 7946 0000",
			Mobile:            "+44 7700 900123",
			Company:           "Contoso Ltd",
			JobTitle:          "Buyer",
			Department:        "Purchasing",
			Street1:           "1 Microsoft Way",
			Street2:           "Building 4, floor 2",
			City:              "London",
			Region:            "Greater London",
			PostalCode:        "EC1A 1BB",
			Country:           "United Kingdom",
			BillingStreet:     "2 Kingdom Street",
			BillingCity:       "London",
			BillingPostalCode: "W2 6BD",
			BillingCountry:    "United Kingdom",
			Language:          "en-GB",
			Currency:          "GBP",
			TimeZone:          "Europe/London",
			Segment:           "Enterprise",
			Source:            "web",
			Referrer:          "partner-0042",
			Notes:             "prefers email; invoices monthly",
			Age:               int32(25 + i%40),
			Visits:            int32(i % 500),
			Orders:            int32(i % 90),
			LifetimeValue:     12000.25 + float64(i),
			Discount:          0.15,
			Score:             float64(i%100) / 7,
			Created:           day.AddDate(0, 0, i%900),
			Updated:           day.AddDate(0, 1, i%900),
			LastOrder:         day.AddDate(0, 2, i%900),
			Active:            i%7 != 0,
			Newsletter:        i%2 == 0,
			VIP:               i%11 == 0,
			Verified:          true}
	}
	return cs
}
