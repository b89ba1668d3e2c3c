package decimal

import _ "embed"

// Lua defines less(a, b), comparing two decimal integers without sign or
// leading zeros, and decimal(text, largest), checking one is in range.
//
//go:embed decimal.lua
var Lua string
