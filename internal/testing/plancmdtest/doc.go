// Package plancmdtest runs the `plan` command against a real API server and
// the emulated cloud: a converged cluster plans no writes, and a changed
// one plans exactly the writes the CCM then makes.
package plancmdtest
