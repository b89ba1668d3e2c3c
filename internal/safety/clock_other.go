//go:build !unix

package safety

import "time"

// processStart anchors Now.
var processStart = time.Now()

// Now returns a monotonic reading in nanoseconds. Without CLOCK_MONOTONIC
// it compares only within this process, so histories with workers in
// other processes cannot be checked on these systems.
func Now() int64 { return int64(time.Since(processStart)) }
