// Package msgtype is the rule for a consistency message type, "name.vN"
// (archive.v1), shared by consistency, its ownership.Role and the patterns
// that name their messages, so that each refuses a bad type where it is
// given instead of when its first message is sent.
package msgtype

import "regexp"

var pattern = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.-]*\.v[0-9]+$`)

// Valid reports whether t is a message type: a letter, then letters,
// digits, '_', '.' or '-', ending with ".v" and a version number.
func Valid(t string) bool { return pattern.MatchString(t) }
