package integration

import "github.com/tablekit/tablekit/table"

// tableOf is the handle table.New returned, for the suites whose types always have
// a plan: a pattern constructor takes the table, not a client.
func tableOf[T any](t *table.Table[T], err error) *table.Table[T] {
	if err != nil {
		panic(err)
	}
	return t
}

// copiesIn is IndexDef.Table for copies in c's table; nil for a nil c,
// the primaries' table.
func copiesIn(c table.Client) *table.Table[table.Entity] {
	if c == nil {
		return nil
	}
	return tableOf(table.New[table.Entity](c, nil))
}
