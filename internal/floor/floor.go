// Package floor is the hand-written minimal Redlock client that the
// benchmarks measure lockmux against: one plain connection per server, the
// same command written to every server before any reply is read, replies
// skipped with a line scanner, and no allocation. It does as little as a
// correct client can, so its time is the floor for the same work.
//
// It speaks RESP2, checks nothing but the shape of a reply, and has no
// timeouts, reconnection or concurrency: it is for benchmarks only.
//
// # Concurrency
//
// A Client is not safe for concurrent use: a benchmark gives each goroutine
// its own.
//
// # Errors
//
// Network errors are returned as they are; a reply that is not a simple
// string, an error, an integer, a null or a bulk string gives ErrReply.
package floor

import (
	"bufio"
	"errors"
	"net"
	"strconv"
)

// ErrReply is returned for a reply the floor client does not expect.
var ErrReply = errors.New("floor: unexpected reply")

// Client holds one connection per server.
type Client struct {
	conns   []net.Conn
	readers []*bufio.Reader
	// Replies holds the first byte of each server's last reply, and
	// Integers the value of integer replies.
	Replies  []byte
	Integers []int64
}

// Dial connects to every address ("host:port").
func Dial(addresses []string) (*Client, error) {
	c := &Client{Replies: make([]byte, len(addresses)), Integers: make([]int64, len(addresses))}
	for _, address := range addresses {
		netConn, err := net.Dial("tcp", address)
		if err != nil {
			c.Close()
			return nil, err
		}
		c.conns = append(c.conns, netConn)
		c.readers = append(c.readers, bufio.NewReaderSize(netConn, 4096))
	}
	return c, nil
}

// RoundTrip writes command to every server, then reads one reply from each.
func (c *Client) RoundTrip(command []byte) error {
	for _, netConn := range c.conns {
		if _, err := netConn.Write(command); err != nil {
			return err
		}
	}
	for i, reader := range c.readers {
		if err := c.skipReply(i, reader); err != nil {
			return err
		}
	}
	return nil
}

// skipReply reads one scalar reply.
func (c *Client) skipReply(i int, reader *bufio.Reader) error {
	line, err := reader.ReadSlice('\n')
	if err != nil {
		return err
	}
	if len(line) < 3 {
		return ErrReply
	}
	c.Replies[i] = line[0]
	switch line[0] {
	case '+', '-':
		return nil
	case ':':
		c.Integers[i], err = strconv.ParseInt(string(line[1:len(line)-2]), 10, 64)
		return err
	case '$':
		length, err := strconv.Atoi(string(line[1 : len(line)-2]))
		if err != nil {
			return err
		}
		if length >= 0 {
			_, err = reader.Discard(length + 2)
		}
		return err
	}
	return ErrReply
}

// Close closes every connection.
func (c *Client) Close() {
	for _, netConn := range c.conns {
		netConn.Close()
	}
}
