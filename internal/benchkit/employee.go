package benchkit

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/internal/keyrules"
	"github.com/tablekit/tablekit/table"
)

// Employee is the guide's employee entity with the properties an HR
// table holds (fifteen, of six EDM types): the point-Get rows read it as
// well as the two-property Row, since how much of a read is decoding
// depends on the entity.
type Employee struct {
	table.Meta
	EmployeeID          int64
	FirstName, LastName string
	Email, Phone        string
	Department, Title   string
	Manager             string
	Office, City        string
	Country             string
	Age                 int32
	Salary              float64
	Hired               time.Time
	Active              bool
}

// HandEmployee is Employee as a careful hand-written program declares it
// for encoding/json: the Int64 as a string with its annotation beside it.
type HandEmployee struct {
	PartitionKey, RowKey string
	EmployeeIDType       string `json:"EmployeeID@odata.type,omitempty"`
	EmployeeID           int64  `json:"EmployeeID,string"`
	FirstName, LastName  string
	Email, Phone         string
	Department, Title    string
	Manager              string
	Office, City         string
	Country              string
	Age                  int32
	Salary               float64
	HiredType            string `json:"Hired@odata.type,omitempty"`
	Hired                time.Time
	Active               bool
}

// Employees returns n employees of the partition "p00".
func Employees(n int) []*Employee {
	es := make([]*Employee, n)
	hired := time.Date(2019, 4, 1, 9, 0, 0, 0, time.UTC)
	for i := range es {
		es[i] = &Employee{Meta: table.Meta{PartitionKey: "p00", RowKey: keyrules.Uint64(uint64(i))},
			EmployeeID: int64(100000 + i), FirstName: "Jane", LastName: fmt.Sprint("Jones", i),
			Email: fmt.Sprintf("jane.jones%d@contoso.com", i), Phone: "+44 20 7946 0000",
			Department: "Sales", Title: "Account manager", Manager: "empid_000123",
			Office: "Building 4, floor 2", City: "London", Country: "United Kingdom",
			Age: int32(25 + i%40), Salary: 52000.5 + float64(i), Hired: hired.AddDate(0, 0, i%900), Active: i%7 != 0}
	}
	return es
}

// pointReads is a side that fills a round's table with rows() (one
// partition, "p00"), builds the client the reads go through with via
// (nil: the plain client) and a reader over it, untimed, and then reads
// each row once.
func pointReads[R any](a *Account, name, base string, rows func() []*R, via func(table string) *aztables.Client, reader pointReader) Side {
	return Side{Name: name, Round: func(ctx context.Context) (func(context.Context) (int, error), func(), error) {
		tableName, client, drop, err := a.newTable(ctx, base)
		if err != nil {
			return nil, nil, err
		}
		rs := rows()
		if err := LoadWriter(ctx, client, rs, 8); err != nil {
			drop()
			return nil, nil, err
		}
		if via != nil {
			client = via(tableName)
		}
		read, err := reader(client)
		if err != nil {
			drop()
			return nil, nil, err
		}
		return func(ctx context.Context) (int, error) {
			for i := range rs {
				if err := read(ctx, keyrules.Uint64(uint64(i))); err != nil {
					return 0, err
				}
			}
			return len(rs), nil
		}, drop, nil
	}}
}

// rawReader reads with GetEntity and encoding/json into an H.
func rawReader[H any](c *aztables.Client) (func(context.Context, string) error, error) {
	return func(ctx context.Context, rk string) error {
		resp, err := c.GetEntity(ctx, "p00", rk, nil)
		if err != nil {
			return err
		}
		var h H
		return json.Unmarshal(resp.Value, &h)
	}, nil
}

// kitReader reads with table.Get into a T.
func kitReader[T any](c *aztables.Client) (func(context.Context, string) error, error) {
	tb, err := table.New[T](c, nil)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, rk string) error {
		_, err := tb.Get(ctx, "p00", rk, nil)
		return err
	}, nil
}

// floorReader reads with GetEntity on a client whose policy hands the
// SDK "{}" in place of the entity (floorTables), and decodes nothing.
func floorReader(c *aztables.Client) (func(context.Context, string) error, error) {
	return func(ctx context.Context, rk string) error {
		resp, err := c.GetEntity(ctx, "p00", rk, nil)
		if err == nil && string(resp.Value) != "{}" {
			err = fmt.Errorf("the floor's policy did not drop the body: %q", resp.Value)
		}
		return err
	}, nil
}

func rowsOf(n int) func() []*Row           { return func() []*Row { return Rows(n, 1) } }
func employeesOf(n int) func() []*Employee { return func() []*Employee { return Employees(n) } }
func customersOf(n int) func() []*Customer { return func() []*Customer { return Customers(n) } }

// PointEntity is the entity the point-Get sides read: how much of a read
// is decoding depends on its width.
type PointEntity int

const (
	PointRow      PointEntity = iota // Row: two properties
	PointEmployee                    // Employee: fifteen
	PointCustomer                    // Customer: forty
)

// pointReader makes a side's read of one row key from a table client.
type pointReader func(c *aztables.Client) (func(ctx context.Context, rowKey string) error, error)

// perEntity is a side's reader for each PointEntity.
type perEntity struct{ row, employee, customer pointReader }

// pointSide is pointReads of n entities of kind e, read with r's reader
// for that kind.
func (a *Account) pointSide(name, base string, n int, e PointEntity, via func(string) *aztables.Client, r perEntity) Side {
	switch e {
	case PointEmployee:
		return pointReads(a, name, base, employeesOf(n), via, r.employee)
	case PointCustomer:
		return pointReads(a, name, base, customersOf(n), via, r.customer)
	}
	return pointReads(a, name, base, rowsOf(n), via, r.row)
}

// rawReaders read into the hand-written structs.
func rawReaders() perEntity {
	return perEntity{rawReader[HandRow], rawReader[HandEmployee], rawReader[HandCustomer]}
}

// GetRaw reads n entities one by one with GetEntity and encoding/json into
// the hand-written struct (HandRow, HandEmployee, HandCustomer).
func (a *Account) GetRaw(n int, e PointEntity) Side {
	return a.pointSide("GetEntity + encoding/json", "benchgetraw", n, e, nil, rawReaders())
}

// GetRawOnKitTransport reads them as GetRaw does, on a client whose only
// thing of tablekit's is the transport table.ClientOptions gives: how much
// of the GetRaw/GetTablekit ratio is the transport, how much the rest.
func (a *Account) GetRawOnKitTransport(n int, e PointEntity) Side {
	return a.pointSide("GetEntity + encoding/json, tablekit's transport", "benchgetrawkt", n, e, a.rawOnKitTransport.NewClient, rawReaders())
}

// GetTablekit reads them with table.Get, on a client built as the README
// shows; fallback: on a client without tablekit's policy.
func (a *Account) GetTablekit(n int, e PointEntity, fallback bool) Side {
	name, via := "table.Get", a.KitClient
	if fallback {
		name, via = name+", client without tablekit's policy", nil
	}
	return a.pointSide(name, "benchget", n, e, via, perEntity{kitReader[Row], kitReader[Employee], kitReader[Customer]})
}

// GetFloor reads them with GetEntity on a client whose per-call policy,
// where tablekit's sits, hands the SDK "{}" in place of each entity and
// decodes nothing: the cost of a point read through GetEntity and its
// pipeline alone on the SDK's default transport (net/http), which no
// decoder can go below on that transport. table.Get, on tablekit's
// transport, can (GetRawOnKitTransport measures the transport alone).
func (a *Account) GetFloor(n int, e PointEntity) Side {
	return a.pointSide("GetEntity, body dropped undecoded (the floor)", "benchgetfloor", n, e, a.floorTables.NewClient, perEntity{floorReader, floorReader, floorReader})
}
