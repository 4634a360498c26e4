package integration

import (
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/tablekit/tablekit/internal/reqcount"
	"github.com/tablekit/tablekit/table"
)

// The suites here share these with conformance's cases, which keep their
// own unexported copies: the public contract exports no fixtures.

// Employee is the guide's employee entity.
type Employee struct {
	table.Meta
	FirstName  string
	LastName   string
	Age        int
	Email      string `table:",omitempty"`
	Department string `table:"Dept,omitempty"`
}

// Types has a field of every EDM type.
type Types struct {
	table.Meta
	S     string
	B     bool
	I32   int32
	I64   int64
	U32   uint32
	F64   float64
	F32   float32
	T     time.Time
	Bin   []byte
	G     table.GUID
	PS    *string
	PI    *int64
	Level level
	Tags  []string `table:",json"`
}

// level is an encoding.TextMarshaler.
type level int

func (l level) MarshalText() ([]byte, error) { return []byte([]string{"low", "high"}[l]), nil }
func (l *level) UnmarshalText(b []byte) error {
	switch string(b) {
	case "low":
		*l = 0
	case "high":
		*l = 1
	default:
		return errors.New("bad level")
	}
	return nil
}

// Kept has a catch-all for properties it does not name.
type Kept struct {
	table.Meta
	Name  string
	Other table.Extra
}

// wantRequests checks that c counted n requests, then resets it.
func wantRequests(t *testing.T, c *reqcount.Counter, n int, what string) {
	t.Helper()
	if got := c.N(); got != n {
		t.Errorf("%s cost %d requests, want %d", what, got, n)
	}
	c.Reset()
}

// The longest window in which the service refuses a deleted name: Delete
// Table's "at least 40 seconds" (containers: at least 30 seconds).
const beingDeletedWindow = 40 * time.Second

// gatedPolicy passes requests to p only while on, so a test can create its
// table fault-free and then turn faults on.
type gatedPolicy struct {
	on atomic.Bool
	p  policy.Policy
}

func (g *gatedPolicy) Do(req *policy.Request) (*http.Response, error) {
	if g.on.Load() {
		return g.p.Do(req)
	}
	return req.Next()
}
