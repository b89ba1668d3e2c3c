package conn

import (
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// socketControl sets TCP_USER_TIMEOUT, so that the kernel drops a
// connection whose sent data stays unacknowledged (a dead or partitioned
// peer) instead of retransmitting for many minutes.
func socketControl(userTimeout time.Duration) func(network, address string, raw syscall.RawConn) error {
	if userTimeout <= 0 {
		return nil
	}
	return func(network, address string, raw syscall.RawConn) error {
		if network != "tcp" && network != "tcp4" && network != "tcp6" {
			return nil
		}
		var setErr error
		err := raw.Control(func(fd uintptr) {
			setErr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, int(userTimeout.Milliseconds()))
		})
		if err != nil {
			return err
		}
		return setErr
	}
}

// socketReceived returns the number of bytes in the socket's receive queue
// that no read has taken yet.
func socketReceived(fd uintptr) int {
	count, err := unix.IoctlGetInt(int(fd), unix.SIOCINQ)
	if err != nil {
		return 0
	}
	return count
}
