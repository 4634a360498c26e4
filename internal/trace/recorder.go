package trace

import (
	"context"
	"sync"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/tracing"
)

// Span is one span a Recorder saw.
type Span struct {
	Name string
	// Scope is the name of the tracer that opened it: Module for
	// tablekit's own spans, the SDK module's for the SDK's.
	Scope      string
	Kind       tracing.SpanKind
	Parent     int // index in Spans of the span it was opened under; -1 for none
	Attributes map[string]any
	Status     tracing.SpanStatus
	// Description is the status's description (azcore puts the error's
	// text there).
	Description string
	Ended       bool
}

// Recorder is an in-memory tracing provider for tests: it keeps every span
// opened through it, with its parent, attributes and status.
type Recorder struct {
	mu    sync.Mutex
	spans []Span
}

type spanKey struct{}

// Provider returns the azcore tracing provider that records into r.
func (r *Recorder) Provider() tracing.Provider {
	return tracing.NewProvider(func(name, version string) tracing.Tracer {
		return tracing.NewTracer(func(ctx context.Context, spanName string, o *tracing.SpanOptions) (context.Context, tracing.Span) {
			r.mu.Lock()
			i := len(r.spans)
			parent := -1
			if p, ok := ctx.Value(spanKey{}).(int); ok {
				parent = p
			}
			s := Span{Name: spanName, Scope: name, Parent: parent, Attributes: map[string]any{}}
			if o != nil {
				s.Kind = o.Kind
				for _, a := range o.Attributes {
					s.Attributes[a.Key] = a.Value
				}
			}
			r.spans = append(r.spans, s)
			r.mu.Unlock()
			return context.WithValue(ctx, spanKey{}, i), tracing.NewSpan(tracing.SpanImpl{
				End: func() { r.mu.Lock(); r.spans[i].Ended = true; r.mu.Unlock() },
				SetAttributes: func(attrs ...tracing.Attribute) {
					r.mu.Lock()
					for _, a := range attrs {
						r.spans[i].Attributes[a.Key] = a.Value
					}
					r.mu.Unlock()
				},
				SetStatus: func(code tracing.SpanStatus, desc string) {
					r.mu.Lock()
					r.spans[i].Status, r.spans[i].Description = code, desc
					r.mu.Unlock()
				},
			})
		}, &tracing.TracerOptions{SpanFromContext: func(ctx context.Context) tracing.Span {
			i, ok := ctx.Value(spanKey{}).(int)
			if !ok {
				return tracing.Span{}
			}
			return tracing.NewSpan(tracing.SpanImpl{SetAttributes: func(attrs ...tracing.Attribute) {
				r.mu.Lock()
				for _, a := range attrs {
					r.spans[i].Attributes[a.Key] = a.Value
				}
				r.mu.Unlock()
			}})
		}})
	}, nil)
}

// Spans returns a copy of the spans recorded so far, in the order opened.
func (r *Recorder) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Span, len(r.spans))
	for i, s := range r.spans {
		s.Attributes = copyMap(s.Attributes)
		out[i] = s
	}
	return out
}

func copyMap(m map[string]any) map[string]any {
	c := make(map[string]any, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}
