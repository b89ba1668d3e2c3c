package cluster

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/resp"
)

// routingKey finds the first key of the commands a Group sends, and
// nothing in a keyless command or in bytes that are not a command.
func TestRoutingKey(t *testing.T) {
	for _, test := range []struct {
		command [][]byte
		raw     string
		key     string
	}{
		{command: words("EVALSHA", "abc", "2", "k1", "k2", "token"), key: "k1"},
		{command: words("eval", "return 1", "1", "k"), key: "k"},
		{command: words("EVAL", "return 1", "0", "arg")},
		{command: words("EVAL", "return 1", "x", "k")},
		{command: words("SET", "lock", "token", "NX", "PX", "10000"), key: "lock"},
		{command: words("get", "lock"), key: "lock"},
		{command: words("INFO")},
		{command: words("CLUSTER", "INFO")},
		{raw: "*3\r\n$4\r\nEVAL\r\n$1\r\nx\r\n$1\r\n1\r\n"},
		{raw: "*2\r\n$3\r\nGET\r\n$10\r\nshort\r\n"},
		{raw: "+OK\r\n"},
		{raw: "*99999999999\r\n"},
		{raw: ""},
	} {
		command := []byte(test.raw)
		if test.command != nil {
			command = resp.AppendArrayHeader(nil, len(test.command))
			for _, word := range test.command {
				command = resp.AppendBulk(command, word)
			}
		}
		key, ok := routingKey(command)
		assert.Equal(t, test.key != "", ok, "%q", command)
		assert.Equal(t, test.key, string(key), "%q", command)
	}
}

func words(arguments ...string) [][]byte {
	out := make([][]byte, len(arguments))
	for i, argument := range arguments {
		out[i] = []byte(argument)
	}
	return out
}

// ParseRedirect reads MOVED and ASK, and refuses whatever is not one.
func TestParseRedirect(t *testing.T) {
	r, ok := ParseRedirect([]byte("MOVED 3999 127.0.0.1:6381"))
	require.True(t, ok)
	assert.Equal(t, Redirect{slot: 3999, hostPort: "127.0.0.1:6381"}, r)
	r, ok = ParseRedirect([]byte("ASK 0 [::1]:7000"))
	require.True(t, ok)
	assert.Equal(t, Redirect{ask: true, slot: 0, hostPort: "[::1]:7000"}, r)
	for _, bad := range []string{"MOVED 16384 h:1", "MOVED x h:1", "MOVED 1", "MOVED 1 host", "MOVED  h:1", "ASKED 1 h:1", "ERR x", "MOVED 99999999999999999999 h:1"} {
		_, ok := ParseRedirect([]byte(bad))
		assert.False(t, ok, bad)
	}
}

// The slot map is read from CLUSTER SHARDS in RESP2 and RESP3 form, and
// from CLUSTER SLOTS; a shard without a master online serves nothing, and
// bounds out of range are refused.
func TestParseClusterMaps(t *testing.T) {
	text := func(s string) resp.Value { return resp.Value{Type: resp.TypeBulkString, Str: []byte(s)} }
	number := func(n int64) resp.Value { return resp.Value{Type: resp.TypeInteger, Int: n} }
	entry := func(kind resp.Type, elements ...resp.Value) resp.Value {
		return resp.Value{Type: kind, Elems: elements}
	}
	node := func(kind resp.Type, role, health string, port int64) resp.Value {
		return entry(kind, text("ip"), text("10.0.0.1"), text("endpoint"), text(""), text("port"), number(port),
			text("tls-port"), number(port+1000), text("role"), text(role), text("health"), text(health))
	}
	for _, kind := range []resp.Type{resp.TypeArray, resp.TypeMap} {
		shards := entry(resp.TypeArray,
			entry(kind, text("slots"), entry(resp.TypeArray, number(0), number(99), number(200), number(299)),
				text("nodes"), entry(resp.TypeArray, node(kind, "replica", "online", 7001), node(kind, "master", "online", 7000))),
			entry(kind, text("slots"), entry(resp.TypeArray, number(100), number(199)),
				text("nodes"), entry(resp.TypeArray, node(kind, "master", "fail", 7002))),
		)
		ranges, err := parseClusterShards(shards, "asked", false)
		require.NoError(t, err)
		assert.Equal(t, []slotRange{{0, 99, "10.0.0.1:7000"}, {200, 299, "10.0.0.1:7000"}}, ranges, "the failed master's shard serves nothing")
		ranges, err = parseClusterShards(shards, "asked", true)
		require.NoError(t, err)
		assert.Equal(t, "10.0.0.1:8000", ranges[0].master, "TLS uses the tls-port")
	}
	_, err := parseClusterShards(entry(resp.TypeArray, entry(resp.TypeArray, text("slots"), entry(resp.TypeArray, number(0), number(16384)))), "h", false)
	assert.ErrorIs(t, err, ErrClusterMap)
	_, err = parseClusterShards(text("nonsense"), "h", false)
	assert.ErrorIs(t, err, ErrClusterMap)

	slots := entry(resp.TypeArray, entry(resp.TypeArray, number(0), number(16383), entry(resp.TypeArray, text(""), number(7000), text("id"))))
	ranges, err := parseClusterSlots(slots, "10.0.0.9", false)
	require.NoError(t, err)
	assert.Equal(t, []slotRange{{0, 16383, "10.0.0.9:7000"}}, ranges, "an empty host is the node asked")
	_, err = parseClusterSlots(entry(resp.TypeArray, entry(resp.TypeArray, number(5), number(4), entry(resp.TypeArray, text("h"), number(1)))), "h", false)
	assert.ErrorIs(t, err, ErrClusterMap)
	_, err = parseClusterSlots(entry(resp.TypeArray, entry(resp.TypeArray, number(0))), "h", false)
	assert.ErrorIs(t, err, ErrClusterMap)
}
