package conn_test

import (
	"os"
	"runtime"
	"testing"
	"time"
)

// stableGoroutineCount returns the number of goroutines once it stops
// changing. With want ≥ 0 it waits until the count comes down to want and
// fails the test if it does not; goroutines of the runtime and the network
// poller can take a moment to exit after Close.
func stableGoroutineCount(t *testing.T, want int) int {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		count := runtime.NumGoroutine()
		if want < 0 || count <= want {
			return count
		}
		if time.Now().After(deadline) {
			buffer := make([]byte, 1<<20)
			t.Fatalf("goroutines: %d, want %d\n%s", count, want, buffer[:runtime.Stack(buffer, true)])
		}
		runtime.Gosched()
		time.Sleep(time.Millisecond)
	}
}

// openDescriptors counts the file descriptors of this process.
func openDescriptors(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("cannot count descriptors: %v", err)
	}
	return len(entries)
}
