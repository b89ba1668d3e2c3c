package redlock

import (
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestQuorum(t *testing.T) {
	tests := []struct {
		nodes int
		want  int
	}{
		{nodes: 1, want: 1},
		{nodes: 2, want: 2},
		{nodes: 3, want: 2},
		{nodes: 4, want: 3},
		{nodes: 5, want: 3},
		{nodes: 6, want: 4},
		{nodes: 7, want: 4},
		{nodes: 8, want: 5},
		{nodes: 9, want: 5},
	}
	for _, test := range tests {
		t.Run(strconv.Itoa(test.nodes)+" nodes", func(t *testing.T) {
			need := quorum(test.nodes)
			assert.Equal(t, test.want, need)
			// Two quorums always share a node, and a quorum is never more
			// than the nodes there are.
			assert.Greater(t, 2*need, test.nodes)
			assert.LessOrEqual(t, need, test.nodes)
		})
	}
}

func TestValidity(t *testing.T) {
	tests := []struct {
		name        string
		ttl         time.Duration
		elapsed     time.Duration
		driftFactor float64
		want        time.Duration
	}{
		{name: "defaults", ttl: 10 * time.Second, elapsed: 5 * time.Millisecond, driftFactor: 0.01, want: 10*time.Second - 5*time.Millisecond - 100*time.Millisecond - 2*time.Millisecond},
		{name: "no elapsed time", ttl: time.Second, driftFactor: 0.01, want: time.Second - 10*time.Millisecond - 2*time.Millisecond},
		{name: "zero drift factor keeps the fixed allowance", ttl: time.Second, elapsed: time.Millisecond, want: time.Second - 3*time.Millisecond},
		{name: "elapsed beyond the TTL", ttl: 100 * time.Millisecond, elapsed: 150 * time.Millisecond, driftFactor: 0.01, want: -53 * time.Millisecond},
		{name: "exactly spent", ttl: 100 * time.Millisecond, elapsed: 97 * time.Millisecond, driftFactor: 0.01, want: 0},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			assert.Equal(t, test.want, validity(test.ttl, test.elapsed, test.driftFactor))
		})
	}
}

// TestValidityProperty is the regression test for a known bug of another
// library that computed ttl − (elapsed − drift), adding the drift: the
// validity must be ttl − elapsed − drift exactly, and never more than
// ttl − elapsed.
func TestValidityProperty(t *testing.T) {
	random := rand.New(rand.NewPCG(1, 2))
	for range 100_000 {
		ttl := MinTTL + time.Duration(random.Int64N(int64(time.Hour)))
		elapsed := time.Duration(random.Int64N(int64(2 * ttl)))
		driftFactor := random.Float64() * 0.5
		got := validity(ttl, elapsed, driftFactor)
		drift := time.Duration(float64(ttl)*driftFactor) + 2*time.Millisecond
		if got != ttl-elapsed-drift {
			t.Fatalf("validity(%v, %v, %v) = %v, want %v", ttl, elapsed, driftFactor, got, ttl-elapsed-drift)
		}
		if got >= ttl-elapsed {
			t.Fatalf("validity(%v, %v, %v) = %v, not below ttl − elapsed = %v", ttl, elapsed, driftFactor, got, ttl-elapsed)
		}
	}
}

func TestCountQuorum(t *testing.T) {
	tests := []struct {
		name               string
		got, failed, total int
		want               quorumState
	}{
		{name: "nothing answered yet", got: 0, failed: 0, total: 5, want: quorumPending},
		{name: "majority confirmed", got: 3, failed: 0, total: 5, want: quorumReached},
		{name: "majority confirmed after failures", got: 3, failed: 2, total: 5, want: quorumReached},
		{name: "still reachable", got: 1, failed: 2, total: 5, want: quorumPending},
		{name: "three of five failed", got: 0, failed: 3, total: 5, want: quorumImpossible},
		{name: "two of five confirmed and three failed", got: 2, failed: 3, total: 5, want: quorumImpossible},
		{name: "one node confirmed", got: 1, failed: 0, total: 1, want: quorumReached},
		{name: "one node failed", got: 0, failed: 1, total: 1, want: quorumImpossible},
		{name: "two nodes, one failed", got: 1, failed: 1, total: 2, want: quorumImpossible},
		{name: "two nodes, one confirmed", got: 1, failed: 0, total: 2, want: quorumPending},
		{name: "four nodes, two failed", got: 2, failed: 2, total: 4, want: quorumImpossible},
		{name: "four nodes, one failed", got: 2, failed: 1, total: 4, want: quorumPending},
		{name: "six nodes, three failed", got: 3, failed: 3, total: 6, want: quorumImpossible},
		{name: "six nodes, two failed", got: 0, failed: 2, total: 6, want: quorumPending},
		{name: "counts beyond the total", got: 3, failed: 3, total: 5, want: quorumImpossible},
		{name: "negative count", got: -1, failed: 0, total: 5, want: quorumImpossible},
		{name: "no nodes", got: 0, failed: 0, total: 0, want: quorumImpossible},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			state := countQuorum(test.got, test.failed, test.total)
			assert.Equal(t, test.want, state, "got %v", state)
			assert.Equal(t, test.want != quorumImpossible, quorumPossible(test.got, test.failed, test.total))
		})
	}
}

func TestQuorumStateNames(t *testing.T) {
	assert.Equal(t, "pending", quorumPending.String())
	assert.Equal(t, "reached", quorumReached.String())
	assert.Equal(t, "impossible", quorumImpossible.String())
	assert.Equal(t, "quorumState(?)", quorumState(7).String())
}
