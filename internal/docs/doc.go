// Package docs holds the tests that keep the docs in step with the code and with
// themselves: the tables of docs/reference (conditions, Events, metrics and exit codes)
// are checked against the code's constants, the field reference is generated from the
// CRDs' schemas (go test ./internal/docs -run TestFieldReference -update), and every
// relative link of the markdown files must lead to a file and heading that exist.
package docs
