// Package redact removes credentials from the text of errors and log
// values that tablekit produces. A request that fails below HTTP
// (connection refused, reset, timeout) comes back from Go's HTTP client as
// a *url.Error whose text holds the full request URL, and with a SAS
// client that URL carries the token's signature (sig=). tablekit's error
// types print their cause through String, and wrap rather than replace it,
// so errors.As still finds the *url.Error, net.Error or
// *azcore.ResponseError underneath; only the text changes.
//
// What is redacted: a SAS signature (sig=...), an account key in a
// connection string (AccountKey=...), the signature of a SharedKey or
// SharedKeyLite Authorization value, and a bearer token. The rest of the
// URL (account, resource, permissions, expiry) stays: it is what a reader
// needs to know which request failed, and none of it grants access.
package redact

import (
	"errors"
	"regexp"
)

// Redacted replaces each secret.
const Redacted = "REDACTED"

// secrets match the credential parts of a text. Each keeps its prefix in
// group 1 and loses the rest. Values end where a URL parameter, a quoted
// string, a connection-string field or an escape (a JSON log's \u0026)
// ends.
var secrets = []*regexp.Regexp{
	// sig= after anything but a letter: "&sig=", "?sig=", and "\u0026sig="
	// in a JSON log line, where \b would fail after the digit.
	regexp.MustCompile(`(?i)((?:^|[^a-z])sig=)(?:[^&\s"'\\;<]|\\/)+`),
	// A URL inside another URL's query, or escaped once more ("sig%3D",
	// "sig%253D"): the value runs to the next space or quote, past the
	// escaped "&" of the parameters after it, which costs the reader the
	// rest of that URL and keeps the signature out however it is escaped.
	regexp.MustCompile(`(?i)((?:^|[^a-z]|%(?:25)*3F)sig%(?:25)*3D)[^\s"'\\<]+`),
	regexp.MustCompile(`(?i)(\bAccountKey=)[^;\s"'\\]+`),
	regexp.MustCompile(`(?i)(\bSharedKey(?:Lite)?\s+[^:\s"']+:)[^\s"'\\]+`),
	regexp.MustCompile(`(?i)(\bBearer\s+)[^\s"'\\]+`),
}

// String returns s with every credential replaced by Redacted.
func String(s string) string {
	for _, re := range secrets {
		if re.MatchString(s) {
			s = re.ReplaceAllString(s, "${1}"+Redacted)
		}
	}
	return s
}

// Error wraps err so that its text is redacted and on one line (Line);
// Unwrap returns err, so errors.Is and errors.As see err and everything
// under it unchanged. nil stays nil, and an error already wrapped is
// returned as it is.
func Error(err error) error {
	if err == nil {
		return nil
	}
	var r *redacted
	if errors.As(err, &r) && r == err {
		return err
	}
	return &redacted{err: err}
}

type redacted struct{ err error }

func (e *redacted) Error() string { return Line(e.err) }
func (e *redacted) Unwrap() error { return e.err }
