package redlock

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/redistest"
)

// Issue 13, item 14: a Mutex over [A, B] and a Mutex over [B] fence B from
// the same counter. A multi-key hold's fence is above every key's counter
// and is committed to every key's counter (DESIGN §6.2), so the fences of
// each resource strictly increase, whatever set of keys locked it.
func TestFencesIncreasePerKeyWhateverKeysLockedIt(t *testing.T) {
	nodes := startCluster(t, 3, redistest.Options{})
	client := nodes.client(t, Options{})
	ctx := context.Background()
	mutexes := map[string]*Mutex{}
	mutex := func(keys string) *Mutex {
		if m, found := mutexes[keys]; found {
			return m
		}
		all := strings.Split(keys, "+")
		m := client.NewMutex(all[0], MutexOptions{Fencing: true, Keys: all[1:]})
		mutexes[keys] = m
		return m
	}
	holds := []string{"B", "B", "B", "B", "B", "A+B", "B", "A", "A", "A", "A+B", "B+C", "C", "B", "C+A", "A+B"}
	newest := map[string]int64{}   // key → the fence of its last hold
	fences := map[string][]int64{} // key → the fences of its holds, in order
	for i, keys := range holds {
		m := mutex(keys)
		require.NoError(t, m.Lock(ctx), "hold %d of %s", i, keys)
		fence := m.Fence()
		for key := range strings.SplitSeq(keys, "+") {
			fences[key] = append(fences[key], fence)
			assert.Greater(t, fence, newest[key], "hold %d of %s: fence of %s not above its last one (fences of %s: %v)", i, keys, key, key, fences[key])
			newest[key] = fence
			committed := 0
			for node := range nodes.servers {
				if string(client.do(t, node, "GET", key+fenceKeySuffix).Str) == strconv.FormatInt(fence, 10) {
					committed++
				}
			}
			assert.GreaterOrEqual(t, committed, 2, "hold %d of %s: fence %d committed to the counter of %s on a quorum", i, keys, fence, key)
		}
		require.NoError(t, m.Unlock(ctx))
	}
}

// Issue 13, item 16: a fencing counter that is not an integer is an error
// that names the counter, retrying cannot fix it, and the node keeps no
// lock key from the attempt (the script used to return nil, counted as
// "held", and left the key it had just set).
func TestFenceCounterThatIsNotAnIntegerIsAnError(t *testing.T) {
	nodes := startCluster(t, 3, redistest.Options{})
	client := nodes.client(t, Options{})
	for _, bad := range []string{"abc", "-4", "1.5", "007", " 12", "9223372036854775808"} {
		t.Run(bad, func(t *testing.T) {
			for node := range nodes.servers {
				client.do(t, node, "SET", "resource"+fenceKeySuffix, bad)
			}
			m := client.NewMutex("resource", MutexOptions{Fencing: true})
			err := m.TryLock(context.Background())
			require.ErrorIs(t, err, ErrFenceCounter)
			assert.ErrorIs(t, err, ErrConfig)
			assert.Contains(t, err.Error(), "resource"+fenceKeySuffix)
			assert.Equal(t, repeat("", 3), client.values(t, "resource"), "no lock key left behind")

			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			err = m.Lock(ctx)
			require.ErrorIs(t, err, ErrFenceCounter)
			assert.ErrorIs(t, err, ErrQuorumUnreachable)
			assert.NoError(t, ctx.Err(), "Lock did not retry until its context ended")
			assert.Equal(t, repeat("", 3), client.values(t, "resource"), "no lock key left behind")
		})
	}
}

// Issue 13, item 16: one node with a broken counter does not stop a
// quorum of good ones, and keeps no lock key.
func TestFenceCounterThatIsNotAnIntegerOnOneNode(t *testing.T) {
	nodes := startCluster(t, 3, redistest.Options{})
	client := nodes.client(t, Options{})
	client.do(t, 0, "SET", "resource"+fenceKeySuffix, "abc")
	client.do(t, 1, "SET", "resource"+fenceKeySuffix, "7")
	m := client.NewMutex("resource", MutexOptions{Fencing: true})
	require.NoError(t, m.Lock(context.Background()))
	assert.Equal(t, int64(8), m.Fence())
	values := client.values(t, "resource")
	assert.Equal(t, []string{"", m.Token(), m.Token()}, values, "the node with the broken counter keeps no key")
	require.NoError(t, m.Unlock(context.Background()))
}

// Issue 13, item 16: counters are exact integers up to the largest int64.
// A Lua number is a double: it cannot tell 2^53 from 2^53+1, and gave a
// fence equal to the counter it had to exceed.
func TestFenceCountersAreExactBeyond2To53(t *testing.T) {
	nodes := startCluster(t, 3, redistest.Options{})
	client := nodes.client(t, Options{})
	tests := []struct {
		name     string
		counters []string
		want     int64
	}{
		{name: "2^53+1 everywhere", counters: []string{"9007199254740993", "9007199254740993", "9007199254740993"}, want: 9007199254740994},
		{name: "largest one digit apart", counters: []string{"9007199254740994", "9007199254740995", "9007199254740993"}, want: 9007199254740996},
		{name: "one below the largest int64", counters: []string{"9223372036854775806", "0", "12"}, want: 9223372036854775807},
	}
	for i, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			key := "exact" + strconv.Itoa(i)
			for node, counter := range test.counters {
				client.do(t, node, "SET", key+fenceKeySuffix, counter)
			}
			m := client.NewMutex(key, MutexOptions{Fencing: true})
			require.NoError(t, m.Lock(context.Background()))
			assert.Equal(t, test.want, m.Fence())
			committed := 0
			for _, counter := range client.values(t, key+fenceKeySuffix) {
				if counter == strconv.FormatInt(test.want, 10) {
					committed++
				}
			}
			assert.GreaterOrEqual(t, committed, 2, "the fence is committed exactly on a quorum")
			require.NoError(t, m.Unlock(context.Background()))
		})
	}
}

// Issue 13, item 16: a counter at the largest int64 has no next fence: the
// acquisition fails with ErrFenceCounter instead of wrapping around.
func TestFenceCounterAtTheLargestInt64IsAnError(t *testing.T) {
	nodes := startCluster(t, 3, redistest.Options{})
	client := nodes.client(t, Options{})
	for node := range nodes.servers {
		client.do(t, node, "SET", "resource"+fenceKeySuffix, "9223372036854775807")
	}
	m := client.NewMutex("resource", MutexOptions{Fencing: true})
	err := m.TryLock(context.Background())
	require.ErrorIs(t, err, ErrFenceCounter)
	assert.ErrorIs(t, err, ErrConfig)
	assert.Equal(t, repeat("", 3), client.values(t, "resource"), "no lock key left behind")
}
