package redlock

import (
	"testing"
	"unsafe"
)

// A Mutex stays within the 896-byte allocation size class: at a hundred
// thousand holds, the next class up costs 128 bytes per hold.
func TestMutexFitsItsSizeClass(t *testing.T) {
	if size := unsafe.Sizeof(Mutex{}); size > 896 {
		t.Errorf("a Mutex is %d bytes, over the 896-byte size class", size)
	}
}
