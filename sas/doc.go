// Package sas builds shared access signatures for the Table, Queue and
// Blob services and for the account, and manages the stored access
// policies that tokens may reference ("Control access with Shared Access
// Signatures" in the Table design guide; the REST reference's "Create a
// service SAS", "Create an account SAS" and "Define a stored access
// policy").
//
// Every builder is a struct of typed values (permissions, key ranges, an
// IP range, HTTPS only or not, start and expiry, a signed identifier) whose Sign
// method checks the whole request before anything is signed and returns
// the token as a URL query string, ready to append to the resource's URL
// after a '?'. A bad request returns an error matching ErrBadSAS that also
// carries a *table.InputError naming the field and the rule.
//
// The signatures are the documented HMAC-SHA256 of the documented string
// to sign, the same as the official SDK signers compute for the same
// inputs (the package's tests compare them byte for byte). What this
// package adds is one builder for all three services, validation before
// signing, and the table key range the SDK (aztables v1.4.1) signs but
// leaves out of the token it encodes.
package sas
