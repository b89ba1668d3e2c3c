package resp

import (
	"bytes"
	"math"
	"strconv"
)

// Type is the type byte that starts a RESP frame.
type Type byte

// The RESP2 and RESP3 frame types, named after the RESP3 specification.
const (
	TypeSimpleString Type = '+'
	TypeError        Type = '-'
	TypeInteger      Type = ':'
	TypeBulkString   Type = '$'
	TypeArray        Type = '*'
	TypeNull         Type = '_'
	TypeBoolean      Type = '#'
	TypeDouble       Type = ','
	TypeBigNumber    Type = '('
	TypeBulkError    Type = '!'
	TypeVerbatim     Type = '='
	TypeMap          Type = '%'
	TypeSet          Type = '~'
	TypeAttribute    Type = '|'
	TypePush         Type = '>'
)

// String returns the type's name as in the RESP3 specification, for example
// "simple string" or "push".
func (t Type) String() string {
	switch t {
	case TypeSimpleString:
		return "simple string"
	case TypeError:
		return "simple error"
	case TypeInteger:
		return "integer"
	case TypeBulkString:
		return "bulk string"
	case TypeArray:
		return "array"
	case TypeNull:
		return "null"
	case TypeBoolean:
		return "boolean"
	case TypeDouble:
		return "double"
	case TypeBigNumber:
		return "big number"
	case TypeBulkError:
		return "bulk error"
	case TypeVerbatim:
		return "verbatim string"
	case TypeMap:
		return "map"
	case TypeSet:
		return "set"
	case TypeAttribute:
		return "attribute"
	case TypePush:
		return "push"
	}
	return "type " + strconv.QuoteRune(rune(t))
}

// isAggregate reports whether frames of type t hold other frames.
func (t Type) isAggregate() bool {
	switch t {
	case TypeArray, TypeMap, TypeSet, TypePush, TypeAttribute:
		return true
	}
	return false
}

// Value is one parsed reply.
//
// Str points into the buffer it was parsed from, and Elems into memory the
// parser reuses: a Value returned by a Reader stays valid until the next
// ReadReply or Reset on that Reader, and one returned by Parse as long as the
// parsed buffer is left unchanged. Use Clone to keep a Value longer.
type Value struct {
	// Type is the frame's type byte. A RESP2 null keeps its type
	// (TypeBulkString for `$-1`, TypeArray for `*-1`).
	Type Type
	// Null is set for `$-1`, `*-1` (RESP2) and `_` (RESP3).
	Null bool
	// Format holds a Verbatim string's format, such as "txt" or "mkd". It
	// sits next to the other small fields to keep Value at 72 bytes.
	Format [3]byte
	// Int holds an Integer, and 1 or 0 for a Boolean.
	Int int64
	// Float holds a Double. A NaN keeps the sign it was written with
	// ("-nan" or "nan").
	Float float64
	// Str holds the text of a SimpleString, Error, BulkString, BulkError,
	// BigNumber, Double (as received) and Verbatim (the payload after the
	// format and its colon). A BigNumber's text is decimal digits after an
	// optional '-' when a server computed it, but it is not checked: a
	// script can send any line as a big number.
	Str []byte
	// Elems holds the elements of an Array, Set or Push, and a Map's keys
	// and values alternating: key, value, key, value.
	Elems []Value
}

// IsOK reports whether v is the simple string "OK".
func (v Value) IsOK() bool {
	return v.Type == TypeSimpleString && string(v.Str) == "OK"
}

// IsError reports whether v is a simple error or a bulk error.
func (v Value) IsError() bool {
	return v.Type == TypeError || v.Type == TypeBulkError
}

// Err returns v as a *ServerError, holding a copy of the message, when v is
// an error reply, and nil otherwise.
func (v Value) Err() error {
	if !v.IsError() {
		return nil
	}
	return &ServerError{Message: string(v.Str)}
}

// Clone returns a deep copy of v that shares no memory with any buffer.
func (v Value) Clone() Value {
	clone := v
	if v.Str != nil {
		clone.Str = bytes.Clone(v.Str)
	}
	if v.Elems != nil {
		clone.Elems = make([]Value, len(v.Elems))
		for i, element := range v.Elems {
			clone.Elems[i] = element.Clone()
		}
	}
	return clone
}

// CloneInto is Clone into memory the caller reuses: the copy's elements
// are carved from elems and its bytes from storage, each grown when too
// small, and it returns the copy with the buffers to pass to the next
// CloneInto. The copy is valid until then. In steady state it does not
// allocate.
func (v Value) CloneInto(elems []Value, storage []byte) (Value, []Value, []byte) {
	count, size := v.extent()
	if cap(elems) < count || elems == nil {
		elems = make([]Value, 0, max(count, 4))
	}
	if cap(storage) < size || storage == nil {
		storage = make([]byte, 0, max(size, 16))
	}
	// The buffers have room for everything, so carving never moves them.
	elems, storage = elems[:0], storage[:0]
	clone := v.cloneInto(&elems, &storage)
	return clone, elems, storage
}

// extent returns the number of elements under v, at every depth, and
// the number of bytes of their texts and v's.
func (v Value) extent() (count, size int) {
	size = len(v.Str)
	count = len(v.Elems)
	for _, element := range v.Elems {
		c, s := element.extent()
		count, size = count+c, size+s
	}
	return count, size
}

// cloneInto copies v into elems and storage, which have room for it.
func (v Value) cloneInto(elems *[]Value, storage *[]byte) Value {
	clone := v
	if v.Str != nil {
		start := len(*storage)
		*storage = append(*storage, v.Str...)
		clone.Str = (*storage)[start:len(*storage):len(*storage)]
	}
	if v.Elems != nil {
		start := len(*elems)
		end := start + len(v.Elems)
		*elems = (*elems)[:end]
		clone.Elems = (*elems)[start:end:end]
		for i, element := range v.Elems {
			clone.Elems[i] = element.cloneInto(elems, storage)
		}
	}
	return clone
}

// String returns a human-readable rendering of v for logs and tests, such as
// `"OK"`, `(error) ERR x`, `(integer) 1`, `(nil)` or `["a", (integer) 1]`.
func (v Value) String() string {
	return string(appendDebug(nil, v))
}

// appendDebug appends the rendering described at Value.String.
func appendDebug(dst []byte, v Value) []byte {
	if v.Null {
		return append(dst, "(nil)"...)
	}
	switch v.Type {
	case TypeSimpleString, TypeBulkString:
		return strconv.AppendQuote(dst, string(v.Str))
	case TypeError, TypeBulkError:
		return append(append(dst, "(error) "...), v.Str...)
	case TypeInteger:
		return strconv.AppendInt(append(dst, "(integer) "...), v.Int, 10)
	case TypeBoolean:
		return strconv.AppendBool(append(dst, "(boolean) "...), v.Int != 0)
	case TypeDouble:
		return appendDouble(append(dst, "(double) "...), v.Float)
	case TypeBigNumber:
		return append(append(dst, "(big number) "...), v.Str...)
	case TypeVerbatim:
		dst = append(append(append(dst, "(verbatim) "...), v.Format[:]...), ':')
		return strconv.AppendQuote(dst, string(v.Str))
	case TypeMap, TypeAttribute:
		dst = append(dst, '{')
		for i := 0; i+1 < len(v.Elems); i += 2 {
			if i > 0 {
				dst = append(dst, ", "...)
			}
			dst = appendDebug(dst, v.Elems[i])
			dst = append(dst, ": "...)
			dst = appendDebug(dst, v.Elems[i+1])
		}
		return append(dst, '}')
	case TypeArray, TypeSet, TypePush:
		open, closing := byte('['), byte(']')
		switch v.Type {
		case TypeSet:
			open, closing = '(', ')'
		case TypePush:
			dst = append(dst, "(push) "...)
		}
		dst = append(dst, open)
		for i, element := range v.Elems {
			if i > 0 {
				dst = append(dst, ", "...)
			}
			dst = appendDebug(dst, element)
		}
		return append(dst, closing)
	}
	return append(dst, v.Type.String()...)
}

// appendDouble appends f as RESP3 writes a double: "inf", "-inf", "nan", or
// the shortest decimal that parses back to f.
func appendDouble(dst []byte, f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return append(dst, "inf"...)
	case math.IsInf(f, -1):
		return append(dst, "-inf"...)
	case math.IsNaN(f):
		return append(dst, "nan"...)
	}
	return strconv.AppendFloat(dst, f, 'g', -1, 64)
}
