//go:build !chaos

package safety_test

// fullChaos is set by the build tag chaos, which runs the full TestChaos.
const fullChaos = false
