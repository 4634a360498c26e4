// Package seqs gathers the results of tablekit's iter.Seq2 sequences for
// tablekit's own tests, tools and patterns; users range over the sequence.
package seqs

import "iter"

// Collect gathers a sequence's values into a slice, stopping at the first
// error, which it returns with the values before it.
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
