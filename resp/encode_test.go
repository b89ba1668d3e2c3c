package resp

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
)

func TestAppendCommandEncoders(t *testing.T) {
	tests := []struct {
		name   string
		encode func(dst []byte) []byte
		want   string
	}{
		{
			name: "set nx px",
			encode: func(dst []byte) []byte {
				dst = AppendArrayHeader(dst, 6)
				dst = AppendBulkString(dst, "SET")
				dst = AppendBulkString(dst, "lock:a")
				dst = AppendBulk(dst, []byte("token"))
				dst = AppendBulkString(dst, "NX")
				dst = AppendBulkString(dst, "PX")
				return AppendBulkInt(dst, 30000)
			},
			want: "*6\r\n$3\r\nSET\r\n$6\r\nlock:a\r\n$5\r\ntoken\r\n$2\r\nNX\r\n$2\r\nPX\r\n$5\r\n30000\r\n",
		},
		{
			name:   "command",
			encode: func(dst []byte) []byte { return AppendCommand(dst, "EVALSHA", "abc", "1", "k", "t") },
			want:   "*5\r\n$7\r\nEVALSHA\r\n$3\r\nabc\r\n$1\r\n1\r\n$1\r\nk\r\n$1\r\nt\r\n",
		},
		{name: "empty command", encode: func(dst []byte) []byte { return AppendCommand(dst) }, want: "*0\r\n"},
		{name: "empty bulk", encode: func(dst []byte) []byte { return AppendBulk(dst, nil) }, want: "$0\r\n\r\n"},
		{name: "bulk int zero", encode: func(dst []byte) []byte { return AppendBulkInt(dst, 0) }, want: "$1\r\n0\r\n"},
		{name: "bulk int negative", encode: func(dst []byte) []byte { return AppendBulkInt(dst, -15) }, want: "$3\r\n-15\r\n"},
		{name: "bulk int max", encode: func(dst []byte) []byte { return AppendBulkInt(dst, math.MaxInt64) }, want: "$19\r\n9223372036854775807\r\n"},
		{name: "bulk int min", encode: func(dst []byte) []byte { return AppendBulkInt(dst, math.MinInt64) }, want: "$20\r\n-9223372036854775808\r\n"},
		{name: "appends", encode: func(dst []byte) []byte { return AppendBulkString(append(dst, "x"...), "y") }, want: "x$1\r\ny\r\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(tc.encode(nil)); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestAppendBulkIntParses(t *testing.T) {
	for _, v := range []int64{0, 1, 9, 10, 99, 100, -1, -9, -10, 1e18 - 1, 1e18, math.MaxInt64, math.MinInt64, math.MinInt64 + 1} {
		frame := AppendBulkInt(nil, v)
		got, n, err := Parse(frame, Limits{})
		if err != nil || n != len(frame) || string(got.Str) != strconv.FormatInt(v, 10) {
			t.Errorf("AppendBulkInt(%d) = %q: parsed %v, %d, %v", v, frame, got, n, err)
		}
	}
}

func TestAppendValue(t *testing.T) {
	tests := []struct {
		name  string
		value Value
		want  string
	}{
		{name: "null bulk", value: Value{Type: TypeBulkString, Null: true}, want: "$-1\r\n"},
		{name: "null array", value: Value{Type: TypeArray, Null: true}, want: "*-1\r\n"},
		{name: "null", value: Value{Type: TypeNull}, want: "_\r\n"},
		{name: "null map", value: Value{Type: TypeMap, Null: true}, want: "_\r\n"},
		{name: "simple", value: simple("OK"), want: "+OK\r\n"},
		{name: "error", value: simpleErr("ERR x"), want: "-ERR x\r\n"},
		{name: "integer", value: integer(-7), want: ":-7\r\n"},
		{name: "boolean", value: Value{Type: TypeBoolean, Int: 1}, want: "#t\r\n"},
		{name: "double", value: double(1.5), want: ",1.5\r\n"},
		{name: "double inf", value: double(math.Inf(-1)), want: ",-inf\r\n"},
		{name: "double nan", value: double(math.NaN()), want: ",nan\r\n"},
		{name: "double exponent", value: double(1e300), want: ",1e+300\r\n"},
		{name: "big number", value: Value{Type: TypeBigNumber, Str: []byte("-123")}, want: "(-123\r\n"},
		{name: "bulk error", value: Value{Type: TypeBulkError, Str: []byte("ERR")}, want: "!3\r\nERR\r\n"},
		{name: "verbatim", value: Value{Type: TypeVerbatim, Format: [3]byte{'t', 'x', 't'}, Str: []byte("hi")}, want: "=6\r\ntxt:hi\r\n"},
		{name: "array", value: array(integer(1), bulk("a")), want: "*2\r\n:1\r\n$1\r\na\r\n"},
		{name: "map", value: mapOf(simple("k"), integer(1)), want: "%1\r\n+k\r\n:1\r\n"},
		{name: "set", value: setOf(), want: "~0\r\n"},
		{name: "push", value: push(bulk("a")), want: ">1\r\n$1\r\na\r\n"},
		{name: "attribute", value: Value{Type: TypeAttribute, Elems: []Value{simple("a"), simple("b")}}, want: "|1\r\n+a\r\n+b\r\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(AppendValue(nil, tc.value)); got != tc.want {
				t.Errorf("AppendValue(%v) = %q, want %q", tc.value, got, tc.want)
			}
		})
	}
}

func TestAppendValueRoundTrip(t *testing.T) {
	for _, tc := range validFrames {
		t.Run(tc.name, func(t *testing.T) {
			encoded := AppendValue(nil, tc.want)
			v, n, err := Parse(encoded, tc.limits)
			if err != nil || n != len(encoded) || !valuesEqual(v, tc.want) {
				t.Errorf("Parse(%q) = %v, %d, %v; want %v", encoded, v, n, err, tc.want)
			}
		})
	}
}

func TestValueMethods(t *testing.T) {
	if !simple("OK").IsOK() || bulk("OK").IsOK() || simple("OK ").IsOK() {
		t.Error("IsOK is wrong")
	}
	if !simpleErr("ERR").IsError() || !(Value{Type: TypeBulkError}).IsError() || simple("ERR").IsError() {
		t.Error("IsError is wrong")
	}
	if err := simple("OK").Err(); err != nil {
		t.Errorf("Err() of a simple string = %v", err)
	}
	buf := []byte("-NOSCRIPT No matching script.\r\n")
	v, _, err := Parse(buf, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	replyErr := v.Err()
	copy(buf, "xxxxxxxxxxxxxxxxxxxxx")
	var serverErr *ServerError
	if !errors.As(replyErr, &serverErr) || serverErr.Message != "NOSCRIPT No matching script." {
		t.Errorf("Err() = %#v, want a *ServerError holding a copy of the message", replyErr)
	}
}

func TestValueClone(t *testing.T) {
	buf := []byte("*2\r\n$3\r\nfoo\r\n%1\r\n+k\r\n$1\r\nv\r\n")
	v, _, err := Parse(buf, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	clone := v.Clone()
	clear(buf)
	want := array(bulk("foo"), mapOf(simple("k"), bulk("v")))
	if !valuesEqual(clone, want) {
		t.Errorf("Clone() = %v after the buffer changed, want %v", clone, want)
	}
	if empty := bulk("").Clone(); empty.Str == nil {
		t.Error("Clone() of an empty string is nil")
	}
}

func TestValueCloneInto(t *testing.T) {
	buf := []byte("*3\r\n$3\r\nfoo\r\n%1\r\n+k\r\n$1\r\nv\r\n$0\r\n\r\n")
	v, _, err := Parse(buf, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	want := array(bulk("foo"), mapOf(simple("k"), bulk("v")), bulk(""))
	clone, elems, storage := v.CloneInto(nil, nil)
	clear(buf)
	if !valuesEqual(clone, want) {
		t.Errorf("CloneInto() = %v after the buffer changed, want %v", clone, want)
	}
	if clone.Elems[2].Str == nil {
		t.Error("CloneInto() of an empty string is nil")
	}
	// Cloned again into its own buffers, a value is still whole: carving
	// never moves memory that earlier parts of the copy point into.
	again, _, _ := clone.CloneInto(elems[:0:0], storage[:0:0])
	if !valuesEqual(again, want) {
		t.Errorf("CloneInto() into small buffers = %v, want %v", again, want)
	}
	scalar, _, _ := simple("OK").CloneInto(elems, storage)
	if !valuesEqual(scalar, simple("OK")) || scalar.Elems != nil {
		t.Errorf("CloneInto() of a scalar = %#v, want +OK without elements", scalar)
	}
}

func TestValueString(t *testing.T) {
	tests := []struct {
		name  string
		value Value
		want  string
	}{
		{name: "simple", value: simple("OK"), want: `"OK"`},
		{name: "error", value: simpleErr("ERR x"), want: "(error) ERR x"},
		{name: "integer", value: integer(3), want: "(integer) 3"},
		{name: "null", value: Value{Type: TypeBulkString, Null: true}, want: "(nil)"},
		{name: "boolean", value: Value{Type: TypeBoolean, Int: 1}, want: "(boolean) true"},
		{name: "double", value: double(math.Inf(1)), want: "(double) inf"},
		{name: "verbatim", value: Value{Type: TypeVerbatim, Format: [3]byte{'t', 'x', 't'}, Str: []byte("a")}, want: `(verbatim) txt:"a"`},
		{name: "nested", value: array(bulk("a"), mapOf(simple("k"), integer(1)), setOf(integer(2))), want: `["a", {"k": (integer) 1}, ((integer) 2)]`},
		{name: "push", value: push(bulk("x")), want: `(push) ["x"]`},
		{name: "unknown", value: Value{Type: 'x'}, want: "type 'x'"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.value.String(); got != tc.want {
				t.Errorf("String() = %q, want %q", got, tc.want)
			}
		})
	}
}

// serverErrorReplies are error replies of Redis 7 that a lock client meets.
var serverErrorReplies = []struct {
	code    string
	message string
}{
	{"ERR", "ERR unknown command 'FOO', with args beginning with: "},
	{"NOSCRIPT", "NOSCRIPT No matching script. Please use EVAL."},
	{"WRONGTYPE", "WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"MOVED", "MOVED 8718 127.0.0.1:17104"},
	{"ASK", "ASK 8718 127.0.0.1:17103"},
	{"OOM", "OOM command not allowed when used memory > 'maxmemory'."},
	{"READONLY", "READONLY You can't write against a read only replica."},
	{"LOADING", "LOADING Redis is loading the dataset in memory"},
	{"BUSY", "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."},
	{"NOAUTH", "NOAUTH Authentication required."},
	{"WRONGPASS", "WRONGPASS invalid username-password pair or user is disabled."},
	{"NOPERM", "NOPERM this user has no permissions to run the 'eval' command"},
	{"CLUSTERDOWN", "CLUSTERDOWN Hash slot not served"},
	{"NOCODE", "NOCODE"},
	{"", ""},
}

func TestServerErrorCode(t *testing.T) {
	for _, tc := range serverErrorReplies {
		t.Run(tc.code, func(t *testing.T) {
			frame := AppendValue(nil, simpleErr(tc.message))
			v, _, err := Parse(frame, Limits{})
			if err != nil {
				t.Fatal(err)
			}
			var serverErr *ServerError
			if !errors.As(v.Err(), &serverErr) {
				t.Fatalf("Err() = %v, want a *ServerError", v.Err())
			}
			if serverErr.Code() != tc.code {
				t.Errorf("Code() = %q, want %q", serverErr.Code(), tc.code)
			}
			if serverErr.Error() != tc.message {
				t.Errorf("Error() = %q, want %q", serverErr.Error(), tc.message)
			}
			if code := ErrorCode(v.Str); string(code) != tc.code {
				t.Errorf("ErrorCode() = %q, want %q", code, tc.code)
			}
		})
	}
}

func TestLimitsValidate(t *testing.T) {
	tests := []struct {
		name    string
		limits  Limits
		wantErr string
	}{
		{name: "zero", limits: Limits{}},
		{name: "hard maximums", limits: Limits{
			MaxBulkLength: HardMaxBulkLength, MaxAggregateLength: HardMaxAggregateLength,
			MaxTotalElements: HardMaxTotalElements, MaxDepth: HardMaxDepth, MaxLineLength: HardMaxLineLength,
		}},
		{name: "negative", limits: Limits{MaxDepth: -1}, wantErr: "resp: limits: MaxDepth is negative"},
		{name: "above hard maximum", limits: Limits{MaxBulkLength: HardMaxBulkLength + 1}, wantErr: "resp: limits: MaxBulkLength 536870913 exceeds the hard maximum 536870912"},
		{name: "depth above hard maximum", limits: Limits{MaxDepth: 129}, wantErr: "exceeds the hard maximum 128"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.limits.Validate()
			if tc.wantErr == "" {
				if err != nil {
					t.Errorf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Validate() = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

func TestLimitsWithDefaults(t *testing.T) {
	got := Limits{MaxAggregateLength: 10, MaxDepth: 1000, MaxLineLength: -5}.withDefaults()
	want := Limits{
		MaxBulkLength: DefaultMaxBulkLength, MaxAggregateLength: 10, MaxTotalElements: 40,
		MaxDepth: HardMaxDepth, MaxLineLength: DefaultMaxLineLength,
	}
	if got != want {
		t.Errorf("withDefaults() = %+v, want %+v", got, want)
	}
	if got := (Limits{}).withDefaults().MaxTotalElements; got != DefaultMaxTotalElements {
		t.Errorf("default MaxTotalElements = %d, want %d", got, DefaultMaxTotalElements)
	}
}

func TestProtocolError(t *testing.T) {
	err := error(&ProtocolError{Reason: "length exceeds the limit", Offset: 7, Err: ErrTooLarge})
	if got, want := err.Error(), "resp: protocol error at offset 7: length exceeds the limit"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if !errors.Is(err, ErrTooLarge) {
		t.Error("errors.Is(err, ErrTooLarge) = false")
	}
	if errors.Is(&ProtocolError{Reason: "x"}, ErrTooLarge) {
		t.Error("a plain protocol error matches ErrTooLarge")
	}
}
