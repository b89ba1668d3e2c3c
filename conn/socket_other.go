//go:build !linux

package conn

import (
	"syscall"
	"time"
)

// socketControl does nothing where TCP_USER_TIMEOUT does not exist; TCP
// keep-alive still notices a dead peer, more slowly.
func socketControl(time.Duration) func(network, address string, raw syscall.RawConn) error {
	return nil
}

// socketReceived returns 0 where the receive queue is not asked: only
// bytes already in the reader's buffer are then seen before a write.
func socketReceived(uintptr) int { return 0 }
