package resp

import (
	"math"
	"strconv"
	"strings"
)

// validFrame is a well-formed frame and the value it parses to.
type validFrame struct {
	name   string
	input  string
	want   Value
	limits Limits
}

// validFrames covers every type in RESP2 and RESP3.
var validFrames = []validFrame{
	// RESP2.
	{name: "simple string", input: "+OK\r\n", want: simple("OK")},
	{name: "empty simple string", input: "+\r\n", want: simple("")},
	{name: "simple error", input: "-ERR unknown command\r\n", want: simpleErr("ERR unknown command")},
	{name: "integer zero", input: ":0\r\n", want: integer(0)},
	{name: "integer one", input: ":1\r\n", want: integer(1)},
	{name: "negative integer", input: ":-42\r\n", want: integer(-42)},
	{name: "max int64", input: ":9223372036854775807\r\n", want: integer(math.MaxInt64)},
	{name: "min int64", input: ":-9223372036854775808\r\n", want: integer(math.MinInt64)},
	{name: "bulk string", input: "$5\r\nhello\r\n", want: bulk("hello")},
	{name: "empty bulk string", input: "$0\r\n\r\n", want: bulk("")},
	{name: "binary bulk string", input: "$6\r\n\r\n\x00\r\n\n\r\n", want: bulk("\r\n\x00\r\n\n")},
	{name: "null bulk string", input: "$-1\r\n", want: Value{Type: TypeBulkString, Null: true}},
	{name: "null array", input: "*-1\r\n", want: Value{Type: TypeArray, Null: true}},
	{name: "empty array", input: "*0\r\n", want: array()},
	{name: "array", input: "*3\r\n:1\r\n$3\r\nfoo\r\n+bar\r\n", want: array(integer(1), bulk("foo"), simple("bar"))},
	{
		name:  "nested arrays",
		input: "*2\r\n*2\r\n:1\r\n:2\r\n*1\r\n*1\r\n$-1\r\n",
		want:  array(array(integer(1), integer(2)), array(array(Value{Type: TypeBulkString, Null: true}))),
	},
	{name: "array with null", input: "*2\r\n$-1\r\n*-1\r\n", want: array(Value{Type: TypeBulkString, Null: true}, Value{Type: TypeArray, Null: true})},
	// RESP3.
	{name: "null", input: "_\r\n", want: Value{Type: TypeNull, Null: true}},
	{name: "true", input: "#t\r\n", want: Value{Type: TypeBoolean, Int: 1}},
	{name: "false", input: "#f\r\n", want: Value{Type: TypeBoolean}},
	{name: "double", input: ",1.23\r\n", want: double(1.23)},
	{name: "double integral", input: ",10\r\n", want: double(10)},
	{name: "double negative zero", input: ",-0\r\n", want: double(math.Copysign(0, -1))},
	{name: "double plus sign", input: ",+3.5\r\n", want: double(3.5)},
	{name: "double exponent", input: ",1e+300\r\n", want: double(1e300)},
	{name: "double negative exponent", input: ",-1.5E-3\r\n", want: double(-1.5e-3)},
	{name: "double inf", input: ",inf\r\n", want: double(math.Inf(1))},
	{name: "double negative inf", input: ",-inf\r\n", want: double(math.Inf(-1))},
	{name: "double nan", input: ",nan\r\n", want: double(math.NaN())},
	{name: "double negative nan", input: ",-nan\r\n", want: double(math.Copysign(math.NaN(), -1))},
	{name: "double 17 digits", input: ",3.1400000000000001\r\n", want: double(3.14)},
	{
		name:  "big number",
		input: "(3492890328409238509324850943850943825024385\r\n",
		want:  Value{Type: TypeBigNumber, Str: []byte("3492890328409238509324850943850943825024385")},
	},
	{name: "negative big number", input: "(-12\r\n", want: Value{Type: TypeBigNumber, Str: []byte("-12")}},
	{
		name:  "bulk error",
		input: "!21\r\nSYNTAX invalid syntax\r\n",
		want:  Value{Type: TypeBulkError, Str: []byte("SYNTAX invalid syntax")},
	},
	{
		name:  "verbatim",
		input: "=15\r\ntxt:Some string\r\n",
		want:  Value{Type: TypeVerbatim, Format: [3]byte{'t', 'x', 't'}, Str: []byte("Some string")},
	},
	{
		name:  "empty verbatim",
		input: "=4\r\nmkd:\r\n",
		want:  Value{Type: TypeVerbatim, Format: [3]byte{'m', 'k', 'd'}, Str: []byte("")},
	},
	{
		name:  "map",
		input: "%2\r\n+first\r\n:1\r\n$6\r\nsecond\r\n#t\r\n",
		want:  mapOf(simple("first"), integer(1), bulk("second"), Value{Type: TypeBoolean, Int: 1}),
	},
	{name: "empty map", input: "%0\r\n", want: mapOf()},
	{name: "map with null key", input: "%1\r\n_\r\n*1\r\n:1\r\n", want: mapOf(Value{Type: TypeNull, Null: true}, array(integer(1)))},
	{name: "set", input: "~3\r\n+a\r\n:1\r\n,2.5\r\n", want: setOf(simple("a"), integer(1), double(2.5))},
	{name: "map with an array key", input: "%1\r\n*1\r\n:1\r\n:2\r\n", want: mapOf(array(integer(1)), integer(2))},
	{name: "attribute with an aggregate key", input: "|1\r\n*0\r\n+b\r\n:1\r\n", want: integer(1)},
	{
		name:  "push message",
		input: ">3\r\n$7\r\nmessage\r\n$7\r\nchannel\r\n$5\r\nhello\r\n",
		want:  push(bulk("message"), bulk("channel"), bulk("hello")),
	},
	{
		name:  "push invalidate",
		input: ">2\r\n$10\r\ninvalidate\r\n*1\r\n$3\r\nfoo\r\n",
		want:  push(bulk("invalidate"), array(bulk("foo"))),
	},
	{name: "push in RESP2 frame order", input: ">2\r\n+pub\r\n+x\r\n", want: push(simple("pub"), simple("x"))},
	{
		name:  "attribute before reply",
		input: "|1\r\n+key-popularity\r\n%2\r\n$1\r\na\r\n,0.1923\r\n$1\r\nb\r\n,0.0012\r\n*2\r\n:2039123\r\n:9543892\r\n",
		want:  array(integer(2039123), integer(9543892)),
	},
	{name: "attribute before bulk", input: "|1\r\n+a\r\n+b\r\n$1\r\nv\r\n", want: bulk("v")},
	{name: "two attributes", input: "|1\r\n+a\r\n+b\r\n|0\r\n:7\r\n", want: integer(7)},
	{name: "attribute before element", input: "*2\r\n|1\r\n+ttl\r\n:3\r\n:1\r\n:2\r\n", want: array(integer(1), integer(2))},
	{name: "attribute before map key", input: "%1\r\n|1\r\n+a\r\n*0\r\n+k\r\n+v\r\n", want: mapOf(simple("k"), simple("v"))},
	{
		name: "hello 3",
		input: "%7\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$6\r\n7.0.15\r\n$5\r\nproto\r\n:3\r\n" +
			"$2\r\nid\r\n:5\r\n$4\r\nmode\r\n$10\r\nstandalone\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$7\r\nmodules\r\n*0\r\n",
		want: mapOf(
			bulk("server"), bulk("redis"), bulk("version"), bulk("7.0.15"), bulk("proto"), integer(3),
			bulk("id"), integer(5), bulk("mode"), bulk("standalone"), bulk("role"), bulk("master"),
			bulk("modules"), array(),
		),
	},
	// At the limits.
	{name: "bulk at the length limit", input: "$5\r\nhello\r\n", want: bulk("hello"), limits: Limits{MaxBulkLength: 5}},
	{name: "line at the length limit", input: "+12345678\r\n", want: simple("12345678"), limits: Limits{MaxLineLength: 8}},
	{name: "depth at the limit", input: "*1\r\n*1\r\n:1\r\n", want: array(array(integer(1))), limits: Limits{MaxDepth: 2}},
	{
		name:   "map at the element limit",
		input:  "%2\r\n:1\r\n:2\r\n:3\r\n:4\r\n",
		want:   mapOf(integer(1), integer(2), integer(3), integer(4)),
		limits: Limits{MaxAggregateLength: 4},
	},
	{
		name:   "total elements at the limit",
		input:  "*2\r\n*2\r\n:1\r\n:2\r\n*2\r\n:3\r\n:4\r\n",
		want:   array(array(integer(1), integer(2)), array(integer(3), integer(4))),
		limits: Limits{MaxTotalElements: 6},
	},
	{name: "double at its length limit", input: ",0." + strings.Repeat("1", 324) + "\r\n", want: double(1.0 / 9)},
}

// invalidFrame is a malformed frame and where it fails.
type invalidFrame struct {
	name      string
	input     string
	offset    int  // of the first bad byte
	tooLarge  bool // the error wraps ErrTooLarge
	limits    Limits
	rule      string // of RELIABILITY.md §9.2
	truncated bool   // input is a prefix that already fails, without its end
}

// invalidFrames covers the rules of RELIABILITY.md §9.2 that apply to the
// parser.
var invalidFrames = []invalidFrame{
	// R1: bulk lengths.
	{rule: "R1", name: "bulk length -2", input: "$-2\r\n", offset: 2},
	{rule: "R1", name: "bulk length -0", input: "$-0\r\n", offset: 2},
	{rule: "R1", name: "bulk length above the limit", input: "$1048577\r\n", offset: 7, tooLarge: true},
	{rule: "R1", name: "bulk length overflowing int64", input: "$99999999999999999999\r\n", offset: 7, tooLarge: true},
	{rule: "R1", name: "bulk length max int64", input: "$9223372036854775807\r\n", offset: 7, tooLarge: true},
	{rule: "R1", name: "bulk above a small limit", input: "$6\r\nhello!\r\n", offset: 1, tooLarge: true, limits: Limits{MaxBulkLength: 5}},
	{rule: "R1", name: "null bulk error", input: "!-1\r\n", offset: 1},
	{rule: "R1", name: "null verbatim", input: "=-1\r\n", offset: 1},
	// R3: aggregate counts.
	{rule: "R3", name: "array count -5", input: "*-5\r\n", offset: 2},
	{rule: "R3", name: "array count 2^32", input: "*4294967296\r\n", offset: 4, tooLarge: true},
	{rule: "R3", name: "array count above the limit", input: "*1025\r\n", offset: 4, tooLarge: true},
	{rule: "R3", name: "map pairs above the limit", input: "%513\r\n", offset: 3, tooLarge: true},
	{rule: "R3", name: "null map", input: "%-1\r\n", offset: 1},
	{rule: "R3", name: "null set", input: "~-1\r\n", offset: 1},
	{rule: "R3", name: "null push", input: ">-1\r\n", offset: 1},
	{rule: "R3", name: "map pairs overflowing", input: "%9223372036854775807\r\n", offset: 3, tooLarge: true},
	{
		rule: "R3", name: "total elements above the limit", input: "*2\r\n*2\r\n:1\r\n:2\r\n*3\r\n:3\r\n:4\r\n:5\r\n",
		offset: 16, tooLarge: true, limits: Limits{MaxTotalElements: 6},
	},
	// R4: depth.
	{rule: "R4", name: "depth above the limit", input: "*1\r\n*1\r\n*1\r\n:1\r\n", offset: 8, tooLarge: true, limits: Limits{MaxDepth: 2}},
	{rule: "R4", name: "depth 17 by default", input: strings.Repeat("*1\r\n", 17) + ":1\r\n", offset: 64, tooLarge: true},
	// R5: integers and lengths.
	{rule: "R5", name: "integer with a letter", input: ":12a\r\n", offset: 3},
	{rule: "R5", name: "integer with a plus", input: ":+5\r\n", offset: 1},
	{rule: "R5", name: "integer with a space", input: ": 5\r\n", offset: 1},
	{rule: "R5", name: "integer with a trailing space", input: ":5 \r\n", offset: 2},
	{rule: "R5", name: "integer with a leading zero", input: ":05\r\n", offset: 2},
	{rule: "R5", name: "empty integer", input: ":\r\n", offset: 1},
	{rule: "R5", name: "integer minus alone", input: ":-\r\n", offset: 2},
	{rule: "R5", name: "integer negative zero", input: ":-0\r\n", offset: 2},
	{rule: "R5", name: "integer overflow", input: ":9223372036854775808\r\n", offset: 19},
	{rule: "R5", name: "integer negative overflow", input: ":-9223372036854775809\r\n", offset: 20},
	{rule: "R5", name: "length with a plus", input: "$+5\r\nhello\r\n", offset: 1},
	{rule: "R5", name: "length with a leading zero", input: "$05\r\nhello\r\n", offset: 2},
	{rule: "R5", name: "length with a space", input: "$ 5\r\nhello\r\n", offset: 1},
	{rule: "R5", name: "empty length", input: "*\r\n", offset: 1},
	{rule: "R5", name: "length minus alone", input: "$-\r\n", offset: 2},
	{rule: "R5", name: "length -12", input: "*-12\r\n", offset: 3},
	// R6: CRLF.
	{rule: "R6", name: "simple string with a bare LF", input: "+OK\n", offset: 3},
	{rule: "R6", name: "simple string with a CR inside", input: "+O\rK\r\n", offset: 3},
	{rule: "R6", name: "error with a bare LF inside", input: "-ERR\nx\r\n", offset: 4},
	{rule: "R6", name: "bulk payload not followed by CRLF", input: "$5\r\nhelloXX", offset: 9},
	{rule: "R6", name: "bulk payload followed by CR CR", input: "$2\r\nab\r\r", offset: 7},
	{rule: "R6", name: "bulk payload followed by LF", input: "$2\r\nab\n\r", offset: 6},
	{rule: "R6", name: "length line with a bare LF", input: "$2\nab\r\n", offset: 2},
	{rule: "R6", name: "integer with a bare LF", input: ":1\n", offset: 2},
	{rule: "R6", name: "null with a bare LF", input: "_\n", offset: 1},
	{rule: "R6", name: "big number with a bare LF", input: "(12\n3\r\n", offset: 3},
	{rule: "R6", name: "big number with a CR inside", input: "(12\r3\r\n", offset: 4},
	// R7: overlong lines, reported before the CRLF arrives.
	{rule: "R7", name: "line above a small limit", input: "+123456789\r\n", offset: 9, tooLarge: true, limits: Limits{MaxLineLength: 8}},
	{rule: "R7", name: "line above a small limit without CRLF", input: "+123456789", offset: 9, tooLarge: true, limits: Limits{MaxLineLength: 8}, truncated: true},
	{rule: "R7", name: "line above 64 KiB", input: "-" + strings.Repeat("x", 64<<10+1), offset: 64<<10 + 1, tooLarge: true, truncated: true},
	{rule: "R7", name: "double above 326 bytes", input: "," + strings.Repeat("1", 327) + "\r\n", offset: 327, tooLarge: true},
	{rule: "R7", name: "big number above a small limit", input: "(123456789", offset: 9, tooLarge: true, limits: Limits{MaxLineLength: 8}, truncated: true},
	// R9: unknown and streamed types.
	{rule: "R9", name: "unknown type byte", input: "x\r\n", offset: 0},
	{rule: "R9", name: "NUL type byte", input: "\x00", offset: 0},
	{rule: "R9", name: "inline command", input: "PING\r\n", offset: 0},
	{rule: "R9", name: "streamed string", input: "$?\r\n;4\r\nHell\r\n;0\r\n", offset: 1},
	{rule: "R9", name: "streamed aggregate", input: "*?\r\n:1\r\n.\r\n", offset: 1},
	{rule: "R9", name: "streamed chunk", input: ";4\r\nHell\r\n", offset: 0},
	{rule: "R9", name: "streamed end", input: ".\r\n", offset: 0},
	// R10: a push only at the top level.
	{rule: "R10", name: "push inside an array", input: "*1\r\n>1\r\n+x\r\n", offset: 4},
	// R11: attributes count towards the limits.
	{rule: "R11", name: "attribute above the depth limit", input: "*1\r\n|1\r\n+a\r\n+b\r\n:1\r\n", offset: 4, tooLarge: true, limits: Limits{MaxDepth: 1}},
	{rule: "R11", name: "attribute above the total limit", input: "|2\r\n:1\r\n:2\r\n:3\r\n:4\r\n*1\r\n:1\r\n", offset: 20, tooLarge: true, limits: Limits{MaxTotalElements: 4}},
	{rule: "R11", name: "attribute without its value", input: "|1\r\n+a\r\n+b\r\n.\r\n", offset: 12},
	// R12: type grammar.
	{rule: "R12", name: "null with text", input: "_x\r\n", offset: 1},
	{rule: "R12", name: "boolean x", input: "#x\r\n", offset: 1},
	{rule: "R12", name: "boolean T", input: "#T\r\n", offset: 1},
	{rule: "R12", name: "boolean tt", input: "#tt\r\n", offset: 2},
	{rule: "R12", name: "empty boolean", input: "#\r\n", offset: 1},
	{rule: "R12", name: "double hex", input: ",0x10\r\n", offset: 2},
	{rule: "R12", name: "double infinity", input: ",infinity\r\n", offset: 4},
	{rule: "R12", name: "double Inf", input: ",Inf\r\n", offset: 1},
	{rule: "R12", name: "double plus inf", input: ",+inf\r\n", offset: 2},
	{rule: "R12", name: "double plus nan", input: ",+nan\r\n", offset: 2},
	{rule: "R12", name: "double NaN", input: ",NaN\r\n", offset: 1},
	{rule: "R12", name: "double minus NAN", input: ",-NAN\r\n", offset: 2},
	{rule: "R12", name: "double nan with a payload", input: ",nan(1)\r\n", offset: 4},
	{rule: "R12", name: "double minus nan with a payload", input: ",-nan(1)\r\n", offset: 5},
	{rule: "R12", name: "double minus nan and more", input: ",-nanx\r\n", offset: 5},
	{rule: "R12", name: "double two minus signs", input: ",--nan\r\n", offset: 2},
	{rule: "R12", name: "double minus infinity", input: ",-infinity\r\n", offset: 5},
	{rule: "R12", name: "double minus alone", input: ",-\r\n", offset: 2},
	{rule: "R12", name: "double exponent sign alone", input: ",1e+\r\n", offset: 4},
	{rule: "R12", name: "double with a space", input: ", 1\r\n", offset: 1},
	{rule: "R12", name: "double ending in a dot", input: ",1.\r\n", offset: 3},
	{rule: "R12", name: "double starting with a dot", input: ",.5\r\n", offset: 1},
	{rule: "R12", name: "double exponent without digits", input: ",1e\r\n", offset: 3},
	{rule: "R12", name: "empty double", input: ",\r\n", offset: 1},
	{rule: "R12", name: "double out of range", input: ",1e400\r\n", offset: 1},
	{rule: "R12", name: "verbatim shorter than 4", input: "=3\r\ntxt\r\n", offset: 0},
	{rule: "R12", name: "verbatim without a colon", input: "=5\r\ntxtx:\r\n", offset: 7},
}

// redisReplies are replies of Redis 7 to the commands of a lock client, as
// captured on the wire.
var redisReplies = []string{
	"+OK\r\n",                             // SET k v NX PX 30000
	"$5\r\nhello\r\n",                     // GET k
	"$-1\r\n",                             // GET of a missing key, RESP2
	"_\r\n",                               // GET of a missing key, RESP3
	":1\r\n",                              // EVAL of the release script: deleted
	":0\r\n",                              // EVAL of the release script: not the owner
	"+PONG\r\n",                           // PING
	"*2\r\n$7\r\nmessage\r\n$2\r\nhi\r\n", // RESP2 array
	"%7\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$6\r\n7.0.15\r\n$5\r\nproto\r\n:3\r\n" + // HELLO 3
		"$2\r\nid\r\n:5\r\n$4\r\nmode\r\n$10\r\nstandalone\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$7\r\nmodules\r\n*0\r\n",
	"$103\r\n# Server\r\nredis_version:7.0.15\r\nredis_git_sha1:00000000\r\nredis_mode:standalone\r\n" + // INFO server, abridged
		"os:Linux 6.1.0 x86_64\r\n\r\n",
	">2\r\n$10\r\ninvalidate\r\n*1\r\n$3\r\nfoo\r\n",          // CLIENT TRACKING invalidation
	">3\r\n$7\r\nmessage\r\n$7\r\nchannel\r\n$5\r\nhello\r\n", // pub/sub message
	">3\r\n$9\r\nsubscribe\r\n$7\r\nchannel\r\n:1\r\n",        // SUBSCRIBE confirmation
	"-NOSCRIPT No matching script. Please use EVAL.\r\n",      // EVALSHA of an unknown script
	"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
	"-MOVED 8718 127.0.0.1:17104\r\n",
	"-ASK 8718 127.0.0.1:17103\r\n",
	"-OOM command not allowed when used memory > 'maxmemory'.\r\n",
	"-READONLY You can't write against a read only replica.\r\n",
	"-LOADING Redis is loading the dataset in memory\r\n",
	"-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.\r\n",
	"-NOAUTH Authentication required.\r\n",
	"-WRONGPASS invalid username-password pair or user is disabled.\r\n",
	"-NOPERM this user has no permissions to run the 'eval' command\r\n",
	"-CLUSTERDOWN Hash slot not served\r\n",
	"$40\r\n0123456789abcdef0123456789abcdef01234567\r\n", // SCRIPT LOAD: a SHA1
}

// serverReplies are RESP3 replies a Redis 7.0 server sends, as captured on
// the wire, beyond the replies of a lock client: what scripts can make of
// Lua values, DEBUG PROTOCOL's sample of every type, and the doubles of
// sorted sets and GEOPOS. None of them may poison a Reader.
var serverReplies = []validFrame{
	{name: "EVAL double 0 over 0", input: ",-nan\r\n", want: double(math.Copysign(math.NaN(), -1))},
	{name: "EVAL double -(0 over 0)", input: ",nan\r\n", want: double(math.NaN())},
	{name: "EVAL double 1 over 0", input: ",inf\r\n", want: double(math.Inf(1))},
	{name: "EVAL double -1 over 0", input: ",-inf\r\n", want: double(math.Inf(-1))},
	{name: "EVAL double -0", input: ",-0\r\n", want: double(math.Copysign(0, -1))},
	{name: "EVAL double 1e-5", input: ",1.0000000000000001e-05\r\n", want: double(1e-5)},
	{name: "EVAL double 1.5e-7", input: ",1.4999999999999999e-07\r\n", want: double(1.4999999999999999e-07)},
	{name: "EVAL double 1e300", input: ",1.0000000000000001e+300\r\n", want: double(1e300)},
	{name: "EVAL double 1e21", input: ",1e+21\r\n", want: double(1e21)},
	{name: "EVAL double largest", input: ",1.7976931348623157e+308\r\n", want: double(math.MaxFloat64)},
	{name: "EVAL double smallest", input: ",4.9406564584124654e-324\r\n", want: double(math.SmallestNonzeroFloat64)},
	{
		// Lua's big_number is sent as it is, CR and LF turned to spaces:
		// Redis's own tests call this "malformed big number".
		name:  "EVAL big_number with CRLF",
		input: "(123  123\r\n",
		want:  Value{Type: TypeBigNumber, Str: []byte("123  123")},
	},
	{name: "EVAL big_number empty", input: "(\r\n", want: Value{Type: TypeBigNumber, Str: []byte("")}},
	{name: "EVAL big_number abc", input: "(abc\r\n", want: Value{Type: TypeBigNumber, Str: []byte("abc")}},
	{
		name:  "EVAL verbatim_string without a format",
		input: "=5\r\n   :x\r\n",
		want:  Value{Type: TypeVerbatim, Format: [3]byte{' ', ' ', ' '}, Str: []byte("x")},
	},
	{
		name:  "EVAL verbatim_string with a long format",
		input: "=5\r\nmar:x\r\n",
		want:  Value{Type: TypeVerbatim, Format: [3]byte{'m', 'a', 'r'}, Str: []byte("x")},
	},
	{
		// A Lua table key is converted like any value.
		name:  "EVAL map with an array key",
		input: "%1\r\n*1\r\n:1\r\n:1\r\n",
		want:  mapOf(array(integer(1)), integer(1)),
	},
	{
		name:  "EVAL map with a map key",
		input: "%1\r\n%1\r\n$1\r\na\r\n:1\r\n:2\r\n",
		want:  mapOf(mapOf(bulk("a"), integer(1)), integer(2)),
	},
	{name: "EVAL map", input: "%1\r\n$1\r\na\r\n:1\r\n", want: mapOf(bulk("a"), integer(1))},
	{name: "EVAL set", input: "~1\r\n$1\r\na\r\n", want: setOf(bulk("a"))},
	{name: "EVAL nil", input: "_\r\n", want: Value{Type: TypeNull, Null: true}},
	{name: "EVAL err with CRLF", input: "-bad  thing\r\n", want: simpleErr("bad  thing")},
	{name: "EVAL ok with CRLF", input: "+o  k\r\n", want: simple("o  k")},
	{name: "DEBUG PROTOCOL string", input: "$11\r\nHello World\r\n", want: bulk("Hello World")},
	{name: "DEBUG PROTOCOL integer", input: ":12345\r\n", want: integer(12345)},
	{name: "DEBUG PROTOCOL double", input: ",3.141\r\n", want: double(3.141)},
	{
		name:  "DEBUG PROTOCOL bignum",
		input: "(1234567999999999999999999999999999999\r\n",
		want:  Value{Type: TypeBigNumber, Str: []byte("1234567999999999999999999999999999999")},
	},
	{name: "DEBUG PROTOCOL null", input: "_\r\n", want: Value{Type: TypeNull, Null: true}},
	{name: "DEBUG PROTOCOL array", input: "*3\r\n:0\r\n:1\r\n:2\r\n", want: array(integer(0), integer(1), integer(2))},
	{name: "DEBUG PROTOCOL set", input: "~3\r\n:0\r\n:1\r\n:2\r\n", want: setOf(integer(0), integer(1), integer(2))},
	{
		name:  "DEBUG PROTOCOL map",
		input: "%3\r\n:0\r\n#f\r\n:1\r\n#t\r\n:2\r\n#f\r\n",
		want: mapOf(integer(0), Value{Type: TypeBoolean}, integer(1), Value{Type: TypeBoolean, Int: 1},
			integer(2), Value{Type: TypeBoolean}),
	},
	{
		name:  "DEBUG PROTOCOL attrib",
		input: "|1\r\n$14\r\nkey-popularity\r\n*2\r\n$7\r\nkey:123\r\n:90\r\n$39\r\nSome real reply following the attribute\r\n",
		want:  bulk("Some real reply following the attribute"),
	},
	{
		// A push, then the reply that follows it.
		name:  "DEBUG PROTOCOL push",
		input: ">2\r\n$16\r\nserver-cpu-usage\r\n:42\r\n",
		want:  push(bulk("server-cpu-usage"), integer(42)),
	},
	{
		name:  "DEBUG PROTOCOL verbatim",
		input: "=29\r\ntxt:This is a verbatim\nstring\r\n",
		want:  Value{Type: TypeVerbatim, Format: [3]byte{'t', 'x', 't'}, Str: []byte("This is a verbatim\nstring")},
	},
	{name: "DEBUG PROTOCOL true", input: "#t\r\n", want: Value{Type: TypeBoolean, Int: 1}},
	{name: "DEBUG PROTOCOL false", input: "#f\r\n", want: Value{Type: TypeBoolean}},
	{
		name:  "ZRANGE WITHSCORES",
		input: "*2\r\n*2\r\n$1\r\nb\r\n,-inf\r\n*2\r\n$1\r\nc\r\n,1.0000000000000001e-05\r\n",
		want:  array(array(bulk("b"), double(math.Inf(-1))), array(bulk("c"), double(1e-5))),
	},
	{
		name:  "GEOPOS",
		input: "*1\r\n*2\r\n,13.36138933897018433\r\n,38.11555639549629859\r\n",
		want:  array(array(double(13.36138933897018433), double(38.11555639549629859))),
	},
}

// hostilePayloads are the payloads of RELIABILITY.md §9.1, each followed by
// what a client would read next.
var hostilePayloads = []string{
	"$-2\r\n",
	"$99999999999999999999\r\n",
	"$9223372036854775807\r\n",
	"$5\r\nhello",
	"$5\r\nhelloXX",
	":12a\r\n",
	"*-5\r\n",
	"*4294967296\r\n",
	strings.Repeat("*1\r\n", 200_000) + ":1\r\n",
	">2\r\n+pub\r\n+x\r\n$1\r\nv\r\n",
	"|1\r\n+a\r\n+b\r\n$1\r\nv\r\n",
}

// testStream is an input for the whole-stream tests.
type testStream struct {
	name   string
	input  string
	limits Limits
}

// allStreams returns every frame of the tables above as a stream.
func allStreams() []testStream {
	var streams []testStream
	for _, frame := range validFrames {
		streams = append(streams, testStream{"valid/" + frame.name, frame.input, frame.limits})
	}
	for _, frame := range invalidFrames {
		streams = append(streams, testStream{"invalid/" + frame.name, frame.input, frame.limits})
	}
	for i, reply := range redisReplies {
		streams = append(streams, testStream{"redis/" + strconv.Itoa(i), reply, Limits{}})
	}
	for _, reply := range serverReplies {
		streams = append(streams, testStream{"server/" + reply.name, reply.input, Limits{}})
	}
	for i, payload := range hostilePayloads {
		streams = append(streams, testStream{"hostile/" + strconv.Itoa(i), payload, Limits{}})
	}
	return streams
}
