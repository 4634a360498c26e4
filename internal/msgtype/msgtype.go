// Package msgtype is the rule for a consistency message type, "name.vN"
// (archive.v1), shared by consistency, its ownership.Role and the patterns
// that name their messages, so that each refuses a bad type where it is
// given instead of when its first message is sent; and the size of a
// message's text as the Queue service counts it, shared by consistency's
// Sender and Worker and the poison queue's Replay.
package msgtype

import "regexp"

var pattern = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.-]*\.v[0-9]+$`)

// Valid reports whether t is a message type: a letter, then letters,
// digits, '_', '.' or '-', ending with ".v" and a version number.
func Valid(t string) bool { return pattern.MatchString(t) }

// MaxTextBytes is the largest queue message, 64 KiB ("Put Message"),
// measured as the XML-escaped text the request carries (XMLLen).
const MaxTextBytes = 64 * 1024

// XMLLen is the length of s once XML-escaped, as a Put Message request
// carries it.
func XMLLen(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '<', '>':
			n += 4
		case '&':
			n += 5
		case '"', '\'':
			n += 5
		default:
			n++
		}
	}
	return n
}
