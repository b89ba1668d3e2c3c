package faultnet

import (
	"net"
	"sync"
	"sync/atomic"
)

// link is one client connection and the upstream connection it is forwarded
// to, with one pump per direction.
type link struct {
	proxy          *Proxy
	client, server *net.TCPConn
	up             *pump // client → server
	down           *pump // server → client

	closed   chan struct{} // closed by shut
	shutOnce sync.Once
	running  atomic.Int32 // pumps that have not returned; the last removes the link
}

// newLink returns a link between client and server whose pumps are ready to
// run.
func newLink(p *Proxy, client, server *net.TCPConn) *link {
	l := &link{
		proxy:  p,
		client: client,
		server: server,
		closed: make(chan struct{}),
	}
	l.up = newPump(l, directionUp, client, server)
	l.down = newPump(l, directionDown, server, client)
	l.running.Store(2)
	return l
}

// shut closes both sockets of the link, with a TCP RST when reset is set, and
// wakes both pumps. Only the first call has an effect.
func (l *link) shut(reset bool) {
	l.shutOnce.Do(func() {
		if reset {
			resetConn(l.client)
			resetConn(l.server)
		} else {
			l.client.Close()
			l.server.Close()
		}
		close(l.closed)
	})
}

// pumpDone is called by each pump as it returns. The last one closes the
// sockets, if they are still open, and removes the link from the proxy.
func (l *link) pumpDone() {
	if l.running.Add(-1) == 0 {
		l.shut(false)
		l.proxy.removeLink(l)
	}
	l.proxy.goroutines.Done()
}
