package redlock

import (
	"math"

	"github.com/lockmux/lockmux/redlock/internal/naming"
)

// fenceKeySuffix ends the key of a lock key's fencing counter, which
// follows the lock key. The counter has no TTL: it must outlive every
// hold, and survive restarts (appendfsync always). The name is defined in
// naming, which the tools that read the counters share.
const fenceKeySuffix = naming.FenceKeySuffix

// fenceKeys returns the keys of the fencing counters of keys, in their
// order.
func fenceKeys(keys []string) []string {
	counters := make([]string, len(keys))
	for i, key := range keys {
		counters[i] = key + fenceKeySuffix
	}
	return counters
}

// parseCounter parses a fencing counter as acquireFencedScript returns it:
// a decimal integer without sign or leading zeros, from 0 to
// math.MaxInt64−1, so that the next fence fits an int64. It does not
// allocate.
func parseCounter(text []byte) (int64, bool) {
	if len(text) == 0 || len(text) > 19 || (text[0] == '0' && len(text) > 1) {
		return 0, false
	}
	var n uint64
	for _, c := range text {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0') // 19 digits fit a uint64
	}
	if n >= math.MaxInt64 {
		return 0, false
	}
	return int64(n), true
}
