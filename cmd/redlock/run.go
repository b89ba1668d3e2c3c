package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lockmux/lockmux/redlock"
	"github.com/lockmux/lockmux/redlock/inspect"
)

// The environment variables that run gives its command.
const (
	keyVariable   = "REDLOCK_KEY"
	tokenVariable = "REDLOCK_TOKEN"
	fenceVariable = "REDLOCK_FENCE"
)

// releaseTimeout bounds the release after the command exited.
const releaseTimeout = 5 * time.Second

var runHelp = commandHelp{
	name:     "run",
	synopsis: "redlock run [flags] KEY -- COMMAND [ARGS...]",
	about: `Run COMMAND while holding the lock KEY on the nodes. redlock waits up to
--wait for the lock, renews it in the background (at about a third of --ttl)
while the command runs, releases it when the command exits, and exits with
the command's status.

With --semaphore N, redlock holds one of N permits of the semaphore KEY
instead: at most N commands run at once under KEY, across every machine that
gives KEY the same N. With --read or --write, it holds a read hold or the
write hold of the read/write lock KEY: commands run with --read run together,
a command run with --write runs alone. With --fair, the commands that wait
for KEY run in the order they came.

The command finds in its environment:
  REDLOCK_KEY    the key on the nodes: KEY, or with --semaphore the key of
                 the permit held, KEY:permit:SLOT, or with --read the sorted
                 set of the readers, KEY:readers
  REDLOCK_TOKEN  the hold's token, the value of the lock key on the nodes
  REDLOCK_FENCE  with --fencing, the hold's fencing token: a number that grows
                 with every hold of KEY; give it to the resource with each
                 write so that it can refuse the writes of an older holder

If the hold can no longer be proven (too many nodes stop answering, or the
hold reaches --max-hold), the command gets SIGTERM, then SIGKILL after
--grace, and redlock exits with 79. SIGTERM, SIGHUP, SIGINT and SIGQUIT sent
to redlock are passed on to the command; a Ctrl-C typed at the terminal
reaches the command directly and is not sent twice. On Linux, the command
gets SIGTERM if redlock itself dies. Flags go before KEY.`,
	examples: `# Run the nightly job on one machine at a time, waiting up to a minute:
export REDLOCK_ADDRS=10.0.0.1:6379,10.0.0.2:6379,10.0.0.3:6379
redlock run --wait 1m jobs:nightly -- ./nightly.sh --full

# Give up at once if another machine holds the lock:
redlock run --wait 0 deploy:web -- make deploy || echo "status $?"

# At most four exports at once, across the machines:
redlock run --semaphore 4 exports -- ./export.sh

# Many readers of the catalog at once, the import alone:
redlock run --read catalog -- ./serve-from-catalog.sh
redlock run --write catalog -- ./import-catalog.sh

# Pass the fencing token to the resource:
redlock run --fencing orders:1001 -- sh -c 'psql -c "UPDATE orders SET ..., fence = $REDLOCK_FENCE WHERE id = 1001 AND fence < $REDLOCK_FENCE"'`,
	exits: `the command's own status, or 128+N if signal N killed it
64   bad usage or configuration
69   too few nodes answered for a quorum
75   the lock was not acquired within --wait
79   the lock was lost while the command ran; the command was stopped
126  the command could not be started; 127 it was not found
130  interrupted while waiting for the lock (143 for SIGTERM)`,
}

// runFlags holds the flags of run, and of elect, which shares its
// supervision of the command.
type runFlags struct {
	command    string // the command's name in messages: "run" or "elect"
	connection connectionFlags
	ttl        time.Duration
	wait       time.Duration
	grace      time.Duration
	maxHold    time.Duration
	fencing    bool
	verbose    bool
	semaphore  int
	read       bool
	write      bool
	fair       bool
}

// hold is what run holds while the command runs: a Mutex's hold, or a
// Semaphore's permit.
type hold interface {
	Key() string
	Token() string
	Fence() int64
	Until() time.Time
	Done() <-chan struct{}
	Release(ctx context.Context) error
}

// mutexHold is the hold of a Mutex.
type mutexHold struct{ *redlock.Mutex }

// Release unlocks the Mutex.
func (h mutexHold) Release(ctx context.Context) error { return h.Unlock(ctx) }

func runCommand(ctx context.Context, env *environment, args []string) int {
	f := runFlags{command: runHelp.name}
	flags := newFlagSet(runHelp)
	f.connection.register(flags, true)
	flags.DurationVar(&f.ttl, "ttl", redlock.DefaultTTL, "how long the lock lives on the nodes unless renewed")
	flags.DurationVar(&f.wait, "wait", 30*time.Second, "how long to wait for the lock; 0 makes a single attempt")
	flags.DurationVar(&f.grace, "grace", 5*time.Second, "time between SIGTERM and SIGKILL when the lock is lost")
	flags.DurationVar(&f.maxHold, "max-hold", redlock.DefaultMaxHold,
		"the longest the lock is held; a command that runs longer is stopped as if the lock were lost")
	flags.BoolVar(&f.fencing, "fencing", false, "also take a fencing token and pass it in "+fenceVariable)
	flags.BoolVar(&f.verbose, "verbose", false, "report the acquisition and the release on stderr")
	flags.IntVar(&f.semaphore, "semaphore", 0, "hold one of `N` permits of the semaphore KEY instead of the lock KEY")
	flags.BoolVar(&f.read, "read", false, "hold a read hold of the read/write lock KEY: readers run together")
	flags.BoolVar(&f.write, "write", false, "hold the write hold of the read/write lock KEY: a writer runs alone")
	flags.BoolVar(&f.fair, "fair", false, "wait in line: the commands waiting for KEY run in the order they came")
	if status, ok := parseFlags(env, flags, runHelp, args); !ok {
		return status
	}
	key, commandLine, err := splitRunArguments(flags.Args())
	if err != nil {
		return usageError(env, runHelp, "%v", err)
	}
	switch {
	case f.ttl < redlock.MinTTL:
		return usageError(env, runHelp, "--ttl %v is shorter than %v", f.ttl, redlock.MinTTL)
	case f.wait < 0, f.grace < 0:
		return usageError(env, runHelp, "--wait and --grace must not be negative")
	case f.maxHold < f.ttl:
		return usageError(env, runHelp, "--max-hold %v is shorter than --ttl %v", f.maxHold, f.ttl)
	case f.connection.checkTTL(f.ttl) != nil:
		return usageError(env, runHelp, "%v", f.connection.checkTTL(f.ttl))
	case f.semaphore < 0 || f.semaphore > redlock.MaxSemaphoreLimit:
		return usageError(env, runHelp, "--semaphore %d is not in [1, %d]", f.semaphore, redlock.MaxSemaphoreLimit)
	case f.read && f.write, (f.read || f.write) && f.semaphore > 0:
		return usageError(env, runHelp, "--read, --write and --semaphore exclude each other")
	case f.fair && (f.read || f.write || f.semaphore > 0):
		return usageError(env, runHelp, "--fair is for a lock: not with --read, --write or --semaphore")
	case f.read && f.fencing:
		return usageError(env, runHelp, "--fencing takes a fence for a writer: readers do not exclude each other and get none")
	}

	// Catch the signals before anything else, so that none is lost between
	// the acquisition and the start of the command.
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, forwardedSignals...)
	defer signal.Stop(signals)

	losses := &lossRecorder{}
	client, status := f.connection.client(env, runHelp, losses)
	if client == nil {
		return status
	}
	defer client.Close()

	options := redlock.MutexOptions{TTL: f.ttl, AutoExtend: true, MaxHold: f.maxHold, Fencing: f.fencing, Fair: f.fair}
	var take, try func(context.Context) (hold, error)
	switch {
	case f.semaphore > 0:
		semaphore := client.NewSemaphore(key, f.semaphore, options)
		take = func(ctx context.Context) (hold, error) { return semaphore.Acquire(ctx) }
		try = func(ctx context.Context) (hold, error) { return semaphore.TryAcquire(ctx) }
	default:
		// A Mutex, or the Mutex of a read/write lock's read or write hold.
		m := client.NewMutex(key, options)
		if f.read || f.write {
			rw := client.NewRWMutex(key, options)
			m = rw.Writer()
			if f.read {
				m = rw.Reader()
			}
		}
		take = func(ctx context.Context) (hold, error) { return mutexHold{m}, m.Lock(ctx) }
		try = func(ctx context.Context) (hold, error) { return mutexHold{m}, m.TryLock(ctx) }
	}
	start := time.Now()
	h, status, ok := acquire(ctx, env, f.command, key, take, try, f.wait, signals)
	if !ok {
		return status
	}
	if f.verbose {
		fmt.Fprintf(env.stderr, "redlock run: acquired %q in %v (token %s…, fence %d, valid until %s)\n",
			h.Key(), time.Since(start).Round(time.Microsecond), h.Token()[:inspect.TokenPrefixLength], h.Fence(), h.Until().Format(time.RFC3339Nano))
	}
	status = superviseCommand(env, h, f, commandLine, signals, losses)

	releaseContext, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	switch err := h.Release(releaseContext); {
	case err != nil && status != exitLost:
		fmt.Fprintf(env.stderr, "redlock run: the release of %q was not confirmed (the lock expires by itself within %v): %v\n", h.Key(), f.ttl, err)
	case err == nil && f.verbose:
		fmt.Fprintf(env.stderr, "redlock run: released %q\n", h.Key())
	}
	return status
}

// splitRunArguments separates KEY from the command after "--".
func splitRunArguments(args []string) (string, []string, error) {
	switch {
	case len(args) == 0:
		return "", nil, errors.New("missing KEY and COMMAND")
	case args[0] == "":
		return "", nil, errors.New("KEY is empty")
	case len(args) == 1:
		return "", nil, errors.New("missing COMMAND after KEY")
	}
	key, rest := args[0], args[1:]
	if rest[0] == "--" {
		rest = rest[1:]
	} else if strings.HasPrefix(rest[0], "-") {
		return "", nil, fmt.Errorf("%q after KEY: flags go before KEY, and COMMAND after \"--\"", rest[0])
	}
	if len(rest) == 0 {
		return "", nil, errors.New("missing COMMAND after \"--\"")
	}
	return key, rest, nil
}

// signalError is the cause of a wait that a signal interrupted.
type signalError struct{ signal os.Signal }

func (e signalError) Error() string { return "interrupted by " + e.signal.String() }

// acquire takes the lock KEY with take, waiting up to wait, or without
// a bound when wait is negative, or with one try when wait is 0, or gives
// up when a signal arrives. It returns false with the exit status when
// the lock was not taken; its messages name the command.
func acquire(ctx context.Context, env *environment, command, key string, take, try func(context.Context) (hold, error),
	wait time.Duration, signals <-chan os.Signal) (hold, int, bool) {
	waitContext, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := make(chan struct{})
	var watcher sync.WaitGroup
	watcher.Go(func() {
		select {
		case received := <-signals:
			cancel(signalError{received})
		case <-stop:
		}
	})
	var h hold
	var err error
	switch {
	case wait == 0:
		h, err = try(waitContext)
	case wait < 0:
		h, err = take(waitContext)
	default:
		lockContext, cancelLock := context.WithTimeout(waitContext, wait)
		h, err = take(lockContext)
		cancelLock()
	}
	close(stop)
	watcher.Wait()
	if err == nil {
		return h, exitOK, true
	}

	var interrupted signalError
	if errors.As(context.Cause(waitContext), &interrupted) {
		fmt.Fprintf(env.stderr, "redlock %s: %v while waiting for %q\n", command, interrupted, key)
		return nil, exitSignalBase + signalNumber(interrupted.signal), false
	}
	status := statusOf(err)
	switch status {
	case exitNotAcquired:
		fmt.Fprintf(env.stderr, "redlock %s: %q not acquired within --wait %v: %v\n", command, key, wait, err)
	case exitUnavailable:
		fmt.Fprintf(env.stderr, "redlock %s: %q not acquired: too few nodes answered for a quorum: %v\n", command, key, err)
	default:
		fmt.Fprintf(env.stderr, "redlock %s: %q not acquired: %v\n", command, key, err)
	}
	return nil, status, false
}

// superviseCommand runs the command under the hold: it passes signals on,
// stops the command when the hold is lost, and returns the exit status.
func superviseCommand(env *environment, m hold, f runFlags, commandLine []string,
	signals <-chan os.Signal, losses *lossRecorder) int {
	child := exec.Command(commandLine[0], commandLine[1:]...)
	child.Stdin, child.Stdout, child.Stderr = env.stdin, env.stdout, env.stderr
	child.Env = childEnvironment(os.Environ(), m.Key(), m.Token(), m.Fence(), f.fencing)
	child.SysProcAttr = childAttributes()
	// The parent-death signal follows the thread that started the child:
	// keep this goroutine on it until the child is gone.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := child.Start(); err != nil {
		fmt.Fprintf(env.stderr, "redlock %s: %v\n", f.command, err)
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
			return exitNotFound
		}
		return exitCannotRun
	}

	exited := make(chan struct{})
	var waitError error
	var waiter sync.WaitGroup
	waiter.Go(func() {
		waitError = child.Wait()
		close(exited)
	})
	defer waiter.Wait()

	done := m.Done()
	var kill <-chan time.Time
	lost := false
	for {
		select {
		case <-exited:
			if waitError != nil && child.ProcessState == nil {
				fmt.Fprintf(env.stderr, "redlock %s: %v\n", f.command, waitError)
				return exitCannotRun
			}
			if !lost && !time.Now().Before(m.Until()) {
				lost = true
				fmt.Fprintf(env.stderr, "redlock %s: the hold of %q had expired when the command exited: %s\n", f.command, m.Key(), losses.cause(f.maxHold))
			}
			if lost {
				fmt.Fprintf(env.stderr, "redlock %s: the command exited with %s after the lock was lost\n", f.command, child.ProcessState)
				return exitLost
			}
			return commandStatus(child.ProcessState)
		case received := <-signals:
			if forwardSignal(received) {
				child.Process.Signal(received)
			}
		case <-done:
			done, lost = nil, true
			fmt.Fprintf(env.stderr, "redlock %s: lost the lock %q while the command ran (%s); sending SIGTERM to pid %d\n",
				f.command, m.Key(), losses.cause(f.maxHold), child.Process.Pid)
			child.Process.Signal(syscall.SIGTERM)
			kill = time.After(f.grace)
		case <-kill:
			kill = nil
			fmt.Fprintf(env.stderr, "redlock %s: pid %d still runs %v after SIGTERM; sending SIGKILL\n", f.command, child.Process.Pid, f.grace)
			child.Process.Kill()
		}
	}
}

// childEnvironment returns the parent's environment without any inherited
// REDLOCK_KEY, REDLOCK_TOKEN or REDLOCK_FENCE, plus this hold's.
func childEnvironment(parent []string, key, token string, fence int64, fencing bool) []string {
	environment := make([]string, 0, len(parent)+3)
	for _, variable := range parent {
		name, _, _ := strings.Cut(variable, "=")
		if name != keyVariable && name != tokenVariable && name != fenceVariable {
			environment = append(environment, variable)
		}
	}
	environment = append(environment, keyVariable+"="+key, tokenVariable+"="+token)
	if fencing {
		environment = append(environment, fenceVariable+"="+strconv.FormatInt(fence, 10))
	}
	return environment
}

// lossRecorder is an Observer that keeps why the last hold was lost, to
// tell the user.
type lossRecorder struct {
	redlock.NopObserver
	mu         sync.Mutex
	lost       error // the cause of the last loss
	lastFailed error // the last failed extension
}

// OnLost keeps the cause of the loss.
func (r *lossRecorder) OnLost(event redlock.LostEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lost = event.Err
}

// OnExtend keeps the error of a failed extension.
func (r *lossRecorder) OnExtend(event redlock.ExtendEvent) {
	if event.Err == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lastFailed = event.Err
}

// cause describes why the last hold ended.
func (r *lossRecorder) cause(maxHold time.Duration) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.lost != nil:
		return r.lost.Error()
	case r.lastFailed != nil:
		return "the last renewal failed: " + r.lastFailed.Error()
	}
	return fmt.Sprintf("its validity ended without a renewal; --max-hold is %v", maxHold)
}
