package table

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"iter"
	"net/http"
	"slices"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/internal/keyrules"
	"github.com/tablekit/tablekit/internal/rowkind"
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
	// Default: 0, no cap (pages of up to 1,000). The service counts the
	// rows it sends, so a QueryPage whose page held rows tablekit keeps
	// beside the entities (see QueryPage) returns fewer than Top; Query
	// reads on until it has Top entities.
	Top int
}

// Page is one response of a query.
type Page[T any] struct {
	Items []*T
	// Next resumes the query after this page; "" when the query is done.
	// It is an opaque string that can be stored and used after a restart.
	// It is bound to its query's filter and its table, with a checksum: a
	// token from another filter, or garbled or edited, is an *InputError
	// (ErrBadToken) before any request; one from another table too, once
	// the Table has learned its table's name from any earlier query page,
	// and otherwise right after the first page's response, whose entities
	// are then not returned.
	Next string
}

// token is what Page.Next encodes: the service's continuation keys, bound
// to the query and table they came from, with a checksum so that an edited
// or truncated token is refused rather than silently restarting or
// skipping part of the query.
type token struct {
	PK string `json:"p"`
	RK string `json:"r"`
	// Query is a hash of the $filter text; Table a hash of the table's
	// name (lower case), 0 when it was not known.
	Query uint64 `json:"q"`
	Table uint64 `json:"t,omitempty"`
	Sum   uint64 `json:"c"`
}

func (t token) sum() uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%q\x00%q\x00%d\x00%d", t.PK, t.RK, t.Query, t.Table)
	return h.Sum64()
}

func hashText(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}

// tokenV2 prefixes tokens bound to their query and table; tokens of the
// first format ("tk1.") carry no binding and are still accepted.
const tokenV2 = "tk2."

func encodeToken(pk, rk *string, query, table uint64) string {
	if (pk == nil || *pk == "") && (rk == nil || *rk == "") {
		return ""
	}
	t := token{Query: query, Table: table}
	if pk != nil {
		t.PK = *pk
	}
	if rk != nil {
		t.RK = *rk
	}
	t.Sum = t.sum()
	b, _ := json.Marshal(t)
	return tokenV2 + base64.RawURLEncoding.EncodeToString(b)
}

// decodeToken reads s; bound is false for a first-format token.
func decodeToken(s string) (t token, bound bool, err error) {
	if s == "" {
		return token{}, false, nil
	}
	bad := func(why string) error {
		return inputErr("Query", "", "token", ErrBadToken, "%s; pass \"\" or a Page.Next of this query", why)
	}
	if raw, ok := strings.CutPrefix(s, "tk1."); ok {
		b, err := base64.RawURLEncoding.DecodeString(raw)
		if err != nil || json.Unmarshal(b, &t) != nil {
			return token{}, false, bad("not a token from Page.Next")
		}
		return t, false, nil
	}
	raw, ok := strings.CutPrefix(s, tokenV2)
	if !ok {
		return token{}, false, bad("not a token from Page.Next")
	}
	b, err := base64.RawURLEncoding.DecodeString(raw)
	if err != nil || json.Unmarshal(b, &t) != nil || t.Sum != t.sum() {
		return token{}, false, bad("garbled or edited token")
	}
	return t, true, nil
}

// tableOf names the table a response answered for: the last segment of
// its request path ("/account/Name()" on Azurite, "/Name()" on Azure).
func tableOf(resp *http.Response) string {
	if resp == nil || resp.Request == nil || resp.Request.URL == nil {
		return ""
	}
	p := resp.Request.URL.Path
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		p = p[i+1:]
	}
	if i := strings.IndexByte(p, '('); i >= 0 {
		p = p[:i]
	}
	return strings.ToLower(p)
}

func (t *Table[T]) listOptions(opts *QueryOptions, top int) (*aztables.ListEntitiesOptions, error) {
	lo := &aztables.ListEntitiesOptions{}
	var filter Filter
	if opts != nil && !opts.Filter.IsZero() {
		if err := t.refuseEncryptedFilter(opts.Filter); err != nil {
			return nil, err
		}
		filter = opts.Filter
	}
	if filter = t.ownRange(filter); !filter.IsZero() {
		f, err := filter.Build()
		if err != nil {
			return nil, err
		}
		lo.Filter = &f
	}
	if opts == nil {
		return lo, nil
	}
	if len(opts.Select) > 0 {
		sel := []string{"PartitionKey", "RowKey"}
		for _, s := range opts.Select {
			switch s {
			case "PartitionKey", "RowKey":
				continue
			case "Timestamp":
			default:
				if err := keyrules.ValidatePropertyName(s); err != nil {
					return nil, &InputError{Op: "Query", Type: t.typeName(), Field: s, Rule: err}
				}
			}
			sel = append(sel, s)
		}
		if t.enc != nil {
			sel = append(sel, encryptionProperty)
		}
		if t.plan == nil || !t.plan.raw {
			// The marks of the rows tablekit keeps beside the
			// entities, so that a page tells them from T's (see
			// pageOf); a Registry's query (no plan) too.
			sel = append(sel, rowkind.IndexOf, rowkind.Property)
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
//
// Every Table but the raw view (Entities) leaves out of its pages the rows
// tablekit keeps beside the entities, which carry a mark of their own: an
// entity model's index copies and lists and its control rows, and the
// rows of the patterns that share the table (a log tail's, sharded
// appends, a data series, a wide entity's parts, a large entity), whoever
// opened the Table. The Table a pattern was built over reads that
// pattern's rows alone. Such rows still count against Top and the page, so a
// page may hold fewer entities than the service sent; Next still moves
// past them. Query and QueryAs leave them out the same way.
func (t *Table[T]) QueryPage(ctx context.Context, token string, opts *QueryOptions) (*Page[T], error) {
	lo, err := t.pageOptions(opts)
	if err != nil {
		return nil, err
	}
	ctx, qs := t.trackQuery(ctx, opts, false) // density.go
	ctx, end := t.span(ctx, "QueryPage", "")
	p, err := t.page(ctx, lo, token, t.projects(opts))
	end(err)
	if err != nil || p.Next == "" {
		t.endQuery(ctx, qs)
	}
	return p, err
}

// pageOptions are the list options of one QueryPage request.
func (t *Table[T]) pageOptions(opts *QueryOptions) (*aztables.ListEntitiesOptions, error) {
	top := 0
	if opts != nil {
		if opts.Top < 0 || opts.Top > MaxPageSize {
			return nil, inputErr("Query", t.plan.typ.String(), "Top", ErrBadOption, "Top is 0 to %d for a page, got %d", MaxPageSize, opts.Top)
		}
		top = opts.Top
	}
	return t.listOptions(opts, top)
}

func (t *Table[T]) page(ctx context.Context, lo *aztables.ListEntitiesOptions, next string, partial bool) (*Page[T], error) {
	return pageOf(ctx, t, lo, next, t.decodeNew(ctx, partial))
}

// decodeNew decodes a query's entities into new T values, marked partial
// (see Meta) when the query's $select leaves out some of their properties.
func (t *Table[T]) decodeNew(ctx context.Context, partial bool) func([]byte, bool) (*T, error) {
	return func(data []byte, full bool) (*T, error) {
		v := new(T)
		if err := t.decodeFrom(ctx, data, v, full); err != nil {
			return nil, err
		}
		if partial {
			t.Meta(v).partial = true
		}
		return v, nil
	}
}

// projects reports whether opts' $select leaves out a property T stores:
// a field not listed, or any property of an Entity or of an Extra field,
// which only a whole read brings.
func (t *Table[T]) projects(opts *QueryOptions) bool {
	if opts == nil || len(opts.Select) == 0 {
		return false
	}
	if t.plan.raw || t.plan.extra != nil {
		return true
	}
	for _, f := range t.plan.fields {
		if !slices.Contains(opts.Select, f.name) {
			return true
		}
	}
	return false
}

// pageOf runs one request of a query of t's table and decodes its entities
// with decode (T itself, or a projection of it); full tells decode that
// the entities were read whole (no $select).
func pageOf[P, T any](ctx context.Context, t *Table[T], lo *aztables.ListEntitiesOptions, next string, decode func(data []byte, full bool) (*P, error)) (*Page[P], error) {
	tok, bound, err := decodeToken(next)
	if err != nil {
		return nil, err
	}
	query := uint64(0)
	if lo.Filter != nil {
		query = hashText(*lo.Filter)
	}
	known := t.tableName()
	if bound {
		if tok.Query != query {
			return nil, inputErr("Query", t.typeName(), "token", ErrBadToken, "the token belongs to a query with another filter")
		}
		if tok.Table != 0 && known != "" && tok.Table != hashText(known) {
			return nil, inputErr("Query", t.typeName(), "token", ErrBadToken, "the token belongs to another table than %q", known)
		}
	}
	if next != "" {
		lo.NextPartitionKey, lo.NextRowKey = &tok.PK, &tok.RK
	}
	var raw *http.Response
	x := &wireExchange{}
	resp, err := t.client.NewListEntitiesPager(lo).NextPage(policy.WithCaptureResponse(withWireExchange(ctx, x), &raw))
	if err != nil {
		return nil, t.svcErr("Query", "", "", err)
	}
	entities, err := pageEntities(x, resp.Entities)
	if err != nil {
		return nil, t.svcErr("Query", "", "", err)
	}
	name := tableOf(raw)
	if name != "" && known == "" {
		t.learned.Store(&name)
	}
	if bound && tok.Table != 0 && name != "" && tok.Table != hashText(name) {
		// This Table had not learned its name before: one request went
		// out, but nothing of another table's query is returned.
		return nil, inputErr("Query", t.typeName(), "token", ErrBadToken, "the token belongs to another table than %q", name)
	}
	tableHash := uint64(0)
	if name != "" {
		tableHash = hashText(name)
	}
	p := &Page[P]{Items: make([]*P, 0, len(entities)), Next: encodeToken(resp.NextPartitionKey, resp.NextRowKey, query, tableHash)}
	recordPage(ctx, lo.Filter, len(entities), p.Next == "") // density.go
	for _, data := range entities {
		if t.otherKind(data) {
			continue
		}
		v, err := decode(data, lo.Select == nil)
		if err != nil {
			return nil, err
		}
		p.Items = append(p.Items, v)
	}
	return p, nil
}

// tableName is the table's name as learned from a response, or "".
func (t *Table[T]) tableName() string {
	if p := t.learned.Load(); p != nil {
		return *p
	}
	return ""
}

// Query returns every entity that opts select, following continuation
// tokens (short and empty pages included) until the query is done or Top
// entities were returned. Each page is one request. Iteration stops at the
// first error, which is yielded with a nil value.
func (t *Table[T]) Query(ctx context.Context, opts *QueryOptions) iter.Seq2[*T, error] {
	return queryOf(ctx, t, opts, t.decodeNew(ctx, t.projects(opts)))
}

// queryOf is Query decoding with decode (T itself, or a projection of it).
func queryOf[P, T any](ctx context.Context, t *Table[T], opts *QueryOptions, decode func([]byte, bool) (*P, error)) iter.Seq2[*P, error] {
	return func(yield func(*P, error) bool) {
		total := 0
		if opts != nil {
			if opts.Top < 0 {
				yield(nil, inputErr("Query", t.plan.typ.String(), "Top", ErrBadOption, "Top is >= 0, got %d", opts.Top))
				return
			}
			total = opts.Top
		}
		ctx, qs := t.trackQuery(ctx, opts, true) // density.go
		defer t.endQuery(ctx, qs)
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
			// One span a page: a query's pages are its requests, and a
			// span across the caller's loop would time the caller too.
			pctx, end := t.span(ctx, "Query", "")
			p, err := pageOf(pctx, t, lo, token, decode)
			end(err)
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

// queryRaw yields the entities of a query as the service's JSON, following
// continuation tokens (one request per page), for Registry, which decodes
// each by its type. Top and Select apply as in Query.
func queryRaw(ctx context.Context, client Client, opts *QueryOptions) iter.Seq2[[]byte, error] {
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
			x := &wireExchange{}
			page, err := pager.NextPage(withWireExchange(ctx, x))
			if err != nil {
				yield(nil, &ServiceError{Op: "Query", Err: err})
				return
			}
			entities, err := pageEntities(x, page.Entities)
			if err != nil {
				yield(nil, &ServiceError{Op: "Query", Err: err})
				return
			}
			for _, raw := range entities {
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
