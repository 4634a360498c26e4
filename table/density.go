package table

import (
	"context"
	"log/slog"
)

// The service throttles a query on the entities it scans, not on those it
// returns (performance checklist: "do your queries examine only the rows
// they return?"). A query whose filter the service cannot serve from the
// keys scans on, ending a page after 5 seconds or at a partition boundary
// with few or no entities and a continuation token: each of those pages
// is a request spent. Query therefore counts, per query, the requests
// (pages) it spent against the entities they returned, and warns when the
// average falls below a documented threshold.
const (
	// lowDensityMinRequests is how many requests a query must have spent
	// before it is judged: a point or range query that returns nothing in
	// one request is not a density problem.
	lowDensityMinRequests = 5
	// lowDensityEntitiesPerRequest is the threshold: a query that spent at
	// least lowDensityMinRequests requests for fewer than this many
	// entities per request, on average, is a low-density query. A dense
	// query returns up to 1,000 entities per request (MaxPageSize); fewer
	// than one per request means most pages came back empty.
	lowDensityEntitiesPerRequest = 1.0
)

// QueryStats are the figures of one query: how the service will execute it
// (Filter.Kind), the requests it spent and the entities they returned. Attach
// one to the query's context with WithQueryStats and read it when the
// query is over; Table.Query and Table.QueryPage fill it. A Table whose
// Options.Logger is set also logs, at Warn, every Query that ends at low
// density, with or without a QueryStats in its context.
//
// Requests counts query pages, one request each; the retries the SDK's
// transport policy makes of one page are not counted again (the ledger
// sees those). A QueryStats is for one query, read by one goroutine at a
// time: successive QueryPage calls of the same query may share one, which
// then adds their pages up; reuse for another query mixes the figures.
type QueryStats struct {
	// Label names the query in the warning and in the user's own records
	// ("orders by status"). Set by the caller; default "": the warning
	// then names the query by its filter only.
	Label string
	// Kind is how the service executes the query, from its filter.
	Kind QueryKind
	// Filter is the $filter text sent ("" for none).
	Filter string
	// Requests is the number of query pages fetched, one request each.
	Requests int
	// EmptyPages counts pages that returned no entity but carried a
	// continuation token: requests spent on scanning alone.
	EmptyPages int
	// Entities is the number of entities the pages returned.
	Entities int
	// Done is true once the service returned the query's last page.
	Done bool
	// LowDensity is set when the query ended (Done, or abandoned by its
	// caller or an error, for Query) at low density: at least
	// 5 requests for fewer than 1 entity each, on average.
	LowDensity bool

	tracked bool // Kind and Filter are set
	judged  bool // the end of the query has been judged (and logged) once
}

// EntitiesPerRequest is Entities / Requests (0 before any request).
func (s *QueryStats) EntitiesPerRequest() float64 {
	if s.Requests == 0 {
		return 0
	}
	return float64(s.Entities) / float64(s.Requests)
}

type queryStatsKey struct{}

// WithQueryStats returns ctx carrying s: the query run with that context
// records its figures in s.
func WithQueryStats(ctx context.Context, s *QueryStats) context.Context {
	return context.WithValue(ctx, queryStatsKey{}, s)
}

func queryStatsOf(ctx context.Context) *QueryStats {
	s, _ := ctx.Value(queryStatsKey{}).(*QueryStats)
	return s
}

// trackQuery starts recording a query: the caller's QueryStats if ctx
// carries one, else, when own is true (Query judges its own queries) and
// there is a logger to warn, a private one. Nil when nobody would see the
// figures: then a query pays nothing for them (no allocation, no
// Filter.Kind).
func (t *Table[T]) trackQuery(ctx context.Context, opts *QueryOptions, own bool) (context.Context, *QueryStats) {
	s := queryStatsOf(ctx)
	if s == nil {
		if !own || t.log == nil {
			return ctx, nil
		}
		s = new(QueryStats)
		ctx = WithQueryStats(ctx, s)
	}
	if !s.tracked {
		s.tracked = true
		var f Filter
		if opts != nil {
			f = opts.Filter
		}
		s.Kind = f.Kind()
	}
	return ctx, s
}

// recordPage adds one page to the query's figures, if it has any.
func recordPage(ctx context.Context, filter *string, entities int, done bool) {
	s := queryStatsOf(ctx)
	if s == nil {
		return
	}
	if filter != nil {
		s.Filter = *filter
	}
	s.Requests++
	s.Entities += entities
	if entities == 0 && !done {
		s.EmptyPages++
	}
	s.Done = done
}

// endQuery judges a query once, at its end, and warns through the
// Table's logger when it ran at low density.
func (t *Table[T]) endQuery(ctx context.Context, s *QueryStats) {
	if s == nil || s.judged {
		return
	}
	s.judged = true
	s.LowDensity = s.Requests >= lowDensityMinRequests && float64(s.Entities) < lowDensityEntitiesPerRequest*float64(s.Requests)
	if !s.LowDensity || t.log == nil {
		return
	}
	t.log.WarnContext(ctx, "tablekit: low-density query: it spent many requests for few entities; the service throttles on entities scanned, so narrow it by PartitionKey and RowKey",
		slog.String("label", s.Label),
		slog.String("table", t.name),
		slog.String("kind", s.Kind.String()),
		slog.String("filter", s.Filter),
		slog.Int("requests", s.Requests),
		slog.Int("entities", s.Entities),
		slog.Int("empty_pages", s.EmptyPages),
		slog.Bool("done", s.Done),
	)
}
