package redlock

import (
	"context"
	"crypto/rand"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockmux/lockmux/redlock/internal/liveness"
	"github.com/lockmux/lockmux/redlock/internal/naming"
	"github.com/lockmux/lockmux/redlock/internal/round"
	"github.com/lockmux/lockmux/redlock/internal/turn"
)

// Mutex is a lock on one resource, or several with MutexOptions.Keys,
// across the Client's nodes. It is reusable: lock, unlock, lock again,
// without allocating.
//
// A Mutex is safe for concurrent use. Within one process it behaves like a
// sync.Mutex: a goroutine that calls Lock while another holds the Mutex
// waits locally, without network traffic. Any goroutine may Unlock it.
type Mutex struct {
	client *Client
	err    error // why the options are not valid, or nil
	settings
	resource
	// The lock's state: three parts, each with one rule.
	exclusion
	holding
	// wait is lent while a Lock runs (lendWait), nil otherwise; channels
	// are the keys' release channels, made on first use under the
	// notifier's mutex.
	wait     atomic.Pointer[waitState]
	channels []string
}

// settings are the MutexOptions a Mutex reads after newMutex, with their
// defaults, and the kind of its holds; MutexOptions.Token and Metadata
// are kept in sideKeys. They do not change after the constructors.
type settings struct {
	ttl, maxHold                 time.Duration
	retryDelayMin, retryDelayMax time.Duration
	maxTries                     int
	autoExtend, fencing          bool
	retryBackoff                 bool
	// kind is what the holds are: plain, fair, or a read/write lock's
	// writer or reader, whose acquisitions also check its guards.
	kind round.Kind
}

// settingsOf returns the settings of options, whose defaults are applied.
func settingsOf(options MutexOptions) settings {
	return settings{
		ttl: options.TTL, maxHold: options.MaxHold,
		retryDelayMin: options.RetryDelayMin, retryDelayMax: options.RetryDelayMax,
		maxTries: options.MaxTries, autoExtend: options.AutoExtend, fencing: options.Fencing,
		retryBackoff: options.RetryBackoff,
	}
}

// options returns the Mutex's options with their defaults, but for
// MutexOptions.Keys, which are in its keys.
func (m *Mutex) options() MutexOptions {
	return MutexOptions{
		TTL: m.ttl, MaxHold: m.maxHold,
		RetryDelayMin: m.retryDelayMin, RetryDelayMax: m.retryDelayMax,
		MaxTries: m.maxTries, RetryBackoff: m.retryBackoff,
		AutoExtend: m.autoExtend, Fencing: m.fencing, Fair: m.kind == round.KindFair,
		Token: m.fixedToken(), Metadata: m.metadata(),
	}
}

// resource is what a Mutex locks: its keys and the keys its commands
// touch beside them. It does not change after newMutex.
type resource struct {
	key  string
	keys []string // key, then MutexOptions.Keys
	// side holds the fencing counters' keys, the guards, and
	// MutexOptions.Token and Metadata; nil for a plain Mutex without them.
	side *sideKeys
	// announceOn is, with a Redis Cluster node, the prefix of the keys'
	// release channels (Client.releasedChannelPrefix); empty otherwise.
	announceOn string
}

// exclusion is the Mutex's exclusion within this process. Rule: turn is
// taken while a goroutine holds the Mutex or is acquiring it, and
// acquisition belongs to that goroutine; its rounds are lent only while
// an acquisition or a release runs (rounds.go).
type exclusion struct {
	turn        turn.Turn
	acquisition acquisition
}

// holding is the current hold, which any goroutine may read. Rule: hold
// has its own mutex (see package liveness), and sending orders the
// commands sent for a hold before its release, on every node.
type holding struct {
	hold liveness.Hold
	// sending is held for reading while an extension or a repair is
	// queued on the nodes, and for writing while a hold ends.
	sending sync.RWMutex
	// extending is made on first use; its mutex serializes Extend's
	// callers (the renewer has rounds of its own).
	extending atomic.Pointer[extender]
}

// sideKeys are the keys a Mutex's commands carry besides its lock keys,
// and the parts of its value that MutexOptions fix.
type sideKeys struct {
	fences []string // the keys of the keys' fencing counters, with Fencing
	guards []string // the keys a fair or read/write lock's commands check
	// token and metadata are MutexOptions.Token and Metadata.
	token, metadata string
}

// fixedToken returns MutexOptions.Token: empty for a new random token per
// acquisition.
func (m *Mutex) fixedToken() string {
	if m.side == nil {
		return ""
	}
	return m.side.token
}

// metadata returns MutexOptions.Metadata.
func (m *Mutex) metadata() string {
	if m.side == nil {
		return ""
	}
	return m.side.metadata
}

// fenceKeys returns the keys of the lock keys' fencing counters, with
// MutexOptions.Fencing; nil otherwise.
func (m *Mutex) fenceKeys() []string {
	if m.side == nil {
		return nil
	}
	return m.side.fences
}

// guards returns the keys that the commands of a fair lock, or of a
// read/write lock's writer or reader, check besides the lock keys.
func (m *Mutex) guards() []string {
	if m.side == nil {
		return nil
	}
	return m.side.guards
}

// setGuards sets the keys guards returns. It is called by the
// constructors only.
func (m *Mutex) setGuards(guards []string) {
	if m.side == nil {
		m.side = &sideKeys{}
	}
	m.side.guards = guards
}

// acquisition is what the goroutine that has the turn uses to acquire a
// hold and to release it: the rounds of both, lent by the Client while
// they run (see lentRounds), and the token of the next hold.
type acquisition struct {
	lent *round.Rounds // nil but while an acquisition or a release runs
	// value is the token, and a space and the metadata with
	// MutexOptions.Metadata: made by newMutex as large as it will be, and
	// reused from hold to hold.
	value []byte
	// extras are the arguments that follow the number in the commands
	// whose row says extra: for a read/write lock's writer, the TTL of its
	// waiting marker; for a reader, the token of the write hold it
	// downgrades (RWMutex.Downgrade); for a fair lock's waiter in line, its
	// identity and the TTL of its heartbeat; none otherwise.
	extras [][]byte
}

// token returns the value of the lock keys of the hold being acquired, or
// of the current hold: its token, and a space and the metadata with
// MutexOptions.Metadata.
func (a *acquisition) token() []byte { return a.value }

func newMutex(c *Client, key string, options MutexOptions) *Mutex {
	m := &Mutex{client: c}
	m.key = key
	options, m.err = options.withDefaults(c.options)
	m.settings = settingsOf(options)
	if m.err == nil {
		m.err = checkKeys(key, options.Keys)
	}
	if m.err != nil {
		return m
	}
	m.keys = append([]string{key}, options.Keys...)
	if options.Fencing || options.Token != "" || options.Metadata != "" {
		m.side = &sideKeys{token: options.Token, metadata: options.Metadata}
	}
	if options.Fencing {
		m.side.fences = fenceKeys(m.keys)
	}
	if options.Fair {
		m.kind = round.KindFair
		m.setGuards([]string{key + naming.QueueKeySuffix, key + naming.AliveKeySuffix, key + naming.TicketsKeySuffix})
	}
	if m.err = c.sameSlot(m.keys, m.fenceKeys(), m.guards()); m.err != nil {
		return m
	}
	if c.hasCluster {
		m.announceOn = c.releasedChannelPrefix(key)
	}
	a := &m.acquisition
	a.value = make([]byte, 0, valueLength(options))
	m.hold.Had = make([]bool, c.group.Len())
	m.hold.Watching = make([]bool, c.group.Len())
	return m
}

// Key returns the Mutex's key.
func (m *Mutex) Key() string { return m.key }

// Lock acquires the lock. It tries again until it succeeds,
// MutexOptions.MaxTries attempts have failed, or ctx is done, waiting
// between attempts as docs/waiting.md says. It fails at once, matching
// ErrQuorumUnreachable, when too many nodes are down or misconfigured.
// The hold's validity is checked as Lock's last step: a hold that ended
// by then is released, not returned. A failure matches ErrNotAcquired,
// the context's error, or ErrClosed; errors.As with a *QuorumError gives
// each node's outcome in the last attempt.
func (m *Mutex) Lock(ctx context.Context) error {
	if m.err != nil {
		return m.err
	}
	if err := m.takeTurn(ctx); err != nil {
		return err
	}
	// The turn passes on once Lock returned, whoever gives it (see
	// turn.Turn.Pin): an Unlock while the observers run may give it.
	m.turn.Pin()
	defer m.turn.Unpin()
	err := m.acquireWithRetries(ctx)
	if err != nil {
		m.giveTurn()
	}
	return err
}

// TryLock makes one attempt to acquire the lock. It fails with an error
// matching ErrNotAcquired when the lock is held by another client, by
// another goroutine of this process, when no quorum of nodes agreed, or
// when the hold's validity ended before TryLock could return it.
func (m *Mutex) TryLock(ctx context.Context) error {
	if m.err != nil {
		return m.err
	}
	_, err := m.tryLock(ctx, nil)
	return err
}

// tryLock is TryLock, which also returns the generation of the hold won:
// 0 when the hold won was unlocked by another goroutine before tryLock
// could return it. A quorum's failure goes into kept when it is given
// (see tried).
func (m *Mutex) tryLock(ctx context.Context, kept *keptFailure) (uint64, error) {
	if !m.turn.TryTake() {
		return 0, errHeldLocally
	}
	m.turn.Pin()
	defer m.turn.Unpin()
	elapsed, generation, err := m.attempt(ctx, 1)
	return m.tried(elapsed, generation, err, kept)
}

// tried ends one attempt made with the turn, for tryLock: the hold won
// when it is still valid, otherwise the attempt's error, the turn given
// back. A quorum's failure goes into kept when it is given
// (errFailureKept).
func (m *Mutex) tried(elapsed time.Duration, generation uint64, err error, kept *keptFailure) (uint64, error) {
	if err == nil {
		if m.validAtReturn(generation) {
			return generation, nil // nothing runs between the check and the return
		}
		if err = m.dropEndedHold(generation); err == nil {
			return 0, nil // unlocked by another goroutine, which passed the turn on
		}
	}
	switch {
	case err == errAttemptFailed && kept != nil:
		// The tally belongs to the goroutine that has the turn: read it
		// before the turn passes to another goroutine's attempt.
		kept.keep(m, elapsed)
		err = errFailureKept
	case err == errAttemptFailed:
		err = quorumError(&m.acquisitionRound().Tally, m.key, m.client.addresses, elapsed)
	}
	m.giveTurn()
	return 0, err
}

// takeTurn waits until no other goroutine of this process holds the Mutex,
// ctx is done, or the Client is closed.
func (m *Mutex) takeTurn(ctx context.Context) error {
	if m.turn.TryTake() || m.turn.Take(ctx.Done(), m.client.closing) {
		return nil
	}
	if ctx.Err() != nil {
		return fmt.Errorf("redlock: lock %q: waiting for another goroutine of this process: %w", m.key, context.Cause(ctx))
	}
	return fmt.Errorf("redlock: lock %q: waiting for another goroutine of this process: %w", m.key, ErrClosed)
}

// giveTurn gives the turn, and the rounds the Mutex borrowed, back.
func (m *Mutex) giveTurn() {
	m.giveBackRounds()
	m.turn.Give()
}

// fenceKeySuffix ends the key of a lock key's fencing counter, which
// follows the lock key. The counter has no TTL: it must outlive every
// hold, and survive restarts (appendfsync always). The name is defined in
// naming, which the tools that read the counters share.
const fenceKeySuffix = naming.FenceKeySuffix

// fenceKeys returns the keys of the fencing counters of keys, in their
// order.
func fenceKeys(keys []string) []string {
	counters := make([]string, len(keys))
	for i, key := range keys {
		counters[i] = key + fenceKeySuffix
	}
	return counters
}

// tokenRandomBytes is the number of random bytes in a generated token.
const tokenRandomBytes = 20

// tokenLength is the length of a generated token, in hexadecimal.
const tokenLength = 2 * tokenRandomBytes

// maxTokenLength is the longest token that MutexOptions.Token accepts.
const maxTokenLength = 128

// maxMetadataLength is the longest MutexOptions.Metadata accepted.
const maxMetadataLength = 256

const hexDigits = "0123456789abcdef"

// newToken fills dst with 20 bytes from crypto/rand in lowercase
// hexadecimal. It does not allocate.
func newToken(dst *[tokenLength]byte) error {
	// Expand the random bytes in place from the second half: byte i's
	// digits go to dst[2i:2i+2], never past the next unread byte.
	random := dst[tokenLength-tokenRandomBytes:]
	if _, err := rand.Read(random); err != nil {
		return fmt.Errorf("redlock: generate token: %w", err)
	}
	for i := range tokenRandomBytes {
		value := dst[tokenLength-tokenRandomBytes+i]
		dst[2*i] = hexDigits[value>>4]
		dst[2*i+1] = hexDigits[value&0x0f]
	}
	return nil
}

// validToken reports whether token is 1 to maxTokenLength bytes of
// printable ASCII other than space.
func validToken(token string) bool {
	if len(token) == 0 || len(token) > maxTokenLength {
		return false
	}
	for i := 0; i < len(token); i++ {
		if token[i] <= ' ' || token[i] > '~' {
			return false
		}
	}
	return true
}

// validMetadata reports whether metadata is at most maxMetadataLength
// bytes of printable ASCII, spaces included.
func validMetadata(metadata string) bool {
	if len(metadata) > maxMetadataLength {
		return false
	}
	for i := 0; i < len(metadata); i++ {
		if metadata[i] < ' ' || metadata[i] > '~' {
			return false
		}
	}
	return true
}

// splitValue returns the token and metadata of a lock key's value, split
// at its first space.
func splitValue(value []byte) (token, metadata []byte) {
	for i, c := range value {
		if c == ' ' {
			return value[:i], value[i+1:]
		}
	}
	return value, nil
}

// valueLength is the length of a Mutex's lock keys' value.
func valueLength(options MutexOptions) int {
	length := tokenLength
	if options.Token != "" {
		length = len(options.Token)
	}
	if options.Metadata != "" {
		length += 1 + len(options.Metadata)
	}
	return length
}
