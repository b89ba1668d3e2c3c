package decimal

import _ "embed"

// Lua defines the Lua functions less(a, b), which compares two decimal
// integers without sign or leading zeros, and decimal(text, largest),
// which tells whether text is such an integer from 0 to largest. A script
// that compares fencing counters or fences begins with it: one definition
// for the scripts of redlock and of fencedstore.
//
//go:embed decimal.lua
var Lua string
