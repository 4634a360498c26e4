// Package envelope is the wire form of a consistency message and of a
// poison record: the JSON a Sender puts in a queue message's text, and the
// JSON a Worker puts on its poison queue. The consistency Worker and Sender,
// internal/poisonq and the tablekit command read and write it; a handler
// sees a consistency.Message instead. The JSON names are the stored format:
// messages and poison records already in a queue are read by them.
package envelope

import (
	"encoding/json"
	"time"

	"github.com/tablekit/tablekit/internal/msgtype"
)

// Envelope is what a message carries, as JSON in the queue's text.
type Envelope struct {
	// Type names the handler, with a version: "archive.v1".
	Type string `json:"type"`
	// Key identifies the work, so handlers can be idempotent and logs can
	// follow it: the same key may be delivered more than once.
	Key string `json:"key"`
	// Enqueued is when the message was first sent.
	Enqueued time.Time `json:"enqueued"`
	// Payload is the message's data, or empty when it lives in PayloadBlob.
	Payload json.RawMessage `json:"payload,omitempty"`
	// PayloadBlob holds a payload too large for the message.
	PayloadBlob *BlobRef `json:"payloadBlob,omitempty"`
	// LastError is the error of the previous attempt, if it failed.
	LastError string `json:"lastError,omitempty"`
}

// BlobRef names a blob.
type BlobRef struct {
	Container string `json:"container"`
	Name      string `json:"name"`
}

// PoisonRecord is what the poison queue receives.
type PoisonRecord struct {
	MessageID    string    `json:"messageId"`
	DequeueCount int64     `json:"dequeueCount"`
	Error        string    `json:"error"`
	PoisonedAt   time.Time `json:"poisonedAt"`
	Envelope     *Envelope `json:"envelope,omitempty"` // when the message was an envelope
	Raw          string    `json:"raw,omitempty"`      // otherwise, its text (truncated)
}

// Text renders e as a message's text, and reports whether it fits one
// message (64 KiB once XML-escaped, as the request carries it).
func (e *Envelope) Text() (text string, fits bool, err error) {
	b, err := json.Marshal(e)
	if err != nil {
		return "", false, err
	}
	s := string(b)
	return s, msgtype.XMLLen(s) <= msgtype.MaxTextBytes, nil
}
