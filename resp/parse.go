package resp

import (
	"math"
	"strconv"
)

// Parse parses one frame from the start of buf and returns it with the
// number of bytes it took. It returns ErrIncomplete when buf holds only a
// prefix of a frame that may still be valid, and a *ProtocolError as soon as
// the bytes seen cannot start a valid frame within limits. The result does
// not depend on how much of the stream beyond the frame buf holds.
//
// Attributes are parsed under the same limits and skipped: the value they
// annotate is returned. Scalars point into buf; aggregates allocate.
func Parse(buf []byte, limits Limits) (v Value, n int, err error) {
	lineLength := min(maxFastLineLength, clampLimit(limits.MaxLineLength, DefaultMaxLineLength, HardMaxLineLength))
	bulkLength := clampLimit(limits.MaxBulkLength, DefaultMaxBulkLength, HardMaxBulkLength)
	if t, text, integer, length := fastScalar(buf, lineLength, bulkLength); length > 0 {
		return Value{Type: t, Null: text == nil && t != TypeInteger, Int: integer, Str: text}, length, nil
	}
	p := parser{limits: limits.withDefaults()}
	n, err = p.parse(buf, &v, false)
	return v, n, err
}

// parser holds the state of parsing one frame. A Reader keeps one, to reuse
// its memory and to resume an unfinished frame where it stopped.
type parser struct {
	limits Limits // with defaults filled
	buf    []byte // the frame and maybe more; buf[0] is the frame's type byte
	pos    int    // next byte to parse
	total  int    // elements declared so far by all aggregates of the frame
	// need is set with ErrIncomplete: the length buf must reach before the
	// result can change, by completing or failing. It is len(buf)+1 except
	// within a bulk payload, whose bytes are not checked: a Reader need not
	// parse a large bulk again until it has arrived.
	need int
	// stack holds the aggregates being parsed, outermost first: an explicit
	// stack, at most MaxDepth deep.
	stack []level
	// scratch holds the elements of the aggregates being parsed, innermost
	// last; a finished aggregate moves its elements to arena.
	scratch []Value
	// arena holds the elements of finished aggregates: each Value.Elems is
	// a capacity-limited window into it. Both grow by append, only as
	// elements are parsed.
	arena []Value
}

// parse parses the frame at the start of buf into v and returns its length.
// Values are written through pointers, to save copying them up the stack.
//
// When resume is set, the parser continues the frame of its last call, which
// returned ErrIncomplete: buf must hold the same bytes, extended, and the
// bytes parsed must not have moved since (see parser.aggregates).
func (p *parser) parse(buf []byte, v *Value, resume bool) (int, error) {
	p.buf, p.need = buf, 0
	if !resume {
		p.pos, p.total = 0, 0
		p.stack, p.scratch, p.arena = p.stack[:0], p.scratch[:0], p.arena[:0]
	}
	var err error
	if len(p.stack) == 0 && p.pos == 0 && len(buf) > 0 && !Type(buf[0]).isAggregate() {
		if err = p.scalar(v); err != nil { // no aggregate bookkeeping
			p.pos = 0 // to resume from the start
		}
	} else {
		err = p.aggregates(v)
	}
	if err != nil {
		*v = Value{}
		return 0, err
	}
	return p.pos, nil
}

// scalar parses the non-aggregate frame whose type byte is at p.pos into v.
func (p *parser) scalar(v *Value) error {
	if p.pos >= len(p.buf) {
		p.need = len(p.buf) + 1
		return ErrIncomplete
	}
	start := p.pos
	t := Type(p.buf[start])
	p.pos++
	switch t {
	case TypeSimpleString, TypeError, TypeBigNumber:
		// A big number's text is not checked for digits: a script's
		// {big_number = s} sends s as it is, CR and LF turned to spaces.
		end, err := p.lineEnd(p.limits.MaxLineLength)
		if err != nil {
			return err
		}
		*v = Value{Type: t, Str: p.buf[p.pos:end:end]}
		p.pos = end + 2
		return nil
	case TypeInteger:
		n, err := p.integer()
		*v = Value{Type: t, Int: n}
		return err
	case TypeBulkString, TypeBulkError, TypeVerbatim:
		return p.blob(v, t, start)
	case TypeNull:
		*v = Value{Type: t, Null: true}
		return p.crlf("null is not exactly \"_\\r\\n\"")
	case TypeBoolean:
		return p.boolean(v)
	case TypeDouble:
		return p.double(v)
	case ';', '.':
		return p.fail(start, "streamed strings and aggregates are not supported")
	}
	return p.fail(start, "unknown type byte")
}

// blob parses the rest of a bulk string, bulk error or verbatim string, whose
// type byte is at start, into v.
func (p *parser) blob(v *Value, t Type, start int) error {
	length, null, err := p.length(p.limits.MaxBulkLength, t == TypeBulkString)
	if err != nil {
		return err
	}
	if null {
		*v = Value{Type: t, Null: true}
		return nil
	}
	payload := p.pos
	if t == TypeVerbatim {
		if length < 4 {
			return p.fail(start, "verbatim string shorter than its format")
		}
		if payload+3 < len(p.buf) && p.buf[payload+3] != ':' {
			return p.fail(payload+3, "verbatim format not followed by ':'")
		}
	}
	end := payload + length
	if err := p.terminator(end, "bulk payload not followed by CRLF"); err != nil {
		if t == TypeVerbatim && err == ErrIncomplete && payload+3 >= len(p.buf) {
			p.need = payload + 4 // the colon is checked first
		}
		return err
	}
	p.pos = end + 2
	*v = Value{Type: t, Str: p.buf[payload:end:end]}
	if t == TypeVerbatim {
		copy(v.Format[:], v.Str)
		v.Str = v.Str[4:]
	}
	return nil
}

// boolean parses the rest of "#t\r\n" or "#f\r\n" into v.
func (p *parser) boolean(v *Value) error {
	if p.pos >= len(p.buf) {
		p.need = len(p.buf) + 1
		return ErrIncomplete
	}
	*v = Value{Type: TypeBoolean}
	switch p.buf[p.pos] {
	case 't':
		v.Int = 1
	case 'f':
	default:
		return p.fail(p.pos, "boolean is neither t nor f")
	}
	p.pos++
	return p.crlf("boolean not followed by CRLF")
}

// double parses the rest of a double line into v.
func (p *parser) double(v *Value) error {
	end, err := p.lineEnd(min(maxDoubleLength, p.limits.MaxLineLength))
	text := p.buf[p.pos:end:end]
	if bad := checkDouble(text, err == nil); bad >= 0 {
		return p.fail(p.pos+bad, "malformed double")
	}
	if err != nil {
		return err
	}
	*v = Value{Type: TypeDouble, Str: text}
	switch string(text) {
	case "inf":
		v.Float = math.Inf(1)
	case "-inf":
		v.Float = math.Inf(-1)
	case "nan":
		v.Float = math.NaN()
	case "-nan":
		v.Float = math.Copysign(math.NaN(), -1)
	default:
		v.Float, err = strconv.ParseFloat(string(text), 64)
		if err != nil {
			return p.fail(p.pos, "double out of range")
		}
	}
	p.pos = end + 2
	return nil
}

// fail returns a *ProtocolError for the byte at offset.
func (p *parser) fail(offset int, reason string) error {
	return &ProtocolError{Reason: reason, Offset: offset}
}

// tooLarge returns a *ProtocolError wrapping ErrTooLarge for the byte at
// offset.
func (p *parser) tooLarge(offset int, reason string) error {
	return &ProtocolError{Reason: reason, Offset: offset, Err: ErrTooLarge}
}
