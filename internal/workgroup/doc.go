// Package workgroup runs the goroutines of a test and gathers the errors
// they report. It is imported by tests only.
//
// A test must not call t.Fatal from a goroutine it started, and errors
// sent on channels or appended to guarded slices make every test write the
// same gathering code again. Instead, each goroutine returns its error,
// and the test checks them all once the goroutines are done:
//
//	var workers workgroup.Group
//	for range 8 {
//		workers.Go(func() error { return work() })
//	}
//	require.NoError(t, workers.Wait())
//
// The package imports only the standard library, so that the tests of any
// package of the repository can use it.
//
// # Concurrency
//
// A Group is safe for concurrent use. As with sync.WaitGroup, a call of
// Go must happen before the Wait that is to wait for it.
//
// # Errors
//
// Wait returns the errors of the functions joined with errors.Join, in the
// order the functions returned them, so that errors.Is and errors.As see
// each of them.
package workgroup
