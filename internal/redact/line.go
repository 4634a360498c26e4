package redact

import (
	"bytes"
	"encoding/json"
	"html"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
)

// maxMessage bounds the service's message quoted in a line: the first
// line of an Azure Storage message is a sentence ("The specified blob does
// not exist."); the rest (RequestId, Time, authentication details) is
// reachable through errors.As.
const maxMessage = 200

// Line is err's text on one line, credentials redacted. The SDK's
// *azcore.ResponseError prints a dump of about 15 lines (request, status,
// code, the whole body); wherever one sits in err's chain its text is
// replaced by Answer's, and any other line break becomes "; ". The error
// itself is not changed: errors.As still finds the *azcore.ResponseError.
func Line(err error) string {
	if err == nil {
		return "<nil>"
	}
	s := err.Error()
	if strings.ContainsAny(s, "\r\n") {
		for _, re := range responses(err, nil) {
			if full := re.Error(); full != "" {
				s = strings.ReplaceAll(s, full, Answer(re))
			}
		}
		s = oneLine(s)
	}
	return String(s)
}

// Answer is the service's answer in re on one line: the HTTP status, the
// service's error code and the first line of its message, as in
// "404 BlobNotFound: The specified blob does not exist.".
func Answer(re *azcore.ResponseError) string {
	s := strconv.Itoa(re.StatusCode)
	if re.ErrorCode != "" {
		s += " " + re.ErrorCode
	} else if t := http.StatusText(re.StatusCode); t != "" {
		s += " " + t
	}
	if m := message(re); m != "" {
		s += ": " + m
	}
	return String(s)
}

// innerStatus finds the status line of the failed operation inside a
// transaction's multipart answer.
var innerStatus = regexp.MustCompile(`HTTP/1\.1 ([1-5]\d\d)\b`)

// innerAnswer is the failed operation's answer inside the 202 of a
// transaction (the envelope has no code or message of its own): its
// status, code and the first line of its message; "" when body is not one.
func innerAnswer(body []byte) string {
	loc := innerStatus.FindSubmatchIndex(body)
	if loc == nil {
		return ""
	}
	s := string(body[loc[2]:loc[3]])
	rest := body[loc[1]:]
	if i, j := bytes.IndexByte(rest, '{'), bytes.LastIndexByte(rest, '}'); i >= 0 && j > i {
		code, msg := jsonAnswer(rest[i : j+1])
		if code != "" {
			s += " " + code
		}
		if msg != "" {
			s += ": " + msg
		}
	}
	return s
}

// responses lists the *azcore.ResponseError values in err's tree.
func responses(err error, out []*azcore.ResponseError) []*azcore.ResponseError {
	for err != nil {
		if re, ok := err.(*azcore.ResponseError); ok {
			return append(out, re)
		}
		switch u := err.(type) {
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				out = responses(e, out)
			}
			return out
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		default:
			return out
		}
	}
	return out
}

// xmlMessage finds the Message element of the Blob and Queue services'
// error body.
var xmlMessage = regexp.MustCompile(`(?s)<Message>(.*?)</Message>`)

// message is the first line of the service's message in re's body: the
// Table service's JSON ({"odata.error": {"message": {"value": ...}}}) or
// the Blob and Queue services' XML (<Error><Message>...). The SDK cached
// the body when it built re, so reading it again costs no request.
func message(re *azcore.ResponseError) string {
	if re.RawResponse == nil {
		return ""
	}
	body, err := runtime.Payload(re.RawResponse)
	if err != nil || len(body) == 0 {
		return ""
	}
	if re.StatusCode == http.StatusAccepted {
		return innerAnswer(body)
	}
	if json.Valid(body) {
		_, m := jsonAnswer(body)
		return m
	}
	if x := xmlMessage.FindSubmatch(body); x != nil {
		return firstLine(html.UnescapeString(string(x[1]))) // the line breaks come as &#xA;
	}
	return ""
}

// jsonAnswer reads the Table service's error body, {"odata.error":
// {"code": ..., "message": {"value": ...}}}: the code and the first line
// of the message.
func jsonAnswer(body []byte) (code, msg string) {
	var doc map[string]json.RawMessage
	if json.Unmarshal(body, &doc) != nil {
		return "", ""
	}
	inner := doc["odata.error"]
	if inner == nil {
		inner = doc["error"]
	}
	var e struct {
		Code    string          `json:"code"`
		Message json.RawMessage `json:"message"`
	}
	if inner == nil || json.Unmarshal(inner, &e) != nil {
		return "", ""
	}
	if e.Message != nil {
		var v struct {
			Value string `json:"value"`
		}
		if json.Unmarshal(e.Message, &msg) != nil && json.Unmarshal(e.Message, &v) == nil {
			msg = v.Value
		}
	}
	return e.Code, firstLine(msg)
}

// firstLine is the first line of a service message, bounded.
func firstLine(m string) string {
	m, _, _ = strings.Cut(strings.TrimSpace(m), "\n")
	m = strings.TrimSpace(m)
	if len(m) > maxMessage {
		m = m[:maxMessage] + "…"
	}
	return m
}

// oneLine joins the non-blank lines of s with "; ".
func oneLine(s string) string {
	var parts []string
	for l := range strings.FieldsFuncSeq(s, func(r rune) bool { return r == '\n' || r == '\r' }) {
		if l = strings.TrimSpace(l); l != "" {
			parts = append(parts, l)
		}
	}
	return strings.Join(parts, "; ")
}
