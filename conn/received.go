package conn

import (
	"crypto/tls"
	"net"
	"syscall"
)

// receivedProbe tells how many bytes the kernel holds for a connection that
// nobody has read yet, without reading them. A Conn asks before it writes a
// command to a connection where nothing is pending: bytes that came while
// nothing was pending cannot be the reply to the command about to be
// written (RELIABILITY.md R13).
type receivedProbe struct {
	raw   syscall.RawConn
	count int
	probe func(fd uintptr) // built once, so that a probe does not allocate
}

// newReceivedProbe returns a probe for the socket under netConn, or nil
// where the socket cannot be asked (then only the reader's buffer is
// looked at).
func newReceivedProbe(netConn net.Conn) *receivedProbe {
	if tlsConn, ok := netConn.(*tls.Conn); ok {
		netConn = tlsConn.NetConn()
	}
	syscallConn, ok := netConn.(syscall.Conn)
	if !ok {
		return nil
	}
	raw, err := syscallConn.SyscallConn()
	if err != nil {
		return nil
	}
	p := &receivedProbe{raw: raw}
	p.probe = func(fd uintptr) { p.count = socketReceived(fd) }
	return p
}

// received returns the number of unread bytes in the socket's receive
// queue, 0 when it cannot tell.
func (p *receivedProbe) received() int {
	if p == nil {
		return 0
	}
	p.count = 0
	if p.raw.Control(p.probe) != nil {
		return 0
	}
	return p.count
}
