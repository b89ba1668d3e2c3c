package safety

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// The names of the checks, as Finding.Check gives them.
const (
	CheckExclusion = "C1"
	CheckFences    = "C2"
	CheckResource  = "C3"
	CheckTruth     = "C4"
	CheckLiveness  = "C5"
	CheckHygiene   = "C6"
	CheckSemaphore = "C7"
)

// Reasons a finding is expected, as Finding.Expected gives them.
const (
	// ExpectedCanary: the finding falls within a documented-unsafe
	// scenario (between KindCanaryStart and KindCanaryEnd) and is about
	// its key.
	ExpectedCanary = "canary"
	// ExpectedPaused: the process of the hold was paused meanwhile.
	ExpectedPaused = "paused"
	// ExpectedLost: the holder was told its hold was lost.
	ExpectedLost = "lost"
	// ExpectedWipe: a node lost its data in between, and its fencing
	// counters with it.
	ExpectedWipe = "wipe"
)

// Defaults of Options.
const (
	// DefaultDriftFactor is redlock's default drift factor.
	DefaultDriftFactor = 0.01
	// DefaultTolerance is the slack of the comparisons of C4.
	DefaultTolerance = 2 * time.Millisecond
	// DefaultLivenessWindow is the window of C5(b).
	DefaultLivenessWindow = 5 * time.Second
)

// driftConstant is the fixed part of redlock's drift allowance.
const driftConstant = 2 * time.Millisecond

// Options configures Check. The zero value checks C1–C4 with the
// defaults.
type Options struct {
	// DriftFactor is the clients' drift factor, for the bounds of C4.
	// Zero means DefaultDriftFactor.
	DriftFactor float64
	// Tolerance is the slack of C4's comparisons, for the time between a
	// worker's clock reading and the library's. Zero means
	// DefaultTolerance.
	Tolerance time.Duration
	// Resource is the final content of the fenced resource: for each lock
	// key, the elements of its log in order. Nil skips C3's log checks.
	Resource map[string][]string
	// LivenessKeys, LivenessFrom and LivenessTo ask C5(b) to find an
	// acquisition of every key in every LivenessWindow of the span
	// [LivenessFrom, LivenessTo) (stamps). No keys skip it.
	LivenessKeys             []string
	LivenessFrom, LivenessTo int64
	// LivenessWindow is the window of C5(b). Zero means
	// DefaultLivenessWindow.
	LivenessWindow time.Duration
	// ProbeLimit is the longest a KindProbe may have waited (C5(a)). Zero
	// means that probes are checked only for errors.
	ProbeLimit time.Duration
	// Semaphores are the limits of the semaphores whose permits the
	// workers hold, by name (C7): the holds of the keys NAME:permit:SLOT.
	Semaphores map[string]int
	// ReadWrite names the read/write locks whose readers hold the key
	// NAME:readers (see ReadersKeySuffix): C1 lets them overlap each other,
	// never a writer of NAME.
	ReadWrite map[string]bool
	// RequiredFaults names faults (see FaultName) that the run scheduled:
	// each must have begun and healed at least once, or Report.Err fails
	// the run, which would otherwise pass without them. None by default.
	RequiredFaults []string
}

// Finding is one thing a check found.
type Finding struct {
	// Check is the check's name, CheckExclusion to CheckSemaphore.
	Check string
	// T is the stamp at which it was found.
	T int64
	// Key is the lock's key; Hold and Other the holds involved.
	Key, Hold, Other string
	// Text says what was found.
	Text string
	// Expected is why the run expects this finding (ExpectedCanary,
	// ExpectedPaused, ExpectedLost, ExpectedWipe), or "" when it fails
	// the run. For a finding within a canary, Canary names the scenario.
	Expected string
	Canary   string
}

// String returns the finding on one line.
func (f Finding) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s t=%d", f.Check, f.T)
	if f.Key != "" {
		fmt.Fprintf(&b, " key=%s", f.Key)
	}
	if f.Hold != "" {
		fmt.Fprintf(&b, " hold=%s", f.Hold)
	}
	if f.Other != "" {
		fmt.Fprintf(&b, " other=%s", f.Other)
	}
	fmt.Fprintf(&b, ": %s", f.Text)
	if f.Expected != "" {
		fmt.Fprintf(&b, " (expected: %s %s)", f.Expected, f.Canary)
	}
	return b.String()
}

// Report is what Check found in a history.
type Report struct {
	// Holds counts the successful acquisitions.
	Holds int
	// Violations are C1's VIOLATIONs: two holds inside at once while both
	// claimed to be valid.
	Violations []Finding
	// Stale are C1's STALE holds: inside after their validity ended when
	// another hold entered.
	Stale []Finding
	// Fences, Resource, Truth, Liveness and Semaphores are the findings of
	// C2, C3, C4, C5 and C7.
	Fences, Resource, Truth, Liveness, Semaphores []Finding
	// WritesRejected counts the writes the resource refused, and
	// StaleWritesRejected those among them made by STALE holds.
	WritesRejected, StaleWritesRejected int
	// CanaryViolations counts the violations found in each canary
	// scenario, by the name of the scenario.
	CanaryViolations map[string]int
	// Faults counts the faults that began and healed, by name (see
	// FaultName); MissingFaults lists those of Options.RequiredFaults
	// that never did.
	Faults        map[string]int
	MissingFaults []string
}

// Err joins the findings that fail the run, and the required faults that
// never ran, or returns nil when there are none. It names at most 20
// findings.
func (r *Report) Err() error {
	var errs []error
	if err := r.missingFaultsError(); err != nil {
		errs = append(errs, err)
	}
	count := 0
	for _, list := range [][]Finding{r.Violations, r.Stale, r.Fences, r.Resource, r.Truth, r.Liveness, r.Semaphores} {
		for _, f := range list {
			if f.Expected != "" {
				continue
			}
			count++
			if count <= 20 {
				errs = append(errs, errors.New(f.String()))
			}
		}
	}
	if count > 20 {
		errs = append(errs, fmt.Errorf("and %d more findings", count-20))
	}
	return errors.Join(errs...)
}

// Unexpected returns the findings of list that fail the run.
func Unexpected(list []Finding) []Finding {
	var out []Finding
	for _, f := range list {
		if f.Expected == "" {
			out = append(out, f)
		}
	}
	return out
}

// Check runs C1–C5 and C7 on history, which must be in stamp order as a
// Recorder keeps it, and counts the faults injected.
func Check(history []Event, options Options) *Report {
	if options.DriftFactor == 0 {
		options.DriftFactor = DefaultDriftFactor
	}
	if options.Tolerance == 0 {
		options.Tolerance = DefaultTolerance
	}
	if options.LivenessWindow == 0 {
		options.LivenessWindow = DefaultLivenessWindow
	}
	ix := index(history)
	report := &Report{Holds: ix.acquired, CanaryViolations: make(map[string]int), Faults: make(map[string]int)}
	for _, c := range ix.canaries {
		report.CanaryViolations[c.name] += 0
	}
	checkExclusion(history, ix, options, report)
	checkFences(history, ix, report)
	checkResource(history, ix, options, report)
	checkTruth(ix, options, report)
	checkLiveness(history, options, report)
	checkSemaphores(history, ix, options, report)
	countFaults(history, options, report)
	return report
}
