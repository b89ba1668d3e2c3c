package otel

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/lockmux/lockmux/redlock"
)

// error.type names the cause of a failed operation from a short list; a
// QuorumError is named by its operation even when a node's error matches
// a context's, and a wrapped one gives way to the caller's context.
func TestErrorType(t *testing.T) {
	timedOut := redlock.NodeResult{Address: "127.0.0.1:1", Outcome: redlock.OutcomeNotSent, Err: context.DeadlineExceeded}
	refused := &redlock.QuorumError{Operation: redlock.OperationLock, Got: 1, Need: 2, Nodes: []redlock.NodeResult{timedOut}}
	lost := &redlock.QuorumError{Operation: redlock.OperationUnlock, Got: 0, Need: 2}
	for _, c := range []struct {
		err  error
		want string
	}{
		{err: refused, want: "not_acquired"},
		{err: &redlock.QuorumError{Operation: redlock.OperationResume}, want: "not_acquired"},
		{err: &redlock.QuorumError{Operation: redlock.OperationExtend}, want: "lock_lost"},
		{err: lost, want: "lock_lost"},
		{err: &redlock.QuorumError{Operation: redlock.OperationLock, Unreachable: true}, want: "quorum_unreachable"},
		{err: fmt.Errorf("redlock: unlock: %w: the release goes on unconfirmed: %w", context.Canceled, lost), want: "canceled"},
		{err: fmt.Errorf("redlock: lock: %w: %w", context.DeadlineExceeded, refused), want: "deadline_exceeded"},
		{err: fmt.Errorf("%w: %w", redlock.ErrLockLost, redlock.ErrClosed), want: "closed"},
		{err: fmt.Errorf("%w: the validity ended", redlock.ErrLockLost), want: "lock_lost"},
		{err: fmt.Errorf("%w: the validity ended", redlock.ErrNotAcquired), want: "not_acquired"},
		{err: redlock.ErrDuplicateNode, want: "duplicate_node"},
		{err: errors.New("something else"), want: "_OTHER"},
	} {
		assert.Equal(t, c.want, errorType(c.err), c.err.Error())
	}
}
