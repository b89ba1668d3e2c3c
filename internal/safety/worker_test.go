//go:build linux

package safety_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/lockmux/lockmux/conn"
	"github.com/lockmux/lockmux/internal/safety"
	"github.com/lockmux/lockmux/internal/workgroup"
	"github.com/lockmux/lockmux/redlock"
	"github.com/lockmux/lockmux/resp"
)

// fencedWriteScript is the resource side of fencing (RELIABILITY.md §8.2):
// it appends the writer's element to the log only if the writer's fence
// is not older than the newest one applied. KEYS[1] keeps the newest
// fence, KEYS[2] is the log. ARGV[1] is the fence, ARGV[2] the element.
// It returns {1, fence} when applied and {0, newest} when refused.
var fencedWriteScript = conn.NewScript(`local f = tonumber(ARGV[1])
local cur = tonumber(redis.call('HGET', KEYS[1], 'fence') or '0')
if f < cur then return {0, cur} end
redis.call('HSET', KEYS[1], 'fence', ARGV[1])
redis.call('RPUSH', KEYS[2], ARGV[2])
return {1, f}`)

// resourceKey and resourceLogKey are the resource's keys for a lock key.
func resourceKey(key string) string    { return "res:" + key }
func resourceLogKey(key string) string { return "res:" + key + ":log" }

// workerConfig configures the workers of one process. A worker process
// gets it as JSON in its environment.
type workerConfig struct {
	// Name names the process: "local1", "p2". Its workers are NAME.gI.
	Name       string
	Goroutines int
	Keys       []string
	// Semaphore, when not empty, is the name of a semaphore of
	// SemaphoreLimit permits whose permits the workers hold too, as one
	// more of the things they lock.
	Semaphore      string
	SemaphoreLimit int
	// ReadWrite, when not empty, is the name of a read/write lock that
	// the workers read and write too: a reader only reads the resource.
	ReadWrite string
	// Quarantine turns redlock.Options.Quarantine on, with MaxTTL the TTL:
	// a node restarted without its data votes again only a TTL later.
	Quarantine bool
	// Fair, when not empty, is the key of a fair lock (MutexOptions.Fair)
	// that the workers lock too; its holds have no fence, and only read
	// the resource.
	Fair string
	// Election, when not empty, is the name of a redlock.Election the
	// workers campaign in too, each with its own name as the value: a
	// leadership is a hold of the key Election whose fence is its term.
	Election string
	// Addresses are the lock nodes, through this process's proxies.
	Addresses []string
	Resource  string
	TTL       time.Duration
	// NodeTimeout, RetryMin and RetryMax are the Client's options.
	NodeTimeout, RetryMin, RetryMax time.Duration
	// AcquireTimeout bounds one Lock.
	AcquireTimeout time.Duration
	// LongChance is the probability of a long critical section (1.5 s,
	// with an explicit Extend in the middle) that exercises renewal.
	LongChance float64
	// Impatient is the number of the process's goroutines, the first ones,
	// that make some of their calls with short contexts in phase A (see
	// nextContext).
	Impatient int
	// Remote is set for a worker process: in PhasePause its critical
	// section works for a while without looking at Done, so that a
	// SIGSTOP lands between the check of validity and the write.
	Remote bool
	// Socket is the recorder's unix socket, for a worker process.
	Socket string
	// Lifetime bounds the run of a worker process.
	Lifetime time.Duration
	Seed     uint64
}

// clientOptions returns the redlock options of a worker process.
func (c *workerConfig) clientOptions(observer redlock.Observer) redlock.Options {
	return redlock.Options{
		NodeTimeout:   c.NodeTimeout,
		RetryDelayMin: c.RetryMin,
		RetryDelayMax: c.RetryMax,
		Observer:      observer,
		Quarantine:    quarantineMode(c.Quarantine),
		MaxTTL:        c.TTL,
	}
}

// quarantineMode returns the Options.Quarantine that on asks for.
func quarantineMode(on bool) redlock.QuarantineMode {
	if on {
		return redlock.QuarantineOn
	}
	return redlock.QuarantineOff
}

// runWorkers runs config.Goroutines workers that lock, work and unlock
// until the recorder says PhaseStop or ctx ends. It returns the first
// error of a worker: a recorder that cannot be reached.
func runWorkers(ctx context.Context, config workerConfig, sink safety.Sink, observer redlock.Observer) error {
	client, err := redlock.New(config.Addresses, config.clientOptions(observer))
	if err != nil {
		return err
	}
	defer client.Close()
	resource, err := conn.New(config.Resource, conn.Options{Scripts: []*conn.Script{fencedWriteScript}})
	if err != nil {
		return err
	}
	defer resource.Close()
	var workers workgroup.Group
	for g := range config.Goroutines {
		w := newWorker(&config, fmt.Sprintf("%s.g%d", config.Name, g), client, resource, sink)
		w.rng = rand.New(rand.NewPCG(config.Seed, uint64(g)))
		w.impatient = g < config.Impatient
		workers.Go(func() error { return w.run(ctx) })
	}
	return workers.Wait()
}

// worker is one goroutine of lock, work, unlock: the lock-set workload of
// RELIABILITY.md §8.2. Its methods are the steps, which the canary
// scenarios also use one by one.
type worker struct {
	config   *workerConfig
	name     string
	client   *redlock.Client
	resource *conn.Conn
	sink     safety.Sink
	targets  []target // what the worker locks: a Mutex per key, and the semaphore
	rng      *rand.Rand
	phase    safety.Phase
	holds    int
	call     conn.Call
	// impatient is set for a worker that makes some of its calls with
	// short contexts in phase A.
	impatient bool
}

func newWorker(config *workerConfig, name string, client *redlock.Client, resource *conn.Conn, sink safety.Sink) *worker {
	w := &worker{config: config, name: name, client: client, resource: resource, sink: sink,
		rng: rand.New(rand.NewPCG(1, 2)), phase: safety.PhaseRun}
	options := redlock.MutexOptions{TTL: config.TTL, AutoExtend: true, Fencing: true}
	for _, key := range config.Keys {
		w.targets = append(w.targets, mutexTarget(client.NewMutex(key, options)))
	}
	if config.Semaphore != "" && config.SemaphoreLimit > 0 {
		w.targets = append(w.targets, semaphoreTarget(config.Semaphore, client.NewSemaphore(config.Semaphore, config.SemaphoreLimit, options)))
	}
	if config.ReadWrite != "" {
		rw := client.NewRWMutex(config.ReadWrite, options)
		reader := mutexTarget(rw.Reader())
		reader.unfenced = true
		w.targets = append(w.targets, mutexTarget(rw.Writer()), reader)
	}
	if config.Fair != "" {
		w.targets = append(w.targets, mutexTarget(client.NewMutex(config.Fair, redlock.MutexOptions{TTL: config.TTL, AutoExtend: true, Fencing: true, Fair: true})))
	}
	if config.Election != "" {
		w.targets = append(w.targets, electionTarget(client.NewElection(config.Election, redlock.ElectionOptions{TTL: config.TTL}), name))
	}
	return w
}

// held is what a worker holds: a Mutex's hold, or a Semaphore's permit.
type held interface {
	Key() string
	Token() string
	Fence() int64
	Until() time.Time
	Done() <-chan struct{}
	Extend(ctx context.Context) error
	Release(ctx context.Context) error
}

// mutexHeld is the hold of a Mutex.
type mutexHeld struct{ *redlock.Mutex }

func (h mutexHeld) Release(ctx context.Context) error { return h.Unlock(ctx) }

// target is what a worker acquires: a Mutex, or a Semaphore's permits.
type target struct {
	// name is the Mutex's key, or the Semaphore's name: the key of the
	// call's event; a permit's key is known once it is acquired.
	name                  string
	take, try             func(context.Context) (held, error)
	takeMethod, tryMethod string
	// unfenced is set for holds without a fence, a read/write lock's
	// readers: they only read the resource, as it could not order their
	// writes.
	unfenced bool
	// renewedOnly is set for holds that have no Extend, leaderships:
	// their renewal alone extends them.
	renewedOnly bool
}

func mutexTarget(m *redlock.Mutex) target {
	return target{name: m.Key(), takeMethod: "Lock", tryMethod: "TryLock",
		take: func(ctx context.Context) (held, error) { return mutexHeld{m}, m.Lock(ctx) },
		try:  func(ctx context.Context) (held, error) { return mutexHeld{m}, m.TryLock(ctx) }}
}

func semaphoreTarget(name string, s *redlock.Semaphore) target {
	return target{name: name, takeMethod: "Acquire", tryMethod: "TryAcquire",
		take: func(ctx context.Context) (held, error) { return s.Acquire(ctx) },
		try:  func(ctx context.Context) (held, error) { return s.TryAcquire(ctx) }}
}

// record sends e, named after the worker, and learns the phase.
func (w *worker) record(e safety.Event) error {
	e.Worker = w.name
	ack, err := w.sink.Record(e)
	if err != nil {
		return err
	}
	w.phase = ack.Phase
	return nil
}

// uniform returns a duration drawn uniformly from [low, high].
func (w *worker) uniform(low, high time.Duration) time.Duration {
	return low + time.Duration(w.rng.Int64N(int64(high-low)+1))
}

func (w *worker) run(ctx context.Context) error {
	if err := w.record(safety.Event{Kind: safety.KindPoll}); err != nil {
		return err
	}
	for ctx.Err() == nil {
		switch w.phase {
		case safety.PhaseStop:
			return nil
		case safety.PhaseIdle:
			time.Sleep(20 * time.Millisecond)
			if err := w.record(safety.Event{Kind: safety.KindPoll}); err != nil {
				return err
			}
			continue
		}
		if err := w.cycle(ctx); err != nil {
			return err
		}
	}
	return nil
}

// holding is a hold a worker has.
type holding struct {
	held  held
	key   string
	hold  string
	fence int64
	done  <-chan struct{}
	phase safety.Phase // when it entered
	// unfenced is set for a hold without a fence: it makes no write.
	unfenced bool
	// renewedOnly is set for a hold without Extend (target.renewedOnly).
	renewedOnly bool
}

// errorText shortens an error for the history.
func errorText(err error) string {
	text := err.Error()
	if len(text) > 600 {
		text = text[:600] + "…"
	}
	return text
}

// acquire records the acquisition of t, by Lock (or Acquire), or TryLock
// (or TryAcquire) when try is set, and, on success, the entry into the
// critical section. It returns nil, nil when the lock was not acquired.
func (w *worker) acquire(ctx context.Context, t target, timeout time.Duration, try bool) (*holding, error) {
	lock, method := t.take, t.takeMethod
	if try {
		lock, method = t.try, t.tryMethod
	}
	w.holds++
	h := &holding{key: t.name, hold: fmt.Sprintf("%s#%d", w.name, w.holds), unfenced: t.unfenced, renewedOnly: t.renewedOnly}
	short := w.nextContext()
	err := w.record(safety.Event{Kind: safety.KindAcquireCall, Key: h.key, Hold: h.hold, At: safety.Now(), TTL: int64(w.config.TTL),
		What: method, Context: short.String()})
	if err != nil {
		return nil, err
	}
	lockContext, end, release := short.start(ctx, timeout)
	acquired, err := lock(lockContext)
	at := safety.Now()
	if err != nil {
		e := safety.Event{Kind: safety.KindAcquireFail, Key: h.key, Hold: h.hold, Err: errorText(err)}
		if markContext(&e, lockContext, end, at, err) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			e.Kind = safety.KindAcquireInfo
		}
		release()
		return nil, w.record(e)
	}
	release()
	h.held, h.key = acquired, acquired.Key()
	deadline := safety.Deadline(acquired.Until())
	h.fence, h.done = acquired.Fence(), acquired.Done()
	token := acquired.Token()
	err = w.record(safety.Event{Kind: safety.KindAcquireOK, Key: h.key, Hold: h.hold, Token: token[:min(len(token), 8)],
		Fence: h.fence, Deadline: deadline, At: at})
	if err == nil {
		err = w.record(safety.Event{Kind: safety.KindEnter, Key: h.key, Hold: h.hold, Deadline: deadline})
	}
	h.phase = w.phase
	return h, err
}

// read reads the resource, as the read of a read-modify-write.
func (w *worker) read(ctx context.Context, h *holding) error {
	w.call.Reset()
	w.call.Command = resp.AppendCommand(w.call.Command, "LINDEX", resourceLogKey(h.key), "-1")
	readContext, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	e := safety.Event{Kind: safety.KindRead, Key: h.key, Hold: h.hold}
	if err := w.resource.Do(readContext, &w.call); err != nil {
		e.Err = errorText(err)
	}
	return w.record(e)
}

// write makes the fenced write of h and records its result.
func (w *worker) write(ctx context.Context, h *holding) (safety.Kind, error) {
	element := safety.Element(h.hold, h.fence)
	w.call.SetScript(fencedWriteScript, 2, 2)
	w.call.Command = resp.AppendBulkString(w.call.Command, resourceKey(h.key))
	w.call.Command = resp.AppendBulkString(w.call.Command, resourceLogKey(h.key))
	w.call.Command = resp.AppendBulkInt(w.call.Command, h.fence)
	w.call.Command = resp.AppendBulkString(w.call.Command, element)
	writeContext, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	e := safety.Event{Kind: safety.KindWriteInfo, Key: h.key, Hold: h.hold, Fence: h.fence, Element: element}
	err := w.resource.Do(writeContext, &w.call)
	reply := w.call.Reply
	switch {
	case err != nil:
		e.Err = errorText(err)
	case reply.IsError() || len(reply.Elems) != 2:
		e.Err = "unexpected reply " + reply.String()
	case reply.Elems[0].Int == 1:
		e.Kind = safety.KindWriteOK
	default:
		e.Kind, e.Newest = safety.KindWriteRejected, reply.Elems[1].Int
	}
	return e.Kind, w.record(e)
}

// leave records the exit from the critical section, then unlocks. Only
// an Unlock that returned nil counts the hold as released; one that its
// context ended leaves the outcome unknown, and the hold lasts, for all
// the history says, until its validity ends.
func (w *worker) leave(ctx context.Context, h *holding) error {
	validity := safety.Deadline(h.held.Until())
	err := w.record(safety.Event{Kind: safety.KindExit, Key: h.key, Hold: h.hold, Deadline: validity})
	if err != nil {
		return err
	}
	short := w.nextContext()
	if err := w.record(safety.Event{Kind: safety.KindReleaseCall, Key: h.key, Hold: h.hold, At: safety.Now(), Context: short.String()}); err != nil {
		return err
	}
	unlockContext, end, release := short.start(context.WithoutCancel(ctx), 2*time.Second)
	err = h.held.Release(unlockContext)
	returned := safety.Now()
	e := safety.Event{Kind: safety.KindReleaseOK, Key: h.key, Hold: h.hold}
	ended := markContext(&e, unlockContext, end, returned, err)
	release()
	switch {
	case err == nil:
	case ended:
		e.Kind, e.Err, e.Deadline = safety.KindReleaseInfo, errorText(err), validity
	case errors.Is(err, redlock.ErrLockLost):
		e.Kind, e.Err = safety.KindReleaseLost, errorText(err)
	default:
		e.Kind, e.Err = safety.KindReleaseError, errorText(err)
	}
	return w.record(e)
}

// waitOrDone waits for d or until done is closed, and reports the latter.
func waitOrDone(done <-chan struct{}, d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-done:
		return true
	case <-timer.C:
		return false
	}
}

// cycle is one hold: acquire, enter, read, work, write, exit, release.
func (w *worker) cycle(ctx context.Context) error {
	t := w.targets[w.rng.IntN(len(w.targets))]
	try := w.impatientNow() && w.rng.Float64() < tryChance
	h, err := w.acquire(ctx, t, w.config.AcquireTimeout, try)
	if err != nil {
		return err
	}
	if h == nil {
		if w.impatient {
			// A TryLock, or a Lock with a short context, fails at once:
			// wait as Lock would before the next attempt.
			time.Sleep(w.uniform(w.config.RetryMin, w.config.RetryMax))
		}
		return nil
	}
	if err := w.read(ctx, h); err != nil {
		return err
	}
	lost, work := false, time.Duration(0)
	switch {
	case w.config.Remote && h.phase == safety.PhasePause:
		// Work without looking at Done: a pause that lands here resumes
		// straight into the write, as in the example of the essay "How to
		// do distributed locking".
		work = w.uniform(60*time.Millisecond, 150*time.Millisecond)
		time.Sleep(work)
	case w.rng.Float64() < w.config.LongChance:
		lost, err = w.long(ctx, h)
		if err != nil {
			return err
		}
	case w.impatientNow() && w.rng.Float64() < extendChance && !h.renewedOnly:
		// Extend halfway through the work.
		work = w.uniform(5*time.Millisecond, 40*time.Millisecond)
		if lost = waitOrDone(h.done, work/2); !lost {
			if err := w.extend(ctx, h); err != nil {
				return err
			}
			lost = waitOrDone(h.done, work-work/2)
		}
	default:
		work = w.uniform(5*time.Millisecond, 40*time.Millisecond)
		lost = waitOrDone(h.done, work)
	}
	if lost {
		if err := w.record(safety.Event{Kind: safety.KindLost, Key: h.key, Hold: h.hold}); err != nil {
			return err
		}
	} else {
		if !h.unfenced { // a hold without a fence only reads
			if _, err := w.write(ctx, h); err != nil {
				return err
			}
		}
		if w.config.Remote && !time.Now().Before(h.held.Until()) {
			// The write came after the validity, as after a pause (phase
			// B pauses last 1.2 TTL or more): the hold must be over, and
			// Done closed, within a TTL.
			e := safety.Event{Kind: safety.KindDone, Key: h.key, Hold: h.hold}
			if !waitOrDone(h.done, w.config.TTL) {
				e.Err = "Done not closed within a TTL of resuming"
			}
			if err := w.record(e); err != nil {
				return err
			}
		}
	}
	return w.leave(ctx, h)
}

// long is a long critical section: it outlives the TTL, so the hold lives
// by its renewal, with an explicit Extend in the middle. It reports
// whether Done was closed meanwhile.
func (w *worker) long(ctx context.Context, h *holding) (bool, error) {
	if waitOrDone(h.done, 750*time.Millisecond) {
		return true, nil
	}
	if h.renewedOnly {
		return waitOrDone(h.done, 750*time.Millisecond), nil
	}
	if err := w.extend(ctx, h); err != nil {
		return false, err
	}
	return waitOrDone(h.done, 750*time.Millisecond), nil
}

// extend calls Extend on h and records the call and its result.
func (w *worker) extend(ctx context.Context, h *holding) error {
	short := w.nextContext()
	call := safety.Event{Kind: safety.KindExtendCall, Key: h.key, Hold: h.hold, Deadline: safety.Deadline(h.held.Until()), At: safety.Now(),
		Context: short.String()}
	if err := w.record(call); err != nil {
		return err
	}
	extendContext, end, release := short.start(ctx, time.Second)
	started := safety.Now()
	err := h.held.Extend(extendContext)
	at := safety.Now()
	result := safety.Event{Kind: safety.KindExtendOK, Key: h.key, Hold: h.hold, At: at, Started: started, Deadline: safety.Deadline(h.held.Until())}
	if err != nil {
		result = safety.Event{Kind: safety.KindExtendFail, Key: h.key, Hold: h.hold, Err: errorText(err)}
		markContext(&result, extendContext, end, at, err)
	}
	release()
	return w.record(result)
}

// isClosedRecorder reports whether err says the recorder went away, which
// ends a worker process without failing it.
func isClosedRecorder(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "EOF") || strings.Contains(err.Error(), "closed") ||
		strings.Contains(err.Error(), "connection reset") || strings.Contains(err.Error(), "broken pipe"))
}
