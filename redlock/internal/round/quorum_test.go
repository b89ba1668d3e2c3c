package round

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
			need := Quorum(test.nodes)
			assert.Equal(t, test.want, need)
			// Two quorums always share a node, and a quorum is never more
			// than the nodes there are.
			assert.Greater(t, 2*need, test.nodes)
			assert.LessOrEqual(t, need, test.nodes)
		})
	}
}

// TestValidity checks validity against values worked out by hand:
// ttl − elapsed − (ttl·driftFactor + 2 ms).
func TestValidity(t *testing.T) {
	tests := []struct {
		name        string
		ttl         time.Duration
		elapsed     time.Duration
		driftFactor float64
		want        time.Duration
	}{
		{name: "defaults: 10 s − 5 ms − (100 ms + 2 ms)", ttl: 10 * time.Second, elapsed: 5 * time.Millisecond, driftFactor: 0.01, want: 9893 * time.Millisecond},
		{name: "no elapsed time: 1 s − (10 ms + 2 ms)", ttl: time.Second, driftFactor: 0.01, want: 988 * time.Millisecond},
		{name: "zero drift factor keeps the fixed allowance: 1 s − 1 ms − 2 ms", ttl: time.Second, elapsed: time.Millisecond, want: 997 * time.Millisecond},
		{name: "a quarter of the TTL for drift: 2 s − 300 ms − (500 ms + 2 ms)", ttl: 2 * time.Second, elapsed: 300 * time.Millisecond, driftFactor: 0.25, want: 1198 * time.Millisecond},
		{name: "half the TTL for drift: 1 min − 0 − (30 s + 2 ms)", ttl: time.Minute, driftFactor: 0.5, want: 29998 * time.Millisecond},
		{name: "microseconds: 10 ms − 1.5 ms − (100 µs + 2 ms)", ttl: 10 * time.Millisecond, elapsed: 1500 * time.Microsecond, driftFactor: 0.01, want: 6400 * time.Microsecond},
		{name: "elapsed beyond the TTL: 100 ms − 150 ms − (1 ms + 2 ms)", ttl: 100 * time.Millisecond, elapsed: 150 * time.Millisecond, driftFactor: 0.01, want: -53 * time.Millisecond},
		{name: "exactly spent: 100 ms − 97 ms − (1 ms + 2 ms)", ttl: 100 * time.Millisecond, elapsed: 97 * time.Millisecond, driftFactor: 0.01, want: 0},
		{name: "elapsed equal to the TTL: 1 h − 1 h − (36 s + 2 ms)", ttl: time.Hour, elapsed: time.Hour, driftFactor: 0.01, want: -36002 * time.Millisecond},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			assert.Equal(t, test.want, Validity(test.ttl, test.elapsed, test.driftFactor))
		})
	}
}

// TestValidityProperties checks what must hold of validity whatever its
// inputs, without restating its formula. The first property is the
// regression test for a known bug of another library, which computed
// ttl − (elapsed − drift): adding the drift gave a validity longer than
// what was left of the TTL.
// minTTL is redlock.MinTTL, the shortest TTL a lock takes.
const minTTL = 10 * time.Millisecond

func TestValidityProperties(t *testing.T) {
	random := rand.New(rand.NewPCG(1, 2))
	for range 100_000 {
		ttl := minTTL + time.Duration(random.Int64N(int64(time.Hour)))
		elapsed := time.Duration(random.Int64N(int64(2 * ttl)))
		driftFactor := random.Float64() * 0.5
		got := Validity(ttl, elapsed, driftFactor)
		if got >= ttl-elapsed {
			t.Fatalf("Validity(%v, %v, %v) = %v, not below what is left of the TTL, %v", ttl, elapsed, driftFactor, got, ttl-elapsed)
		}
		if elapsed >= ttl && got > 0 {
			t.Fatalf("Validity(%v, %v, %v) = %v: positive although the operation took the whole TTL", ttl, elapsed, driftFactor, got)
		}
		longer := elapsed + 1 + time.Duration(random.Int64N(int64(time.Second)))
		if later := Validity(ttl, longer, driftFactor); later >= got {
			t.Fatalf("Validity(%v, %v, %v) = %v, not below %v for the shorter elapsed %v", ttl, longer, driftFactor, later, got, elapsed)
		}
		more := driftFactor + random.Float64()*(0.5-driftFactor)
		if drifted := Validity(ttl, elapsed, more); drifted > got {
			t.Fatalf("Validity(%v, %v, %v) = %v, above %v for the smaller drift factor %v", ttl, elapsed, more, drifted, got, driftFactor)
		}
		bigger := ttl + time.Duration(random.Int64N(int64(time.Second)))
		if extended := Validity(bigger, elapsed, driftFactor); extended < got {
			t.Fatalf("Validity(%v, %v, %v) = %v, below %v for the shorter TTL %v", bigger, elapsed, driftFactor, extended, got, ttl)
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
			assert.Equal(t, test.want, countQuorum(test.got, test.failed, test.total))
			assert.Equal(t, test.want != quorumImpossible, QuorumPossible(test.got, test.failed, test.total))
		})
	}
}
