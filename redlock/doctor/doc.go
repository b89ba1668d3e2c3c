// Package doctor checks that Redis servers can carry Redlock safely, and
// says what to fix. Run examines every node at once: that it answers, is a
// master without replicas, is not in cluster mode, is a server distinct
// from the other addresses (run_id), persists every write, never evicts
// keys, has run for longer than the longest TTL, keeps a clock close to
// this host's, can notify waiters of releases, and lets the configured
// user run every command a Client sends, on its lock keys, their fencing
// counters and their release channels (the minimal ACL rule of
// docs/acl.md): the permissions check names what the user lacks and the ACL
// SETUSER rule that grants it, and needs no administrative right, since
// it runs the commands themselves on a probe key that no lock uses
// (Options.KeyPrefix places it among the lock keys). Each Finding is
// SeverityOK, SeverityWarn (works, but a crash, memory pressure or a clock
// step could break mutual exclusion, or waiters are not woken by releases)
// or SeverityFail (cannot carry Redlock as configured).
//
// A service runs the checks at start-up with the addresses and the
// redlock.Options it gives redlock.New:
//
//	reports, err := doctor.Run(ctx, addresses, options, doctor.Options{LongestTTL: 5 * time.Minute})
//	if err != nil { … }
//	for _, report := range reports {
//		if report.Severity() == doctor.SeverityFail { … refuse to start, or log the findings }
//	}
//
// The command "redlock doctor" prints the same reports.
//
// # Concurrency
//
// Run is safe for concurrent use. It owns the connections and goroutines
// it starts, one connection per node for the commands and one for the
// notifications check, and closes them before it returns. Runs at once
// do not disturb each other: each probes a key of its own. Its context
// bounds how long it waits, nothing else.
//
// # Errors
//
// Run returns an error matching redlock.ErrInvalidOptions for invalid
// options, no addresses, or an address that cannot be parsed, and one
// matching the context's error when the context ended before the checks
// did, with the reports found so far. The state of the nodes is never an
// error of Run: an unreachable node, a refused command or a dangerous
// setting is a Finding of the node's NodeReport.
package doctor
