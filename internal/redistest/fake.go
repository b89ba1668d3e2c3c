package redistest

import (
	"bufio"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

// Fake is a scripted server for hostile and handshake tests: it reads RESP
// commands from every connection and writes back whatever bytes its handler
// returns, well-formed or not.
//
// A Fake is safe for concurrent use. Its handler is called from one
// goroutine per connection, so it must be safe for concurrent use when
// clients open several connections.
type Fake struct {
	t        testing.TB
	listener net.Listener
	handler  func(command []string) []byte
	accepted atomic.Int64

	mu     sync.Mutex            // guards conns and closed
	conns  map[net.Conn]struct{} // open connections, closed by Close
	closed bool                  // set by Close

	goroutines sync.WaitGroup // the accept loop and one per connection
	closeOnce  sync.Once
}

// NewFake starts a fake server on a free loopback port and closes it when t
// ends. For every command a client sends, handler receives the command's
// arguments ("SET", "k", "v") and returns the raw bytes to write back:
// several replies, a partial reply or garbage are all fine; an empty non-nil
// slice writes nothing and keeps the connection open; nil closes the
// connection. A client that sends anything but arrays of bulk strings fails
// the test.
//
// The handler must return once the test is over: Close waits for it.
func NewFake(t testing.TB, handler func(command []string) []byte) *Fake {
	t.Helper()
	listener, err := net.Listen("tcp", net.JoinHostPort(loopbackHost, "0"))
	if err != nil {
		t.Fatalf("redistest: fake server: %v", err)
	}
	f := &Fake{
		t:        t,
		listener: listener,
		handler:  handler,
		conns:    make(map[net.Conn]struct{}),
	}
	f.goroutines.Add(1)
	go f.acceptLoop()
	t.Cleanup(f.Close)
	return f
}

// Addr returns the fake server's address, "127.0.0.1:PORT".
func (f *Fake) Addr() string {
	return f.listener.Addr().String()
}

// Accepted returns how many connections the fake server has accepted.
func (f *Fake) Accepted() int {
	return int(f.accepted.Load())
}

// Close stops accepting, closes every connection and waits for the fake
// server's goroutines, handlers included. Calling it again does nothing.
func (f *Fake) Close() {
	f.closeOnce.Do(func() {
		f.mu.Lock()
		f.closed = true
		f.listener.Close()
		for conn := range f.conns {
			conn.Close()
		}
		f.mu.Unlock()
		f.goroutines.Wait()
	})
}

// acceptLoop accepts connections until Close.
func (f *Fake) acceptLoop() {
	defer f.goroutines.Done()
	for {
		conn, err := f.listener.Accept()
		if err != nil {
			if !f.isClosed() {
				f.t.Errorf("redistest: fake server %s: accept: %v", f.Addr(), err)
			}
			return
		}
		f.mu.Lock()
		if f.closed {
			f.mu.Unlock()
			conn.Close()
			return
		}
		f.conns[conn] = struct{}{}
		f.goroutines.Add(1)
		f.mu.Unlock()
		f.accepted.Add(1)
		go f.serve(conn)
	}
}

// serve answers the commands of one connection until it ends.
func (f *Fake) serve(conn net.Conn) {
	defer f.goroutines.Done()
	defer func() {
		f.mu.Lock()
		delete(f.conns, conn)
		f.mu.Unlock()
		conn.Close()
	}()
	reader := bufio.NewReader(conn)
	for {
		command, err := readCommand(reader)
		if err != nil {
			if errors.Is(err, errMalformedCommand) && !f.isClosed() {
				f.t.Errorf("redistest: fake server %s: client %s: %v", f.Addr(), conn.RemoteAddr(), err)
			}
			return
		}
		reply := f.handler(command)
		if reply == nil {
			return
		}
		if _, err := conn.Write(reply); err != nil {
			return
		}
	}
}

// isClosed reports whether Close has begun.
func (f *Fake) isClosed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.closed
}
