package conformance

import (
	"net/http"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/internal/reqcount"
	"github.com/tablekit/tablekit/table"
)

// runPayloads runs the shapes of the service's JSON that code reading raw
// payloads depends on: how an Edm.Double comes back (a JSON number that
// keeps its decimal point, annotated only when it is NaN or an infinity),
// and that a Double kept raw in table.Extra is still a Double after a
// read-modify-write, integral values included.
func runPayloads(t *testing.T, env backend) {
	ctx := t.Context()

	t.Run("Edm.Double comes back as the service emits it", func(t *testing.T) {
		client := env.NewTable(t, &reqcount.Counter{})
		body := `{"PartitionKey":"p","RowKey":"r",` +
			`"Whole@odata.type":"Edm.Double","Whole":2,` +
			`"Frac":1.5,` +
			`"Neg@odata.type":"Edm.Double","Neg":"-3",` +
			`"Nan@odata.type":"Edm.Double","Nan":"NaN",` +
			`"Inf@odata.type":"Edm.Double","Inf":"Infinity",` +
			`"Int":2}`
		if _, err := client.AddEntity(ctx, []byte(body), nil); err != nil {
			t.Fatal(err)
		}
		// The HTTP payload itself: aztables hands back a re-marshalled map,
		// in which 2.0 is already 2.
		var resp *http.Response
		if _, err := client.GetEntity(policy.WithCaptureResponse(ctx, &resp), "p", "r", nil); err != nil {
			t.Fatal(err)
		}
		payload, err := runtime.Payload(resp)
		if err != nil {
			t.Fatal(err)
		}
		raw := string(payload)
		for _, want := range []string{`"Whole":2.0`, `"Frac":1.5`, `"Neg":-3.0`, `"Nan@odata.type":"Edm.Double","Nan":"NaN"`, `"Inf@odata.type":"Edm.Double","Inf":"Infinity"`, `"Int":2`} {
			if !strings.Contains(raw, want) {
				t.Errorf("the payload has no %s: %s", want, raw)
			}
		}
		for _, not := range []string{`"Whole@odata.type"`, `"Frac@odata.type"`, `"Neg@odata.type"`, `"Int@odata.type"`} {
			if strings.Contains(raw, not) {
				t.Errorf("the payload annotates a finite Double or an Int32 (%s): %s", not, raw)
			}
		}
	})

	t.Run("a Double kept in Extra stays a Double through a read-modify-write", func(t *testing.T) {
		// aztables' GetEntity re-marshals the payload through
		// map[string]any, which turns an unannotated 2.0 into 2 that Update
		// would write back as an Int32; table.Get reads the body the
		// service sent instead.
		client := env.NewTable(t, &reqcount.Counter{})
		body := `{"PartitionKey":"p","RowKey":"r","Name":"n","Whole@odata.type":"Edm.Double","Whole":2,"Frac":1.5}`
		if _, err := client.AddEntity(ctx, []byte(body), nil); err != nil {
			t.Fatal(err)
		}
		tb, _ := table.New[keptEntity](client, nil)
		v, err := tb.Get(ctx, "p", "r", nil)
		if err != nil {
			t.Fatal(err)
		}
		v.Name = "changed"
		if err := tb.Update(ctx, v, &table.UpdateOptions{Mode: aztables.UpdateModeReplace}); err != nil {
			t.Fatal(err)
		}
		stored, err := tb.Entities().Get(ctx, "p", "r", nil)
		if err != nil {
			t.Fatal(err)
		}
		if w := stored.Properties["Whole"]; w.Type() != table.EdmDouble {
			t.Errorf("after the round trip Whole is %v, want Edm.Double", w)
		}
		// The service compares only values of one type: Whole eq 2.0
		// matches a Double, Whole eq 2 an Int32.
		if !env.Has(t, CapTypedNumberCompare) {
			return
		}
		for filter, want := range map[string]int{"Whole eq 2.0": 1, "Whole eq 2": 0, "Frac eq 1.5": 1} {
			pg := client.NewListEntitiesPager(&aztables.ListEntitiesOptions{Filter: to.Ptr(filter)})
			n := 0
			for pg.More() {
				page, err := pg.NextPage(ctx)
				if err != nil {
					t.Fatal(err)
				}
				n += len(page.Entities)
			}
			if n != want {
				t.Errorf("after the round trip, %q matches %d entities, want %d", filter, n, want)
			}
		}
	})
}
