package resp

import (
	"bytes"
	"errors"
	"io"
	"math"
	"testing"
)

// Value constructors for tables.

func simple(s string) Value    { return Value{Type: TypeSimpleString, Str: []byte(s)} }
func simpleErr(s string) Value { return Value{Type: TypeError, Str: []byte(s)} }
func bulk(s string) Value      { return Value{Type: TypeBulkString, Str: []byte(s)} }
func integer(n int64) Value    { return Value{Type: TypeInteger, Int: n} }
func double(f float64) Value   { return Value{Type: TypeDouble, Float: f} }
func array(elems ...Value) Value {
	return Value{Type: TypeArray, Elems: elems}
}
func mapOf(elems ...Value) Value { return Value{Type: TypeMap, Elems: elems} }
func setOf(elems ...Value) Value { return Value{Type: TypeSet, Elems: elems} }
func push(elems ...Value) Value  { return Value{Type: TypePush, Elems: elems} }

// skipAllocationChecks skips a test whose allocation counts the race
// detector or -short would distort.
func skipAllocationChecks(t testing.TB) {
	t.Helper()
	if raceEnabled {
		t.Skip("allocation checks are skipped under the race detector")
	}
}

// valuesEqual reports whether a and b hold the same reply. Nil and empty
// byte slices and element lists are equal; a Double compares by Float alone
// (NaN equals NaN), as its text has many spellings.
func valuesEqual(a, b Value) bool {
	if a.Type != b.Type || a.Null != b.Null || a.Int != b.Int || a.Format != b.Format {
		return false
	}
	if a.Type == TypeDouble {
		if math.IsNaN(a.Float) || math.IsNaN(b.Float) {
			return math.IsNaN(a.Float) && math.IsNaN(b.Float)
		}
		return a.Float == b.Float && math.Signbit(a.Float) == math.Signbit(b.Float)
	}
	if a.Float != b.Float || !bytes.Equal(a.Str, b.Str) || len(a.Elems) != len(b.Elems) {
		return false
	}
	for i := range a.Elems {
		if !valuesEqual(a.Elems[i], b.Elems[i]) {
			return false
		}
	}
	return true
}

// errorsEqual reports whether two parse results failed the same way: the
// same sentinel, or protocol errors with the same reason, offset and cause.
func errorsEqual(a, b error) bool {
	var protocolA, protocolB *ProtocolError
	if errors.As(a, &protocolA) && errors.As(b, &protocolB) {
		return *protocolA == *protocolB
	}
	return a == b
}

// parseStream parses data frame by frame with Parse, as a Reader would see
// it: the cloned values, then io.EOF when data ends between frames,
// io.ErrUnexpectedEOF when it ends within one, or the protocol error.
func parseStream(data []byte, limits Limits) ([]Value, error) {
	var values []Value
	for {
		if len(data) == 0 {
			return values, io.EOF
		}
		v, n, err := Parse(data, limits)
		if err == ErrIncomplete {
			return values, io.ErrUnexpectedEOF
		}
		if err != nil {
			return values, err
		}
		values = append(values, v.Clone())
		data = data[n:]
	}
}

// readStream reads replies from a Reader until an error.
func readStream(rd io.Reader, limits Limits) ([]Value, error) {
	reader := NewReader(rd, limits)
	var values []Value
	for {
		v, err := reader.ReadReply()
		if err != nil {
			return values, err
		}
		values = append(values, v.Clone())
	}
}

// sameStream reports whether two results of parseStream or readStream match.
func sameStream(valuesA []Value, errA error, valuesB []Value, errB error) bool {
	if len(valuesA) != len(valuesB) || !errorsEqual(errA, errB) {
		return false
	}
	for i := range valuesA {
		if !valuesEqual(valuesA[i], valuesB[i]) {
			return false
		}
	}
	return true
}

// chunkReader serves data in chunks of the given sizes, cycling through
// them; a size of zero serves one byte.
type chunkReader struct {
	data  []byte
	sizes []int
	next  int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	size := 1
	if len(c.sizes) > 0 {
		size = max(1, c.sizes[c.next%len(c.sizes)])
		c.next++
	}
	n := copy(p[:min(len(p), size)], c.data)
	c.data = c.data[n:]
	return n, nil
}

// repeatReader serves the same bytes forever, so a Reader over it can be
// benchmarked without allocating.
type repeatReader struct {
	data   []byte
	offset int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		copied := copy(p[n:], r.data[r.offset:])
		n += copied
		r.offset = (r.offset + copied) % len(r.data)
	}
	return n, nil
}
