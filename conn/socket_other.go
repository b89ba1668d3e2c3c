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
