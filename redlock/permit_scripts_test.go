package redlock

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockmux/lockmux/internal/redistest"
	"github.com/lockmux/lockmux/redlock/internal/protocol"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// protocol.AcquirePermit.Source() sets the first free candidate and says which; when
// every candidate is held, it says when the first frees.
func TestAcquirePermitScript(t *testing.T) {
	keys := []string{"sem:permit:2", "sem:permit:0", "sem:permit:1"}
	tests := []struct {
		name   string
		states []setupState
		want   any
	}{
		{name: "all free", states: []setupState{stateMissing, stateMissing, stateMissing}, want: "0"},
		{name: "first held", states: []setupState{stateOther, stateMissing, stateMissing}, want: "1"},
		{name: "first two held, one expired", states: []setupState{stateOther, stateOurs, stateExpired}, want: "2"},
		{name: "all held", states: []setupState{stateOther, stateOurs, stateOther}, want: int64(10000)},
		{name: "all held, one without a TTL", states: []setupState{statePersistent, stateOther, stateOther}, want: int64(10000)},
		{name: "all held without a TTL", states: []setupState{statePersistent, statePersistent, statePersistent}, want: int64(-1)},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			server, client := scriptServer(t)
			for i, key := range keys {
				prepare(t, server, client, key, test.states[i])
			}
			before := map[string]string{}
			for _, key := range keys {
				before[key], _ = server.Get(key)
			}
			reply := client.eval(t, protocol.AcquirePermit.Source(), keys, ourToken, "5000")
			assert.Equal(t, test.want, reply)
			for i, key := range keys {
				value, _ := server.Get(key)
				if position, ok := reply.(string); ok && position == string(rune('0'+i)) {
					assert.Equal(t, ourToken, value, "the slot set")
					assert.Equal(t, 5*time.Second, server.TTL(key))
					continue
				}
				assert.Equal(t, before[key], value, "%s untouched", key)
			}
		})
	}
}

// A fenced permit whose slot's counter is not an integer fails with
// ErrFenceCounter, and leaves no key behind, as a Mutex's does.
func TestFencedPermitCounterThatIsNotAnIntegerIsAnError(t *testing.T) {
	nodes := startCluster(t, 3, redistest.Options{})
	client := nodes.client(t, Options{})
	ctx := context.Background()
	options := MutexOptions{TTL: 10 * time.Second, Fencing: true}
	semaphore := client.NewSemaphore("bad-counter", 2, options)
	held, err := nodes.client(t, Options{}).NewSemaphore("bad-counter", 2, options).TryAcquire(ctx)
	require.NoError(t, err)
	defer held.Release(ctx)
	free := 1 - held.Slot()
	for node := range nodes.servers {
		client.do(t, node, "SET", permitKey("bad-counter", free)+fenceKeySuffix, "abc")
	}
	semaphore.next.Store(uint32(held.Slot())) // the one-round attempt comes second
	_, err = semaphore.TryAcquire(ctx)
	require.ErrorIs(t, err, ErrFenceCounter)
	assert.True(t, semaphore.crowded.Load(), "the one-round attempt was made")
	assert.Contains(t, err.Error(), permitKey("bad-counter", free)+fenceKeySuffix)
	assert.Equal(t, repeat("", 3), client.values(t, permitKey("bad-counter", free)), "no key left behind")
	var failure *QuorumError
	assert.True(t, errors.As(err, &failure))
}
