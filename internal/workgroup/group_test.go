package workgroup_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/workgroup"
)

func TestWaitReturnsNilWhenNothingFailed(t *testing.T) {
	var group workgroup.Group
	assert.NoError(t, group.Wait(), "no goroutine")
	for range 4 {
		group.Go(func() error { return nil })
	}
	assert.NoError(t, group.Wait())
}

func TestWaitReturnsEveryError(t *testing.T) {
	errOdd := errors.New("odd")
	var group workgroup.Group
	for i := range 6 {
		group.Go(func() error {
			if i%2 == 1 {
				return fmt.Errorf("goroutine %d: %w", i, errOdd)
			}
			return nil
		})
	}
	err := group.Wait()
	require.ErrorIs(t, err, errOdd)
	for _, want := range []string{"goroutine 1: odd", "goroutine 3: odd", "goroutine 5: odd"} {
		assert.Contains(t, err.Error(), want)
	}
	assert.NotContains(t, err.Error(), "goroutine 0")
}
