package safety

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"
)

// Goroutines waits until the number of goroutines of this process comes
// down to baseline, or timeout passes, and returns the last count. Exiting
// goroutines of the network poller and of closed connections take a
// moment after Close.
func Goroutines(baseline int, timeout time.Duration) int {
	deadline := time.Now().Add(timeout)
	for {
		count := runtime.NumGoroutine()
		if count <= baseline || time.Now().After(deadline) {
			return count
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// GoroutineDump returns the stacks of every goroutine, for a failed C6.
func GoroutineDump() string {
	buffer := make([]byte, 1<<20)
	return string(buffer[:runtime.Stack(buffer, true)])
}

// Descriptors waits until the number of open file descriptors of this
// process comes down to baseline, or timeout passes, and returns the last
// count. A negative baseline returns the count at once.
func Descriptors(baseline int, timeout time.Duration) (int, error) {
	deadline := time.Now().Add(timeout)
	for {
		entries, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			return 0, fmt.Errorf("safety: count descriptors: %w", err)
		}
		if len(entries) <= baseline || baseline < 0 || time.Now().After(deadline) {
			return len(entries), nil
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// LockKeys lists the keys of the node at address that match pattern,
// with SCAN, leaving out those that end with one of the suffixes
// ignore (fencing counters, which outlive holds by design). After every
// hold has been released or has expired, a lock key left over is a leak:
// a ghost lock (C6).
func LockKeys(ctx context.Context, address, pattern string, ignore ...string) ([]string, error) {
	var keys []string
	cursor := "0"
	for range 10000 {
		reply, err := Command(ctx, address, "SCAN", cursor, "MATCH", pattern, "COUNT", "1000")
		if err != nil {
			return keys, err
		}
		if reply.IsError() || len(reply.Elems) != 2 {
			return keys, fmt.Errorf("safety: %s: SCAN answered %s", address, reply)
		}
		for _, element := range reply.Elems[1].Elems {
			key := string(element.Str)
			if !hasAnySuffix(key, ignore) {
				keys = append(keys, key)
			}
		}
		cursor = string(reply.Elems[0].Str)
		if cursor == "0" {
			return keys, nil
		}
	}
	return keys, fmt.Errorf("safety: %s: SCAN did not finish", address)
}

func hasAnySuffix(s string, suffixes []string) bool {
	for _, suffix := range suffixes {
		if strings.HasSuffix(s, suffix) {
			return true
		}
	}
	return false
}
