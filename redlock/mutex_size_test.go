package redlock

import (
	"testing"
	"unsafe"
)

// A Mutex stays within the 576-byte allocation size class: at a hundred
// thousand holds, the next class up (640 bytes) costs 64 bytes per hold.
func TestMutexFitsItsSizeClass(t *testing.T) {
	if size := unsafe.Sizeof(Mutex{}); size > 576 {
		t.Errorf("a Mutex is %d bytes, over the 576-byte size class", size)
	}
}
