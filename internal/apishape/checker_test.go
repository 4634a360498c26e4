package apishape

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"testing"
)

// The checker itself can fail: on a small package with one declaration of
// each kind it reports exactly the misses, and nothing else.
func TestCheckerReportsEachKindOfMiss(t *testing.T) {
	const src = `package demo

import "context"

type GetOptions struct{}
type Options struct{}
type Table[T any] struct{}
type inner struct{}

func Good(ctx context.Context, key string, o *GetOptions) error { return nil }
func GoodPackageOptions(ctx context.Context, o *Options) error  { return nil }
func NoOptions(ctx context.Context, key string) error          { return nil }
func OptionsNotLast(ctx context.Context, o *GetOptions, key string) error { return nil }
func Variadic(ctx context.Context, keys ...string) error       { return nil }
func ValueOptions(ctx context.Context, o GetOptions) error     { return nil }
func NoContext(key string) error                               { return nil }
func unexported(ctx context.Context) error                     { return nil }

func (t *Table[T]) Put(ctx context.Context, v *T) error               { return nil }
func (t *Table[T]) Get(ctx context.Context, v *T, o *GetOptions) error { return nil }
func (t *inner) Skipped(ctx context.Context) error                    { return nil }

type Port interface {
	Send(ctx context.Context, body []byte) error
	Read(ctx context.Context, o *GetOptions) error
}

type Indexer[O any] interface {
	Verify(ctx context.Context, pk string, opts *O) error
	Value(ctx context.Context, v *O) error
}
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "demo.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	checked, misses := check(funcs(fset, []*ast.File{f}))
	var got []string
	for _, m := range misses {
		got = append(got, m.name)
	}
	want := []string{
		"demo.NoOptions", "demo.OptionsNotLast", "demo.Variadic", "demo.ValueOptions",
		"demo.Table.Put", "demo.Port.Send", "demo.Indexer.Value",
	}
	if !slices.Equal(got, want) {
		t.Errorf("misses %q, want %q", got, want)
	}
	// Good, GoodPackageOptions, the four misses among functions, Put, Get,
	// Send, Read, Verify and Value: NoContext, unexported and the
	// unexported type's method are not counted.
	if checked != 12 {
		t.Errorf("checked %d, want 12", checked)
	}
}
