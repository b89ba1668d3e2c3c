package faultnet

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// dialTimeout bounds the dial of the upstream server for one link.
const dialTimeout = 5 * time.Second

// noReset is the value of Proxy.resetBudget while ResetAfter is not armed.
const noReset = -1

// Proxy forwards connections from a loopback listener to one upstream server
// and injects faults into them, as set by its mode methods.
//
// A Proxy is safe for concurrent use.
type Proxy struct {
	upstream   atomic.Pointer[string] // see Retarget
	listener   *net.TCPListener
	cancelDial context.CancelFunc // cancels an upstream dial in progress; called by Close

	// The modes are written by the mode methods, from any goroutine, and read
	// by the pumps.
	blackhole   atomic.Bool
	upDelay     atomic.Int64           // nanoseconds added to client→server bytes
	downDelay   atomic.Int64           // nanoseconds added to server→client bytes
	dropBudget  atomic.Int64           // reply frames still to drop
	holding     atomic.Bool            // frames that start now are held
	resetBudget atomic.Int64           // server bytes before a reset, or noReset
	inject      atomic.Pointer[[]byte] // bytes to write before the next frame

	// The counters are written by the pumps.
	repliesDropped atomic.Int64
	bytesUp        atomic.Int64
	bytesDown      atomic.Int64
	serverBytes    atomic.Int64 // bytes read from the server and dealt with, for tests to wait on

	mu     sync.Mutex         // guards links and closed
	links  map[*link]struct{} // links whose pumps still run; a link removes itself
	closed bool               // set by Close

	goroutines sync.WaitGroup // the accept loop and every pump
	closeOnce  sync.Once
}

// New starts a proxy on a free port of 127.0.0.1 that forwards to upstream, a
// "host:port" address on loopback, and closes it when t ends. It starts in
// Pass mode. New fails the test when it cannot listen or when upstream is not
// a loopback address.
func New(t testing.TB, upstream string) *Proxy {
	t.Helper()
	if !isLoopback(upstream) {
		t.Fatalf("faultnet: upstream %q is not a loopback address", upstream)
	}
	listener, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatalf("faultnet: listen: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Proxy{
		listener:   listener,
		cancelDial: cancel,
		links:      make(map[*link]struct{}),
	}
	p.upstream.Store(&upstream)
	p.resetBudget.Store(noReset)
	p.goroutines.Add(1)
	go p.acceptLoop(ctx)
	t.Cleanup(p.Close)
	return p
}

// isLoopback reports whether addr is "host:port" with a loopback host.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Addr returns the address clients dial, "127.0.0.1:PORT".
func (p *Proxy) Addr() string {
	return p.listener.Addr().String()
}

// Close stops accepting, closes every link and waits for all the proxy's
// goroutines to return. Calling it again does nothing.
func (p *Proxy) Close() {
	p.closeOnce.Do(func() {
		p.mu.Lock()
		p.closed = true
		links := make([]*link, 0, len(p.links))
		for l := range p.links {
			links = append(links, l)
		}
		p.mu.Unlock()
		p.listener.Close()
		p.cancelDial()
		for _, l := range links {
			l.shut(false)
		}
		p.goroutines.Wait()
	})
}

// Links returns the number of open links: connections accepted whose two
// pumps have not both finished. It drops shortly after a link is closed or
// reset, once its pumps have noticed.
func (p *Proxy) Links() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.links)
}

// RepliesDropped returns the number of reply frames DropReplies has dropped.
func (p *Proxy) RepliesDropped() int64 {
	return p.repliesDropped.Load()
}

// BytesUp returns the number of bytes written to the upstream server, over
// all links. Bytes are counted as their write starts, so a test that has seen
// them arrive sees them counted; a failed write takes back what it did not
// write.
func (p *Proxy) BytesUp() int64 {
	return p.bytesUp.Load()
}

// BytesDown returns the number of bytes written to clients, over all links,
// injected bytes included. It counts like BytesUp.
func (p *Proxy) BytesDown() int64 {
	return p.bytesDown.Load()
}

// acceptLoop accepts clients and links each to a new upstream connection,
// until the listener is closed.
func (p *Proxy) acceptLoop(ctx context.Context) {
	defer p.goroutines.Done()
	dialer := net.Dialer{Timeout: dialTimeout}
	for {
		client, err := p.listener.AcceptTCP()
		if err != nil {
			return // closed by Close, or broken: see the package doc
		}
		conn, err := dialer.DialContext(ctx, "tcp", *p.upstream.Load())
		if err != nil {
			resetConn(client)
			continue
		}
		p.startLink(client, conn.(*net.TCPConn))
	}
}

// startLink registers a link between client and server and starts its pumps,
// unless the proxy is closed.
func (p *Proxy) startLink(client, server *net.TCPConn) {
	l := newLink(p, client, server)
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		l.shut(false)
		return
	}
	p.links[l] = struct{}{}
	p.goroutines.Add(2)
	p.mu.Unlock()
	go l.up.run()
	go l.down.run()
}

// removeLink forgets a link whose pumps have both finished.
func (p *Proxy) removeLink(l *link) {
	p.mu.Lock()
	delete(p.links, l)
	p.mu.Unlock()
}

// eachLink calls f for every open link, with p.mu held.
func (p *Proxy) eachLink(f func(*link)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for l := range p.links {
		f(l)
	}
}

// resetConn closes conn with a TCP RST instead of a FIN.
func resetConn(conn *net.TCPConn) {
	conn.SetLinger(0)
	conn.Close()
}
