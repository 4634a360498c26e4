// Package tablehook is the one link from package table to internal/tableio,
// through which tablekit's own packages (batch, patterns, consistency,
// eventstream) reach the plumbing that table keeps off its public surface.
//
// Go lets no other package call an unexported method, and tableio, whose
// signatures name table's types, cannot be imported by table. So table,
// which imports this package, sets Link once in its init, before main
// runs; nothing writes it after. It is the only package-level variable of
// its kind in tablekit.
package tablehook

// Link returns the plumbing view of x: for a *table.Table[T], a value
// implementing tableio.Table[T]; for a *table.Meta, one implementing
// tableio's meta view; for nil, table's codec. Set by package table's init.
var Link func(x any) any
