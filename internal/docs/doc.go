// Package docs holds the tests that keep docs/reference in step with the code: the
// tables of conditions, Events, metrics and exit codes are checked against the code's
// constants, and the field reference is generated from the CRDs' schemas
// (go test ./internal/docs -run TestFieldReference -update).
package docs
