package envelope

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestWireFormat: the JSON names are the stored format. A message and a
// poison record written with them encode to exactly this text, and the
// text decodes back to the same values, so what is already in a queue
// reads as it was written.
func TestWireFormat(t *testing.T) {
	at := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	env := Envelope{Type: "archive.v1", Key: "k", Enqueued: at, Payload: json.RawMessage(`{"pk":"p"}`),
		PayloadBlob: &BlobRef{Container: "c", Name: "archive.v1/00"}, LastError: "boom"}
	rec := PoisonRecord{MessageID: "id", DequeueCount: 6, Error: "gave up", PoisonedAt: at, Envelope: &env}
	const want = `{"messageId":"id","dequeueCount":6,"error":"gave up","poisonedAt":"2026-11-21T10:00:00Z",` +
		`"envelope":{"type":"archive.v1","key":"k","enqueued":"2026-11-21T10:00:00Z","payload":{"pk":"p"},` +
		`"payloadBlob":{"container":"c","name":"archive.v1/00"},"lastError":"boom"}}`
	b, err := json.Marshal(rec)
	if err != nil || string(b) != want {
		t.Fatalf("record encodes as\n%s (%v), want\n%s", b, err, want)
	}
	var back PoisonRecord
	if err := json.Unmarshal([]byte(want), &back); err != nil {
		t.Fatal(err)
	}
	if back.MessageID != "id" || back.DequeueCount != 6 || back.Error != "gave up" || !back.PoisonedAt.Equal(at) ||
		back.Envelope == nil || back.Envelope.Type != "archive.v1" || back.Envelope.Key != "k" || !back.Envelope.Enqueued.Equal(at) ||
		string(back.Envelope.Payload) != `{"pk":"p"}` || back.Envelope.PayloadBlob == nil ||
		*back.Envelope.PayloadBlob != (BlobRef{Container: "c", Name: "archive.v1/00"}) || back.Envelope.LastError != "boom" {
		t.Fatalf("decoded %+v (envelope %+v)", back, back.Envelope)
	}
	raw, err := json.Marshal(PoisonRecord{MessageID: "id", PoisonedAt: at, Raw: "not json"})
	if err != nil || string(raw) != `{"messageId":"id","dequeueCount":0,"error":"","poisonedAt":"2026-11-21T10:00:00Z","raw":"not json"}` {
		t.Fatalf("raw record encodes as %s (%v)", raw, err)
	}
}

// TestTextFits: Text reports whether the text fits one message, counted
// XML-escaped as the request carries it.
func TestTextFits(t *testing.T) {
	small := Envelope{Type: "a.v1", Key: "k", Payload: json.RawMessage(`"x"`)}
	if s, fits, err := small.Text(); err != nil || !fits || !strings.Contains(s, `"payload":"x"`) {
		t.Fatalf("small: %q %v %v", s, fits, err)
	}
	// json.Marshal writes '&' as \u0026, 6 bytes: 11,000 of them are over
	// 64 KiB, while 60,000 plain letters are under it.
	if _, fits, err := (&Envelope{Type: "a.v1", Key: "k", Payload: json.RawMessage(`"` + strings.Repeat("a", 60000) + `"`)}).Text(); err != nil || !fits {
		t.Fatalf("60,000 letters: fits %v, err %v; want them to fit", fits, err)
	}
	big := Envelope{Type: "a.v1", Key: "k", Payload: json.RawMessage(`"` + strings.Repeat("&", 11000) + `"`)}
	if _, fits, err := big.Text(); err != nil || fits {
		t.Fatalf("big: fits %v, err %v; want it not to fit", fits, err)
	}
}
