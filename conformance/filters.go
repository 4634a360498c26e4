package conformance

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/internal/reqcount"
)

// runFilterFidelity runs the corners of the service's $filter grammar the
// fake must share: lower-case operators only, a Boolean property alone as
// a condition, and not before a comparison.
func runFilterFidelity(t *testing.T, env backend) {
	ctx := t.Context()
	client := env.NewTable(t, &reqcount.Counter{})
	for _, e := range []string{
		`{"PartitionKey":"p","RowKey":"a","IsActive":true,"N":7,"D@odata.type":"Edm.Double","D":10000000000,"T@odata.type":"Edm.DateTime","T":"2021-06-01T12:00:00Z"}`,
		`{"PartitionKey":"p","RowKey":"b","IsActive":false,"N":8}`,
		`{"PartitionKey":"q","RowKey":"c","N":9}`,
	} {
		if _, err := client.AddEntity(ctx, []byte(e), nil); err != nil {
			t.Fatal(err)
		}
	}
	query := func(filter string) ([]string, error) {
		var rks []string
		pg := client.NewListEntitiesPager(&aztables.ListEntitiesOptions{Filter: to.Ptr(filter), Select: to.Ptr("RowKey")})
		for pg.More() {
			page, err := pg.NextPage(ctx)
			if err != nil {
				return nil, err
			}
			for _, e := range page.Entities {
				var v struct{ RowKey string }
				if err := json.Unmarshal(e, &v); err != nil {
					return nil, err
				}
				rks = append(rks, v.RowKey)
			}
		}
		return rks, nil
	}

	t.Run("a Boolean property alone is a condition; not before a comparison", func(t *testing.T) {
		// Partition q's entity has no IsActive; what not does with a
		// missing property is not asserted (Azurite: matches).
		for filter, want := range map[string][]string{
			"IsActive":                                       {"a"},
			"IsActive or N eq 9":                             {"a", "c"},
			"IsActive and N eq 7":                            {"a"},
			"IsActive eq true and N gt 0":                    {"a"},
			"(IsActive) and N lt 8":                          {"a"},
			"PartitionKey eq 'p' and not IsActive":           {"b"},
			"PartitionKey eq 'p' and not IsActive eq false":  {"a"},
			"PartitionKey eq 'p' and not (IsActive eq true)": {"b"},
			"not (N eq 8) and N lt 9":                        {"a"},
		} {
			got, err := query(filter)
			if err != nil || !slices.Equal(got, want) {
				t.Errorf("%q matched %q (%v), want %q", filter, got, err, want)
			}
		}
	})

	t.Run("literals: a Double with an exponent, a DateTime to 100 ns", func(t *testing.T) {
		for _, c := range []struct {
			filter string
			want   []string
			cap    Capability
		}{
			{"D eq 1e10", []string{"a"}, CapExponentLiteral},
			{"D eq 10000000000.0", []string{"a"}, ""},
			{"T eq datetime'2021-06-01T12:00:00.0000001Z'", nil, CapDateTime100ns},
			{"T lt datetime'2021-06-01T12:00:00.0000001Z'", []string{"a"}, CapDateTime100ns},
			{"T eq datetime'2021-06-01T12:00:00Z'", []string{"a"}, ""},
		} {
			got, err := query(c.filter)
			if c.cap != "" && !env.Has(t, c.cap) {
				// The recorded answer differs from the service's; a
				// backend that now answers right must drop the entry.
				if err == nil && slices.Equal(got, c.want) {
					t.Errorf("%q: %s now answers as the service; drop its Lacks entry for %q", c.filter, env.Name, c.cap)
				}
				continue
			}
			if err != nil || !slices.Equal(got, c.want) {
				t.Errorf("%q matched %q (%v), want %q", c.filter, got, err, c.want)
			}
		}
	})

	t.Run("operators are lower case", func(t *testing.T) {
		has := env.Has(t, CapLowerCaseOperators)
		for _, filter := range []string{"RowKey EQ 'a'", "IsActive AND N eq 7", "NOT IsActive"} {
			got, err := query(filter)
			if !has {
				if err != nil {
					t.Fatalf("azurite's recorded answer to %q is a match; now: %v", filter, err)
				}
				continue
			}
			if err == nil {
				t.Errorf("%q matched %q; the service refuses upper-case operators", filter, got)
				continue
			}
			wantCode(t, err, http.StatusBadRequest, "InvalidInput")
		}
	})
}
