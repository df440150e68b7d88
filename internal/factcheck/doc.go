// Package factcheck holds only a test: it crosses the emulator's API
// facts (internal/emulator/facts) with the CCM's (the CloudFacts of
// internal/ccm/annotations) value by value. The two tables are kept apart
// on purpose, so that a wrong rule is not accepted by both sides at once;
// this test is the one place that imports both.
package factcheck
