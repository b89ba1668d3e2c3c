// Package liveness is the hold's room of the lock package: whether a
// hold is still alive, apart from the lock that took it.
//
// A Hold is one lock's hold: its token, validity, generation and Done
// channel. Ends signals each hold's end by one timer for all holds;
// Renewer schedules the renewals and hands the batches that came due to
// the lock package, which sends them; Registry lists the holds that a
// closing client ends; Watcher arms the renewed holds' keys for key
// tracking, and renews a hold whose keys changed from outside. The room
// calls back into the lock through Lock and WatchedLock.
//
// # Concurrency
//
// One kind of synchronisation: mutexes. Each Hold has its own, which
// guards its fields; Ends, Renewer, Registry and Watcher each have one,
// taken inside a Hold's where both are held. Their goroutines are
// counted by wait groups, which Close waits for.
//
// # Errors
//
// The room returns no errors: the lock package says why a hold ended.
package liveness
