package keyrules

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Limits of the service, checked before anything is sent.
const (
	// MaxKeyUTF16 is the longest PartitionKey or RowKey: 1 KiB of UTF-16,
	// 512 code units ("Understanding the Table service data model").
	MaxKeyUTF16 = 512
	// MinTableName and MaxTableName bound a table name: 3 to 63 alphanumeric
	// characters, starting with a letter ("Understanding the Table service data model").
	MinTableName = 3
	MaxTableName = 63
	// MinQueueName and MaxQueueName bound a queue name ("Naming queues and metadata").
	MinQueueName = 3
	MaxQueueName = 63
	// MinContainerName and MaxContainerName bound a blob container name
	// ("Naming and referencing containers, blobs, and metadata").
	MinContainerName = 3
	MaxContainerName = 63
	// MaxBlobName is the longest blob name in characters, and MaxBlobSegments
	// the most path segments ("Naming and referencing containers, blobs, and metadata").
	MaxBlobName     = 1024
	MaxBlobSegments = 254
	// MaxPropertyName is the longest property name in characters
	// ("Understanding the Table service data model").
	MaxPropertyName = 255
)

// UTF16Len is the number of UTF-16 code units in s, which is how the service
// measures keys and strings. Invalid bytes count as one unit each (U+FFFD).
func UTF16Len(s string) int {
	n := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			n++
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
		i += size
	}
	return n
}

// forbiddenKeyChar reports whether the service refuses r in a PartitionKey or RowKey.
func forbiddenKeyChar(r rune) (bool, error) {
	switch {
	case r == '/' || r == '\\' || r == '#' || r == '?':
		return true, ErrForbiddenChar
	case r <= 0x1F || (r >= 0x7F && r <= 0x9F):
		return true, ErrControlChar
	}
	return false, nil
}

func checkKeyChars(what, s string) error {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(s[i:]); size == 1 {
				return invalidAt(what, s, ErrInvalidUTF8, i, r, "keys are sent as UTF-8 JSON")
			}
		}
		if bad, rule := forbiddenKeyChar(r); bad {
			return invalidAt(what, s, rule, i, r, "not allowed in PartitionKey or RowKey: / \\ # ? U+0000-U+001F U+007F-U+009F")
		}
	}
	return nil
}

func checkKey(what, s string) error {
	if err := checkKeyChars(what, s); err != nil {
		return err
	}
	if UTF16Len(s) > MaxKeyUTF16 {
		return invalid(what, s, ErrTooLong, "at most 512 UTF-16 code units (1 KiB)")
	}
	return nil
}

// ValidatePartitionKey reports whether the service accepts s as a PartitionKey.
// The empty string is a valid key.
func ValidatePartitionKey(s string) error { return checkKey("PartitionKey", s) }

// ValidateRowKey reports whether the service accepts s as a RowKey.
// The empty string is a valid key.
func ValidateRowKey(s string) error { return checkKey("RowKey", s) }

func isASCIIAlnum(c byte) bool {
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
}

// ValidateTableName checks a table name: 3 to 63 ASCII letters and digits,
// starting with a letter, and not the reserved name "tables".
func ValidateTableName(s string) error {
	const what, pattern = "table name", "^[A-Za-z][A-Za-z0-9]{2,62}$"
	if s == "" {
		return invalid(what, s, ErrEmpty, pattern)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isASCIIAlnum(c) {
			r, _ := utf8.DecodeRuneInString(s[i:])
			return invalidAt(what, s, ErrForbiddenChar, i, r, pattern)
		}
	}
	if s[0] >= '0' && s[0] <= '9' {
		return invalidAt(what, s, ErrBadSyntax, 0, rune(s[0]), "must start with a letter")
	}
	if len(s) < MinTableName {
		return invalid(what, s, ErrTooShort, pattern)
	}
	if len(s) > MaxTableName {
		return invalid(what, s, ErrTooLong, pattern)
	}
	if strings.EqualFold(s, "tables") {
		return invalid(what, s, ErrReserved, "\"tables\" is reserved by the service")
	}
	return nil
}

// dnsName checks the shared rule of queue and container names: 3 to 63
// lowercase letters, digits and hyphens, starting and ending with a letter or
// digit, no two hyphens in a row.
func dnsName(what, s string, min, max int) error {
	const pattern = "lowercase letters, digits and single hyphens, starting and ending with a letter or digit"
	if s == "" {
		return invalid(what, s, ErrEmpty, pattern)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		ok := (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'
		if !ok {
			r, _ := utf8.DecodeRuneInString(s[i:])
			return invalidAt(what, s, ErrForbiddenChar, i, r, pattern)
		}
		if c == '-' && (i == 0 || i == len(s)-1 || s[i-1] == '-') {
			return invalidAt(what, s, ErrBadSyntax, i, '-', pattern)
		}
	}
	if len(s) < min {
		return invalid(what, s, ErrTooShort, pattern)
	}
	if len(s) > max {
		return invalid(what, s, ErrTooLong, pattern)
	}
	return nil
}

// ValidateQueueName checks a queue name (3 to 63 characters of [a-z0-9-]).
func ValidateQueueName(s string) error {
	return dnsName("queue name", s, MinQueueName, MaxQueueName)
}

// ValidateContainerName checks a blob container name (3 to 63 characters of
// [a-z0-9-]); the service's special containers $root, $web and $logs are accepted.
func ValidateContainerName(s string) error {
	switch s {
	case "$root", "$web", "$logs":
		return nil
	}
	return dnsName("container name", s, MinContainerName, MaxContainerName)
}

// ValidateBlobName checks a blob name: 1 to 1,024 characters of valid UTF-8,
// at most 254 path segments, no control characters, and not ending with a dot
// or a slash (the service documents such names as unsafe).
func ValidateBlobName(s string) error {
	const what = "blob name"
	if s == "" {
		return invalid(what, s, ErrEmpty, "1 to 1024 characters")
	}
	for i, r := range s {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(s[i:]); size == 1 {
				return invalidAt(what, s, ErrInvalidUTF8, i, r, "")
			}
		}
		if r <= 0x1F || r == 0x7F {
			return invalidAt(what, s, ErrControlChar, i, r, "")
		}
	}
	if utf8.RuneCountInString(s) > MaxBlobName {
		return invalid(what, s, ErrTooLong, "at most 1024 characters")
	}
	if strings.Count(s, "/")+1 > MaxBlobSegments {
		return invalid(what, s, ErrTooLong, "at most 254 path segments")
	}
	if last := s[len(s)-1]; last == '.' || last == '/' {
		return invalidAt(what, s, ErrBadSyntax, len(s)-1, rune(last), "must not end with '.' or '/'")
	}
	return nil
}

// ValidatePropertyName checks a property name: 1 to 255 characters, shaped
// like a C# identifier (a letter or '_' first, then letters, digits or '_').
// The system properties PartitionKey, RowKey and Timestamp are refused here:
// they are not the user's to name.
func ValidatePropertyName(s string) error {
	const what, pattern = "property name", "a C# identifier: letter or '_' then letters, digits or '_'"
	if s == "" {
		return invalid(what, s, ErrEmpty, pattern)
	}
	n := 0
	for i, r := range s {
		n++
		ok := r == '_' || unicode.IsLetter(r) || (i > 0 && (unicode.IsDigit(r) || unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Mc, r) || unicode.Is(unicode.Pc, r)))
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(s[i:]); size == 1 {
				return invalidAt(what, s, ErrInvalidUTF8, i, r, pattern)
			}
		}
		if !ok {
			return invalidAt(what, s, ErrForbiddenChar, i, r, pattern)
		}
	}
	if n > MaxPropertyName {
		return invalid(what, s, ErrTooLong, "at most 255 characters")
	}
	switch s {
	case "PartitionKey", "RowKey", "Timestamp":
		return invalid(what, s, ErrReserved, "a system property of the service")
	}
	return nil
}
