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

// RunFilterFidelity runs the corners of the service's $filter grammar the
// fake must share: lower-case operators only, a Boolean property alone as
// a condition, and not before a comparison.
func RunFilterFidelity(t *testing.T, env Env) {
	ctx := t.Context()
	client := env.NewTable(t, &reqcount.Counter{})
	for _, e := range []string{
		`{"PartitionKey":"p","RowKey":"a","IsActive":true,"N":7}`,
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
