package bench

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// createAttempts bounds how often a create the API server timed out or
// refused for load is sent again.
const createAttempts = 5

// createRetrying runs create until it succeeds, fails for a reason other
// than the API server's load, or createAttempts are spent. At W4's sizes on
// a loaded 2-core machine the API server answers some of 10,000 creates
// with a timeout; one such answer must not end a 20-minute run. An
// AlreadyExists after a timed-out attempt is success: that attempt landed.
func createRetrying(ctx context.Context, create func(context.Context) error) error {
	var err error
	for attempt := 1; attempt <= createAttempts; attempt++ {
		err = create(ctx)
		switch {
		case err == nil:
			return nil
		case attempt > 1 && apierrors.IsAlreadyExists(err):
			return nil
		case !apierrors.IsTimeout(err) && !apierrors.IsServerTimeout(err) && !apierrors.IsTooManyRequests(err):
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Duration(attempt) * time.Second):
		}
	}
	return err
}
