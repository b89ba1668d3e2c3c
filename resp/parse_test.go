package resp

import (
	"bytes"
	"errors"
	"slices"
	"testing"
)

func TestParseValid(t *testing.T) {
	for _, tc := range slices.Concat(validFrames, serverReplies) {
		t.Run(tc.name, func(t *testing.T) {
			v, n, err := Parse([]byte(tc.input), tc.limits)
			if err != nil {
				t.Fatalf("Parse(%q) error: %v", tc.input, err)
			}
			if n != len(tc.input) {
				t.Errorf("Parse(%q) took %d bytes, want %d", tc.input, n, len(tc.input))
			}
			if !valuesEqual(v, tc.want) {
				t.Errorf("Parse(%q) = %v, want %v", tc.input, v, tc.want)
			}

			// The bytes after the frame do not change the result.
			followed := tc.input + "$1\r\nx\r\n"
			v, n, err = Parse([]byte(followed), tc.limits)
			if err != nil || n != len(tc.input) || !valuesEqual(v, tc.want) {
				t.Errorf("Parse(%q) = %v, %d, %v; want %v, %d", followed, v, n, err, tc.want, len(tc.input))
			}

			// Every proper prefix is incomplete.
			for end := range len(tc.input) {
				if _, _, err := Parse([]byte(tc.input[:end]), tc.limits); err != ErrIncomplete {
					t.Fatalf("Parse(%q) error = %v, want ErrIncomplete", tc.input[:end], err)
				}
			}
		})
	}
}

func TestParseInvalid(t *testing.T) {
	for _, tc := range invalidFrames {
		t.Run(tc.rule+"/"+tc.name, func(t *testing.T) {
			_, n, err := Parse([]byte(tc.input), tc.limits)
			var protocolErr *ProtocolError
			if !errors.As(err, &protocolErr) {
				t.Fatalf("Parse(%q) error = %v, want a *ProtocolError", tc.input, err)
			}
			if n != 0 {
				t.Errorf("Parse(%q) took %d bytes on error, want 0", tc.input, n)
			}
			if protocolErr.Offset != tc.offset {
				t.Errorf("Parse(%q) offset = %d, want %d (%v)", tc.input, protocolErr.Offset, tc.offset, err)
			}
			if got := errors.Is(err, ErrTooLarge); got != tc.tooLarge {
				t.Errorf("Parse(%q): errors.Is(err, ErrTooLarge) = %t, want %t (%v)", tc.input, got, tc.tooLarge, err)
			}

			// A prefix is incomplete or already fails the same way.
			for end := range len(tc.input) {
				if len(tc.input) > 4096 && end%1000 != 0 && end < len(tc.input)-4 {
					continue // the long line: a sample of its prefixes
				}
				_, _, prefixErr := Parse([]byte(tc.input[:end]), tc.limits)
				if prefixErr != ErrIncomplete && !errorsEqual(prefixErr, err) {
					t.Fatalf("Parse(%q) error = %v, want ErrIncomplete or %v", tc.input[:end], prefixErr, err)
				}
			}
		})
	}
}

// TestParseFailsEarly checks that bad bytes fail at once, before the line or
// frame that holds them is complete.
func TestParseFailsEarly(t *testing.T) {
	tests := []struct {
		name   string
		input  string
		limits Limits
	}{
		{name: "letter in an integer", input: ":12a"},
		{name: "bad bulk terminator", input: "$5\r\nhelloX"},
		{name: "huge bulk length", input: "$9223372036854775807"},
		{name: "huge array count", input: "*4294967296"},
		{name: "negative bulk length", input: "$-2"},
		{name: "bare LF in a simple string", input: "+O\nK"},
		{name: "overlong line", input: "+123456789", limits: Limits{MaxLineLength: 8}},
		{name: "hex double", input: ",0x"},
		{name: "bad boolean", input: "#x"},
		{name: "bad null", input: "_x"},
		{name: "too deep", input: "*1\r\n*1\r\n*1\r\n", limits: Limits{MaxDepth: 2}},
		{name: "double nan with a payload", input: ",nan("},
		{name: "double plus nan", input: ",+n"},
		{name: "verbatim without a colon", input: "=10\r\ntxtx"},
		{name: "streamed string", input: "$?"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := Parse([]byte(tc.input), tc.limits)
			var protocolErr *ProtocolError
			if !errors.As(err, &protocolErr) {
				t.Errorf("Parse(%q) error = %v, want a *ProtocolError", tc.input, err)
			}
		})
	}
}

// TestParseNeed checks the length the buffer must reach before parsing again
// can give another result: the next byte, or the end of a bulk payload.
func TestParseNeed(t *testing.T) {
	tests := []struct {
		name  string
		input string
		need  int
	}{
		{name: "bulk header", input: "$10\r\n", need: 16},
		{name: "bulk payload", input: "$10\r\n01234", need: 16},
		{name: "bulk payload and CR", input: "$10\r\n0123456789\r", need: 17},
		{name: "bulk in an array", input: "*3\r\n$3\r\nfoo\r\n$10\r\n0", need: 29},
		{name: "verbatim before its colon", input: "=10\r\ntx", need: 9},
		{name: "verbatim after its colon", input: "=10\r\ntxt:", need: 16},
		{name: "map", input: "%2\r\n+a\r\n", need: 9},
		{name: "line", input: "+OK", need: 4},
		{name: "line with its CR", input: "+OK\r", need: 5},
		{name: "empty", input: "", need: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := parser{limits: Limits{}.withDefaults()}
			_, err := p.parse([]byte(tc.input), new(Value), false)
			if err != ErrIncomplete {
				t.Fatalf("parse(%q) error = %v, want ErrIncomplete", tc.input, err)
			}
			if p.need != tc.need {
				t.Errorf("parse(%q) need = %d, want %d", tc.input, p.need, tc.need)
			}
		})
	}
}

func TestParseKeepsBufferCapacity(t *testing.T) {
	// Appending to a parsed string must not overwrite the bytes after it.
	buf := []byte("*2\r\n$1\r\na\r\n+b\r\n")
	v, _, err := Parse(buf, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	_ = append(v.Elems[0].Str, 'X', 'X', 'X')
	_ = append(v.Elems, integer(1))
	if string(buf) != "*2\r\n$1\r\na\r\n+b\r\n" {
		t.Errorf("buffer changed to %q", buf)
	}
	if !valuesEqual(v, array(bulk("a"), simple("b"))) {
		t.Errorf("value changed to %v", v)
	}
}

func TestParseRedisReplies(t *testing.T) {
	for _, reply := range redisReplies {
		v, n, err := Parse([]byte(reply), Limits{})
		if err != nil || n != len(reply) {
			t.Errorf("Parse(%q) = %v, %d, %v", reply, v, n, err)
		}
	}
}

// TestFastPathAgrees checks that the fast path of Parse and ReadReply gives
// what the general parser gives, on every test stream, its prefixes and its
// single-byte corruptions.
func TestFastPathAgrees(t *testing.T) {
	check := func(input []byte, limits Limits) {
		t.Helper()
		p := parser{limits: limits.withDefaults()}
		var want Value
		wantN, wantErr := p.parse(input, &want, false)
		v, n, err := Parse(input, limits)
		if !valuesEqual(v, want) || n != wantN || !errorsEqual(err, wantErr) || v.Str == nil != (want.Str == nil) {
			t.Fatalf("Parse(%q) = %v, %d, %v; the general parser gives %v, %d, %v", input, v, n, err, want, wantN, wantErr)
		}
	}
	for _, stream := range allStreams() {
		if len(stream.input) > 4096 {
			continue
		}
		input := []byte(stream.input)
		for end := range len(input) + 1 {
			check(input[:end], stream.limits)
		}
		for i := range input {
			for _, replacement := range []byte{0, '\r', '\n', '-', '0', '1', '9'} {
				corrupted := bytes.Clone(input)
				corrupted[i] = replacement
				check(corrupted, stream.limits)
			}
		}
	}
	for _, limits := range []Limits{{MaxLineLength: 3}, {MaxBulkLength: 3}} {
		for _, input := range []string{"+OK\r\n", "+OKK\r\n", "-ERR\r\n", "$3\r\nabc\r\n", "$4\r\nabcd\r\n", ":123456789\r\n"} {
			check([]byte(input), limits)
		}
	}
}
