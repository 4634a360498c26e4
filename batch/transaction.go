package batch

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/tracing"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/internal/tableio"
	"github.com/tablekit/tablekit/internal/trace"
	"github.com/tablekit/tablekit/internal/wirepolicy"
	"github.com/tablekit/tablekit/table"
)

// Transaction is an entity group transaction under construction: at most
// 100 operations on one PartitionKey of one table, each RowKey once, at
// most 4 MiB of request. Every rule is checked as operations are appended,
// so a Transaction that holds an operation can always be sent. The service
// applies all of it or none of it.
type Transaction struct {
	wire *wirePaths // whether a client has tablekit's policy, per client
	tr   trace.OpTracer
	ops  []*encoded
	rows map[string]int
	size int
}

// TransactionOptions configure a Transaction. nil means the defaults.
type TransactionOptions struct {
	// TracingProvider opens a "Transaction.Submit" span per Submit, with
	// the partition, the operation count and the outcome as attributes
	// (see "Tracing" in package table's documentation). Default: zero, no
	// spans.
	TracingProvider tracing.Provider
}

// NewTransaction returns an empty transaction.
func NewTransaction(opts *TransactionOptions) *Transaction {
	tx := &Transaction{rows: map[string]int{}, size: envelope, wire: &wirePaths{}}
	if opts != nil {
		tx.tr = trace.NewOpTracer(opts.TracingProvider, "")
	}
	return tx
}

// Append encodes op and adds it, or returns an *OpError naming the rule it
// breaks and leaves the transaction unchanged.
func (tx *Transaction) Append(op Op) error {
	e, err := encodeOp(op)
	if err != nil {
		return tx.opErr(op, err)
	}
	return tx.append(e)
}

func (tx *Transaction) opErr(op Op, err error) *OpError {
	return &OpError{Index: len(tx.ops), Kind: op.Kind, PartitionKey: op.PartitionKey(), RowKey: op.RowKey(), Err: err}
}

// fits reports why e cannot join, or nil.
func (tx *Transaction) fits(e *encoded) error {
	switch {
	case len(tx.ops) >= MaxOperations:
		return ErrTooManyOperations
	case len(tx.ops) > 0 && e.pk != tx.ops[0].pk:
		return ErrMixedPartitions
	}
	if _, dup := tx.rows[e.rk]; dup {
		return ErrDuplicateRowKey
	}
	if tx.size+e.size > MaxRequestBytes {
		return ErrTooLarge
	}
	return nil
}

func (tx *Transaction) append(e *encoded) error {
	if err := tx.fits(e); err != nil {
		return &OpError{Index: len(tx.ops), Kind: e.op.Kind, PartitionKey: e.pk, RowKey: e.rk, Err: err}
	}
	tx.rows[e.rk] = len(tx.ops)
	tx.ops = append(tx.ops, e)
	tx.size += e.size
	return nil
}

// Len is the number of operations.
func (tx *Transaction) Len() int { return len(tx.ops) }

// PartitionKey is the partition every operation acts on ("" when empty).
func (tx *Transaction) PartitionKey() string {
	if len(tx.ops) == 0 {
		return ""
	}
	return tx.ops[0].pk
}

// Size bounds the request's size in bytes from above.
func (tx *Transaction) Size() int { return tx.size }

// Ops returns the operations in order.
func (tx *Transaction) Ops() []Op {
	out := make([]Op, len(tx.ops))
	for i, e := range tx.ops {
		out[i] = e.op
		out[i].pk, out[i].rk = e.pk, e.rk
	}
	return out
}

// Result is what a committed transaction wrote.
type Result struct {
	// ETags holds each operation's new ETag, in order ("" for deletes).
	ETags []azcore.ETag
}

// Actions are the SDK's transaction actions for tx, If-Match included.
func (tx *Transaction) Actions() []aztables.TransactionAction {
	actions := make([]aztables.TransactionAction, len(tx.ops))
	for i, e := range tx.ops {
		actions[i] = aztables.TransactionAction{ActionType: e.op.Kind.action(), Entity: e.body}
		if e.ifMatch != "" {
			tag := e.ifMatch
			actions[i].IfMatch = &tag
		}
	}
	return actions
}

// Submit sends the transaction: one request. On a client built with
// table.ClientOptions tablekit writes the $batch
// body itself and reads the answer once; on any other client the SDK
// builds it, and an update or upsert whose keys hold a single quote, which
// the SDK cannot send, is refused before any request (ErrQuoteInKey). On success every typed value's
// Meta gets its new ETag and Timestamp, recovered from the service's
// multipart answer (the SDK discards them), by the rule on table.Meta: a
// value whose ETag belongs to another table's client keeps it. On failure the error is a
// *TransactionError that names the failed operation, its status and code;
// nothing of the transaction was written.
func (tx *Transaction) Submit(ctx context.Context, client table.Client, opts *WriteOptions) (*Result, error) {
	if !tx.tr.Enabled() {
		return tx.submit(ctx, client, opts)
	}
	ctx, end := tx.tr.Start(ctx, opTransactionSubmit, tx.PartitionKey(), tx.Len())
	res, err := tx.submit(ctx, client, opts)
	end(err)
	return res, err
}

func (tx *Transaction) submit(ctx context.Context, client table.Client, _ *WriteOptions) (*Result, error) {
	if len(tx.ops) == 0 {
		return nil, &OpError{Index: 0, Err: ErrEmpty}
	}
	var res *Result
	var err error
	has, known := tx.wire.known(client)
	quoted := tx.quotedUpdate()
	switch {
	case known && has, !known && quoted >= 0 && tx.wire.has(client):
		res, err = tx.submitWire(ctx, client)
	case quoted >= 0:
		e := tx.ops[quoted]
		return nil, &OpError{Index: quoted, Kind: e.op.Kind, PartitionKey: e.pk, RowKey: e.rk, Err: ErrQuoteInKey}
	case known:
		res, err = tx.submitSDK(ctx, client, nil)
	default:
		// Not known yet, and nothing only the wire path can send: the
		// SDK's actions go out with the wire path's mark, so that a client
		// with the policy sends tablekit's body in their place and one
		// without sends the SDK's; either way one request, no probe.
		x := &wirepolicy.Exchange{Body: tx.wireBody}
		res, err = tx.submitSDK(ctx, client, x)
		var re *azcore.ResponseError
		if x.Invoked || err == nil || errors.As(err, &re) {
			tx.wire.learn(client, x.Invoked)
		}
	}
	if err != nil {
		return nil, err
	}
	for i, e := range tx.ops {
		if e.meta == nil {
			continue
		}
		// By the rule on table.Meta: a value copied into this table from
		// another keeps the ETag it has there, unless the operation was
		// guarded by that very ETag (which proves it was this table's).
		guarded := e.op.useETag
		if e.op.Kind == KindDelete {
			tableio.WrittenVia(e.meta, client, "", guarded)
		} else if res.ETags[i] != "" {
			tableio.WrittenVia(e.meta, client, res.ETags[i], guarded)
		}
	}
	return res, nil
}

// submitSDK sends tx through the SDK's own transaction builder, and reads
// the ETags from the raw answer, which the SDK parses and discards. With
// x, a client that has tablekit's policy sends tablekit's body instead
// (x.Invoked), whose answer x holds.
func (tx *Transaction) submitSDK(ctx context.Context, client table.Client, x *wirepolicy.Exchange) (*Result, error) {
	var raw *http.Response
	ctx = policy.WithCaptureResponse(ctx, &raw)
	if x != nil {
		ctx = wirepolicy.With(ctx, x)
	}
	_, err := client.SubmitTransaction(ctx, tx.Actions(), nil)
	if err != nil {
		return nil, tx.failure(err)
	}
	res := &Result{ETags: make([]azcore.ETag, len(tx.ops))}
	if x != nil && x.Invoked {
		if parts, perr := parseMultipart(x.Response); perr == nil && len(parts) == len(tx.ops) {
			for i, p := range parts {
				res.ETags[i] = azcore.ETag(p.etag)
			}
		}
		return res, nil
	}
	if raw != nil {
		if body, perr := runtime.Payload(raw); perr == nil {
			if parts, perr := parseMultipart(body); perr == nil && len(parts) == len(tx.ops) {
				for i, p := range parts {
					res.ETags[i] = azcore.ETag(p.etag)
				}
			}
		}
	}
	return res, nil
}

// failure turns the SDK's error into a *TransactionError, reading the
// failed operation from the multipart body of a 202.
func (tx *Transaction) failure(err error) *TransactionError {
	te := &TransactionError{Index: -1, Ops: tx.Ops(), Err: err}
	var re *azcore.ResponseError
	if !errors.As(err, &re) || re.RawResponse == nil {
		return te
	}
	te.StatusCode, te.ErrorCode = re.StatusCode, re.ErrorCode
	if re.StatusCode != http.StatusAccepted {
		return te
	}
	body, perr := runtime.Payload(re.RawResponse)
	if perr != nil {
		return te
	}
	parts, perr := parseMultipart(body)
	if perr != nil {
		return te
	}
	for _, p := range parts {
		if p.status < 400 {
			continue
		}
		te.StatusCode = p.status
		var e struct {
			Err struct {
				Code    string `json:"code"`
				Message struct {
					Value string `json:"value"`
				} `json:"message"`
			} `json:"odata.error"`
		}
		_ = json.Unmarshal(p.body, &e)
		te.ErrorCode, te.Message = e.Err.Code, e.Err.Message.Value
		if te.ErrorCode == "" {
			te.ErrorCode = p.errorCode
		}
		te.Index = -1
		if k, rest, ok := strings.Cut(te.Message, ":"); ok {
			if n, err := strconv.Atoi(k); err == nil {
				te.Index, te.Message = n, rest
			}
		}
		if te.Index < 0 {
			if n, err := strconv.Atoi(p.contentID); err == nil {
				te.Index = n - 1
			} else if len(tx.ops) == 1 {
				te.Index = 0
			}
		}
		if i := strings.Index(te.Message, "\nRequestId:"); i >= 0 {
			te.Message = te.Message[:i]
		}
		if te.Index >= 0 && te.Index < len(tx.ops) {
			te.Op = tx.Ops()[te.Index]
		} else {
			te.Index = -1
		}
		return te
	}
	return te
}

// Submit builds one transaction from ops, configured by opts (nil: the
// defaults of TransactionOptions), and sends it.
func Submit(ctx context.Context, client table.Client, ops []Op, opts *TransactionOptions) (*Result, error) {
	tx := NewTransaction(opts)
	for _, op := range ops {
		if err := tx.Append(op); err != nil {
			return nil, err
		}
	}
	return tx.Submit(ctx, client, nil)
}
