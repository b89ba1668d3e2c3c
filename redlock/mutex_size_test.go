package redlock

import (
	"testing"
	"unsafe"
)

// A Mutex stays within the 512-byte allocation size class: at a hundred
// thousand holds, the next class up (576 bytes) costs 64 bytes per hold.
func TestMutexFitsItsSizeClass(t *testing.T) {
	if size := unsafe.Sizeof(Mutex{}); size > 512 {
		t.Errorf("a Mutex is %d bytes, over the 512-byte size class", size)
	}
}
