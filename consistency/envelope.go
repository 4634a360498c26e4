package consistency

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/internal/envelope"
	"github.com/tablekit/tablekit/internal/keyrules"
	"github.com/tablekit/tablekit/internal/msgtype"
	"github.com/tablekit/tablekit/internal/redact"
)

// maxKeyBytes bounds an idempotency key, so a key leaves room for the payload.
const maxKeyBytes = 1024

// maxMessageBytes is the largest queue message, 64 KiB ("Put Message"),
// measured here as the XML-escaped text the request carries.
const maxMessageBytes = msgtype.MaxTextBytes

// Errors of bad messages, raised before anything is sent.
var (
	ErrBadType         = errors.New("consistency: message type must be name.vN (for example archive.v1)")
	ErrNoKey           = errors.New("consistency: message needs an idempotency key")
	ErrBadKey          = errors.New("consistency: idempotency key must be valid UTF-8 of at most 1 KiB")
	ErrMessageTooLarge = errors.New("consistency: message over 64 KiB and no blob store configured")
	ErrMalformed       = errors.New("consistency: malformed message")
	// ErrDuplicateHandler: a type has one handler; a second registration
	// would silently take its messages from the first.
	ErrDuplicateHandler = errors.New("consistency: a handler is already registered for this message type")
	// ErrNilHandler: Worker.Handle was given a nil Handler.
	ErrNilHandler = errors.New("consistency: nil handler")
	// ErrBadPayload: Send's payload cannot be encoded as JSON (a channel, a
	// function, a cycle, a NaN); the encoder's error is wrapped with it.
	ErrBadPayload = errors.New("consistency: payload cannot be encoded as JSON")
	// ErrBadOption: an option is outside its documented range, refused
	// before any request instead of silently defaulted: a Worker's
	// options (Run, Drain), the tablekit command's poison list,
	// replay or purge, NewShardedSender without queues, or a Role (package
	// consistency/ownership) with a bad queue set, name or lease timing.
	ErrBadOption = errors.New("consistency: option out of range")
)

// checkType refuses a message type that is not name.vN.
func checkType(t string) error {
	if !msgtype.Valid(t) {
		return fmt.Errorf("%w: %q", ErrBadType, t)
	}
	return nil
}

// xmlLen is the length of s once XML-escaped, as the request carries it.
func xmlLen(s string) int { return msgtype.XMLLen(s) }

// encode renders an envelope as message text, or reports that it is too large.
func encode(e *envelope.Envelope) (string, error) {
	s, fits, err := e.Text()
	if err == nil && !fits {
		err = ErrMessageTooLarge
	}
	return s, err
}

func decodeEnvelope(text string) (*envelope.Envelope, error) {
	var e envelope.Envelope
	if err := json.Unmarshal([]byte(text), &e); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if err := checkType(e.Type); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if e.Key == "" {
		return nil, fmt.Errorf("%w: no key", ErrMalformed)
	}
	return &e, nil
}

// SenderOptions configure a Sender. nil means the defaults.
type SenderOptions struct {
	// Blobs and Container hold payloads too large for a message. Default:
	// none, and such a payload is refused with ErrMessageTooLarge.
	// Use blobstore.New(client) for an *azblob.Client.
	Blobs     BlobStore
	Container string
	// Now is the clock for Enqueued. Default: time.Now.
	Now func() time.Time
}

// Sender puts typed messages on a queue, or on one queue of a set by their
// key (NewShardedSender).
type Sender struct {
	queues []Queue
	opts   SenderOptions
}

// NewSender returns a Sender for queue.
func NewSender(queue Queue, opts *SenderOptions) *Sender {
	s := &Sender{queues: []Queue{queue}}
	if opts != nil {
		s.opts = *opts
	}
	if s.opts.Now == nil {
		s.opts.Now = time.Now
	}
	return s
}

// envelope checks a message's type and key and wraps its payload.
func (s *Sender) envelope(msgType, key string, payload any) (*envelope.Envelope, error) {
	if err := checkType(msgType); err != nil {
		return nil, err
	}
	if key == "" {
		return nil, ErrNoKey
	}
	if !utf8.ValidString(key) || len(key) > maxKeyBytes {
		// JSON would turn invalid bytes into U+FFFD: two keys could collide.
		return nil, ErrBadKey
	}
	raw, err := json.Marshal(payload)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadPayload, err)
	}
	return &envelope.Envelope{Type: msgType, Key: key, Enqueued: s.opts.Now().UTC(), Payload: raw}, nil
}

// Send enqueues payload (any JSON-encodable value) under msgType and key:
// one request, or two when the payload goes to a blob first (the blob is
// written before the message, so a message never names a missing blob).
func (s *Sender) Send(ctx context.Context, msgType, key string, payload any, o *WriteOptions) error {
	env, err := s.envelope(msgType, key, payload)
	if err != nil {
		return err
	}
	raw := env.Payload
	text, err := encode(env)
	if errors.Is(err, ErrMessageTooLarge) {
		if s.opts.Blobs == nil {
			return err
		}
		if err := keyrules.ValidateContainerName(s.opts.Container); err != nil {
			return err
		}
		var rnd [8]byte
		_, _ = rand.Read(rnd[:])
		ref := &envelope.BlobRef{Container: s.opts.Container, Name: msgType + "/" + hex.EncodeToString(rnd[:])}
		if err := s.opts.Blobs.Put(ctx, ref.Container, ref.Name, raw); err != nil {
			return redact.Error(fmt.Errorf("consistency: payload blob: %w", err))
		}
		env.Payload, env.PayloadBlob = nil, ref
		text, err = encode(env)
	}
	if err != nil {
		return err
	}
	// The transport's error names the queue's URL, a SAS signature
	// included: redacted, with the error itself still in the chain.
	_, err = s.queueFor(key).EnqueueMessage(ctx, text, nil)
	return redact.Error(err)
}

// SendAround makes write and its message crash-safe together: it enqueues
// the message hidden for delay, runs write, then shows the message at once
// (three requests). If the process dies after the enqueue, the message
// appears when delay ends and its handler, which converges to the current
// state, finds either the old state or the new one; if write fails, the
// message stays and converges to the unchanged state. A message sent after
// the write instead would be lost by a crash between the two.
func (s *Sender) SendAround(ctx context.Context, msgType, key string, payload any, delay time.Duration, write func() error, o *WriteOptions) error {
	// The transport's error names the queue's URL, a SAS signature
	// included: redacted, with the error itself still in the chain.
	return redact.Error(s.sendAround(ctx, msgType, key, payload, delay, write))
}

func (s *Sender) sendAround(ctx context.Context, msgType, key string, payload any, delay time.Duration, write func() error) error {
	env, err := s.envelope(msgType, key, payload)
	if err != nil {
		return err
	}
	text, err := encode(env)
	if err != nil {
		return err
	}
	secs := int32(max(delay, time.Second) / time.Second)
	q := s.queueFor(key)
	resp, err := q.EnqueueMessage(ctx, text, &azqueue.EnqueueMessageOptions{VisibilityTimeout: &secs})
	if err != nil {
		return err
	}
	if err := write(); err != nil {
		return err
	}
	if len(resp.Messages) == 1 && resp.Messages[0].MessageID != nil && resp.Messages[0].PopReceipt != nil {
		zero := int32(0)
		// If this fails the message shows when delay ends.
		_, _ = q.UpdateMessage(ctx, *resp.Messages[0].MessageID, *resp.Messages[0].PopReceipt, text, &azqueue.UpdateMessageOptions{VisibilityTimeout: &zero})
	}
	return nil
}
