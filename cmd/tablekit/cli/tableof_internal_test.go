package cli

import "github.com/tablekit/tablekit/table"

// tableOf is the handle table.New returned, for tests whose types always have
// a plan: a pattern constructor takes the table, not a client.
func tableOf[T any](t *table.Table[T], err error) *table.Table[T] {
	if err != nil {
		panic(err)
	}
	return t
}
