package resp

import "slices"

// maxPreallocatedElements bounds the room made for an aggregate's elements
// before they arrive; beyond it, room grows by append as they are parsed.
const maxPreallocatedElements = 64

// level is an aggregate being parsed: one entry of the parser's stack.
type level struct {
	t        Type
	elements int  // declared, a map's or attribute's pairs counting two
	done     int  // elements parsed so far
	base     int  // index in scratch of its first element
	discard  bool // in an attribute: elements are checked, not kept
}

// aggregates parses the frame at p.pos, which may hold aggregates, into v.
//
// It is a loop over an explicit stack of open aggregates, not a recursion:
// each turn parses one aggregate header or scalar, and hands finished values
// to the enclosing aggregate. Attributes are parsed like aggregates in
// discard mode and produce no value: the value after one takes its place.
//
// On ErrIncomplete, p.pos is moved back to the start of the value being
// parsed, while the stack, scratch, arena and total keep the values finished
// so far: a later call with resume set continues from there, so a frame
// trickling in is not parsed again from its start at every read. The values
// kept point into the bytes parsed so far, which must not move meanwhile.
func (p *parser) aggregates(v *Value) error {
	var element Value
	for {
		checkpoint := p.pos
		if p.pos >= len(p.buf) {
			p.need = len(p.buf) + 1
			return ErrIncomplete
		}
		t := Type(p.buf[p.pos])
		if t.isAggregate() {
			opened, err := p.open(t, &element)
			if err != nil {
				p.pos = checkpoint
				return err
			}
			if opened {
				if p.stack[len(p.stack)-1].elements > 0 {
					continue // on to its first element
				}
				var produced bool
				if element, produced = p.close(); !produced {
					continue // an empty attribute
				}
			}
		} else if err := p.scalar(&element); err != nil {
			p.pos = checkpoint
			return err
		}

		// Hand the element to the enclosing aggregates, closing those that
		// it completes.
		for {
			if len(p.stack) == 0 {
				*v = element
				return nil
			}
			top := &p.stack[len(p.stack)-1]
			if !top.discard {
				p.scratch = append(p.scratch, element)
			}
			top.done++
			if top.done < top.elements {
				break
			}
			var produced bool
			if element, produced = p.close(); !produced {
				break // an attribute: the value it annotates comes next
			}
		}
	}
}

// open parses the header of the aggregate of type t at p.pos and pushes it
// on the stack, after checking the limits: the count, the depth and the
// total. It reports false for a null aggregate, which it stores in element.
//
// An aggregate may be a map key, as RESP3 allows: a script's {map = t}
// sends a Lua table used as a key of t as an array or a map. A map's keys
// and values alternate in Elems, so no key needs to be hashable.
func (p *parser) open(t Type, element *Value) (bool, error) {
	start := p.pos
	depth := len(p.stack)
	if t == TypePush && depth > 0 {
		return false, p.fail(start, "push inside an aggregate")
	}
	p.pos++
	limit := p.limits.MaxAggregateLength
	if t == TypeMap || t == TypeAttribute {
		limit /= 2 // a pair counts as two elements
	}
	count, null, err := p.length(limit, t == TypeArray)
	if err != nil {
		return false, err
	}
	if null {
		*element = Value{Type: t, Null: true}
		return false, nil
	}
	if depth >= p.limits.MaxDepth {
		return false, p.tooLarge(start, "aggregates nest deeper than the depth limit")
	}
	elements := count
	if t == TypeMap || t == TypeAttribute {
		elements = 2 * count
	}
	p.total += elements
	if p.total > p.limits.MaxTotalElements {
		return false, p.tooLarge(start, "reply holds more elements than the limit")
	}
	discard := t == TypeAttribute || depth > 0 && p.stack[depth-1].discard
	if !discard {
		// Room for the first elements: at most 64, whatever the count says.
		p.scratch = slices.Grow(p.scratch, min(elements, maxPreallocatedElements))
	}
	p.stack = append(p.stack, level{t: t, elements: elements, base: len(p.scratch), discard: discard})
	return true, nil
}

// close pops the finished aggregate at the top of the stack and returns its
// value, moving its elements from scratch to arena. It reports false for an
// attribute, which produces no value.
func (p *parser) close() (Value, bool) {
	top := p.stack[len(p.stack)-1]
	p.stack = p.stack[:len(p.stack)-1]
	if top.t == TypeAttribute {
		return Value{}, false
	}
	if top.discard {
		return Value{Type: top.t}, true // inside an attribute: not kept
	}
	first := len(p.arena)
	p.arena = append(p.arena, p.scratch[top.base:]...)
	clear(p.scratch[top.base:]) // drop references into the buffer
	p.scratch = p.scratch[:top.base]
	return Value{Type: top.t, Elems: p.arena[first:len(p.arena):len(p.arena)]}, true
}
