package consistency

import (
	"testing"
)

// FuzzEnvelope: decoding never panics, and whatever the sender accepts
// decodes to the same type, key and payload.
func FuzzEnvelope(f *testing.F) {
	f.Add(`{"type":"archive.v1","key":"k","enqueued":"2026-11-21T10:00:00Z","payload":{"pk":"p"}}`, "archive.v1", "k", "payload")
	f.Add("not json", "x.v1", "\xff", "<&>")
	f.Fuzz(func(t *testing.T, text, typ, key, payload string) {
		_, _ = decodeEnvelope(text)
		s := NewSender(nil, nil)
		env, err := s.envelope(typ, key, payload)
		if err != nil {
			return // refused before sending
		}
		msg, err := encode(env)
		if err != nil {
			return // too large
		}
		back, err := decodeEnvelope(msg)
		if err != nil || back.Type != typ || back.Key != key || string(back.Payload) != string(env.Payload) {
			t.Fatalf("round trip of %q: %+v %v", msg, back, err)
		}
	})
}
