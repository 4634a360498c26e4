package table

import (
	"encoding"
	"reflect"
	"strings"
	"time"

	"github.com/tablekit/tablekit/internal/keyrules"
	"github.com/tablekit/tablekit/internal/rowkind"
)

type fieldKind uint8

const (
	kString fieldKind = iota + 1
	kBool
	kInt32 // int8, int16, int32, uint8, uint16
	kInt64 // int, int64, uint32
	kDouble
	kTime
	kBinary
	kGUID
	kText // encoding.TextMarshaler, stored as a string
	kJSON // any type opted in with the json tag option, stored as a JSON string
)

type field struct {
	name      string
	quoted    []byte // `"name":`
	annotated []byte // `"name@odata.type":"Edm.X",` or nil
	index     []int
	kind      fieldKind
	ptr       bool // nullable: a nil pointer is not stored
	omitEmpty bool
	edm       string
	gzip      bool // []byte stored gzip-compressed (compress.go)
	// key: the field is also a component of a declared key (keyed.go).
	key bool
}

// plan is how one struct type maps to an entity; built once per type.
type plan struct {
	typ    reflect.Type
	fields []field
	byName map[string]int
	meta   []int // index path of the embedded Meta
	extra  []int // index path of the Extra field, or nil
	// encrypted names the properties tagged encrypt.
	encrypted []string
	// raw: the type is Entity, encoded from its Properties map.
	raw bool
	// pk and rk are the declared compositions of the keys (keyed.go), nil
	// when the type sets that key by hand in Meta.
	pk, rk *keyLayout
}

var (
	metaType  = reflect.TypeFor[Meta]()
	extraType = reflect.TypeFor[Extra]()
	timeType  = reflect.TypeFor[time.Time]()
	guidType  = reflect.TypeFor[GUID]()
	textMType = reflect.TypeFor[encoding.TextMarshaler]()
	textUType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

func newPlan(t reflect.Type) (*plan, error) {
	if t == nil || t.Kind() != reflect.Struct {
		return nil, inputErr("plan", typeName(t), "", ErrNotStructPointer, "entities are structs")
	}
	if t == entityType {
		return entityPlan, nil
	}
	p := &plan{typ: t, byName: map[string]int{}}
	if err := p.walk(t, nil); err != nil {
		return nil, err
	}
	if err := p.finishKeys(); err != nil {
		return nil, err
	}
	if len(p.fields) > MaxUserProperties {
		return nil, inputErr("plan", t.String(), "", ErrTooManyProperties, "%d fields, at most %d", len(p.fields), MaxUserProperties)
	}
	return p, nil
}

func (p *plan) walk(t reflect.Type, prefix []int) error {
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		index := append(append([]int(nil), prefix...), i)
		tag, hasTag := sf.Tag.Lookup("table")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if sf.Anonymous && sf.Type == metaType {
			if p.meta != nil {
				return inputErr("plan", p.typ.String(), sf.Name, ErrUnsupportedType, "Meta embedded twice")
			}
			p.meta = index
			if err := p.metaKeyOpts(opts); err != nil {
				return err
			}
			continue
		}
		if !sf.IsExported() {
			continue
		}
		if sf.Type == extraType {
			if p.extra != nil {
				return inputErr("plan", p.typ.String(), sf.Name, ErrUnsupportedType, "two Extra fields")
			}
			p.extra = index
			continue
		}
		if sf.Anonymous && sf.Type.Kind() == reflect.Struct && !hasTag && sf.Type != timeType {
			if err := p.walk(sf.Type, index); err != nil {
				return err
			}
			continue
		}
		if name == "" {
			name = sf.Name
		}
		isKey, err := p.keyField(sf, index, name, opts)
		if err != nil {
			return err
		}
		if isKey {
			opts = "" // the key options, read by keyField; no other is allowed
		}
		f := field{name: name, index: index, key: isKey}
		for _, o := range strings.Split(opts, ",") {
			switch o {
			case "omitempty":
				f.omitEmpty = true
			case "json":
				f.kind = kJSON
			case "encrypt":
				p.encrypted = append(p.encrypted, name)
			case "gzip":
				f.gzip = true
			case "":
			default:
				return inputErr("plan", p.typ.String(), sf.Name, ErrUnsupportedType, "unknown tag option %q", o)
			}
		}
		if err := keyrules.ValidatePropertyName(name); err != nil {
			return &InputError{Op: "plan", Type: p.typ.String(), Field: sf.Name, Rule: err}
		}
		if name == encryptionProperty {
			return inputErr("plan", p.typ.String(), sf.Name, ErrUnsupportedType, "%s is reserved for encryption", name)
		}
		if rowkind.IsReserved(name) {
			return inputErr("plan", p.typ.String(), sf.Name, ErrUnsupportedType, "%s is reserved: it marks the rows tablekit keeps beside a type's entities (index copies and lists, a model's control rows)", name)
		}
		if f.kind == 0 {
			ft := sf.Type
			if ft.Kind() == reflect.Pointer {
				f.ptr = true
				ft = ft.Elem()
			}
			k, ok := kindOf(ft)
			if !ok {
				return inputErr("plan", p.typ.String(), sf.Name, ErrUnsupportedType,
					"%s has no Edm type; store it as JSON with the tag option `table:\",json\"`", sf.Type)
			}
			f.kind = k
		}
		if f.gzip && f.kind != kBinary {
			return inputErr("plan", p.typ.String(), sf.Name, ErrUnsupportedType, "the gzip tag option is for []byte fields, not %s", sf.Type)
		}
		f.edm = edmOf(f.kind)
		if _, dup := p.byName[name]; dup {
			return inputErr("plan", p.typ.String(), sf.Name, ErrUnsupportedType, "property %q named twice", name)
		}
		f.quoted = []byte(`"` + name + `":`)
		if f.edm == EdmInt64 || f.edm == EdmDouble || f.edm == EdmDateTime || f.edm == EdmGUID || f.edm == EdmBinary {
			f.annotated = []byte(`"` + name + `@odata.type":"` + f.edm + `",`)
		}
		p.byName[name] = len(p.fields)
		p.fields = append(p.fields, f)
	}
	return nil
}

func kindOf(t reflect.Type) (fieldKind, bool) {
	switch t {
	case timeType:
		return kTime, true
	case guidType:
		return kGUID, true
	}
	if t.Implements(textMType) && reflect.PointerTo(t).Implements(textUType) {
		return kText, true
	}
	switch t.Kind() {
	case reflect.String:
		return kString, true
	case reflect.Bool:
		return kBool, true
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Uint8, reflect.Uint16:
		return kInt32, true
	case reflect.Int, reflect.Int64, reflect.Uint32:
		return kInt64, true
	case reflect.Float32, reflect.Float64:
		return kDouble, true
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return kBinary, true
		}
	}
	return 0, false
}

func edmOf(k fieldKind) string {
	switch k {
	case kBool:
		return EdmBoolean
	case kInt32:
		return EdmInt32
	case kInt64:
		return EdmInt64
	case kDouble:
		return EdmDouble
	case kTime:
		return EdmDateTime
	case kBinary:
		return EdmBinary
	case kGUID:
		return EdmGUID
	}
	return EdmString
}

func typeName(t reflect.Type) string {
	if t == nil {
		return "nil"
	}
	return t.String()
}
