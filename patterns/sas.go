package patterns

import (
	"time"

	"github.com/tablekit/tablekit/sas"
)

// KeyRange bounds what a table SAS reaches: sas.KeyRange, kept here for
// callers of TableSAS; new code uses package sas.
type KeyRange = sas.KeyRange

// SASPermissions of a table SAS: sas.TablePermissions, kept here for
// callers of TableSAS.
type SASPermissions = sas.TablePermissions

// SASVersion is the service version table tokens are signed for:
// sas.TableVersion.
const SASVersion = sas.TableVersion

// ErrBadSAS is sas.ErrBadSAS: a SAS request that cannot make a working
// token (the same value, so errors.Is matches either).
var ErrBadSAS = sas.ErrBadSAS

// TableSAS builds a service SAS for one table restricted to a key range
// ("Control access with Shared Access Signatures"). It forwards to
// sas.Table, which new code uses directly: it adds IP ranges, protocols
// and stored access policies. (Not marked Deprecated yet: callers in the
// conformance suite still use it.)
func TableSAS(accountName, accountKey, tableName string, perms SASPermissions, start, expiry time.Time, r KeyRange) (string, error) {
	v := sas.Table{Table: tableName, Permissions: perms, Start: start, Expiry: expiry, KeyRange: r}
	// The request first, as before the move: a bad request is named even
	// when the credential is bad too.
	if err := v.Validate(); err != nil {
		return "", err
	}
	c, err := sas.NewCredential(accountName, accountKey)
	if err != nil {
		return "", err
	}
	return v.Sign(c)
}
