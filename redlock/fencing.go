package redlock

import (
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
