// Package apishape finds the exported context-taking functions and methods
// of tablekit's public packages (Discover), for the tests that must cover
// each of them, and holds, in its test, the one check of the API shape of
// tablekit's public packages: every exported function or method that takes
// a context first ends with a *XxxOptions parameter (nil = defaults), as
// the Azure SDK for Go does, so that options can grow without breaking
// callers. internal/redact's proof calls each function Discover finds.
package apishape
