package redlock

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/redistest"
)

// testServerError stands for a server's error reply (resp.ServerError) in
// these tests.
type testServerError struct{ message string }

func (e *testServerError) Error() string { return e.message }

func TestQuorumErrorMatching(t *testing.T) {
	timeout := fmt.Errorf("read: %w", os.ErrDeadlineExceeded)
	wrongType := &testServerError{message: "WRONGTYPE Operation against a key holding the wrong kind of value"}
	nodes := []NodeResult{
		{Address: "127.0.0.1:1", Outcome: OutcomeConfirmed, Latency: time.Millisecond},
		{Address: "127.0.0.1:2", Outcome: OutcomeTimeout, Err: timeout, Latency: 50 * time.Millisecond},
		{Address: "127.0.0.1:3", Outcome: OutcomeError, Err: fmt.Errorf("%w: %w", ErrConfig, wrongType)},
	}
	sentinels := []error{ErrNotAcquired, ErrLockLost, ErrQuorumUnreachable, ErrConfig, os.ErrDeadlineExceeded, ErrClosed, ErrInvalidOptions, ErrDuplicateNode, context.Canceled}
	tests := []struct {
		name        string
		operation   Operation
		unreachable bool
		nodes       []NodeResult
		matches     []error
	}{
		{name: "lock", operation: OperationLock, nodes: nodes, matches: []error{ErrNotAcquired, ErrConfig, os.ErrDeadlineExceeded}},
		{name: "resume", operation: OperationResume, nodes: nodes, matches: []error{ErrNotAcquired, ErrConfig, os.ErrDeadlineExceeded}},
		{name: "extend", operation: OperationExtend, nodes: nodes, matches: []error{ErrLockLost, ErrConfig, os.ErrDeadlineExceeded}},
		{name: "unlock", operation: OperationUnlock, nodes: nodes, matches: []error{ErrLockLost, ErrConfig, os.ErrDeadlineExceeded}},
		{name: "lock unreachable", operation: OperationLock, unreachable: true, nodes: nodes, matches: []error{ErrNotAcquired, ErrQuorumUnreachable, ErrConfig, os.ErrDeadlineExceeded}},
		{name: "unlock unreachable", operation: OperationUnlock, unreachable: true, nodes: nodes, matches: []error{ErrLockLost, ErrQuorumUnreachable, ErrConfig, os.ErrDeadlineExceeded}},
		{name: "refusals only", operation: OperationLock, nodes: []NodeResult{{Address: "a", Outcome: OutcomeHeld}, {Address: "b", Outcome: OutcomeMissing}}, matches: []error{ErrNotAcquired}},
		{name: "context error of a node", operation: OperationExtend, nodes: []NodeResult{{Address: "a", Outcome: OutcomeNotSent, Err: context.Canceled}}, matches: []error{ErrLockLost, context.Canceled}},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			var err error = &QuorumError{Operation: test.operation, Key: "k", Got: 1, Need: 2, Nodes: test.nodes, Unreachable: test.unreachable}
			wrapped := fmt.Errorf("outer: %w", err)
			for _, sentinel := range sentinels {
				want := false
				for _, match := range test.matches {
					want = want || match == sentinel
				}
				assert.Equal(t, want, errors.Is(err, sentinel), "errors.Is(err, %v)", sentinel)
				assert.Equal(t, want, errors.Is(wrapped, sentinel), "errors.Is(wrapped, %v)", sentinel)
			}

			var quorumError *QuorumError
			require.True(t, errors.As(wrapped, &quorumError))
			assert.Equal(t, test.operation, quorumError.Operation)

			var nodeResult *NodeResult
			assert.Equal(t, len(quorumError.Unwrap()) > 0, errors.As(err, &nodeResult))
			var serverError *testServerError
			assert.Equal(t, errors.Is(err, ErrConfig), errors.As(err, &serverError))
			if serverError != nil {
				assert.Same(t, wrongType, serverError)
			}
		})
	}
}

func TestQuorumErrorUnwrap(t *testing.T) {
	err := &QuorumError{Nodes: []NodeResult{
		{Address: "a", Outcome: OutcomeConfirmed},
		{Address: "b", Outcome: OutcomeError, Err: io.ErrUnexpectedEOF},
		{Address: "c", Outcome: OutcomeHeld},
		{Address: "d", Outcome: OutcomeTimeout, Err: os.ErrDeadlineExceeded},
	}}
	unwrapped := err.Unwrap()
	require.Len(t, unwrapped, 2)
	assert.Same(t, &err.Nodes[1], unwrapped[0])
	assert.Same(t, &err.Nodes[3], unwrapped[1])
	assert.Empty(t, (&QuorumError{}).Unwrap())
}

func TestQuorumErrorMessage(t *testing.T) {
	tests := []struct {
		name string
		err  *QuorumError
		want string
	}{
		{
			name: "lock",
			err: &QuorumError{Operation: OperationLock, Key: "orders:1", Got: 2, Need: 3, Nodes: []NodeResult{
				{Address: "127.0.0.1:1", Outcome: OutcomeHeld, Latency: time.Millisecond},
				{Address: "127.0.0.1:2", Outcome: OutcomeTimeout, Err: os.ErrDeadlineExceeded, Latency: 50*time.Millisecond + 123456},
				{Address: "127.0.0.1:3", Outcome: OutcomeConfirmed},
				{Address: "127.0.0.1:4", Outcome: OutcomeConfirmed},
				{Address: "127.0.0.1:5", Outcome: OutcomeMissing},
			}},
			want: `redlock: lock "orders:1" not acquired: 2 of 5 nodes, need 3 (127.0.0.1:1: held by another; 127.0.0.1:2: timeout after 50.123ms; 127.0.0.1:5: missing or expired)`,
		},
		{
			name: "extend unreachable",
			err: &QuorumError{Operation: OperationExtend, Key: "a\"b", Got: 1, Need: 2, Unreachable: true, Nodes: []NodeResult{
				{Address: "n1", Outcome: OutcomeConfirmed},
				{Address: "n2", Outcome: OutcomeError, Err: &testServerError{message: "LOADING Redis is loading the dataset in memory"}},
				{Address: "n3", Outcome: OutcomeNotSent, Err: errors.New("conn: not connected")},
			}},
			want: `redlock: lock "a\"b" not extended: 1 of 3 nodes, need 2, quorum unreachable (n2: LOADING Redis is loading the dataset in memory; n3: not sent: conn: not connected)`,
		},
		{
			name: "unlock without details",
			err:  &QuorumError{Operation: OperationUnlock, Key: "k", Got: 1, Need: 1, Nodes: []NodeResult{{Address: "n1", Outcome: OutcomeConfirmed}}},
			want: `redlock: lock "k" not released: 1 of 1 nodes, need 1`,
		},
		{
			name: "resume with an error outcome and no error",
			err:  &QuorumError{Operation: OperationResume, Key: "k", Need: 1, Nodes: []NodeResult{{Address: "n1", Outcome: OutcomeError}, {Address: "n2", Outcome: OutcomeNotSent}}},
			want: `redlock: lock "k" not resumed: 0 of 2 nodes, need 1 (n1: error; n2: not sent)`,
		},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			assert.Equal(t, test.want, test.err.Error())
		})
	}
}

func TestNodeErrorMessage(t *testing.T) {
	err := &NodeResult{Address: "10.0.0.1:6379", Outcome: OutcomeTimeout, Err: os.ErrDeadlineExceeded, Latency: 50 * time.Millisecond}
	assert.Equal(t, "redlock: node 10.0.0.1:6379: timeout after 50ms", err.Error())
	assert.ErrorIs(t, err, os.ErrDeadlineExceeded)

	confirmed := &NodeResult{Address: "n", Outcome: OutcomeConfirmed}
	assert.Equal(t, "redlock: node n: confirmed", confirmed.Error())
	assert.NoError(t, confirmed.Unwrap())
}

func TestOperationAndOutcomeNames(t *testing.T) {
	tests := []struct {
		name string
		got  fmt.Stringer
		want string
	}{
		{name: "lock", got: OperationLock, want: "lock"},
		{name: "extend", got: OperationExtend, want: "extend"},
		{name: "unlock", got: OperationUnlock, want: "unlock"},
		{name: "resume", got: OperationResume, want: "resume"},
		{name: "subscribe", got: OperationSubscribe, want: "subscribe"},
		{name: "unknown operation", got: Operation(9), want: "Operation(9)"},
		{name: "confirmed", got: OutcomeConfirmed, want: "confirmed"},
		{name: "held", got: OutcomeHeld, want: "held"},
		{name: "missing", got: OutcomeMissing, want: "missing"},
		{name: "error", got: OutcomeError, want: "error"},
		{name: "timeout", got: OutcomeTimeout, want: "timeout"},
		{name: "not sent", got: OutcomeNotSent, want: "not sent"},
		{name: "unknown outcome", got: Outcome(42), want: "Outcome(42)"},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			assert.Equal(t, test.want, test.got.String())
		})
	}
	assert.Equal(t, `redlock: lock "k" Operation(9) failed: 0 of 0 nodes, need 1`, (&QuorumError{Operation: 9, Key: "k", Need: 1}).Error())
}

// The error replies that retrying cannot fix are told by their code, and
// the ACL's refusals of a command a script calls, whose code is ERR, by
// their message, as Redis 7.0 and 7.2 word it.
func TestConfigErrors(t *testing.T) {
	tests := []struct {
		reply string
		want  bool
	}{
		{reply: "NOAUTH Authentication required.", want: true},
		{reply: "WRONGPASS invalid username-password pair or user is disabled.", want: true},
		{reply: "NOPERM this user has no permissions to run the 'set' command", want: true},
		{reply: "WRONGTYPE Operation against a key holding the wrong kind of value", want: true},
		{reply: "READONLY You can't write against a read only replica.", want: true},
		{reply: "MOVED 3999 127.0.0.1:6381", want: true},
		{reply: "ASK 3999 127.0.0.1:6381", want: true},
		{reply: "CLUSTERDOWN The cluster is down", want: true},
		{reply: "ERR The user executing the script can't run this command or subcommand script: 3a4b…, on @user_script:2.", want: true},
		{reply: "ERR ACL failure in script: No permissions to access a key script: 3a4b…, on @user_script:2.", want: true},
		{reply: "LOADING Redis is loading the dataset in memory", want: false},
		{reply: "TRYAGAIN Multiple keys request during rehashing of slot", want: false},
		{reply: "BUSY Redis is busy running a script.", want: false},
		{reply: "OOM command not allowed when used memory > 'maxmemory'.", want: false},
		{reply: "NOSCRIPT No matching script. Please use EVAL.", want: false},
		{reply: "ERR Error running script (call to f_3a4b…): @user_script:2: user_script:2: attempt to compare nil with number", want: false},
	}
	for _, test := range tests {
		t.Run(test.reply, func(t *testing.T) {
			assert.Equal(t, test.want, isConfigError(test.reply))
		})
	}
}

// The transport's failures match ErrNodeUnreachable, so that a user can
// tell them from the nodes' answers without importing the transport: a
// node that is down, one that is too slow, and not a node's error reply.
func TestTransportFailuresMatchErrNodeUnreachable(t *testing.T) {
	redistest.RequireReal(t)
	nodes := startCluster(t, 3, redistest.Options{})
	client := nodes.client(t, Options{NodeTimeout: 30 * time.Millisecond})
	ctx := context.Background()
	client.do(t, 0, "HSET", "wrong", "field", "value") // WRONGTYPE for the script's GET
	nodes.servers[1].Shutdown()
	nodes.servers[2].Stop()
	defer nodes.servers[2].Cont()

	err := client.NewMutex("wrong", MutexOptions{Keys: []string{"other"}}).TryLock(ctx)
	require.ErrorIs(t, err, ErrNotAcquired)
	assert.ErrorIs(t, err, ErrNodeUnreachable)
	var quorumError *QuorumError
	require.ErrorAs(t, err, &quorumError)
	// The connection to the node that shut down fails on the round's
	// write or read, or was already found closed.
	assert.Contains(t, []Outcome{OutcomeNotSent, OutcomeError}, quorumError.Nodes[1].Outcome)
	assert.Equal(t, OutcomeTimeout, quorumError.Nodes[2].Outcome)
	for i, node := range quorumError.Nodes {
		assert.Equal(t, i > 0, errors.Is(&node, ErrNodeUnreachable), "node %d: %v", i, node.Err)
	}
	assert.ErrorIs(t, &quorumError.Nodes[0], ErrConfig, "WRONGTYPE is the node's answer")
	assert.ErrorIs(t, &quorumError.Nodes[2], os.ErrDeadlineExceeded)
}
