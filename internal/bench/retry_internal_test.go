package bench

import (
	"context"
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestCreateRetrying(t *testing.T) {
	gr := schema.GroupResource{Resource: "services"}
	timeout := apierrors.NewTimeoutError("request did not complete within requested timeout", 0)
	exists := apierrors.NewAlreadyExists(gr, "w4-0001")
	invalid := apierrors.NewBadRequest("bad")
	for _, tc := range []struct {
		name    string
		answers []error
		calls   int
		wantErr bool
	}{
		{"first succeeds", []error{nil}, 1, false},
		{"timeout then success", []error{timeout, nil}, 2, false},
		{"timeout then already exists: the first landed", []error{timeout, exists}, 2, false},
		{"already exists at once is an error", []error{exists}, 1, true},
		{"other errors are not retried", []error{invalid}, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			err := createRetrying(context.Background(), func(context.Context) error {
				calls++
				return tc.answers[calls-1]
			})
			if (err != nil) != tc.wantErr || calls != tc.calls {
				t.Errorf("err %v after %d calls; want error %v after %d", err, calls, tc.wantErr, tc.calls)
			}
		})
	}
	t.Run("cancelled while waiting", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		err := createRetrying(ctx, func(context.Context) error { return timeout })
		if !errors.Is(err, timeout) && !apierrors.IsTimeout(err) {
			t.Errorf("err %v, want the timeout", err)
		}
	})
}
