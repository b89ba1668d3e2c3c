// Package safety records what lock holders did and checks it: the history
// recorder and the checks C1–C6 of RELIABILITY.md §8, with the chaos run of
// §8.4 and the deterministic scenarios of §8.5 in its tests. It is imported
// by tests only.
//
// A Recorder keeps one history for a whole run. It is the run's single
// linearization point: it stamps every event on receipt with the
// system-wide monotonic clock (CLOCK_MONOTONIC, see Now), under one mutex,
// so the order of the history is the order of the stamps. Workers in the
// test process call Recorder.Record directly; workers in other processes
// (the test binary run again, so that the test can stop them with
// SIGSTOP) send their events as JSON lines over a unix socket with a
// RemoteSink, and wait for the stamp to come back before they go on. An
// event is therefore stamped after the step it reports began and before
// the worker takes its next step, whichever process it comes from.
//
// A holder reports the end of its validity on the same clock: Deadline
// turns the monotonic time.Time of redlock.Mutex.Until into a reading of
// CLOCK_MONOTONIC (§8.1).
//
// Check runs the checks on a history:
//
//   - C1, mutual exclusion of claims: a sweep over the enter and exit
//     events of each key. A hold that enters while another is inside is a
//     VIOLATION when both claim to be valid at that moment, and marks the
//     hold whose validity had ended as STALE.
//   - C2, fences: a hold that returned before another was asked for has a
//     smaller fence, and no two holds of a key share one.
//   - C3, resource integrity: every acknowledged fenced write is in the
//     resource's log exactly once, no refused write is, and the fences in
//     the log never decrease.
//   - C4, truthful results: acquisitions, extensions and releases that
//     reported success did so within the validity they claimed.
//   - C5, liveness: locks are acquired in every window of a run while a
//     quorum is up, and soon after the faults heal.
//   - C6, hygiene: Goroutines, Descriptors and LockKeys compare a process
//     and the nodes with a baseline after the clients closed.
//
// A check that cannot fail proves nothing: the tests feed every check a
// history built to break it.
//
// # Concurrency
//
// A Recorder is safe for concurrent use; its Serve goroutines belong to it
// and Close waits for them. A RemoteSink is safe for concurrent use: its
// events are sent and acknowledged one at a time. Check and the functions
// on histories do not keep their arguments and may run concurrently on
// distinct histories.
//
// # Errors
//
// A Report lists what each check found; Report.Err joins the findings that
// fail a run into one error, and is nil when there are none. Findings that
// a run expects (the violations of a canary scenario, the stale holds of
// paused processes, the fence regressions that follow a node losing its
// data) are counted, not failed. The recorder reports transport failures
// of a RemoteSink as errors from Dial and Record; a RemoteSink that lost its
// connection keeps failing.
package safety
