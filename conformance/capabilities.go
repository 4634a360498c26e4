package conformance

import (
	"fmt"
	"strings"
)

// capabilityCases names, per capability, the cases that need it: what a
// backend that lacks it does not run (the suites' names, then the case).
func capabilityCases() map[Capability][]string {
	return map[Capability][]string{
		CapStalePopReceiptNotFound: {"QueueAndBlob: queue: text round trip, dequeue count, visibility"},
		CapQueueBeingDeleted:       {"BeingDeleted: a deleted queue's name"},
		CapContainerBeingDeleted:   {"BeingDeleted: a deleted container's name"},
		CapTableBeingDeleted:       {"BeingDeleted: a deleted table's name", "Shape: rolling tables (re-created day)"},
		CapSASKeyRanges:            {"SAS: reads and adds outside the token's key range"},
		CapBatchWithTableSAS:       {"SAS: a transaction through the token"},
		CapSASSourceIP:             {"SASBuilder: IP range (refusal)"},
		CapSASProtocol:             {"SASBuilder: protocol (refusal over HTTP)"},
		CapSASAuthenticationFailed: {"SASBuilder: container and blob (another blob's token: the code)", "SASBuilder: stored access policies (a revoked table or container policy: the code)"},
		CapRangeAtEnd416:           {"BlobFidelity: a ranged read of an empty blob", "BlobFidelity: DownloadBuffer in ranged reads"},
		CapBrokenLeaseLost:         {"BlobFidelity: the ID of a broken lease is LeaseLost"},
		CapLowerCaseOperators:      {"FilterFidelity: operators are lower case"},
		CapExponentLiteral:         {"FilterFidelity: literals (D eq 1e10)", "FilterDifferential: generates no exponents"},
		CapDateTime100ns:           {"FilterFidelity: literals (DateTime to 100 ns)", "FilterDifferential: generates whole milliseconds"},
		CapTypedNumberCompare:      {"Payloads: a Double kept in Extra stays a Double through a read-modify-write (the filter half)"},
	}
}

// capabilityTable renders, as a Markdown table, which backend (by its
// Name and Lacks) has which Capability, and which cases a backend without
// it does not run, with the reason. RELIABILITY.md carries its output for the fake and Azurite
// (TestCapabilityTable keeps testdata/capabilities.md up to date; run it
// with -update after changing a capability).
func capabilityTable(backends ...Harness) string {
	var b strings.Builder
	b.WriteString("| Documented behaviour |")
	for _, e := range backends {
		fmt.Fprintf(&b, " %s |", e.Name)
	}
	b.WriteString(" Cases that need it |\n|---|")
	for range backends {
		b.WriteString("---|")
	}
	b.WriteString("---|\n")
	cases := capabilityCases()
	for _, c := range capabilities() {
		fmt.Fprintf(&b, "| %s |", cell(string(c)))
		for _, e := range backends {
			if reason, lacks := e.Lacks[c]; lacks {
				fmt.Fprintf(&b, " not run: %s |", cell(reason))
			} else {
				b.WriteString(" yes |")
			}
		}
		fmt.Fprintf(&b, " %s |\n", cell(strings.Join(cases[c], "; ")))
	}
	return b.String()
}

// cell escapes what would end a Markdown table cell.
func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
