package resp

import "strconv"

// AppendArrayHeader appends the header of an array of n elements, "*n\r\n".
// A command is an array header followed by n bulk strings.
func AppendArrayHeader(dst []byte, n int) []byte {
	return appendHeader(dst, TypeArray, n)
}

// AppendBulk appends b as a bulk string.
func AppendBulk(dst, b []byte) []byte {
	dst = appendHeader(dst, TypeBulkString, len(b))
	dst = append(dst, b...)
	return append(dst, '\r', '\n')
}

// AppendBulkString appends s as a bulk string.
func AppendBulkString(dst []byte, s string) []byte {
	dst = appendHeader(dst, TypeBulkString, len(s))
	dst = append(dst, s...)
	return append(dst, '\r', '\n')
}

// AppendBulkInt appends the decimal text of v as a bulk string, the way a
// command passes a number such as a TTL.
func AppendBulkInt(dst []byte, v int64) []byte {
	var digits [20]byte // "-9223372036854775808" at most
	i := len(digits)
	magnitude := uint64(v)
	if v < 0 {
		magnitude = -magnitude
	}
	for magnitude >= 10 {
		i--
		digits[i] = byte('0' + magnitude%10)
		magnitude /= 10
	}
	i--
	digits[i] = byte('0' + magnitude)
	if v < 0 {
		i--
		digits[i] = '-'
	}
	dst = appendHeader(dst, TypeBulkString, len(digits)-i)
	dst = append(dst, digits[i:]...)
	return append(dst, '\r', '\n')
}

// AppendCommand appends a command of string arguments: an array header and
// one bulk string per argument.
func AppendCommand(dst []byte, args ...string) []byte {
	dst = AppendArrayHeader(dst, len(args))
	for _, arg := range args {
		dst = AppendBulkString(dst, arg)
	}
	return dst
}

// AppendValue appends the RESP3 encoding of v, for fake servers and tests.
//
// A null of type TypeBulkString or TypeArray encodes as the RESP2 `$-1` or
// `*-1`, any other null as `_`. A Double is written from Float (Str is
// ignored), an Integer from Int and a Boolean from Int != 0. The caller keeps
// simple strings, errors and big numbers free of CR and LF: the text is
// written as is. A Map writes len(Elems)/2 pairs. A TypeAttribute
// value encodes as an attribute header and its pairs; a Parse of the result
// expects the value it annotates to follow. A value of unknown type encodes
// as an array of its Elems.
func AppendValue(dst []byte, v Value) []byte {
	if v.Null || v.Type == TypeNull {
		switch v.Type {
		case TypeBulkString, TypeArray:
			return append(dst, byte(v.Type), '-', '1', '\r', '\n')
		}
		return append(dst, '_', '\r', '\n')
	}
	switch v.Type {
	case TypeSimpleString, TypeError, TypeBigNumber:
		dst = append(dst, byte(v.Type))
		dst = append(dst, v.Str...)
	case TypeInteger:
		dst = append(dst, ':')
		dst = strconv.AppendInt(dst, v.Int, 10)
	case TypeBoolean:
		value := byte('f')
		if v.Int != 0 {
			value = 't'
		}
		dst = append(dst, '#', value)
	case TypeDouble:
		dst = appendDouble(append(dst, ','), v.Float)
	case TypeBulkString, TypeBulkError:
		dst = appendHeader(dst, v.Type, len(v.Str))
		dst = append(dst, v.Str...)
	case TypeVerbatim:
		dst = appendHeader(dst, v.Type, len(v.Format)+1+len(v.Str))
		dst = append(dst, v.Format[:]...)
		dst = append(dst, ':')
		dst = append(dst, v.Str...)
	case TypeMap, TypeAttribute:
		dst = appendHeader(dst, v.Type, len(v.Elems)/2)
		for _, element := range v.Elems[:len(v.Elems)/2*2] {
			dst = AppendValue(dst, element)
		}
		return dst
	default: // TypeArray, TypeSet, TypePush, or an unknown type as an array
		kind := v.Type
		if kind != TypeSet && kind != TypePush {
			kind = TypeArray
		}
		dst = appendHeader(dst, kind, len(v.Elems))
		for _, element := range v.Elems {
			dst = AppendValue(dst, element)
		}
		return dst
	}
	return append(dst, '\r', '\n')
}

// appendHeader appends a type byte, a length and CRLF.
func appendHeader(dst []byte, t Type, n int) []byte {
	// Command arguments are mostly short: one append, no strconv.
	switch {
	case 0 <= n && n < 10:
		return append(dst, byte(t), byte('0'+n), '\r', '\n')
	case 10 <= n && n < 100:
		return append(dst, byte(t), byte('0'+n/10), byte('0'+n%10), '\r', '\n')
	}
	dst = append(dst, byte(t))
	dst = strconv.AppendInt(dst, int64(n), 10)
	return append(dst, '\r', '\n')
}
