// Package apishape holds, in its test, the one check of the API shape of
// tablekit's public packages: every exported function or method that takes
// a context first ends with a *XxxOptions parameter (nil = defaults), as
// the Azure SDK for Go does, so that options can grow without breaking
// callers. The package has no code of its own.
package apishape
