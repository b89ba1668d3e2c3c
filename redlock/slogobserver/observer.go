package slogobserver

import (
	"context"
	"log/slog"

	"github.com/lockmux/lockmux/redlock"
)

// Observer is a redlock.Observer that logs each event through a Logger.
// It is safe for concurrent use.
type Observer struct {
	logger *slog.Logger
}

var _ redlock.Observer = (*Observer)(nil)

// New returns an Observer that logs through logger, or through
// slog.Default() as it is when New is called if logger is nil. Give it a
// logger made with With or WithGroup to add attributes to every record.
func New(logger *slog.Logger) *Observer {
	if logger == nil {
		logger = slog.Default()
	}
	return &Observer{logger: logger}
}

// The attribute keys of the records.
const (
	keyKey       = "key"
	keyAttempt   = "attempt"
	keyGot       = "got"
	keyNeed      = "need"
	keyElapsed   = "elapsed"
	keyValidity  = "validity"
	keyHeld      = "held"
	keyAutomatic = "automatic"
	keyOperation = "operation"
	keyNode      = "node"
	keyOutcome   = "outcome"
	keyLatency   = "latency"
	keyError     = "error"
)

// OnAcquire logs an acquisition attempt at Debug: "lock acquired" or
// "lock not acquired" (a lock held elsewhere is the usual cause, and each
// failed node is logged apart).
func (o *Observer) OnAcquire(event redlock.AcquireEvent) {
	ctx := context.Background()
	if !o.logger.Enabled(ctx, slog.LevelDebug) {
		return
	}
	if event.Err == nil {
		o.logger.LogAttrs(ctx, slog.LevelDebug, "lock acquired", slog.String(keyKey, event.Key),
			slog.Int(keyAttempt, event.Attempt), slog.Int(keyGot, event.Got), slog.Int(keyNeed, event.Need),
			slog.Duration(keyElapsed, event.Elapsed), slog.Duration(keyValidity, event.Validity))
		return
	}
	o.logger.LogAttrs(ctx, slog.LevelDebug, "lock not acquired", slog.String(keyKey, event.Key),
		slog.Int(keyAttempt, event.Attempt), slog.Int(keyGot, event.Got), slog.Int(keyNeed, event.Need),
		slog.Duration(keyElapsed, event.Elapsed), slog.Any(keyError, event.Err))
}

// OnRelease logs a release: "lock released" at Debug, or "lock release
// failed" at Warn when the release was not confirmed on a quorum (the
// hold was gone already, or nodes failed).
func (o *Observer) OnRelease(event redlock.ReleaseEvent) {
	ctx := context.Background()
	if event.Err == nil {
		if o.logger.Enabled(ctx, slog.LevelDebug) {
			o.logger.LogAttrs(ctx, slog.LevelDebug, "lock released", slog.String(keyKey, event.Key),
				slog.Int(keyGot, event.Got), slog.Int(keyNeed, event.Need),
				slog.Duration(keyElapsed, event.Elapsed), slog.Duration(keyHeld, event.Held))
		}
		return
	}
	if o.logger.Enabled(ctx, slog.LevelWarn) {
		o.logger.LogAttrs(ctx, slog.LevelWarn, "lock release failed", slog.String(keyKey, event.Key),
			slog.Int(keyGot, event.Got), slog.Int(keyNeed, event.Need),
			slog.Duration(keyElapsed, event.Elapsed), slog.Duration(keyHeld, event.Held), slog.Any(keyError, event.Err))
	}
}

// OnExtend logs an extension: "lock extended" at Debug, or "lock
// extension failed" at Info. A failed extension that ends the hold is
// also logged by OnLost.
func (o *Observer) OnExtend(event redlock.ExtendEvent) {
	ctx := context.Background()
	if event.Err == nil {
		if o.logger.Enabled(ctx, slog.LevelDebug) {
			o.logger.LogAttrs(ctx, slog.LevelDebug, "lock extended", slog.String(keyKey, event.Key),
				slog.Bool(keyAutomatic, event.Automatic), slog.Int(keyGot, event.Got), slog.Int(keyNeed, event.Need),
				slog.Duration(keyElapsed, event.Elapsed), slog.Duration(keyValidity, event.Validity))
		}
		return
	}
	if o.logger.Enabled(ctx, slog.LevelInfo) {
		o.logger.LogAttrs(ctx, slog.LevelInfo, "lock extension failed", slog.String(keyKey, event.Key),
			slog.Bool(keyAutomatic, event.Automatic), slog.Int(keyGot, event.Got), slog.Int(keyNeed, event.Need),
			slog.Duration(keyElapsed, event.Elapsed), slog.Any(keyError, event.Err))
	}
}

// OnLost logs "lock lost" at Warn: a hold ended before its release, and
// the work it guarded may overlap another holder's.
func (o *Observer) OnLost(event redlock.LostEvent) {
	ctx := context.Background()
	if o.logger.Enabled(ctx, slog.LevelWarn) {
		o.logger.LogAttrs(ctx, slog.LevelWarn, "lock lost", slog.String(keyKey, event.Key),
			slog.Duration(keyHeld, event.Held), slog.Any(keyError, event.Err))
	}
}

// OnNodeError logs "lock node error" with the node's address under the
// key "node": at Warn for an error, a timeout or a command not sent, at
// Info for the vote of a quarantined node, which answered.
func (o *Observer) OnNodeError(event redlock.NodeErrorEvent) {
	ctx := context.Background()
	level := slog.LevelWarn
	if event.Outcome == redlock.OutcomeQuarantined {
		level = slog.LevelInfo
	}
	if o.logger.Enabled(ctx, level) {
		o.logger.LogAttrs(ctx, level, "lock node error", slog.String(keyNode, event.Address),
			slog.String(keyKey, event.Key), slog.String(keyOperation, event.Operation.String()),
			slog.String(keyOutcome, event.Outcome.String()), slog.Duration(keyLatency, event.Latency),
			slog.Any(keyError, event.Err))
	}
}
