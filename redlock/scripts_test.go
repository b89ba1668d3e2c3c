package redlock

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/lockmux/lockmux/redlock/internal/protocol"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// scriptClient is a minimal RESP2 client for the script tests, so that they
// depend on no transport of this module.
type scriptClient struct {
	connection net.Conn
	reader     *bufio.Reader
}

// replyError is an error reply of the server.
type replyError string

func (e replyError) Error() string { return string(e) }

func dialScriptClient(t *testing.T, address string) *scriptClient {
	t.Helper()
	connection, err := net.Dial("tcp", address)
	require.NoError(t, err)
	t.Cleanup(func() { connection.Close() })
	return &scriptClient{connection: connection, reader: bufio.NewReader(connection)}
}

// do sends one command and returns its reply: a string, an int64, nil, a
// []any, or a replyError for an error reply.
func (c *scriptClient) do(t *testing.T, args ...string) any {
	t.Helper()
	var command []byte
	command = fmt.Appendf(command, "*%d\r\n", len(args))
	for _, arg := range args {
		command = fmt.Appendf(command, "$%d\r\n%s\r\n", len(arg), arg)
	}
	require.NoError(t, c.connection.SetDeadline(time.Now().Add(5*time.Second)))
	_, err := c.connection.Write(command)
	require.NoError(t, err)
	reply, err := c.readReply()
	require.NoError(t, err)
	return reply
}

func (c *scriptClient) readReply() (any, error) {
	line, err := c.reader.ReadString('\n')
	if err != nil {
		return nil, err
	}
	if len(line) < 3 || !strings.HasSuffix(line, "\r\n") {
		return nil, fmt.Errorf("bad line %q", line)
	}
	kind, text := line[0], line[1:len(line)-2]
	switch kind {
	case '+':
		return text, nil
	case '-':
		return replyError(text), nil
	case ':':
		return strconv.ParseInt(text, 10, 64)
	case '$':
		length, err := strconv.Atoi(text)
		if err != nil || length < 0 {
			return nil, err
		}
		body := make([]byte, length+2)
		if _, err := io.ReadFull(c.reader, body); err != nil {
			return nil, err
		}
		return string(body[:length]), nil
	case '*':
		count, err := strconv.Atoi(text)
		if err != nil || count < 0 {
			return nil, err
		}
		elements := make([]any, count)
		for i := range elements {
			if elements[i], err = c.readReply(); err != nil {
				return nil, err
			}
		}
		return elements, nil
	}
	return nil, fmt.Errorf("unknown reply type %q", kind)
}

// eval runs script with keys and args.
func (c *scriptClient) eval(t *testing.T, script string, keys []string, args ...string) any {
	t.Helper()
	command := append([]string{"EVAL", script, strconv.Itoa(len(keys))}, keys...)
	return c.do(t, append(command, args...)...)
}

const (
	ourToken   = "0123456789abcdef0123456789abcdef01234567"
	otherToken = "fedcba9876543210fedcba9876543210fedcba98"
)

// scriptServer starts a miniredis server and returns it with a client.
func scriptServer(t *testing.T) (*miniredis.Miniredis, *scriptClient) {
	t.Helper()
	server := miniredis.RunT(t)
	return server, dialScriptClient(t, server.Addr())
}

// setupState names the state of every lock key before a script runs.
type setupState int

const (
	stateOurs setupState = iota
	stateOther
	stateMissing
	stateExpired
	stateWrongType
	statePersistent // held by another, without a TTL
)

// prepare puts key into state, with a TTL of 10 s where it applies.
func prepare(t *testing.T, server *miniredis.Miniredis, client *scriptClient, key string, state setupState) {
	t.Helper()
	switch state {
	case stateOurs:
		require.Equal(t, "OK", client.do(t, "SET", key, ourToken, "PX", "10000"))
	case stateOther:
		require.Equal(t, "OK", client.do(t, "SET", key, otherToken, "PX", "10000"))
	case stateExpired:
		require.Equal(t, "OK", client.do(t, "SET", key, ourToken, "PX", "1000"))
		server.FastForward(1001 * time.Millisecond)
	case stateWrongType:
		require.Equal(t, int64(1), client.do(t, "RPUSH", key, "x"))
	case statePersistent:
		require.Equal(t, "OK", client.do(t, "SET", key, otherToken))
	}
}

func assertWrongType(t *testing.T, reply any) {
	t.Helper()
	var replyErr replyError
	require.True(t, errors.As(asError(reply), &replyErr), "reply %#v is not an error", reply)
	assert.Contains(t, string(replyErr), "WRONGTYPE")
}

func asError(reply any) error {
	err, _ := reply.(replyError)
	if err == "" {
		return nil
	}
	return err
}

func TestReleaseScript(t *testing.T) {
	tests := []struct {
		name      string
		states    []setupState
		want      int64
		wrongType bool
		remaining []bool // whether each key exists after the script
	}{
		{name: "held by us", states: []setupState{stateOurs}, want: 1, remaining: []bool{false}},
		{name: "held by another", states: []setupState{stateOther}, want: 0, remaining: []bool{true}},
		{name: "missing", states: []setupState{stateMissing}, want: 0, remaining: []bool{false}},
		{name: "expired", states: []setupState{stateExpired}, want: 0, remaining: []bool{false}},
		{name: "wrong type", states: []setupState{stateWrongType}, wrongType: true, remaining: []bool{true}},
		{name: "all keys held by us", states: []setupState{stateOurs, stateOurs, stateOurs}, want: 3, remaining: []bool{false, false, false}},
		{name: "part of the keys held by us", states: []setupState{stateOurs, stateOther, stateMissing}, want: 1, remaining: []bool{false, true, false}},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			server, client := scriptServer(t)
			keys := lockKeys(len(test.states))
			for i, state := range test.states {
				prepare(t, server, client, keys[i], state)
			}
			reply := client.eval(t, protocol.Release.Source(), keys, ourToken)
			if test.wrongType {
				assertWrongType(t, reply)
			} else {
				assert.Equal(t, test.want, reply)
			}
			for i, key := range keys {
				assert.Equal(t, test.remaining[i], server.Exists(key), "key %s", key)
			}
		})
	}
}

// The release script announces the release identity on the channel of
// every key it released, and nothing without an identity (the clean-up of
// a failed attempt) or for keys it did not release.
func TestReleaseScriptAnnouncesEveryKeyItReleased(t *testing.T) {
	tests := []struct {
		name      string
		states    []setupState
		identity  string // none when empty
		announced []int  // the keys whose channel hears the identity
	}{
		{name: "one key", states: []setupState{stateOurs}, identity: "release-1", announced: []int{0}},
		{name: "every key of a multi-key hold", states: []setupState{stateOurs, stateOurs, stateOurs}, identity: "release-1", announced: []int{0, 1, 2}},
		{name: "the keys held by us only", states: []setupState{stateOther, stateOurs, stateMissing}, identity: "release-1", announced: []int{1}},
		{name: "nothing held by us", states: []setupState{stateOther, stateMissing}, identity: "release-1"},
		{name: "no identity", states: []setupState{stateOurs, stateOurs}},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			server, client := scriptServer(t)
			listener := dialScriptClient(t, server.Addr())
			require.Equal(t, []any{"psubscribe", releasedChannelPrefix + "*", int64(1)}, listener.do(t, "PSUBSCRIBE", releasedChannelPrefix+"*"))
			keys := lockKeys(len(test.states))
			for i, state := range test.states {
				prepare(t, server, client, keys[i], state)
			}
			arguments := []string{ourToken}
			if test.identity != "" {
				arguments = append(arguments, test.identity)
			}
			client.eval(t, protocol.Release.Source(), keys, arguments...)
			client.do(t, "PUBLISH", releasedChannelPrefix+"end", "end") // the last message

			var want, got []string
			for _, i := range test.announced {
				want = append(want, releasedChannelPrefix+keys[i]+" "+test.identity)
			}
			for {
				message, err := listener.readReply()
				require.NoError(t, err)
				fields := message.([]any) // pmessage, pattern, channel, message
				if fields[2] == releasedChannelPrefix+"end" {
					break
				}
				got = append(got, fields[2].(string)+" "+fields[3].(string))
			}
			assert.Equal(t, want, got)
		})
	}
}

func TestExtendScript(t *testing.T) {
	tests := []struct {
		name      string
		states    []setupState
		want      int64
		wrongType bool
	}{
		{name: "held by us", states: []setupState{stateOurs}, want: protocol.ExtendExtended},
		{name: "held by another", states: []setupState{stateOther}, want: protocol.ExtendHeld},
		{name: "missing", states: []setupState{stateMissing}, want: protocol.ExtendMissing},
		{name: "expired", states: []setupState{stateExpired}, want: protocol.ExtendMissing},
		{name: "wrong type", states: []setupState{stateWrongType}, wrongType: true},
		{name: "all keys held by us", states: []setupState{stateOurs, stateOurs}, want: protocol.ExtendExtended},
		{name: "one key missing", states: []setupState{stateOurs, stateMissing}, want: protocol.ExtendMissing},
		{name: "one key missing, one held by another", states: []setupState{stateMissing, stateOther, stateOurs}, want: protocol.ExtendHeld},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			server, client := scriptServer(t)
			keys := lockKeys(len(test.states))
			for i, state := range test.states {
				prepare(t, server, client, keys[i], state)
			}
			reply := client.eval(t, protocol.Extend.Source(), keys, ourToken, "30000")
			if test.wrongType {
				assertWrongType(t, reply)
				return
			}
			assert.Equal(t, test.want, reply)
			// All or nothing: a failed extension leaves every TTL alone.
			for i, key := range keys {
				switch {
				case test.states[i] == stateMissing || test.states[i] == stateExpired:
					assert.False(t, server.Exists(key))
				case test.want == protocol.ExtendExtended:
					assert.Equal(t, 30*time.Second, server.TTL(key), "key %s", key)
				default:
					assert.Equal(t, 10*time.Second, server.TTL(key), "key %s", key)
				}
			}
		})
	}
}

func TestCheckScript(t *testing.T) {
	tests := []struct {
		name      string
		states    []setupState
		want      int64
		wrongType bool
	}{
		{name: "held by us", states: []setupState{stateOurs}, want: 10_000},
		{name: "held by another", states: []setupState{stateOther}, want: protocol.CheckHeld},
		{name: "missing", states: []setupState{stateMissing}, want: protocol.CheckMissing},
		{name: "expired", states: []setupState{stateExpired}, want: protocol.CheckMissing},
		{name: "wrong type", states: []setupState{stateWrongType}, wrongType: true},
		{name: "all keys held by us", states: []setupState{stateOurs, stateOurs}, want: 10_000},
		{name: "one key missing", states: []setupState{stateOurs, stateMissing}, want: protocol.CheckMissing},
		{name: "held by another takes precedence", states: []setupState{stateMissing, stateOther}, want: protocol.CheckHeld},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			server, client := scriptServer(t)
			keys := lockKeys(len(test.states))
			for i, state := range test.states {
				prepare(t, server, client, keys[i], state)
			}
			reply := client.eval(t, protocol.Check.Source(), keys, ourToken)
			if test.wrongType {
				assertWrongType(t, reply)
				return
			}
			assert.Equal(t, test.want, reply)
		})
	}
}

func TestCheckScriptRemainingTime(t *testing.T) {
	server, client := scriptServer(t)
	require.Equal(t, "OK", client.do(t, "SET", "lock:0", ourToken, "PX", "10000"))
	require.Equal(t, "OK", client.do(t, "SET", "lock:1", ourToken, "PX", "4000"))
	require.Equal(t, "OK", client.do(t, "SET", "lock:2", ourToken))
	assert.Equal(t, int64(4000), client.eval(t, protocol.Check.Source(), []string{"lock:0", "lock:1"}, ourToken), "the smallest remaining TTL")
	server.FastForward(1500 * time.Millisecond)
	assert.Equal(t, int64(2500), client.eval(t, protocol.Check.Source(), []string{"lock:0", "lock:1"}, ourToken))
	assert.Equal(t, int64(protocol.CheckPersistent), client.eval(t, protocol.Check.Source(), []string{"lock:0", "lock:2"}, ourToken), "a key without a TTL")
}

// lockKeys returns n distinct key names.
func lockKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = "lock:" + strconv.Itoa(i)
	}
	return keys
}
