package redistest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// Limits on commands the fake server accepts; a client under test that
// exceeds them is broken.
const (
	maxCommandArgs   = 1 << 16
	maxCommandBulk   = 64 << 20
	maxCommandHeader = 32 // bytes of a "*N" or "$N" line, CRLF included
)

// readCommand reads one client command: a RESP array of one or more bulk
// strings, as every Redis client sends them. Inline commands, other types,
// signs, leading zeros and missing CRLFs are rejected with an error that
// matches errMalformedCommand. It returns io.EOF when the stream ends
// between commands and io.ErrUnexpectedEOF when it ends inside one.
func readCommand(r *bufio.Reader) ([]string, error) {
	count, err := readHeader(r, '*', maxCommandArgs)
	if err != nil {
		return nil, err
	}
	if count == 0 {
		return nil, fmt.Errorf("%w: empty array", errMalformedCommand)
	}
	args := make([]string, 0, min(count, 64))
	for range count {
		size, err := readHeader(r, '$', maxCommandBulk)
		if err != nil {
			return nil, unexpectedEOF(err)
		}
		payload := make([]byte, size+2)
		if _, err := io.ReadFull(r, payload); err != nil {
			return nil, unexpectedEOF(err)
		}
		if payload[size] != '\r' || payload[size+1] != '\n' {
			return nil, fmt.Errorf("%w: bulk string not terminated by CRLF", errMalformedCommand)
		}
		args = append(args, string(payload[:size]))
	}
	return args, nil
}

// readHeader reads a "<kind><decimal>\r\n" line and returns the number,
// which must be at most limit.
func readHeader(r *bufio.Reader, kind byte, limit int) (int, error) {
	first, err := r.ReadByte()
	if err != nil {
		return 0, err // io.EOF here is a clean end between commands
	}
	if first != kind {
		return 0, fmt.Errorf("%w: got %q, want %q", errMalformedCommand, first, kind)
	}
	n, digits := 0, 0
	for {
		b, err := r.ReadByte()
		if err != nil {
			return 0, unexpectedEOF(err)
		}
		if digits+2 > maxCommandHeader {
			return 0, fmt.Errorf("%w: %q line too long", errMalformedCommand, kind)
		}
		switch {
		case b >= '0' && b <= '9':
			if digits == 1 && n == 0 {
				return 0, fmt.Errorf("%w: leading zero in %q length", errMalformedCommand, kind)
			}
			n = n*10 + int(b-'0')
			digits++
			if n > limit {
				return 0, fmt.Errorf("%w: %q length exceeds %d", errMalformedCommand, kind, limit)
			}
		case b == '\r' && digits > 0:
			lf, err := r.ReadByte()
			if err != nil {
				return 0, unexpectedEOF(err)
			}
			if lf != '\n' {
				return 0, fmt.Errorf("%w: %q line not terminated by CRLF", errMalformedCommand, kind)
			}
			return n, nil
		default:
			return 0, fmt.Errorf("%w: unexpected byte %q in %q length", errMalformedCommand, b, kind)
		}
	}
}

// unexpectedEOF turns io.EOF inside a command into io.ErrUnexpectedEOF.
func unexpectedEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}
