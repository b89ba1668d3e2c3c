package safety

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"sync"
	"time"
)

// dialTimeout bounds Dial.
const dialTimeout = 5 * time.Second

// RemoteSink sends the events of a worker process to a Recorder that
// listens on a unix socket, and waits for each acknowledgement, so that
// the worker takes no step before its event is stamped.
//
// A RemoteSink is safe for concurrent use: events are sent one at a time.
type RemoteSink struct {
	mu      sync.Mutex // guards every field below
	conn    net.Conn
	reader  *bufio.Reader
	writer  *bufio.Writer
	encoder *json.Encoder
	err     error // the first transport error; every later Record returns it
}

// Dial connects to the Recorder listening at path.
func Dial(path string) (*RemoteSink, error) {
	c, err := net.DialTimeout("unix", path, dialTimeout)
	if err != nil {
		return nil, fmt.Errorf("safety: dial recorder %s: %w", path, err)
	}
	writer := bufio.NewWriter(c)
	return &RemoteSink{conn: c, reader: bufio.NewReader(c), writer: writer, encoder: json.NewEncoder(writer)}, nil
}

// Record sends e and returns the Recorder's acknowledgement.
func (s *RemoteSink) Record(e Event) (Ack, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return Ack{}, s.err
	}
	var ack Ack
	err := s.encoder.Encode(e)
	if err == nil {
		err = s.writer.Flush()
	}
	var line []byte
	if err == nil {
		line, err = s.reader.ReadBytes('\n')
	}
	if err == nil {
		err = json.Unmarshal(line, &ack)
	}
	if err != nil {
		s.err = fmt.Errorf("safety: record %s: %w", e.Kind, err)
		s.conn.Close()
		return Ack{}, s.err
	}
	return ack, nil
}

// Close closes the connection.
func (s *RemoteSink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		s.err = fmt.Errorf("safety: %w", net.ErrClosed)
	}
	return s.conn.Close()
}
