//go:build unix

package safety

import (
	"time"

	"golang.org/x/sys/unix"
)

// Now returns CLOCK_MONOTONIC in nanoseconds. The clock is system-wide, so
// readings of different processes compare, and it keeps running while a
// process is stopped. Go's own monotonic readings (those inside a
// time.Time) come from the same clock on Linux, offset by the start of the
// process, which is why Deadline can translate them.
func Now() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		// CLOCK_MONOTONIC is always there on the systems this package
		// builds for; fall back rather than panic.
		return fallbackNow()
	}
	return ts.Nano()
}

// fallbackStart anchors fallbackNow.
var fallbackStart = time.Now()

// fallbackNow is a monotonic reading that compares only within this
// process.
func fallbackNow() int64 { return int64(time.Since(fallbackStart)) }
