package resp

import (
	"bytes"
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"
	"unsafe"
)

// Tests of RELIABILITY.md §9: the hostile payloads of §9.1, each a typed
// error or the right value, and the rules of §9.2 not covered by the
// invalidFrames table (which TestParseInvalid runs, tagged by rule). R13
// (more replies than requests), R14 and R15 are the connection's: the Reader
// returns every frame in order, and a protocol error poisons it
// (TestReaderPoisoned).

func TestHostilePayloads(t *testing.T) {
	tests := []struct {
		name     string
		payload  string
		want     []Value // the values read before the error
		wantErr  error   // io.ErrUnexpectedEOF, or nil for a *ProtocolError
		offset   int
		tooLarge bool
	}{
		{name: "bulk length -2", payload: hostilePayloads[0], offset: 2},
		{name: "bulk length overflowing int64", payload: hostilePayloads[1], offset: 7, tooLarge: true},
		{name: "bulk length max int64", payload: hostilePayloads[2], offset: 7, tooLarge: true},
		{name: "truncated bulk", payload: hostilePayloads[3], wantErr: io.ErrUnexpectedEOF},
		{name: "bad bulk terminator", payload: hostilePayloads[4], offset: 9},
		{name: "letter in an integer", payload: hostilePayloads[5], offset: 3},
		{name: "array count -5", payload: hostilePayloads[6], offset: 2},
		{name: "array count 2^32", payload: hostilePayloads[7], offset: 4, tooLarge: true},
		{name: "200000 nested arrays", payload: hostilePayloads[8], offset: 4 * DefaultMaxDepth, tooLarge: true},
		{
			name: "push then reply", payload: hostilePayloads[9],
			want: []Value{push(simple("pub"), simple("x")), bulk("v")}, wantErr: io.EOF,
		},
		{name: "attribute then reply", payload: hostilePayloads[10], want: []Value{bulk("v")}, wantErr: io.EOF},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, how := range []string{"parse", "reader"} {
				var values []Value
				var err error
				if how == "parse" {
					values, err = parseStream([]byte(tc.payload), Limits{})
				} else {
					values, err = readStream(strings.NewReader(tc.payload), Limits{})
				}
				if !sameStream(values, nil, tc.want, nil) {
					t.Errorf("%s: values %v, want %v", how, values, tc.want)
				}
				if tc.wantErr != nil {
					if err != tc.wantErr {
						t.Errorf("%s: error %v, want %v", how, err, tc.wantErr)
					}
					continue
				}
				var protocolErr *ProtocolError
				if !errors.As(err, &protocolErr) || protocolErr.Offset != tc.offset || errors.Is(err, ErrTooLarge) != tc.tooLarge {
					t.Errorf("%s: error %v, want a *ProtocolError at offset %d, too large %t", how, err, tc.offset, tc.tooLarge)
				}
			}
		})
	}
}

// TestHostileDepthAtHardMaximum parses the 200000 nested arrays with the
// deepest limit allowed: the bounded recursion stops at 128.
func TestHostileDepthAtHardMaximum(t *testing.T) {
	_, _, err := Parse([]byte(hostilePayloads[8]), Limits{MaxDepth: HardMaxDepth})
	var protocolErr *ProtocolError
	if !errors.As(err, &protocolErr) || protocolErr.Offset != 4*HardMaxDepth || !errors.Is(err, ErrTooLarge) {
		t.Errorf("error %v, want a depth error at offset %d", err, 4*HardMaxDepth)
	}
}

// allocatedBytes returns the bytes f allocates per run, on average over runs.
func allocatedBytes(runs int, f func()) uint64 {
	f() // warm up
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range runs {
		f()
	}
	runtime.ReadMemStats(&after)
	return (after.TotalAlloc - before.TotalAlloc) / uint64(runs)
}

// TestHostileHugeLengthsDoNotAllocate is R1 and R2: a declared length is
// never allocated up front.
func TestHostileHugeLengthsDoNotAllocate(t *testing.T) {
	skipAllocationChecks(t)
	huge := []byte(hostilePayloads[2])
	if allocs := testing.AllocsPerRun(100, func() { _, _, _ = Parse(huge, Limits{}) }); allocs > 1 {
		t.Errorf("Parse(%q) allocates %v times, want at most 1 (the error)", huge, allocs)
	}

	// At the hard maximum, a 512 MiB bulk of which 10 bytes arrive costs
	// the initial buffer only.
	limits := Limits{MaxBulkLength: HardMaxBulkLength}
	payload := []byte("$536870912\r\n0123456789")
	var reader *Reader
	var err error
	perRun := allocatedBytes(10, func() {
		reader = NewReader(bytes.NewReader(payload), limits)
		_, err = reader.ReadReply()
	})
	if err != io.ErrUnexpectedEOF {
		t.Errorf("ReadReply() error = %v, want io.ErrUnexpectedEOF", err)
	}
	if len(reader.buf) != initialBufferSize {
		t.Errorf("buffer of %d bytes, want %d", len(reader.buf), initialBufferSize)
	}
	if perRun > 2*initialBufferSize {
		t.Errorf("reading the truncated 512 MiB bulk allocated %d bytes", perRun)
	}
}

// TestHostileMemoryFollowsArrivedBytes is R2: 1 MiB of a declared 512 MiB
// bulk commits about 1 MiB.
func TestHostileMemoryFollowsArrivedBytes(t *testing.T) {
	limits := Limits{MaxBulkLength: HardMaxBulkLength}
	payload := append([]byte("$536870912\r\n"), bytes.Repeat([]byte("x"), 1<<20)...)
	reader := NewReader(&chunkReader{data: payload, sizes: []int{1500}}, limits)
	if _, err := reader.ReadReply(); err != io.ErrUnexpectedEOF {
		t.Fatalf("ReadReply() error = %v, want io.ErrUnexpectedEOF", err)
	}
	if max := len(payload) + growthStep; len(reader.buf) > max {
		t.Errorf("buffer of %d bytes after %d arrived, want at most %d", len(reader.buf), len(payload), max)
	}
}

// TestHostileAggregateCountsDoNotAllocate is R3: a declared count is not
// allocated up front; elements are stored as they arrive.
func TestHostileAggregateCountsDoNotAllocate(t *testing.T) {
	skipAllocationChecks(t)
	frame := []byte("*1024\r\n" + strings.Repeat(":1\r\n", 3))
	perRun := allocatedBytes(100, func() {
		if _, _, err := Parse(frame, Limits{}); err != ErrIncomplete {
			t.Fatalf("Parse error = %v, want ErrIncomplete", err)
		}
	})
	// Room for 64 elements, rounded up to a size class, against 1024 declared.
	if max := uint64(64*unsafe.Sizeof(Value{})) * 9 / 8; perRun > max {
		t.Errorf("Parse of a declared 1024-element array with 3 elements allocates %d bytes, want at most %d", perRun, max)
	}

	// Nested sets each declaring 1024 elements, none of which arrives:
	// the total element limit stops them at the fifth.
	nested := strings.Repeat("~1024\r\n", 16)
	if _, _, err := Parse([]byte(nested), Limits{}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Parse of 16 nested sets of 1024: error %v, want ErrTooLarge (total elements)", err)
	}
}

// TestHostileTrickle is R8: a frame arriving a byte at a time gives no
// partial value, and Parse says incomplete at every prefix.
func TestHostileTrickle(t *testing.T) {
	frame := "*3\r\n$5\r\nhello\r\n%1\r\n+k\r\n,1.5\r\n(123\r\n"
	for end := range len(frame) {
		if _, _, err := Parse([]byte(frame[:end]), Limits{}); err != ErrIncomplete {
			t.Fatalf("Parse(%q) error = %v, want ErrIncomplete", frame[:end], err)
		}
	}
	values, err := readStream(&chunkReader{data: []byte(frame[:len(frame)-1])}, Limits{})
	if len(values) != 0 || err != io.ErrUnexpectedEOF {
		t.Errorf("truncated trickle: %v, %v; want no value, io.ErrUnexpectedEOF", values, err)
	}
}

// TestHostilePushBetweenReplies is R10: the Reader returns pushes in stream
// order with TypePush, for the connection to route; in RESP2 the connection
// treats one as a protocol error.
func TestHostilePushBetweenReplies(t *testing.T) {
	stream := ">2\r\n$10\r\ninvalidate\r\n*1\r\n$3\r\nfoo\r\n+OK\r\n>2\r\n+pub\r\n+x\r\n:1\r\n"
	values, err := readStream(strings.NewReader(stream), Limits{})
	want := []Value{push(bulk("invalidate"), array(bulk("foo"))), simple("OK"), push(simple("pub"), simple("x")), integer(1)}
	if !sameStream(values, err, want, io.EOF) {
		t.Errorf("got %v, %v; want %v", values, err, want)
	}
}

// TestHostileAttributesCount is R11: attributes are skipped, yet count
// towards the element and depth limits.
func TestHostileAttributesCount(t *testing.T) {
	attribute := "|2\r\n+a\r\n*2\r\n:1\r\n:2\r\n+b\r\n%1\r\n+c\r\n:3\r\n"
	frame := attribute + "*2\r\n" + attribute + ":1\r\n:2\r\n"
	v, n, err := Parse([]byte(frame), Limits{})
	if err != nil || n != len(frame) || !valuesEqual(v, array(integer(1), integer(2))) {
		t.Fatalf("Parse = %v, %d, %v", v, n, err)
	}
	// 2 attributes of 4 + 2 + 2 elements each, then the array's 2.
	if _, _, err := Parse([]byte(frame), Limits{MaxTotalElements: 17}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("with 17 elements allowed: error %v, want ErrTooLarge", err)
	}
	if _, _, err := Parse([]byte(frame), Limits{MaxTotalElements: 18}); err != nil {
		t.Errorf("with 18 elements allowed: error %v", err)
	}
	if _, _, err := Parse([]byte(frame), Limits{MaxDepth: 2}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("with depth 2: error %v, want ErrTooLarge", err)
	}
	if _, _, err := Parse([]byte(frame), Limits{MaxDepth: 3}); err != nil {
		t.Errorf("with depth 3: error %v", err)
	}
}

// TestHostileNoPanic parses every prefix and every single-byte corruption of
// the test streams: each gives a value, ErrIncomplete or a *ProtocolError.
func TestHostileNoPanic(t *testing.T) {
	for _, stream := range allStreams() {
		if len(stream.input) > 4096 {
			continue
		}
		input := []byte(stream.input)
		for i := range input {
			for _, replacement := range []byte{0, '\r', '\n', '-', '0', '9', '*', '$', '|', 0xff} {
				corrupted := bytes.Clone(input)
				corrupted[i] = replacement
				_, n, err := Parse(corrupted, stream.limits)
				var protocolErr *ProtocolError
				if err != nil && err != ErrIncomplete && !errors.As(err, &protocolErr) {
					t.Fatalf("Parse(%q) error %v is not typed", corrupted, err)
				}
				if n > len(corrupted) {
					t.Fatalf("Parse(%q) took %d bytes of %d", corrupted, n, len(corrupted))
				}
			}
		}
	}
}
