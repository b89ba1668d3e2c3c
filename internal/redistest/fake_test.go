package redistest

import (
	"bufio"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFakeAnswersWithScriptedBytes(t *testing.T) {
	t.Parallel()
	commands := make(chan []string, 10)
	f := NewFake(t, func(command []string) []byte {
		commands <- command
		switch strings.ToUpper(command[0]) {
		case "PING":
			return []byte("+PONG\r\n")
		case "HELLO":
			return []byte("-ERR unknown command 'HELLO'\r\n")
		case "QUIT":
			return nil
		default:
			return []byte("$3\r\nbad") // a truncated reply
		}
	})

	conn, err := net.DialTimeout("tcp", f.Addr(), time.Second)
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(5*time.Second)))
	reader := bufio.NewReader(conn)

	reply, err := exchange(conn, reader, "PING")
	require.NoError(t, err)
	assert.Equal(t, "PONG", reply)
	assert.Equal(t, []string{"PING"}, <-commands)

	reply, err = exchange(conn, reader, "HELLO", "3")
	require.NoError(t, err)
	assert.Equal(t, "-ERR unknown command 'HELLO'", reply)
	assert.Equal(t, []string{"HELLO", "3"}, <-commands)

	_, err = exchange(conn, reader, "QUIT")
	assert.ErrorIs(t, err, io.EOF, "nil from the handler closes the connection")
	assert.Equal(t, []string{"QUIT"}, <-commands)
	assert.Equal(t, 1, f.Accepted())

	second, err := net.DialTimeout("tcp", f.Addr(), time.Second)
	require.NoError(t, err)
	defer second.Close()
	require.NoError(t, second.SetDeadline(time.Now().Add(5*time.Second)))
	_, err = second.Write(appendCommand(nil, []string{"GET", "k"}))
	require.NoError(t, err)
	raw := make([]byte, len("$3\r\nbad"))
	_, err = io.ReadFull(second, raw)
	require.NoError(t, err)
	assert.Equal(t, "$3\r\nbad", string(raw), "the bytes are written as they are")
	assert.Equal(t, []string{"GET", "k"}, <-commands)
	assert.Equal(t, 2, f.Accepted())
}

func TestFakeCloseEndsOpenConnections(t *testing.T) {
	t.Parallel()
	handled := make(chan struct{}, 1)
	f := NewFake(t, func(command []string) []byte {
		handled <- struct{}{}
		return []byte{} // no reply, connection stays open
	})
	conn, err := net.DialTimeout("tcp", f.Addr(), time.Second)
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.Write(appendCommand(nil, []string{"PING"}))
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(5*time.Second)))
	<-handled

	f.Close()
	f.Close() // idempotent
	_, err = conn.Read(make([]byte, 1))
	assert.ErrorIs(t, err, io.EOF)
}

func TestReadCommand(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		input     string
		want      []string
		malformed bool
		wantErr   error
	}{
		{name: "one argument", input: "*1\r\n$4\r\nPING\r\n", want: []string{"PING"}},
		{name: "several arguments", input: "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n", want: []string{"SET", "k", ""}},
		{name: "binary argument", input: "*1\r\n$4\r\na\r\nb\r\n", want: []string{"a\r\nb"}},
		{name: "end between commands", input: "", wantErr: io.EOF},
		{name: "end inside a command", input: "*2\r\n$3\r\nGET\r\n", wantErr: io.ErrUnexpectedEOF},
		{name: "end inside a bulk string", input: "*1\r\n$4\r\nPI", wantErr: io.ErrUnexpectedEOF},
		{name: "end inside a header", input: "*1", wantErr: io.ErrUnexpectedEOF},
		{name: "inline command", input: "PING\r\n", malformed: true},
		{name: "empty array", input: "*0\r\n", malformed: true},
		{name: "negative count", input: "*-1\r\n", malformed: true},
		{name: "leading zero", input: "*01\r\n$4\r\nPING\r\n", malformed: true},
		{name: "missing digits", input: "*\r\n", malformed: true},
		{name: "simple string argument", input: "*1\r\n+PING\r\n", malformed: true},
		{name: "bare LF", input: "*1\n$4\r\nPING\r\n", malformed: true},
		{name: "bulk without CRLF", input: "*1\r\n$4\r\nPINGxx", malformed: true},
		{name: "too many arguments", input: "*99999999\r\n", malformed: true},
		{name: "bulk too large", input: "*1\r\n$999999999\r\n", malformed: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readCommand(bufio.NewReader(strings.NewReader(tt.input)))
			switch {
			case tt.malformed:
				assert.ErrorIs(t, err, errMalformedCommand)
			case tt.wantErr != nil:
				assert.ErrorIs(t, err, tt.wantErr)
				assert.False(t, errors.Is(err, errMalformedCommand))
			default:
				require.NoError(t, err)
				assert.Equal(t, tt.want, got)
			}
		})
	}
}
