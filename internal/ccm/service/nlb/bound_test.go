package nlb_test

import "github.com/alicloud-ccm/alicloud-ccm/internal/testing/ccmtest"

// The provider tests bind their requests with the helpers every provider
// shares.
var (
	ensureBound = ccmtest.EnsureBound
	syncBound   = ccmtest.SyncBound
	deleteBound = ccmtest.DeleteBound
	withENIs    = ccmtest.WithENIs
)
