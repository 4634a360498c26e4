package table

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"iter"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/keys"
)

// QueryOptions describe a query. nil means every entity of the table.
type QueryOptions struct {
	// Filter selects entities. Default: the zero Filter, every entity.
	Filter Filter
	// Select lists the properties to return ($select); PartitionKey and
	// RowKey always come back so Meta is filled. Default: all properties.
	Select []string
	// Top caps the entities returned: in all, for Query; in the page, for
	// QueryPage. 0 to 1000 for QueryPage; any value >= 0 for Query.
	// Default: 0, no cap (pages of up to 1,000).
	Top int
}

// Page is one response of a query.
type Page[T any] struct {
	Items []*T
	// Next resumes the query after this page; "" when the query is done.
	// It is an opaque string that can be stored and used after a restart.
	Next string
}

// token is what Page.Next encodes: the service's continuation keys.
type token struct {
	PK string `json:"p"`
	RK string `json:"r"`
}

func encodeToken(pk, rk *string) string {
	if (pk == nil || *pk == "") && (rk == nil || *rk == "") {
		return ""
	}
	var t token
	if pk != nil {
		t.PK = *pk
	}
	if rk != nil {
		t.RK = *rk
	}
	b, _ := json.Marshal(t)
	return "tk1." + base64.RawURLEncoding.EncodeToString(b)
}

func decodeToken(s string) (pk, rk *string, err error) {
	if s == "" {
		return nil, nil, nil
	}
	raw, ok := strings.CutPrefix(s, "tk1.")
	b, err := base64.RawURLEncoding.DecodeString(raw)
	var t token
	if !ok || err != nil || json.Unmarshal(b, &t) != nil {
		return nil, nil, inputErr("Query", "", "", ErrBadToken, "not a token from Page.Next")
	}
	return &t.PK, &t.RK, nil
}

func (t *Table[T]) listOptions(opts *QueryOptions, top int) (*aztables.ListEntitiesOptions, error) {
	lo := &aztables.ListEntitiesOptions{}
	if opts == nil {
		return lo, nil
	}
	if !opts.Filter.IsZero() {
		f, err := opts.Filter.Build()
		if err != nil {
			return nil, err
		}
		lo.Filter = &f
	}
	if len(opts.Select) > 0 {
		sel := []string{"PartitionKey", "RowKey"}
		for _, s := range opts.Select {
			switch s {
			case "PartitionKey", "RowKey":
				continue
			case "Timestamp":
			default:
				if err := keys.ValidatePropertyName(s); err != nil {
					return nil, &InputError{Op: "Query", Type: t.typeName(), Field: s, Rule: err}
				}
			}
			sel = append(sel, s)
		}
		if t.enc != nil {
			sel = append(sel, EncryptionProperty)
		}
		lo.Select = to.Ptr(strings.Join(sel, ","))
	}
	if top > 0 {
		lo.Top = to.Ptr(int32(min(top, MaxPageSize)))
	}
	return lo, nil
}

// QueryPage runs one request of a query: the page after token ("" for the
// first). The page may be short or even empty while Next is not "": the
// service stops at partition boundaries and after 5 seconds, so loop on
// Next, never on the page's size.
func (t *Table[T]) QueryPage(ctx context.Context, opts *QueryOptions, token string) (*Page[T], error) {
	top := 0
	if opts != nil {
		if opts.Top < 0 || opts.Top > MaxPageSize {
			return nil, inputErr("Query", t.plan.typ.String(), "Top", ErrBadOption, "Top is 0 to %d for a page, got %d", MaxPageSize, opts.Top)
		}
		top = opts.Top
	}
	lo, err := t.listOptions(opts, top)
	if err != nil {
		return nil, err
	}
	return t.page(ctx, lo, token)
}

func (t *Table[T]) page(ctx context.Context, lo *aztables.ListEntitiesOptions, token string) (*Page[T], error) {
	pk, rk, err := decodeToken(token)
	if err != nil {
		return nil, err
	}
	lo.NextPartitionKey, lo.NextRowKey = pk, rk
	resp, err := t.client.NewListEntitiesPager(lo).NextPage(ctx)
	if err != nil {
		return nil, t.svcErr("Query", "", "", err)
	}
	p := &Page[T]{Items: make([]*T, len(resp.Entities)), Next: encodeToken(resp.NextPartitionKey, resp.NextRowKey)}
	for i, raw := range resp.Entities {
		v := new(T)
		if err := t.decodeFrom(ctx, raw, v, lo.Select == nil); err != nil {
			return nil, err
		}
		p.Items[i] = v
	}
	return p, nil
}

// Query returns every entity that opts select, following continuation
// tokens (short and empty pages included) until the query is done or Top
// entities were returned. Each page is one request. Iteration stops at the
// first error, which is yielded with a nil value.
func (t *Table[T]) Query(ctx context.Context, opts *QueryOptions) iter.Seq2[*T, error] {
	return func(yield func(*T, error) bool) {
		total := 0
		if opts != nil {
			if opts.Top < 0 {
				yield(nil, inputErr("Query", t.plan.typ.String(), "Top", ErrBadOption, "Top is >= 0, got %d", opts.Top))
				return
			}
			total = opts.Top
		}
		returned := 0
		token := ""
		for {
			remaining := 0
			if total > 0 {
				remaining = total - returned
			}
			lo, err := t.listOptions(opts, remaining)
			if err != nil {
				yield(nil, err)
				return
			}
			p, err := t.page(ctx, lo, token)
			if err != nil {
				yield(nil, err)
				return
			}
			for _, v := range p.Items {
				if !yield(v, nil) {
					return
				}
				returned++
				if total > 0 && returned >= total {
					return
				}
			}
			if p.Next == "" {
				return
			}
			token = p.Next
		}
	}
}

// Collect gathers a query's results into a slice.
func Collect[T any](seq iter.Seq2[*T, error]) ([]*T, error) {
	var out []*T
	for v, err := range seq {
		if err != nil {
			return out, err
		}
		out = append(out, v)
	}
	return out, nil
}

// QueryRaw yields the entities of a query as the service's JSON, following
// continuation tokens (one request per page), for code that decodes them
// itself (Registry, index copies). Top and Select apply as in Query.
func QueryRaw(ctx context.Context, client Client, opts *QueryOptions) iter.Seq2[[]byte, error] {
	return func(yield func([]byte, error) bool) {
		var t Table[Meta] // only its listOptions are needed: no struct plan
		lo, err := t.listOptions(opts, 0)
		if err != nil {
			yield(nil, err)
			return
		}
		limit := 0
		if opts != nil {
			if opts.Top < 0 {
				yield(nil, inputErr("Query", "", "Top", ErrBadOption, "Top is >= 0, got %d", opts.Top))
				return
			}
			limit = opts.Top
			if limit > 0 {
				lo.Top = to.Ptr(int32(min(limit, MaxPageSize)))
			}
		}
		n := 0
		pager := client.NewListEntitiesPager(lo)
		for pager.More() {
			page, err := pager.NextPage(ctx)
			if err != nil {
				yield(nil, &ServiceError{Op: "Query", Err: err})
				return
			}
			for _, raw := range page.Entities {
				if !yield(raw, nil) {
					return
				}
				if n++; limit > 0 && n >= limit {
					return
				}
			}
		}
	}
}

func (t *Table[T]) typeName() string {
	if t.plan == nil {
		return ""
	}
	return t.plan.typ.String()
}
