package table

import (
	"context"
	"iter"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/tablekit/tablekit/internal/rowkind"
)

// Registry decodes a table that holds entities of several types (the
// guide's "heterogeneous entity types"): each entity goes to the Go type
// registered for the value of its type property (EntityType by default,
// versioned values such as "Employee.v2" included) or, failing that, for
// the longest registered prefix of its RowKey. Register types before use;
// a Registry is then safe for concurrent reads.
type Registry struct {
	prop     string
	byType   map[string]*plan
	prefixes []prefixPlan // longest first
	generic  bool
}

type prefixPlan struct {
	prefix string
	plan   *plan
}

// RegistryOptions configure a Registry. nil means the defaults.
type RegistryOptions struct {
	// TypeProperty names the property that holds the type name.
	// Default: "EntityType".
	TypeProperty string
	// Generic decodes entities of unknown types to an untyped *Entity
	// instead of failing with *UnknownTypeError. Default: false.
	Generic bool
}

// NewRegistry returns an empty Registry.
func NewRegistry(opts *RegistryOptions) *Registry {
	r := &Registry{prop: "EntityType", byType: map[string]*plan{}}
	if opts != nil {
		if opts.TypeProperty != "" {
			r.prop = opts.TypeProperty
		}
		r.generic = opts.Generic
	}
	return r
}

// UnknownTypeError says which entity had no registered type.
type UnknownTypeError struct {
	PartitionKey, RowKey, Type string
}

// Error names the entity and its unregistered type.
func (e *UnknownTypeError) Error() string {
	return "table: no type registered for entity (" + strconv.Quote(e.PartitionKey) + ", " + strconv.Quote(e.RowKey) + ") of type " + strconv.Quote(e.Type)
}

func registryPlan[T any](op string) (*plan, error) {
	p, err := cachedPlan(reflect.TypeFor[T]())
	if err != nil {
		return nil, err
	}
	if p.meta == nil {
		return nil, inputErr(op, p.typ.String(), "", ErrNoMeta, "embed table.Meta")
	}
	if p.hasEncrypted() {
		return nil, refuseEncrypted(op, p)
	}
	return p, nil
}

// Register decodes entities whose type property equals typeName as *T.
func Register[T any](r *Registry, typeName string) error {
	if typeName == "" {
		return inputErr("Register", reflect.TypeFor[T]().String(), "", ErrBadOption, "empty type name")
	}
	p, err := registryPlan[T]("Register")
	if err != nil {
		return err
	}
	r.byType[typeName] = p
	return nil
}

// RegisterPrefix decodes entities whose RowKey starts with prefix (and whose
// type property names no registered type) as *T.
func RegisterPrefix[T any](r *Registry, rowKeyPrefix string) error {
	p, err := registryPlan[T]("RegisterPrefix")
	if err != nil {
		return err
	}
	r.prefixes = append(r.prefixes, prefixPlan{prefix: rowKeyPrefix, plan: p})
	slices.SortStableFunc(r.prefixes, func(a, b prefixPlan) int { return len(b.prefix) - len(a.prefix) })
	return nil
}

// Decode returns the entity as a pointer to its registered type. A row
// tablekit keeps beside the entities (an index copy, which carries its
// primary's type property, or list, a model's control row; see
// Table.QueryPage) is refused with ErrOtherRowKind.
func (r *Registry) Decode(data []byte) (any, error) {
	if rowkind.Marked(data) {
		return nil, inputErr("Decode", "", "", ErrOtherRowKind, "the row is one tablekit keeps beside the entities, of no registered type")
	}
	var typeName, pk, rk string
	err := scanObject(data, func(key []byte, v jsonValue) error {
		switch string(key) {
		case r.prop:
			if v.str {
				typeName = unquote(v.raw)
			}
		case "PartitionKey":
			pk = unquote(v.raw)
		case "RowKey":
			rk = unquote(v.raw)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	p := r.byType[typeName]
	if p == nil {
		for _, pp := range r.prefixes {
			if strings.HasPrefix(rk, pp.prefix) {
				p = pp.plan
				break
			}
		}
	}
	if p == nil {
		if !r.generic {
			return nil, &UnknownTypeError{PartitionKey: pk, RowKey: rk, Type: typeName}
		}
		g := new(Entity)
		gp, err := cachedPlan(entityType)
		if err != nil {
			return nil, err
		}
		return g, gp.decode(data, reflect.ValueOf(g).Elem())
	}
	v := reflect.New(p.typ)
	if err := p.decode(data, v.Elem()); err != nil {
		return nil, err
	}
	return v.Interface(), nil
}

// Query runs a query over client and decodes every entity through the
// registry, following continuation tokens. Each page is one request. The
// rows tablekit keeps beside the entities are left out, as Table.QueryPage
// leaves them out.
func (r *Registry) Query(ctx context.Context, client Client, opts *QueryOptions) iter.Seq2[any, error] {
	return func(yield func(any, error) bool) {
		for raw, err := range queryRaw(ctx, client, opts) {
			if err != nil {
				yield(nil, err)
				return
			}
			if rowkind.Marked(raw) {
				continue
			}
			v, err := r.Decode(raw)
			if !yield(v, err) || err != nil {
				return
			}
		}
	}
}
