//go:build race

package safety_test

// raceEnabled is set when the tests run under the race detector, which
// makes everything several times slower: the runs use longer TTLs.
const raceEnabled = true
