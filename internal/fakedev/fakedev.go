// Package fakedev lists where package fake's answers knowingly differ
// from the service's. fake's replay of recorded exchanges tolerates these
// differences by name, and conformance renders the list into
// RELIABILITY.md, which is where a user reads it.
package fakedev

// Deviation is a way the fake's answers knowingly differ from the
// service's: what differs, and why it stays so.
type Deviation struct {
	Name   string
	Reason string
	// Recorded is set when a recorded exchange with the service shows the
	// difference: TestReplayRecordedExchanges then tolerates it by name,
	// and fails if no recording shows it any more.
	Recorded bool
}

// List lists every known difference between the fake's answers and the
// service's. The replay of recorded exchanges (fake's
// TestReplayRecordedExchanges) fails on any difference not listed here;
// conformance renders the list beside the capability table.
func List() []Deviation {
	return []Deviation{
		{
			Name: "pages of a multi-partition query end at every partition boundary",
			Reason: "the service ends a page where a partition range ends, and which partitions share a range is " +
				"neither documented nor visible to a client; the fake ends one at every boundary, the most pages the " +
				"service may send there (the zero fake.Paging)",
		},
		{
			Name: "the 5-second scan budget is spent at 1 ms an examined entity",
			Reason: "the service's scan speed is not documented; 5,000 examined entities a page (or the fake clock) " +
				"makes a long selective scan end a page early, as the service may (Paging.ScanCost)",
		},
		{
			Name: "List Queues gives metadata names in canonical case",
			Reason: "Go's net/http canonicalises header names before the fake sees a request, so the case a client " +
				"gave a metadata name is lost; the service keeps it",
		},
	}
}
