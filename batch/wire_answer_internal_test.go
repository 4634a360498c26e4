package batch

import "testing"

// TestParseMultipartReadsAChangesetAndAWholeBatchAnswer: the $batch answer
// parser reads each operation's status, ETag, Content-ID and error code
// from a changeset of responses, and, for the whole-batch error some
// services send with no changeset, the one response up to the batch's
// closing line, its body without that line.
func TestParseMultipartReadsAChangesetAndAWholeBatchAnswer(t *testing.T) {
	changeset := "--batchresponse_1\r\nContent-Type: multipart/mixed; boundary=changesetresponse_1\r\n\r\n" +
		"--changesetresponse_1\r\nContent-Type: application/http\r\n\r\nHTTP/1.1 204 No Content\r\nContent-ID: 1\r\nETag: W/\"a\"\r\n\r\n\r\n" +
		"--changesetresponse_1\r\nContent-Type: application/http\r\n\r\nHTTP/1.1 409 Conflict\r\nContent-ID: 2\r\nx-ms-error-code: EntityAlreadyExists\r\n\r\n{\"odata.error\":{}}\r\n" +
		"--changesetresponse_1--\r\n--batchresponse_1--\r\n"
	parts, err := parseMultipart([]byte(changeset))
	if err != nil || len(parts) != 2 {
		t.Fatalf("changeset: %d parts, %v", len(parts), err)
	}
	if p := parts[0]; p.status != 204 || p.etag != `W/"a"` || p.contentID != "1" || p.errorCode != "" {
		t.Errorf("part 0: %+v", p)
	}
	if p := parts[1]; p.status != 409 || p.contentID != "2" || p.errorCode != "EntityAlreadyExists" || string(p.body) != `{"odata.error":{}}` {
		t.Errorf("part 1: %+v (body %q)", p, p.body)
	}

	whole := "--batchresponse_2\r\nContent-Type: application/http\r\n\r\nHTTP/1.1 400 Bad Request\r\nx-ms-error-code: InvalidInput\r\n\r\n{\"odata.error\":{}}\r\n--batchresponse_2--\r\n"
	parts, err = parseMultipart([]byte(whole))
	if err != nil || len(parts) != 1 {
		t.Fatalf("whole-batch answer: %d parts, %v", len(parts), err)
	}
	if p := parts[0]; p.status != 400 || p.errorCode != "InvalidInput" || string(p.body) != `{"odata.error":{}}` {
		t.Errorf("whole-batch answer: %+v (body %q)", p, p.body)
	}

	if _, err := parseMultipart([]byte("--batchresponse_3\r\nContent-Type: application/http\r\n\r\nnot a status line\r\n--batchresponse_3--\r\n")); err == nil {
		t.Error("a whole-batch answer without a status line is read without an error")
	}
}

// TestParseMultipartRefusesMalformedAnswers: an answer cut short inside a
// changeset part, or whose changeset boundary is empty (RFC 2046: a
// boundary has 1 to 70 characters), is refused as malformed, without a
// panic, rather than read as fewer parts than were sent.
func TestParseMultipartRefusesMalformedAnswers(t *testing.T) {
	for name, answer := range map[string]string{
		"cut short": "--batchresponse_1\r\nContent-Type: multipart/mixed; boundary=changesetresponse_1\r\n\r\n" +
			"--changesetresponse_1\r\nContent-Type: application/http\r\n\r\nHTTP/1.1 204 No Content\r\n",
		"empty boundary": "--b\r\nContent-Type: multipart/mixed; boundary=\r\n\r\n" +
			"--\r\nContent-Type: application/http\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n\r\n----\r\n--b--\r\n",
		"empty boundary before a parameter": "--b\r\nContent-Type: multipart/mixed; boundary=;charset=utf-8\r\n\r\n" +
			"--\r\nContent-Type: application/http\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n\r\n----\r\n--b--\r\n",
	} {
		parts, err := parseMultipart([]byte(answer))
		if err != errBadAnswer {
			t.Errorf("%s: %d parts, err %v; want errBadAnswer", name, len(parts), err)
		}
	}
}
