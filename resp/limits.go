package resp

import (
	"errors"
	"strconv"
)

// Default limits, used for the zero fields of Limits. They suit a lock
// client, whose replies are a few short scalars.
const (
	DefaultMaxBulkLength      = 1 << 20 // 1 MiB
	DefaultMaxAggregateLength = 1024
	DefaultMaxTotalElements   = 4 * DefaultMaxAggregateLength
	DefaultMaxDepth           = 16
	DefaultMaxLineLength      = 64 << 10 // 64 KiB
)

// Hard maximums: Limits.Validate rejects larger values, and a Reader or Parse
// given larger values uses these instead.
const (
	HardMaxBulkLength      = 512 << 20 // Redis's proto-max-bulk-len default
	HardMaxAggregateLength = 1 << 20
	HardMaxTotalElements   = 4 * HardMaxAggregateLength
	HardMaxDepth           = 128
	HardMaxLineLength      = 1 << 20
)

// maxDoubleLength bounds the text of a double, as hiredis does: enough for
// any "%.17g" rendering with room to spare.
const maxDoubleLength = 326

// Limits bound what the parser accepts from the network. A frame beyond them
// gives a *ProtocolError that wraps ErrTooLarge. The zero value of each field
// means its Default constant.
type Limits struct {
	// MaxBulkLength bounds the bytes of one bulk string, bulk error or
	// verbatim string.
	MaxBulkLength int
	// MaxAggregateLength bounds the elements of one array, set, push, map
	// or attribute; a map or attribute counts 2 per pair.
	MaxAggregateLength int
	// MaxTotalElements bounds the elements of one reply, at all levels and
	// attributes included. Zero means 4 × the effective MaxAggregateLength.
	MaxTotalElements int
	// MaxDepth bounds how deeply aggregates nest: 1 allows an array of
	// scalars but not an array of arrays.
	MaxDepth int
	// MaxLineLength bounds the text of a simple string, error, big number,
	// or double (whose text is further capped at 326 bytes).
	MaxLineLength int
}

// Validate returns an error when a field is negative or above its hard
// maximum.
func (l Limits) Validate() error {
	fields := [...]struct {
		name         string
		value, limit int
	}{
		{"MaxBulkLength", l.MaxBulkLength, HardMaxBulkLength},
		{"MaxAggregateLength", l.MaxAggregateLength, HardMaxAggregateLength},
		{"MaxTotalElements", l.MaxTotalElements, HardMaxTotalElements},
		{"MaxDepth", l.MaxDepth, HardMaxDepth},
		{"MaxLineLength", l.MaxLineLength, HardMaxLineLength},
	}
	for _, field := range fields {
		if field.value < 0 {
			return errors.New("resp: limits: " + field.name + " is negative")
		}
		if field.value > field.limit {
			return errors.New("resp: limits: " + field.name + " " + strconv.Itoa(field.value) +
				" exceeds the hard maximum " + strconv.Itoa(field.limit))
		}
	}
	return nil
}

// withDefaults returns l with zero or negative fields set to their defaults
// and fields above their hard maximum lowered to it.
func (l Limits) withDefaults() Limits {
	l.MaxBulkLength = clampLimit(l.MaxBulkLength, DefaultMaxBulkLength, HardMaxBulkLength)
	l.MaxAggregateLength = clampLimit(l.MaxAggregateLength, DefaultMaxAggregateLength, HardMaxAggregateLength)
	l.MaxTotalElements = clampLimit(l.MaxTotalElements, 4*l.MaxAggregateLength, HardMaxTotalElements)
	l.MaxDepth = clampLimit(l.MaxDepth, DefaultMaxDepth, HardMaxDepth)
	l.MaxLineLength = clampLimit(l.MaxLineLength, DefaultMaxLineLength, HardMaxLineLength)
	return l
}

// clampLimit returns value, or fallback when value is not positive, never
// more than hardMax.
func clampLimit(value, fallback, hardMax int) int {
	if value <= 0 {
		value = fallback
	}
	return min(value, hardMax)
}
