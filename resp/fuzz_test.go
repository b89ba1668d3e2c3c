package resp

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"testing"
	"testing/iotest"
)

// fuzzLimits are the limits each fuzz input is parsed under: the defaults,
// and small ones that the fuzzer can reach.
var fuzzLimits = []Limits{
	{},
	{MaxBulkLength: 16, MaxAggregateLength: 6, MaxTotalElements: 10, MaxDepth: 3, MaxLineLength: 12},
}

// addParseSeeds adds the seed corpus: the hostile payloads of
// RELIABILITY.md §9.1, real Redis 7 replies, every spelling of a double
// that servers write, and every test frame.
func addParseSeeds(f *testing.F, add func(data []byte)) {
	for _, payload := range hostilePayloads {
		add([]byte(payload))
	}
	for _, reply := range redisReplies {
		add([]byte(reply))
	}
	for _, reply := range serverReplies {
		add([]byte(reply.input))
	}
	for _, spelling := range doubleSpellings {
		add([]byte("," + spelling.text + "\r\n"))
		add([]byte("*2\r\n," + spelling.text + "\r\n%1\r\n," + spelling.text + "\r\n_\r\n"))
	}
	for _, frame := range validFrames {
		add([]byte(frame.input))
	}
	for _, frame := range invalidFrames {
		add([]byte(frame.input))
	}
}

func FuzzParse(f *testing.F) {
	addParseSeeds(f, func(data []byte) { f.Add(data) })
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, limits := range fuzzLimits {
			p := parser{limits: limits.withDefaults()}
			var v Value
			n, err := p.parse(data, &v, false)
			if n < 0 || n > len(data) {
				t.Fatalf("took %d bytes of %d", n, len(data))
			}
			if len(p.arena) > p.limits.MaxTotalElements || p.total > p.limits.MaxTotalElements && err == nil {
				t.Fatalf("kept %d elements, declared %d, limit %d", len(p.arena), p.total, p.limits.MaxTotalElements)
			}
			// Parse, which takes the fast path, agrees with the general parser.
			if fastValue, fastN, fastErr := Parse(data, limits); !valuesEqual(fastValue, v) || fastN != n || !errorsEqual(fastErr, err) {
				t.Fatalf("Parse gives %v, %d, %v; the general parser %v, %d, %v", fastValue, fastN, fastErr, v, n, err)
			}
			var protocolErr *ProtocolError
			switch {
			case err == ErrIncomplete:
				continue
			case errors.As(err, &protocolErr):
				if protocolErr.Offset < 0 || protocolErr.Offset >= len(data) {
					t.Fatalf("error %v at offset outside the %d bytes", err, len(data))
				}
				continue
			case err != nil:
				t.Fatalf("untyped error %v", err)
			}
			if n == 0 {
				t.Fatalf("value %v of 0 bytes", v)
			}
			// Every proper prefix of a frame is incomplete.
			for _, end := range []int{0, n / 2, n - 1} {
				if _, _, err := Parse(data[:end], limits); err != ErrIncomplete {
					t.Fatalf("prefix of %d of a %d-byte frame: error %v, want ErrIncomplete", end, n, err)
				}
			}
			// The value encodes to a frame that parses back to it.
			encoded := AppendValue(nil, v)
			again, m, err := Parse(encoded, Limits{})
			if err != nil || m != len(encoded) || !valuesEqual(again, v) {
				t.Fatalf("re-encoded %v as %q: parsed %v, %d, %v", v, encoded, again, m, err)
			}
		}
	})
}

func FuzzParseChunked(f *testing.F) {
	addParseSeeds(f, func(data []byte) {
		f.Add(data, []byte{1})
		f.Add(data, []byte{2, 7, 3})
	})
	f.Fuzz(func(t *testing.T, data, splits []byte) {
		sizes := make([]int, len(splits))
		for i, split := range splits {
			sizes[i] = int(split) + 1
		}
		for _, limits := range fuzzLimits {
			wantValues, wantErr := parseStream(data, limits)
			values, err := readStream(&chunkReader{data: data, sizes: sizes}, limits)
			if !sameStream(values, err, wantValues, wantErr) {
				t.Fatalf("chunks %v: got %v, %v; Parse gives %v, %v", sizes, values, err, wantValues, wantErr)
			}
		}
	})
}

func FuzzRoundTrip(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("\x0c\x03\x00\x05hello\x02\x04\x01\x02\x03\x04\x05\x06\x07\x08"))
	f.Add([]byte("\x0f\x04\x00\x02OK\x10\x03ab\x09\x05\x01\x0b\x00\x00\x00\x00\x00\x00\xf0\x7f"))
	f.Add([]byte("\x0e\x02\x00\x01k\x0d\x02\x03\x01\x00\x01\x02"))
	f.Fuzz(func(t *testing.T, data []byte) {
		generator := valueGenerator{data: data}
		v := generator.value(0, positionTop)
		encoded := AppendValue(nil, v)
		got, n, err := Parse(encoded, Limits{})
		if err != nil || n != len(encoded) || !valuesEqual(got, v) {
			t.Fatalf("encoded %v as %q: parsed %v, %d, %v", v, encoded, got, n, err)
		}
		values, err := readStream(iotest.OneByteReader(bytes.NewReader(encoded)), Limits{})
		if err != io.EOF || len(values) != 1 || !valuesEqual(values[0], v) {
			t.Fatalf("encoded %v as %q: read %v, %v", v, encoded, values, err)
		}
	})
}

// position says where a generated value sits, which restricts its type.
type position uint8

const (
	positionTop     position = iota // a whole reply: pushes allowed
	positionElement                 // inside an aggregate, map keys included
)

// valueGenerator builds a valid Value of bounded size from fuzz bytes.
type valueGenerator struct {
	data []byte
}

// maxGeneratedDepth and maxGeneratedElements bound generated values.
const (
	maxGeneratedDepth    = 4
	maxGeneratedElements = 5
)

func (g *valueGenerator) byte() byte {
	if len(g.data) == 0 {
		return 0
	}
	b := g.data[0]
	g.data = g.data[1:]
	return b
}

func (g *valueGenerator) bytes(n int) []byte {
	n = min(n, len(g.data))
	b := bytes.Clone(g.data[:n])
	g.data = g.data[n:]
	return b
}

func (g *valueGenerator) uint64() uint64 {
	var buf [8]byte
	copy(buf[:], g.bytes(8))
	return binary.LittleEndian.Uint64(buf[:])
}

// line returns up to 31 bytes of text without CR or LF.
func (g *valueGenerator) line() []byte {
	text := g.bytes(int(g.byte() % 32))
	for i, c := range text {
		if c == '\r' || c == '\n' {
			text[i] = ' '
		}
	}
	return text
}

func (g *valueGenerator) value(depth int, where position) Value {
	kind := g.byte() % 18
	if depth >= maxGeneratedDepth {
		kind %= 13 // scalars only
	}
	switch kind {
	case 0:
		return Value{Type: TypeSimpleString, Str: g.line()}
	case 1:
		return Value{Type: TypeError, Str: g.line()}
	case 2:
		return Value{Type: TypeInteger, Int: int64(g.uint64())}
	case 3:
		return Value{Type: TypeBulkString, Str: g.bytes(int(g.byte() % 64))}
	case 4:
		return Value{Type: TypeBulkString, Null: true}
	case 5:
		return Value{Type: TypeArray, Null: true}
	case 6:
		return Value{Type: TypeNull, Null: true}
	case 7:
		return Value{Type: TypeBoolean, Int: int64(g.byte() % 2)}
	case 8:
		return Value{Type: TypeDouble, Float: math.Float64frombits(g.uint64())}
	case 9:
		if g.byte()%4 == 0 {
			// Any line, as a script's big_number sends it.
			return Value{Type: TypeBigNumber, Str: g.line()}
		}
		digits := []byte{}
		if g.byte()%2 == 1 {
			digits = append(digits, '-')
		}
		for range 1 + g.byte()%40 {
			digits = append(digits, '0'+g.byte()%10)
		}
		return Value{Type: TypeBigNumber, Str: digits}
	case 10:
		return Value{Type: TypeBulkError, Str: g.bytes(int(g.byte() % 64))}
	case 11:
		v := Value{Type: TypeVerbatim}
		copy(v.Format[:], g.bytes(3))
		v.Str = g.bytes(int(g.byte() % 64))
		return v
	case 12:
		return Value{Type: TypeSimpleString, Str: []byte("OK")}
	}
	kinds := [...]Type{TypeArray, TypeSet, TypeMap, TypePush, TypeArray}
	t := kinds[kind-13]
	if t == TypePush && where != positionTop {
		t = TypeArray
	}
	count := int(g.byte() % (maxGeneratedElements + 1))
	v := Value{Type: t, Elems: []Value{}}
	for range count {
		if t == TypeMap {
			v.Elems = append(v.Elems, g.value(depth+1, positionElement), g.value(depth+1, positionElement))
			continue
		}
		v.Elems = append(v.Elems, g.value(depth+1, positionElement))
	}
	return v
}
