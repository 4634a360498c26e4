package fake

// Deviation is a way the fake's answers knowingly differ from the
// service's, as recorded exchanges with the real service show them
// (TestReplayRecordedExchanges): what differs, and why it stays so.
type Deviation struct {
	Name   string
	Reason string
}

// Deviations lists every known difference between the fake's answers and
// the service's recorded ones. The replay test fails on a difference not
// listed here, and on a listed one no recording shows.
func Deviations() []Deviation {
	return []Deviation{}
}
