package fake

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/tablekit/tablekit/keys"
)

// checkSAS enforces a table service SAS the way the service documents it:
// the signature (when the fake knows the account key), expiry, the table,
// the permissions of the operation, and the key range. Azurite checks the
// first four but not the key range; the fake checks all five.
func (s *TableService) checkSAS(op Operation, tg target, h http.Header, q url.Values) *svcError {
	deny := func(code, msg string) *svcError { return errf(http.StatusForbidden, code, "%s", msg) }
	if s.opts.AccountKey != "" {
		key, _ := base64.StdEncoding.DecodeString(s.opts.AccountKey)
		toSign := strings.Join([]string{q.Get("sp"), q.Get("st"), q.Get("se"),
			"/table/" + s.opts.AccountName + "/" + strings.ToLower(q.Get("tn")), q.Get("si"), q.Get("sip"), q.Get("spr"), q.Get("sv"),
			q.Get("spk"), q.Get("srk"), q.Get("epk"), q.Get("erk")}, "\n")
		mac := hmac.New(sha256.New, key)
		mac.Write([]byte(toSign))
		if !hmac.Equal([]byte(base64.StdEncoding.EncodeToString(mac.Sum(nil))), []byte(q.Get("sig"))) {
			return deny("AuthenticationFailed", "Server failed to authenticate the request. Make sure the value of Authorization header is formed correctly including the signature.")
		}
	}
	if se, err := time.Parse("2006-01-02T15:04:05Z", q.Get("se")); err != nil || !s.opts.Now().Before(se) {
		return deny("AuthenticationFailed", "Signed expiry time has passed or is malformed.")
	}
	if tg.table != "" && !strings.EqualFold(tg.table, q.Get("tn")) {
		return deny("AuthorizationResourceTypeMismatch", "This request is not authorized to perform this operation on this table.")
	}
	need := map[Operation]string{OpGetEntity: "r", OpQueryEntities: "r", OpInsertEntity: "a", OpDeleteEntity: "d", OpUpdateEntity: "u", OpMergeEntity: "u"}[op]
	if (op == OpUpdateEntity || op == OpMergeEntity) && h.Get("If-Match") == "" {
		need = "au" // an upsert may insert: it needs both
	}
	if need == "" || strings.ContainsFunc(need, func(c rune) bool { return !strings.ContainsRune(q.Get("sp"), c) }) {
		return deny("AuthorizationPermissionMismatch", "This request is not authorized to perform this operation using this permission.")
	}
	return nil
}

// checkBatchSAS applies a SAS to every operation of a transaction: the
// service authorizes the whole request, so one operation the token may
// not do refuses it all with 403, before anything is written.
func (s *TableService) checkBatchSAS(q url.Values, ops []batchOp) *svcError {
	for _, o := range ops {
		if o.op == "" {
			continue // reported as the transaction's own error
		}
		if serr := s.checkSAS(o.op, o.tg, o.header, q); serr != nil {
			return serr
		}
		if !inSASRange(q, o.pk, o.rk) {
			return errf(http.StatusForbidden, "AuthorizationFailure", "This request is not authorized to perform this operation: an entity is outside the SAS key range.")
		}
	}
	return nil
}

// inSASRange reports whether (pk, rk) lies in the token's key range.
func inSASRange(q url.Values, pk, rk string) bool {
	spk, srk, epk, erk := q.Get("spk"), q.Get("srk"), q.Get("epk"), q.Get("erk")
	if spk != "" {
		if c := keys.Compare(pk, spk); c < 0 || (c == 0 && srk != "" && keys.Compare(rk, srk) < 0) {
			return false
		}
	}
	if epk != "" {
		if c := keys.Compare(pk, epk); c > 0 || (c == 0 && erk != "" && keys.Compare(rk, erk) > 0) {
			return false
		}
	}
	return true
}
