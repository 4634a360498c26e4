package table

import (
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
)

// TestMetaKeepsItsTablesETag is the rule on Meta, case by case.
func TestMetaKeepsItsTablesETag(t *testing.T) {
	// Two clients, told apart by identity as Meta tells them apart.
	type client struct{ Client }
	a, b := &client{}, &client{}
	const ea, eb = azcore.ETag(`W/"datetime'2026-01-01T00%3A00%3A00Z'"`), azcore.ETag(`W/"datetime'2026-01-02T00%3A00%3A00Z'"`)
	for _, tc := range []struct {
		name    string
		from    Client // nil: ETag set by hand
		etag    azcore.ETag
		via     Client
		guarded bool
		want    azcore.ETag
	}{
		{"no ETag yet", nil, "", b, false, eb},
		{"ETag set by hand", nil, ea, b, false, eb},
		{"same table", a, ea, a, false, eb},
		{"other table, unguarded", a, ea, b, false, ea},
		{"other table, guarded by this ETag", a, ea, b, true, eb},
	} {
		m := Meta{ETag: tc.etag}
		if tc.from != nil {
			m.readVia(tc.from)
		}
		m.writtenVia(tc.via, eb, tc.guarded)
		if m.ETag != tc.want {
			t.Errorf("%s: ETag %q, want %q", tc.name, m.ETag, tc.want)
		}
		// A delete follows the same rule.
		d := Meta{ETag: tc.etag}
		if tc.from != nil {
			d.readVia(tc.from)
		}
		d.writtenVia(tc.via, "", tc.guarded)
		if cleared := d.ETag == ""; cleared != (tc.want == eb) {
			t.Errorf("%s: delete left ETag %q", tc.name, d.ETag)
		}
	}
	// After a write through B that B now owns, B's writes keep updating it.
	m := Meta{}
	m.writtenVia(b, ea, false)
	m.writtenVia(b, eb, false)
	if m.ETag != eb || m.Timestamp.Day() != 2 {
		t.Fatalf("second write through the same client: %+v", m)
	}
}
