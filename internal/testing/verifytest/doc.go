// Package verifytest holds the test of the service controller's periodic
// verification (Options.VerifyPeriod): a controller run in process with
// short periods against its own API server and emulated cloud, since the
// shared CCM of the service tests runs with the production periods.
package verifytest
