package conn_test

import (
	"context"
	"math"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/conn"
	"github.com/lockmux/lockmux/internal/redistest"
	"github.com/lockmux/lockmux/resp"
)

// eval returns the arguments of EVAL script with no keys.
func eval(script string) []string { return []string{"EVAL", script, "0"} }

// isDouble returns a check that a reply is the double want, its sign
// included; a NaN matches any NaN, as servers spell it "nan" or "-nan".
func isDouble(want float64) func(t *testing.T, reply resp.Value) {
	return func(t *testing.T, reply resp.Value) {
		t.Helper()
		require.Equal(t, resp.TypeDouble, reply.Type, "reply %v", reply)
		t.Logf("the server wrote %q", reply.Str)
		if math.IsNaN(want) {
			assert.True(t, math.IsNaN(reply.Float), "want NaN, got %v", reply.Float)
			assert.Contains(t, []string{"nan", "-nan"}, string(reply.Str))
			return
		}
		assert.Equal(t, want, reply.Float)
		assert.Equal(t, math.Signbit(want), math.Signbit(reply.Float), "the sign of %v", reply.Float)
	}
}

// isValue returns a check that a reply is want.
func isValue(want resp.Value) func(t *testing.T, reply resp.Value) {
	return func(t *testing.T, reply resp.Value) {
		t.Helper()
		assert.Equal(t, want.String(), reply.String())
		assert.Equal(t, want.Type, reply.Type)
	}
}

// isBulk returns a check that a reply is the bulk string want.
func isBulk(want string) func(t *testing.T, reply resp.Value) {
	return isValue(resp.Value{Type: resp.TypeBulkString, Str: []byte(want)})
}

// TestRESP3RepliesOfARealServer sends a real server, over the RESP3 that
// the Conn asks for with HELLO 3, commands whose replies go beyond those of
// a lock client: the doubles, big numbers, verbatim strings and maps that
// scripts make of Lua values (`EVAL "return {double = 0/0}" 0` gives
// ",-nan" on Redis 7.0), the doubles of sorted sets and GEOPOS, and DEBUG
// PROTOCOL's sample of every type. Each reply parses, and the PING after it
// is answered on the same connection: no reply poisons the reader.
func TestRESP3RepliesOfARealServer(t *testing.T) {
	redistest.RequireReal(t)
	server := redistest.Start(t, redistest.Options{})
	var connects atomic.Int32
	pushes := make(chan resp.Value, 8)
	c := newConn(t, server.Addr(), conn.Options{
		OnConnect: func(string, string) { connects.Add(1) },
		OnPush:    func(push resp.Value) error { pushes <- push.Clone(); return nil },
	})
	require.Equal(t, conn.ProtocolRESP3, c.Protocol(), "the Conn must have switched to RESP3 with HELLO 3")

	integer := func(n int64) resp.Value { return resp.Value{Type: resp.TypeInteger, Int: n} }
	bulk := func(s string) resp.Value { return resp.Value{Type: resp.TypeBulkString, Str: []byte(s)} }
	boolean := func(b bool) resp.Value {
		v := resp.Value{Type: resp.TypeBoolean}
		if b {
			v.Int = 1
		}
		return v
	}
	tests := []struct {
		name    string
		setup   []string // a command sent first, whose reply is not checked
		command []string
		check   func(t *testing.T, reply resp.Value)
	}{
		{name: "EVAL double 0 over 0", command: eval("return {double = 0/0}"), check: isDouble(math.NaN())},
		{name: "EVAL double -(0 over 0)", command: eval("return {double = -(0/0)}"), check: isDouble(math.NaN())},
		{name: "EVAL double 1 over 0", command: eval("return {double = 1/0}"), check: isDouble(math.Inf(1))},
		{name: "EVAL double -1 over 0", command: eval("return {double = -1/0}"), check: isDouble(math.Inf(-1))},
		{name: "EVAL double -0", command: eval("local zero = 0 return {double = -zero}"), check: isDouble(math.Copysign(0, -1))},
		{name: "EVAL double 1e-5", command: eval("return {double = 1e-5}"), check: isDouble(1e-5)},
		{name: "EVAL double 1e300", command: eval("return {double = 1e300}"), check: isDouble(1e300)},
		{name: "EVAL double 1e21", command: eval("return {double = 1e21}"), check: isDouble(1e21)},
		{
			name:    "EVAL NaN in an array",
			command: eval("return {{double = 0/0}, {double = -1/0}, 1}"),
			check: func(t *testing.T, reply resp.Value) {
				require.Equal(t, resp.TypeArray, reply.Type, "reply %v", reply)
				require.Len(t, reply.Elems, 3)
				isDouble(math.NaN())(t, reply.Elems[0])
				isDouble(math.Inf(-1))(t, reply.Elems[1])
			},
		},
		{
			// Lua's big_number is sent as it is, CR and LF turned to spaces.
			name:    "EVAL big_number with CRLF",
			command: eval(`return {big_number = '123\r\n123'}`),
			check:   isValue(resp.Value{Type: resp.TypeBigNumber, Str: []byte("123  123")}),
		},
		{
			name:    "EVAL big_number empty",
			command: eval("return {big_number = ''}"),
			check:   isValue(resp.Value{Type: resp.TypeBigNumber, Str: []byte{}}),
		},
		{
			name:    "EVAL verbatim_string without a format",
			command: eval("return {verbatim_string = {format = '', string = 'x'}}"),
			check:   isValue(resp.Value{Type: resp.TypeVerbatim, Format: [3]byte{' ', ' ', ' '}, Str: []byte("x")}),
		},
		{
			// A Lua table key is converted like any value.
			name:    "EVAL map with an array key",
			command: eval("local t = {} t[{1}] = 2 return {map = t}"),
			check: isValue(resp.Value{Type: resp.TypeMap, Elems: []resp.Value{
				{Type: resp.TypeArray, Elems: []resp.Value{integer(1)}}, integer(2),
			}}),
		},
		{name: "EVAL set", command: eval("return {set = {a = true}}"), check: isValue(resp.Value{Type: resp.TypeSet, Elems: []resp.Value{bulk("a")}})},
		{name: "EVAL nil", command: eval("return nil"), check: isValue(resp.Value{Type: resp.TypeNull, Null: true})},
		{
			name:    "ZRANGE WITHSCORES of infinite scores",
			setup:   []string{"ZADD", "scores", "-inf", "low", "inf", "high"},
			command: []string{"ZRANGE", "scores", "0", "-1", "WITHSCORES"},
			check: func(t *testing.T, reply resp.Value) {
				require.Equal(t, resp.TypeArray, reply.Type, "reply %v", reply)
				require.Len(t, reply.Elems, 2)
				isDouble(math.Inf(-1))(t, reply.Elems[0].Elems[1])
				isDouble(math.Inf(1))(t, reply.Elems[1].Elems[1])
			},
		},
		{
			name:    "GEOPOS",
			setup:   []string{"GEOADD", "places", "13.361389", "38.115556", "Palermo"},
			command: []string{"GEOPOS", "places", "Palermo"},
			check: func(t *testing.T, reply resp.Value) {
				require.Equal(t, resp.TypeArray, reply.Type, "reply %v", reply)
				require.Len(t, reply.Elems, 1)
				require.Len(t, reply.Elems[0].Elems, 2)
				assert.InDelta(t, 13.361389, reply.Elems[0].Elems[0].Float, 1e-5)
				assert.InDelta(t, 38.115556, reply.Elems[0].Elems[1].Float, 1e-5)
			},
		},
		{name: "DEBUG PROTOCOL string", command: []string{"DEBUG", "PROTOCOL", "string"}, check: isBulk("Hello World")},
		{name: "DEBUG PROTOCOL integer", command: []string{"DEBUG", "PROTOCOL", "integer"}, check: isValue(integer(12345))},
		{name: "DEBUG PROTOCOL double", command: []string{"DEBUG", "PROTOCOL", "double"}, check: isDouble(3.141)},
		{
			name:    "DEBUG PROTOCOL bignum",
			command: []string{"DEBUG", "PROTOCOL", "bignum"},
			check:   isValue(resp.Value{Type: resp.TypeBigNumber, Str: []byte("1234567999999999999999999999999999999")}),
		},
		{name: "DEBUG PROTOCOL null", command: []string{"DEBUG", "PROTOCOL", "null"}, check: isValue(resp.Value{Type: resp.TypeNull, Null: true})},
		{
			name:    "DEBUG PROTOCOL array",
			command: []string{"DEBUG", "PROTOCOL", "array"},
			check:   isValue(resp.Value{Type: resp.TypeArray, Elems: []resp.Value{integer(0), integer(1), integer(2)}}),
		},
		{
			name:    "DEBUG PROTOCOL set",
			command: []string{"DEBUG", "PROTOCOL", "set"},
			check:   isValue(resp.Value{Type: resp.TypeSet, Elems: []resp.Value{integer(0), integer(1), integer(2)}}),
		},
		{
			name:    "DEBUG PROTOCOL map",
			command: []string{"DEBUG", "PROTOCOL", "map"},
			check: isValue(resp.Value{Type: resp.TypeMap, Elems: []resp.Value{
				integer(0), boolean(false), integer(1), boolean(true), integer(2), boolean(false),
			}}),
		},
		{
			name:    "DEBUG PROTOCOL attrib",
			command: []string{"DEBUG", "PROTOCOL", "attrib"},
			check:   isBulk("Some real reply following the attribute"),
		},
		{
			name:    "DEBUG PROTOCOL push",
			command: []string{"DEBUG", "PROTOCOL", "push"},
			check: func(t *testing.T, reply resp.Value) {
				isBulk("Some real reply following the push reply")(t, reply)
				// The push came before the reply, on the goroutine that read it.
				select {
				case push := <-pushes:
					isValue(resp.Value{Type: resp.TypePush, Elems: []resp.Value{bulk("server-cpu-usage"), integer(42)}})(t, push)
				default:
					t.Error("the push before the reply did not reach OnPush")
				}
			},
		},
		{
			name:    "DEBUG PROTOCOL verbatim",
			command: []string{"DEBUG", "PROTOCOL", "verbatim"},
			check:   isValue(resp.Value{Type: resp.TypeVerbatim, Format: [3]byte{'t', 'x', 't'}, Str: []byte("This is a verbatim\nstring")}),
		},
		{name: "DEBUG PROTOCOL true", command: []string{"DEBUG", "PROTOCOL", "true"}, check: isValue(boolean(true))},
		{name: "DEBUG PROTOCOL false", command: []string{"DEBUG", "PROTOCOL", "false"}, check: isValue(boolean(false))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Up again if an earlier case cost the connection.
			require.NoError(t, c.Connect(context.Background()))
			before := connects.Load()
			if tc.setup != nil {
				do(t, c, tc.setup...)
			}
			tc.check(t, do(t, c, tc.command...))
			assert.Equal(t, "PONG", string(do(t, c, "PING").Str), "the command after the reply")
			assert.Equal(t, before, connects.Load(), "the reply must not have cost the connection")
		})
	}
}
