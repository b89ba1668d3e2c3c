package resp

import (
	"math"
	"strings"
	"testing"
	"testing/iotest"
)

// doubleSpellings are doubles as Redis servers write them, with the value
// each stands for. Redis 7.0 writes a NaN and a finite double with printf's
// "%.17g", which spells NaN "nan" or "-nan" after its sign bit (glibc,
// musl): `EVAL "return {double = 0/0}" 0` gives "-nan" on x86-64. Redis 7.2
// and later write "nan" whatever the sign, and finite doubles with their own
// shortest-digits formatter, whose exponent has no leading zero. GEOPOS and
// the long doubles of modules use "%.17Lf" without its trailing zeros.
var doubleSpellings = []struct {
	name string
	text string
	want float64
}{
	{name: "nan", text: "nan", want: math.NaN()},
	{name: "negative nan", text: "-nan", want: math.Copysign(math.NaN(), -1)},
	{name: "inf", text: "inf", want: math.Inf(1)},
	{name: "negative inf", text: "-inf", want: math.Inf(-1)},
	{name: "zero", text: "0", want: 0},
	{name: "negative zero", text: "-0", want: math.Copysign(0, -1)},
	{name: "integral", text: "3", want: 3},
	{name: "%.17g", text: "3.141", want: 3.141},
	{name: "%.17g tenth", text: "0.10000000000000001", want: 0.1},
	{name: "%.17g negative exponent", text: "1.0000000000000001e-05", want: 1e-5},
	{name: "%.17g exponent", text: "1.0000000000000001e+300", want: 1e300},
	{name: "%.17g two-digit exponent", text: "1.2345678901234568e+20", want: 1.2345678901234568e20},
	{name: "%.17g largest", text: "1.7976931348623157e+308", want: math.MaxFloat64},
	{name: "%.17g negative largest", text: "-1.7976931348623157e+308", want: -math.MaxFloat64},
	{name: "%.17g smallest", text: "4.9406564584124654e-324", want: math.SmallestNonzeroFloat64},
	{name: "%.17g 1e21", text: "1e+21", want: 1e21},
	{name: "fpconv negative exponent", text: "1.5e-7", want: 1.5e-7},
	{name: "fpconv small", text: "0.000015", want: 1.5e-5},
	{name: "fpconv integer", text: "123456789012345680000", want: 1.2345678901234568e20},
	{name: "fpconv three-digit exponent", text: "-1e-300", want: -1e-300},
	{name: "%.17Lf geo", text: "13.36138933897018433", want: 13.36138933897018433},
}

// sameDouble reports whether got is want, NaN's sign and zero's sign
// included.
func sameDouble(got, want float64) bool {
	if math.IsNaN(want) {
		return math.IsNaN(got) && math.Signbit(got) == math.Signbit(want)
	}
	return got == want && math.Signbit(got) == math.Signbit(want)
}

// TestDoubleSpellings parses each spelling alone and inside each aggregate,
// through Parse (whose fast path declines doubles), the general parser, and
// a Reader fed whole and byte by byte, and then reads the reply after it:
// no double a server writes poisons a Reader.
func TestDoubleSpellings(t *testing.T) {
	for _, tc := range doubleSpellings {
		frame := "," + tc.text + "\r\n"
		// find returns the double in v, a value of type outer.
		frames := []struct {
			name  string
			input string
			outer Type
			find  func(v Value) Value
		}{
			{name: "alone", input: frame, outer: TypeDouble, find: func(v Value) Value { return v }},
			{name: "in an array", input: "*2\r\n:1\r\n" + frame, outer: TypeArray, find: func(v Value) Value { return v.Elems[1] }},
			{name: "map value", input: "%1\r\n$5\r\nscore\r\n" + frame, outer: TypeMap, find: func(v Value) Value { return v.Elems[1] }},
			{name: "map key", input: "%1\r\n" + frame + ":1\r\n", outer: TypeMap, find: func(v Value) Value { return v.Elems[0] }},
			{name: "in a set", input: "~1\r\n" + frame, outer: TypeSet, find: func(v Value) Value { return v.Elems[0] }},
			{name: "in a push", input: ">2\r\n$7\r\nmessage\r\n" + frame, outer: TypePush, find: func(v Value) Value { return v.Elems[1] }},
			{name: "nested", input: "*1\r\n*2\r\n$1\r\na\r\n" + frame, outer: TypeArray, find: func(v Value) Value { return v.Elems[0].Elems[1] }},
			{name: "in an attribute", input: "|1\r\n+score\r\n" + frame + frame, outer: TypeDouble, find: func(v Value) Value { return v }},
		}
		for _, f := range frames {
			t.Run(tc.name+"/"+f.name, func(t *testing.T) {
				check := func(how string, v Value) {
					t.Helper()
					if v.Type != f.outer {
						t.Errorf("%s: %q gives %v, want a %v", how, f.input, v, f.outer)
						return
					}
					got := f.find(v)
					if got.Type != TypeDouble || !sameDouble(got.Float, tc.want) || string(got.Str) != tc.text {
						t.Errorf("%s: %q gives %v (%q, bits %#x), want the double %v (%q, bits %#x)",
							how, f.input, got, got.Str, math.Float64bits(got.Float), tc.want, tc.text, math.Float64bits(tc.want))
					}
				}

				v, n, err := Parse([]byte(f.input), Limits{})
				if err != nil || n != len(f.input) {
					t.Fatalf("Parse(%q) = %v, %d, %v; want a value of %d bytes", f.input, v, n, err, len(f.input))
				}
				check("Parse", v)

				p := parser{limits: Limits{}.withDefaults()}
				n, err = p.parse([]byte(f.input), &v, false)
				if err != nil || n != len(f.input) {
					t.Fatalf("parse(%q) = %v, %d, %v; want a value of %d bytes", f.input, v, n, err, len(f.input))
				}
				check("the general parser", v)

				stream := f.input + "+PONG\r\n"
				readers := []struct {
					how    string
					reader *Reader
				}{
					{how: "a Reader", reader: NewReader(strings.NewReader(stream), Limits{})},
					{how: "a Reader byte by byte", reader: NewReader(iotest.OneByteReader(strings.NewReader(stream)), Limits{})},
				}
				for _, r := range readers {
					how, reader := r.how, r.reader
					v, err := reader.ReadReply()
					if err != nil {
						t.Fatalf("%s: ReadReply of %q: %v", how, f.input, err)
					}
					check(how, v)
					if next, err := reader.ReadReply(); err != nil || string(next.Str) != "PONG" {
						t.Errorf("%s: the reply after %q = %v, %v; want PONG", how, f.input, next, err)
					}
				}
			})
		}
	}
}
