package resp

import "bytes"

// The fast path of ReadReply and Parse, for the replies of a lock client.
// Each function recognises a whole, valid frame of the common shape only, and
// returns 0 for anything else: the general parser then decides, so the fast
// path needs no error handling and cannot change any result. FuzzParse and
// TestFastPathAgrees check that it agrees with the general parser.
//
// The results are plain words, which the register ABI returns in registers:
// a Value holds an array, so it always goes through memory.

// maxFastLineLength bounds the simple strings and errors of the fast path:
// longer lines take the general parser.
const maxFastLineLength = 128

// fastScalar recognises a whole simple string, error, integer, bulk string
// or null at the start of frame, within the line and bulk length limits. It
// returns the frame's type, its text (nil for an integer or a null), its
// integer, and its length, or a length of 0 when the general parser must
// decide.
func fastScalar(frame []byte, maxLineLength, maxBulkLength int) (t Type, text []byte, integer int64, n int) {
	if len(frame) < 3 {
		return 0, nil, 0, 0
	}
	switch t = Type(frame[0]); t {
	case TypeSimpleString, TypeError:
		if end := fastLineEnd(frame, maxLineLength); end > 0 {
			return t, frame[1:end:end], 0, end + 2
		}
	case TypeInteger:
		if integer, n = fastInteger(frame); n > 0 {
			return t, nil, integer, n
		}
	case TypeBulkString:
		if payload, end := fastBulk(frame, maxBulkLength); end > 0 {
			if payload == 0 {
				return t, nil, 0, end + 2
			}
			return t, frame[payload:end:end], 0, end + 2
		}
	case TypeNull:
		if frame[1] == '\r' && frame[2] == '\n' {
			return t, nil, 0, 3
		}
	}
	return 0, nil, 0, 0
}

// fastLineEnd returns the index of the CR ending the simple string or error
// in frame, if the whole line is there, holds at most maxLength bytes, and
// is valid.
func fastLineEnd(frame []byte, maxLength int) int {
	window := frame[:min(len(frame), 1+maxLength+1)]
	end := bytes.IndexByte(window, '\r')
	if end < 1 || end+1 >= len(frame) || frame[end+1] != '\n' || bytes.IndexByte(frame[1:end], '\n') >= 0 {
		return 0
	}
	return end
}

// fastInteger returns the value and length of the integer frame of at most
// 18 digits at the start of frame, if it is whole and valid.
func fastInteger(frame []byte) (n int64, length int) {
	i := 1
	negative := i < len(frame) && frame[i] == '-'
	if negative {
		i++
	}
	first := i
	for ; i < len(frame) && i-first < 18; i++ {
		c := frame[i]
		if c < '0' || c > '9' {
			break
		}
		n = n*10 + int64(c-'0')
	}
	digits := i - first
	if digits == 0 || frame[first] == '0' && (digits > 1 || negative) {
		return 0, 0
	}
	if i+1 >= len(frame) || frame[i] != '\r' || frame[i+1] != '\n' {
		return 0, 0
	}
	if negative {
		n = -n
	}
	return n, i + 2
}

// fastBulk returns the bounds of the payload of the bulk string at the start
// of frame, if it is whole and valid, with a length of at most 9 digits and
// at most limit. A null bulk string gives a payload start of 0 and its end
// minus 2 as end, so that end+2 is always the frame's length.
func fastBulk(frame []byte, limit int) (payload, end int) {
	if len(frame) >= 5 && frame[1] == '-' {
		if frame[2] == '1' && frame[3] == '\r' && frame[4] == '\n' {
			return 0, 3
		}
		return 0, 0
	}
	i := 1
	length := 0
	for ; i < len(frame) && i < 10; i++ {
		c := frame[i]
		if c < '0' || c > '9' {
			break
		}
		length = length*10 + int(c-'0')
	}
	if i == 1 || frame[1] == '0' && i > 2 || length > limit {
		return 0, 0
	}
	payload = i + 2
	end = payload + length
	if end+1 >= len(frame) || frame[i] != '\r' || frame[i+1] != '\n' || frame[end] != '\r' || frame[end+1] != '\n' {
		return 0, 0
	}
	return payload, end
}
