package resp

import (
	"bytes"
	"math"
)

// This file holds the line-level scanners. Each examines bytes strictly left
// to right and reports the first byte that cannot belong to a valid frame, so
// a prefix of the input fails at the same offset as the whole input, or is
// incomplete: the result never depends on how the stream was split.

// lineEnd finds the CRLF ending the line that starts at p.pos, whose text may
// hold at most maxLength bytes, and returns the index of its CR. A bare LF,
// a CR not followed by LF and a text longer than maxLength are errors.
//
// On ErrIncomplete and on errors, the returned index still bounds the text
// bytes seen so far that are known to be neither CR nor LF, so that callers
// can check them: a bad byte there comes before the reported one.
func (p *parser) lineEnd(maxLength int) (int, error) {
	start := p.pos
	windowEnd := min(len(p.buf), start+maxLength+1) // the text and its CR
	window := p.buf[start:windowEnd]
	text := window
	carriageReturn := bytes.IndexByte(window, '\r')
	if carriageReturn >= 0 {
		text = window[:carriageReturn]
	}
	if lineFeed := bytes.IndexByte(text, '\n'); lineFeed >= 0 {
		return start + lineFeed, p.fail(start+lineFeed, "line feed without carriage return")
	}
	if carriageReturn < 0 {
		if windowEnd-start > maxLength {
			return start + maxLength, p.tooLarge(start+maxLength, "line exceeds the length limit")
		}
		p.need = len(p.buf) + 1
		return windowEnd, ErrIncomplete
	}
	end := start + carriageReturn
	return end, p.terminator(end, "carriage return without line feed")
}

// terminator checks that p.buf holds CRLF at offset end.
func (p *parser) terminator(end int, reason string) error {
	switch {
	case end >= len(p.buf):
		p.need = end + 1 // nothing to check before the CR arrives
		return ErrIncomplete
	case p.buf[end] != '\r':
		return p.fail(end, reason)
	case end+1 >= len(p.buf):
		p.need = end + 2
		return ErrIncomplete
	case p.buf[end+1] != '\n':
		return p.fail(end+1, reason)
	}
	return nil
}

// crlf checks that CRLF follows at p.pos and moves past it.
func (p *parser) crlf(reason string) error {
	if err := p.terminator(p.pos, reason); err != nil {
		return err
	}
	p.pos += 2
	return nil
}

// integer parses a signed decimal integer line, as hiredis's string2ll does:
// an optional '-' then digits, no '+', no spaces, no leading zeros, no "-0",
// within the int64 range.
func (p *parser) integer() (int64, error) {
	buf := p.buf
	i := p.pos
	negative := i < len(buf) && buf[i] == '-'
	if negative {
		i++
	}
	limit := uint64(math.MaxInt64)
	if negative {
		limit++
	}
	first := i
	var magnitude uint64
	for ; i < len(buf); i++ {
		c := buf[i]
		if c < '0' || c > '9' {
			break
		}
		switch {
		case i > first && buf[first] == '0':
			return 0, p.fail(i, "integer has a leading zero")
		case negative && c == '0' && i == first:
			return 0, p.fail(i, "integer is negative zero")
		}
		digit := uint64(c - '0')
		if magnitude > (limit-digit)/10 {
			return 0, p.fail(i, "integer overflows int64")
		}
		magnitude = magnitude*10 + digit
	}
	if i == first {
		if i >= len(buf) {
			p.need = i + 1
			return 0, ErrIncomplete
		}
		return 0, p.fail(i, "integer has no digits")
	}
	p.pos = i
	if err := p.crlf("integer not followed by CRLF"); err != nil {
		return 0, err
	}
	if negative {
		return int64(-magnitude), nil
	}
	return int64(magnitude), nil
}

// length parses the length line of a bulk or aggregate frame: digits at most
// limit, or "-1" (null) when nullable. The limit is checked digit by digit,
// so an absurd length fails before its line ends.
func (p *parser) length(limit int, nullable bool) (n int, null bool, err error) {
	buf := p.buf
	i := p.pos
	if i >= len(buf) {
		p.need = i + 1
		return 0, false, ErrIncomplete
	}
	switch buf[i] {
	case '-':
		if !nullable {
			return 0, false, p.fail(i, "length is negative")
		}
		i++
		if i >= len(buf) {
			p.need = i + 1
			return 0, false, ErrIncomplete
		}
		if buf[i] != '1' {
			return 0, false, p.fail(i, "length is negative and not -1")
		}
		p.pos = i + 1
		return 0, true, p.crlf("length not followed by CRLF")
	case '?':
		return 0, false, p.fail(i, "streamed strings and aggregates are not supported")
	}
	first := i
	var length int64 // within limit*10+9, which fits even where int has 32 bits
	for ; i < len(buf); i++ {
		c := buf[i]
		if c < '0' || c > '9' {
			break
		}
		if i > first && buf[first] == '0' {
			return 0, false, p.fail(i, "length has a leading zero")
		}
		length = length*10 + int64(c-'0')
		if length > int64(limit) {
			return 0, false, p.tooLarge(i, "length exceeds the limit")
		}
	}
	n = int(length)
	if i == first {
		if i >= len(buf) {
			p.need = i + 1
			return 0, false, ErrIncomplete
		}
		return 0, false, p.fail(i, "length has no digits")
	}
	p.pos = i
	return n, false, p.crlf("length not followed by CRLF")
}

// checkDouble returns the index of the first byte of text that cannot belong
// to a RESP3 double, or -1. A double is "inf", "-inf", "nan", "-nan", or a
// finite decimal: [+-]digits[.digits][(e|E)[+-]digits].
//
// Those are the spellings servers write: Redis writes infinities itself,
// and up to 7.0 a NaN with printf's "%.17g", which gives "-nan" for a NaN
// whose sign bit is set (glibc, musl), as 0/0 is on x86-64; from 7.2 it
// writes "nan" for every NaN. Other spellings ("NaN", "+nan", "nan(...)",
// "infinity") are rejected. When complete is set, text is the whole
// double, and a text that stops early fails at its end.
func checkDouble(text []byte, complete bool) int {
	i := 0
	if i < len(text) && (text[i] == '-' || text[i] == '+') {
		i++
	}
	if i < len(text) && (text[i] == 'i' || text[i] == 'n') {
		if i > 0 && text[0] == '+' {
			return i // "inf", "-inf", "nan" or "-nan" only
		}
		word := "inf"
		if text[i] == 'n' {
			word = "nan"
		}
		for j := 0; i+j < len(text); j++ {
			if j >= len(word) || text[i+j] != word[j] {
				return i + j
			}
		}
		if complete && len(text)-i != len(word) {
			return len(text)
		}
		return -1
	}
	// digits scans a run of at least one digit from i; it reports where the
	// run ends, or a failure index, or that more text is needed.
	digits := func(i int) (end int, bad int) {
		end = i
		for end < len(text) && text[end] >= '0' && text[end] <= '9' {
			end++
		}
		if end == i && (end < len(text) || complete) {
			return end, end
		}
		return end, -1
	}
	var bad int
	if i, bad = digits(i); bad >= 0 || i == len(text) {
		return bad
	}
	if text[i] == '.' {
		if i, bad = digits(i + 1); bad >= 0 || i == len(text) {
			return bad
		}
	}
	if text[i] == 'e' || text[i] == 'E' {
		i++
		if i < len(text) && (text[i] == '-' || text[i] == '+') {
			i++
		}
		if i, bad = digits(i); bad >= 0 || i == len(text) {
			return bad
		}
	}
	return i
}
