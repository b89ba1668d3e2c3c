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
	p := parser{limits: limits.withDefaults()}
	n, err = p.parse(buf, &v)
	return v, n, err
}

// position says where a value sits, which restricts its type.
type position uint8

const (
	positionTop     position = iota // a whole reply: pushes allowed
	positionElement                 // inside an aggregate
	positionKey                     // a map or attribute key: scalars only
)

// parser holds the state of parsing one frame. A Reader keeps one to reuse
// its element stacks; they grow by append, only as elements are parsed.
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
	// scratch holds the elements of the aggregates being parsed, innermost
	// last; a finished aggregate moves its elements to arena.
	scratch []Value
	// arena holds the elements of finished aggregates: each Value.Elems is
	// a capacity-limited window into it.
	arena []Value
}

// parse parses the frame at the start of buf into v and returns its length.
// Values are written through pointers, to save copying them up the stack.
func (p *parser) parse(buf []byte, v *Value) (int, error) {
	p.buf, p.pos, p.total, p.need = buf, 0, 0, 0
	p.scratch, p.arena = p.scratch[:0], p.arena[:0]
	var err error
	if len(buf) > 0 && !Type(buf[0]).isAggregate() {
		err = p.scalar(v) // no aggregate bookkeeping
	} else {
		err = p.value(v, 0, positionTop, false)
	}
	if err != nil {
		*v = Value{}
		return 0, err
	}
	return p.pos, nil
}

// value parses the value at p.pos into v, after any attributes, which it
// skips. depth counts the enclosing aggregates. When discard is set the value
// is only checked, and its elements are not kept.
func (p *parser) value(v *Value, depth int, where position, discard bool) error {
	for {
		if p.pos >= len(p.buf) {
			p.need = len(p.buf) + 1
			return ErrIncomplete
		}
		t := Type(p.buf[p.pos])
		switch t {
		case TypeAttribute:
			if err := p.aggregate(v, t, depth, true); err != nil {
				return err
			}
			continue
		case TypeArray, TypeSet, TypeMap, TypePush:
			if where == positionKey {
				return p.fail(p.pos, "map key is an aggregate")
			}
			if t == TypePush && where != positionTop {
				return p.fail(p.pos, "push inside an aggregate")
			}
			return p.aggregate(v, t, depth, discard)
		}
		return p.scalar(v)
	}
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
	case TypeSimpleString, TypeError:
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
	case TypeBigNumber:
		end, err := p.lineEnd(p.limits.MaxLineLength)
		if bad := checkBigNumber(p.buf[p.pos:end], err == nil); bad >= 0 {
			return p.fail(p.pos+bad, "malformed big number")
		}
		if err != nil {
			return err
		}
		*v = Value{Type: t, Str: p.buf[p.pos:end:end]}
		p.pos = end + 2
		return nil
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
