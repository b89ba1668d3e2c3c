package redistest

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// doTimeout bounds one Do call: dial, AUTH and the command.
const doTimeout = 5 * time.Second

// Limits on replies read by Do; a test helper has no business with more.
const (
	maxReplyLine   = 64 << 10
	maxReplyBulk   = 64 << 20
	maxReplyArray  = 1 << 20
	maxReplyDepth  = 16
	nilReplyString = "(nil)"
)

// Do sends one command to the server over a fresh connection and returns its
// reply as text, failing the test on any network error. It authenticates
// first when Options.Password is set, and speaks TLS when Options.TLS is set.
//
// The reply is rendered as follows:
//
//	+OK             "OK"
//	-ERR message    "-ERR message" (errors keep their minus sign)
//	:42             "42"
//	$3 foo          "foo"
//	$-1, *-1        "(nil)"
//	*2 a b          "[a b]" (elements rendered the same way)
//
// Do is meant for setting up and inspecting state (SET, GET, PTTL, CONFIG
// SET, SCRIPT FLUSH, DEBUG …); it is not a client to test against.
func (s *Server) Do(t testing.TB, args ...string) string {
	t.Helper()
	reply, err := roundTrip(s.Addr(), s.TLSConfig(), s.opts.Password, doTimeout, args...)
	if err != nil {
		t.Fatalf("redistest: %s: %q: %v", s.Addr(), args, err)
	}
	return reply
}

// roundTrip dials addr (with TLS when tlsConfig is not nil), sends AUTH when
// password is not empty, then sends args and returns the rendered reply. The
// whole exchange must finish within timeout.
func roundTrip(addr string, tlsConfig *tls.Config, password string, timeout time.Duration, args ...string) (string, error) {
	deadline := time.Now().Add(timeout)
	conn, reader, err := dial(addr, tlsConfig, password, deadline)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	return exchange(conn, reader, args...)
}

// dial connects to addr (with TLS when tlsConfig is not nil) and sends
// AUTH when password is not empty, all by deadline, which stays the
// connection's deadline.
func dial(addr string, tlsConfig *tls.Config, password string, deadline time.Time) (net.Conn, *bufio.Reader, error) {
	dialer := &net.Dialer{Deadline: deadline}
	var conn net.Conn
	var err error
	if tlsConfig != nil {
		conn, err = tls.DialWithDialer(dialer, "tcp", addr, tlsConfig)
	} else {
		conn, err = dialer.Dial("tcp", addr)
	}
	if err != nil {
		return nil, nil, err
	}
	if err := conn.SetDeadline(deadline); err != nil {
		conn.Close()
		return nil, nil, err
	}
	reader := bufio.NewReader(conn)
	if password != "" {
		reply, err := exchange(conn, reader, "AUTH", password)
		if err == nil && reply != "OK" {
			err = fmt.Errorf("redistest: AUTH: %s", reply)
		}
		if err != nil {
			conn.Close()
			return nil, nil, err
		}
	}
	return conn, reader, nil
}

// exchange writes one command and reads one reply.
func exchange(w io.Writer, r *bufio.Reader, args ...string) (string, error) {
	if _, err := w.Write(appendCommand(nil, args)); err != nil {
		return "", err
	}
	return readReply(r, 0)
}

// appendCommand appends args as a RESP array of bulk strings.
func appendCommand(dst []byte, args []string) []byte {
	dst = append(dst, '*')
	dst = strconv.AppendInt(dst, int64(len(args)), 10)
	dst = append(dst, '\r', '\n')
	for _, arg := range args {
		dst = append(dst, '$')
		dst = strconv.AppendInt(dst, int64(len(arg)), 10)
		dst = append(dst, '\r', '\n')
		dst = append(dst, arg...)
		dst = append(dst, '\r', '\n')
	}
	return dst
}

// readLine reads one CRLF-terminated line and returns it without the CRLF.
func readLine(r *bufio.Reader) (string, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > maxReplyLine {
			return "", fmt.Errorf("%w: line longer than %d bytes", errMalformedReply, maxReplyLine)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			return "", err
		}
		break
	}
	if len(line) < 2 || line[len(line)-2] != '\r' {
		return "", fmt.Errorf("%w: line not terminated by CRLF", errMalformedReply)
	}
	return string(line[:len(line)-2]), nil
}

// readReply reads one reply and renders it as documented on Do.
func readReply(r *bufio.Reader, depth int) (string, error) {
	if depth > maxReplyDepth {
		return "", fmt.Errorf("%w: nested deeper than %d", errMalformedReply, maxReplyDepth)
	}
	line, err := readLine(r)
	if err != nil {
		return "", err
	}
	if line == "" {
		return "", fmt.Errorf("%w: empty line", errMalformedReply)
	}
	kind, rest := line[0], line[1:]
	switch kind {
	case '+', ':':
		return rest, nil
	case '-':
		return line, nil
	case '_':
		return nilReplyString, nil
	case '$':
		n, err := strconv.Atoi(rest)
		switch {
		case err != nil || n < -1 || n > maxReplyBulk:
			return "", fmt.Errorf("%w: bulk length %q", errMalformedReply, rest)
		case n == -1:
			return nilReplyString, nil
		}
		payload := make([]byte, n+2)
		if _, err := io.ReadFull(r, payload); err != nil {
			return "", err
		}
		if payload[n] != '\r' || payload[n+1] != '\n' {
			return "", fmt.Errorf("%w: bulk string not terminated by CRLF", errMalformedReply)
		}
		return string(payload[:n]), nil
	case '*':
		n, err := strconv.Atoi(rest)
		switch {
		case err != nil || n < -1 || n > maxReplyArray:
			return "", fmt.Errorf("%w: array length %q", errMalformedReply, rest)
		case n == -1:
			return nilReplyString, nil
		}
		elems := make([]string, 0, min(n, 1024))
		for range n {
			elem, err := readReply(r, depth+1)
			if err != nil {
				return "", err
			}
			elems = append(elems, elem)
		}
		return "[" + strings.Join(elems, " ") + "]", nil
	default:
		return "", fmt.Errorf("%w: unexpected type byte %q", errMalformedReply, kind)
	}
}

// Session is a connection of its own to a server that a test keeps open,
// to send commands on and read replies from one at a time: a subscriber,
// whose messages come without a command. Replies are rendered as Do
// renders them.
type Session struct {
	t      testing.TB
	conn   net.Conn
	reader *bufio.Reader
}

// Session opens a Session to the server (after AUTH, over TLS, as Do
// does), closed when the test ends.
func (s *Server) Session() *Session {
	s.t.Helper()
	conn, reader, err := dial(s.Addr(), s.TLSConfig(), s.opts.Password, time.Now().Add(doTimeout))
	if err == nil {
		err = conn.SetDeadline(time.Time{}) // each Receive sets its own
	}
	if err != nil {
		s.t.Fatalf("redistest: %s: %v", s.Addr(), err)
	}
	s.t.Cleanup(func() { conn.Close() })
	return &Session{t: s.t, conn: conn, reader: reader}
}

// Send writes one command.
func (s *Session) Send(args ...string) {
	s.t.Helper()
	if _, err := s.conn.Write(appendCommand(nil, args)); err != nil {
		s.t.Fatalf("redistest: %q: %v", args, err)
	}
}

// Receive reads the next reply, or message, waiting for it at most
// doTimeout.
func (s *Session) Receive() string {
	s.t.Helper()
	if err := s.conn.SetReadDeadline(time.Now().Add(doTimeout)); err != nil {
		s.t.Fatalf("redistest: %v", err)
	}
	reply, err := readReply(s.reader, 0)
	if err != nil {
		s.t.Fatalf("redistest: %s: %v", s.conn.RemoteAddr(), err)
	}
	return reply
}
