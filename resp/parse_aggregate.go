package resp

// aggregate parses an array, set, push, map or attribute whose type byte is
// at p.pos. It recurses once per nesting level, and the depth is checked
// against MaxDepth (at most HardMaxDepth) before any element is parsed, so
// the recursion is bounded.
//
// The declared count is checked against the limits before any element is
// parsed, and memory grows by append only as elements actually arrive: a
// huge declared count costs nothing until its elements are on the wire.
// The aggregate is written to v, unless discard is set.
func (p *parser) aggregate(v *Value, t Type, depth int, discard bool) error {
	start := p.pos
	p.pos++
	limit := p.limits.MaxAggregateLength
	if t == TypeMap || t == TypeAttribute {
		limit /= 2 // a pair counts as two elements
	}
	count, null, err := p.length(limit, t == TypeArray)
	if err != nil {
		return err
	}
	if null {
		*v = Value{Type: t, Null: true}
		return nil
	}
	if depth >= p.limits.MaxDepth {
		return p.tooLarge(start, "aggregates nest deeper than the depth limit")
	}
	elements := count
	if t == TypeMap || t == TypeAttribute {
		elements = 2 * count
	}
	p.total += elements
	if p.total > p.limits.MaxTotalElements {
		return p.tooLarge(start, "reply holds more elements than the limit")
	}

	base := len(p.scratch)
	var element Value // outside the loop, so that it stays on the stack
	for i := range elements {
		where := positionElement
		if (t == TypeMap || t == TypeAttribute) && i%2 == 0 {
			where = positionKey
		}
		if err := p.value(&element, depth+1, where, discard); err != nil {
			p.scratch = p.scratch[:base]
			return err
		}
		if !discard {
			p.scratch = append(p.scratch, element)
		}
	}
	if discard {
		return nil
	}
	first := len(p.arena)
	p.arena = append(p.arena, p.scratch[base:]...)
	clear(p.scratch[base:]) // drop references into the buffer
	p.scratch = p.scratch[:base]
	*v = Value{Type: t, Elems: p.arena[first:len(p.arena):len(p.arena)]}
	return nil
}
