// Package slogobserver logs what a redlock.Client does through a
// *slog.Logger: set an Observer made by New as redlock.Options.Observer,
// alone or with others (redlock.Observers).
//
// Each event is logged at the level a service wants: a lost hold, a
// release not confirmed on a quorum and a failed node (with its address)
// at Warn; a failed extension and a quarantined node's vote at Info;
// acquisitions, releases and extensions at Debug. docs/observability.md
// lists the messages and their attributes.
//
// An event below the logger's level costs one call to its handler's
// Enabled method: it allocates nothing, and an uncontended Lock+Unlock
// cycle logged at Info stays free of allocations.
//
// # Concurrency
//
// An Observer is safe for concurrent use, as the Logger's handler must
// be. It logs on the goroutine of the operation, so the handler should be
// fast: a slow handler delays the Client's operations and renewals.
//
// # Errors
//
// An Observer returns no errors; the error of an event is logged under the
// key "error".
package slogobserver
