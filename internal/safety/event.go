package safety

// Kind names what an Event reports.
type Kind string

// The kinds of events. A worker reports the steps of one hold in this
// order: KindAcquireCall, then KindAcquireOK (or KindAcquireFail,
// KindAcquireInfo), KindEnter, KindRead, KindWriteOK (or KindWriteRejected,
// KindWriteInfo), KindExit, KindReleaseCall and KindReleaseOK (or
// KindReleaseLost, KindReleaseError). KindExtendCall and its results, and
// KindLost, may come between KindEnter and KindExit.
const (
	// KindAcquireCall: the worker is about to call Lock (or TryLock, as
	// What says) for Hold, a name it picks for the hold it may get. At is
	// the worker's clock before the call and TTL the lock's TTL.
	KindAcquireCall Kind = "acq_call"
	// KindAcquireOK: Lock returned a hold. Hold, Token, Fence and Deadline
	// describe it; At is the worker's clock when Lock returned.
	KindAcquireOK Kind = "acq_ok"
	// KindAcquireFail: Lock failed; the worker does not hold the lock.
	KindAcquireFail Kind = "acq_fail"
	// KindAcquireInfo: Lock ended with an unknown outcome (its context
	// ended); the worker does not claim the lock.
	KindAcquireInfo Kind = "acq_info"
	// KindEnter: the hold enters the critical section; Deadline is its
	// claimed validity.
	KindEnter Kind = "enter"
	// KindRead: the holder read the resource.
	KindRead Kind = "read"
	// KindWriteOK: the resource applied the holder's fenced write of
	// Element with Fence.
	KindWriteOK Kind = "write_ok"
	// KindWriteRejected: the resource refused the write; Newest is the
	// newer fence it had applied.
	KindWriteRejected Kind = "write_rej"
	// KindWriteInfo: the write's outcome is unknown (a timeout).
	KindWriteInfo Kind = "write_info"
	// KindExtendCall: the holder is about to call Extend. At is its clock
	// before the call and Deadline its validity then.
	KindExtendCall Kind = "ext_call"
	// KindExtendOK: Extend succeeded; Deadline is the new validity.
	KindExtendOK Kind = "ext_ok"
	// KindExtendFail: Extend failed.
	KindExtendFail Kind = "ext_fail"
	// KindLost: the holder saw Done closed inside the critical section
	// and left it.
	KindLost Kind = "lost"
	// KindDone: after a write, the holder waited for Done; Err is empty
	// when Done was closed in time.
	KindDone Kind = "done"
	// KindExit: the hold leaves the critical section; Deadline is its
	// validity then (extensions included).
	KindExit Kind = "exit"
	// KindReleaseCall: the holder is about to call Unlock; At is its
	// clock before the call.
	KindReleaseCall Kind = "rel_call"
	// KindReleaseOK: Unlock confirmed the release.
	KindReleaseOK Kind = "rel_ok"
	// KindReleaseLost: Unlock reported the hold lost.
	KindReleaseLost Kind = "rel_lost"
	// KindReleaseError: Unlock failed otherwise.
	KindReleaseError Kind = "rel_err"
	// KindReleaseInfo: Unlock was ended by its context (see EndedBy): the
	// release's outcome is unknown, and the hold's keys may live on the
	// nodes until its validity, Deadline, ends.
	KindReleaseInfo Kind = "rel_info"
	// KindNemesis: a fault starts. What describes it; Worker names the
	// paused process for a client pause, Node the node when there is one.
	KindNemesis Kind = "nemesis"
	// KindHeal: the fault described by What ends.
	KindHeal Kind = "heal"
	// KindPhase: the run enters the phase in What.
	KindPhase Kind = "phase"
	// KindCanaryStart and KindCanaryEnd bracket a documented-unsafe
	// scenario named by What: findings between them on the scenario's
	// Key (on every key when KindCanaryStart has none) are expected.
	KindCanaryStart Kind = "canary_start"
	KindCanaryEnd   Kind = "canary_end"
	// KindWipe: a node lost its data (What names it); fence regressions
	// after it are a documented limitation.
	KindWipe Kind = "wipe"
	// KindProbe: a liveness probe acquired Key after Latency nanoseconds,
	// or failed with Err.
	KindProbe Kind = "probe"
	// KindPoll asks for the current phase. It is acknowledged and not
	// kept.
	KindPoll Kind = "poll"
)

// Event is one line of a history.
type Event struct {
	// T is the recorder's stamp: CLOCK_MONOTONIC nanoseconds at receipt.
	// The order of a history is the order of T.
	T int64 `json:"t"`
	// Kind says what happened.
	Kind Kind `json:"ev"`
	// Worker names the worker, "PROCESS.GOROUTINE", for example "p3.g1"
	// or "local1.g2"; a nemesis event that pauses a process names the
	// process alone.
	Worker string `json:"w,omitempty"`
	// Key is the lock's key.
	Key string `json:"k,omitempty"`
	// Hold names one hold of a worker, unique in the run.
	Hold string `json:"h,omitempty"`
	// Token is the hold's token.
	Token string `json:"tok,omitempty"`
	// Fence is the hold's fencing token.
	Fence int64 `json:"fence,omitempty"`
	// Deadline is the end of the hold's validity in CLOCK_MONOTONIC
	// nanoseconds (see Deadline).
	Deadline int64 `json:"deadline,omitempty"`
	// At is the worker's own CLOCK_MONOTONIC reading for the step, taken
	// next to the library call; C4 compares it with deadlines.
	At int64 `json:"at,omitempty"`
	// Started is, on KindExtendOK, the worker's CLOCK_MONOTONIC reading
	// right before it called Extend: after KindExtendCall was stamped,
	// which for a worker process takes a round trip to the recorder. C4
	// bounds the new validity from it.
	Started int64 `json:"started,omitempty"`
	// Element is what a fenced write appends to the resource.
	Element string `json:"el,omitempty"`
	// Newest is the resource's newest fence when it refused a write.
	Newest int64 `json:"newest,omitempty"`
	// TTL is the hold's TTL in nanoseconds, on KindAcquireCall.
	TTL int64 `json:"ttl,omitempty"`
	// Latency is a duration in nanoseconds (a probe's wait).
	Latency int64 `json:"lat,omitempty"`
	// Node names the node a nemesis event is about.
	Node string `json:"node,omitempty"`
	// What describes a nemesis, phase or canary event, and names the
	// method of a KindAcquireCall: "Lock" or "TryLock".
	What string `json:"what,omitempty"`
	// Err is the error text of a failed step.
	Err string `json:"err,omitempty"`
	// Context describes, on KindAcquireCall, KindExtendCall and
	// KindReleaseCall, the short context of an impatient caller: "deadline
	// 640µs", "cancel after 1.2ms" or "cancel at once". It is empty when
	// the call has the worker's usual context, of a second or more.
	Context string `json:"ctx,omitempty"`
	// EndedBy is, on the result of a call with a short Context, the
	// context's error when the context ended the call: the call failed
	// after its context ended, and its error is a context error or says
	// that it stopped waiting for a node. The call's error should then
	// match it, as ContextErr tells.
	EndedBy string `json:"ended_by,omitempty"`
	// ContextErr is, on the result of a call with a short Context, the
	// context error that the call's error matches through errors.Is, as
	// text: "context deadline exceeded" or "context canceled".
	ContextErr string `json:"ctx_err,omitempty"`
}

// Phase is the stage of a run, which workers learn from every
// acknowledgement.
type Phase string

// The phases of a run.
const (
	// PhaseRun: workers lock, work and unlock. Phase A of the chaos run
	// uses it, and so do runs without phases.
	PhaseRun Phase = "run"
	// PhaseWarmup: as PhaseRun, but impatient workers make every call with
	// their usual context: the warm-up of the chaos run measures the
	// latency of acquisitions without faults (C5 c).
	PhaseWarmup Phase = "warmup"
	// PhasePause: as PhaseRun, but the workers of other processes keep
	// working without looking at Done for a while inside the critical
	// section, so that a pause lands there (phase B).
	PhasePause Phase = "pause"
	// PhaseIdle: workers take no new locks.
	PhaseIdle Phase = "idle"
	// PhaseStop: workers finish the hold they have and return.
	PhaseStop Phase = "stop"
)

// Ack is the recorder's answer to an event.
type Ack struct {
	// T is the event's stamp.
	T int64 `json:"t"`
	// Phase is the run's phase when the event was stamped.
	Phase Phase `json:"phase"`
}

// Sink takes the events of workers. Recorder and RemoteSink implement it.
type Sink interface {
	// Record stamps e, adds it to the history unless it is a KindPoll, and
	// returns the stamp and the run's phase.
	Record(e Event) (Ack, error)
}
