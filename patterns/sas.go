package patterns

import (
	"time"

	"github.com/tablekit/tablekit/sas"
)

// KeyRange bounds what a table SAS reaches.
//
// Deprecated: use sas.KeyRange; this alias keeps old callers compiling.
type KeyRange = sas.KeyRange

// SASPermissions of a table SAS.
//
// Deprecated: use sas.TablePermissions.
type SASPermissions = sas.TablePermissions

// SASVersion is the service version table tokens are signed for.
//
// Deprecated: use sas.TableVersion.
const SASVersion = sas.TableVersion

// ErrBadSAS is sas.ErrBadSAS: a SAS request that cannot make a working token.
//
// Deprecated: use sas.ErrBadSAS.
var ErrBadSAS = sas.ErrBadSAS

// TableSAS builds a service SAS for one table restricted to a key range.
//
// Deprecated: use sas.Table, which adds IP ranges, protocols and stored
// access policies; TableSAS forwards to it.
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
