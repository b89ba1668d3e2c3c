//go:build !race

package resp

import (
	"strings"
	"testing"
)

// The zero-allocation claims of the package: encoding the commands of a lock
// client into a reused buffer, and reading its scalar replies.

const (
	testKey   = "lock:orders:42"
	testToken = "2f1d6c0e9a7b4c3d8e5f60718293a4b5"
	testSHA   = "e0e1f9fabfc9d4800c877a703b823ac0578ff8db"
)

func TestAllocsEncodeSet(t *testing.T) {
	buf := make([]byte, 0, 256)
	allocs := testing.AllocsPerRun(1000, func() {
		buf = appendSet(buf[:0], testKey, testToken, 30000)
	})
	if allocs != 0 {
		t.Errorf("encoding SET allocates %v times, want 0", allocs)
	}
}

func TestAllocsEncodeEvalSHA(t *testing.T) {
	buf := make([]byte, 0, 256)
	allocs := testing.AllocsPerRun(1000, func() {
		buf = appendEvalSHA(buf[:0], testSHA, testKey, testToken)
	})
	if allocs != 0 {
		t.Errorf("encoding EVALSHA allocates %v times, want 0", allocs)
	}
	allocs = testing.AllocsPerRun(1000, func() {
		buf = AppendCommand(buf[:0], "EVALSHA", testSHA, "1", testKey, testToken)
	})
	if allocs != 0 {
		t.Errorf("AppendCommand of EVALSHA allocates %v times, want 0", allocs)
	}
}

func TestAllocsEncodeValue(t *testing.T) {
	buf := make([]byte, 0, 256)
	value := mapOf(bulk("server"), bulk("redis"), bulk("proto"), integer(3), bulk("ttl"), double(1.5))
	allocs := testing.AllocsPerRun(1000, func() {
		buf = AppendValue(buf[:0], value)
	})
	if allocs != 0 {
		t.Errorf("AppendValue allocates %v times, want 0", allocs)
	}
}

// appendSet encodes SET key token NX PX ttl.
func appendSet(dst []byte, key, token string, ttlMilliseconds int64) []byte {
	dst = AppendArrayHeader(dst, 6)
	dst = AppendBulkString(dst, "SET")
	dst = AppendBulkString(dst, key)
	dst = AppendBulkString(dst, token)
	dst = AppendBulkString(dst, "NX")
	dst = AppendBulkString(dst, "PX")
	return AppendBulkInt(dst, ttlMilliseconds)
}

// appendEvalSHA encodes EVALSHA sha 1 key token.
func appendEvalSHA(dst []byte, sha, key, token string) []byte {
	dst = AppendArrayHeader(dst, 5)
	dst = AppendBulkString(dst, "EVALSHA")
	dst = AppendBulkString(dst, sha)
	dst = AppendBulkInt(dst, 1)
	dst = AppendBulkString(dst, key)
	return AppendBulkString(dst, token)
}

// readerReplies are the replies whose reading allocates nothing.
var readerReplies = []struct {
	name  string
	reply string
}{
	{name: "OK", reply: "+OK\r\n"},
	{name: "integer", reply: ":1\r\n"},
	{name: "null bulk", reply: "$-1\r\n"},
	{name: "null", reply: "_\r\n"},
	{name: "error", reply: "-ERR x\r\n"},
	{name: "NOSCRIPT", reply: "-NOSCRIPT No matching script. Please use EVAL.\r\n"},
	{name: "bulk 40", reply: "$40\r\n" + strings.Repeat("a", 40) + "\r\n"},
	{name: "boolean", reply: "#t\r\n"},
	{name: "double", reply: ",3.141\r\n"},
	{name: "double exponent", reply: ",1.0000000000000001e-05\r\n"},
	{name: "negative nan", reply: ",-nan\r\n"},
	{name: "big number of any text", reply: "(123  123\r\n"},
	// Aggregates reuse the Reader's element memory once warm.
	{name: "hello map", reply: redisReplies[8]},
	{name: "invalidation push", reply: redisReplies[10]},
	{name: "doubles in an array", reply: "*3\r\n,-nan\r\n,inf\r\n,1.0000000000000001e+300\r\n"},
}

func TestAllocsReadReply(t *testing.T) {
	for _, tc := range readerReplies {
		t.Run(tc.name, func(t *testing.T) {
			reader := NewReader(&repeatReader{data: []byte(tc.reply)}, Limits{})
			var err error
			allocs := testing.AllocsPerRun(1000, func() {
				_, err = reader.ReadReply()
			})
			if err != nil {
				t.Fatal(err)
			}
			if allocs != 0 {
				t.Errorf("ReadReply of %q allocates %v times, want 0", tc.reply, allocs)
			}
		})
	}
}

func TestAllocsErrorCode(t *testing.T) {
	reader := NewReader(&repeatReader{data: []byte("-NOSCRIPT No matching script. Please use EVAL.\r\n")}, Limits{})
	allocs := testing.AllocsPerRun(1000, func() {
		v, err := reader.ReadReply()
		if err != nil || string(ErrorCode(v.Str)) != "NOSCRIPT" {
			t.Fatalf("got %v, %v", v, err)
		}
	})
	if allocs != 0 {
		t.Errorf("reading an error code allocates %v times, want 0", allocs)
	}
}

func TestAllocsParseScalar(t *testing.T) {
	for _, tc := range readerReplies {
		if Type(tc.reply[0]).isAggregate() {
			continue // Parse makes their element memory anew
		}
		frame := []byte(tc.reply)
		allocs := testing.AllocsPerRun(1000, func() {
			if _, _, err := Parse(frame, Limits{}); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("Parse of %q allocates %v times, want 0", tc.reply, allocs)
		}
	}
}

func TestAllocsCloneInto(t *testing.T) {
	v, _, err := Parse([]byte("*2\r\n$40\r\n"+testSHA+"\r\n*2\r\n:1\r\n$14\r\n"+testKey+"\r\n"), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	_, elems, storage := v.CloneInto(nil, nil)
	allocs := testing.AllocsPerRun(1000, func() {
		_, elems, storage = v.CloneInto(elems, storage)
	})
	if allocs != 0 {
		t.Errorf("CloneInto into reused buffers allocates %v times, want 0", allocs)
	}
}
