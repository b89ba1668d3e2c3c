package redlock

import (
	"crypto/tls"
	"fmt"
	"math"
	"time"

	"github.com/lockmux/lockmux/mux"
	"github.com/lockmux/lockmux/redlock/internal/connection"
	"github.com/lockmux/lockmux/redlock/internal/naming"
)

// Defaults of Options. A zero field of Options means its default.
const (
	// defaultDialTimeout bounds one dial to a node with its handshake.
	defaultDialTimeout = mux.DefaultDialTimeout
	// DefaultNodeTimeout bounds the wait for one node's reply within a
	// round.
	DefaultNodeTimeout = 50 * time.Millisecond
	// defaultDriftFactor is the fraction of the TTL allowed for clock drift
	// between the client and the nodes.
	defaultDriftFactor = 0.01
	// defaultRetryDelayMin and defaultRetryDelayMax bound the retry delay
	// of a blocked Lock (see Options.RetryDelayMin).
	defaultRetryDelayMin = 10 * time.Millisecond
	defaultRetryDelayMax = 60 * time.Millisecond
)

// Protocol is the version of the protocol spoken with the nodes, for
// Options.Protocol.
type Protocol = mux.Protocol

// Values of Options.Protocol.
const (
	// ProtocolAuto asks for RESP3 and falls back to RESP2.
	ProtocolAuto = mux.ProtocolAuto
	// ProtocolRESP2 speaks RESP2 only.
	ProtocolRESP2 = mux.ProtocolRESP2
	// ProtocolRESP3 requires RESP3: a node without it is an error.
	ProtocolRESP3 = mux.ProtocolRESP3
)

// QuarantineMode says whether a Client keeps nodes that may have lost
// keys out of the locks, for Options.Quarantine.
type QuarantineMode int

// Values of Options.Quarantine.
const (
	// QuarantineOn keeps a node that may have lost keys out of the votes
	// for MaxTTL: the default.
	QuarantineOn QuarantineMode = iota
	// QuarantineOff counts every node's vote: a node that restarts
	// without its data can give a held lock to a second client.
	QuarantineOff
)

// Defaults and limits of MutexOptions. A zero field of MutexOptions means
// its default.
const (
	// DefaultTTL is how long a lock key lives on a node unless extended.
	DefaultTTL = 10 * time.Second
	// MinTTL is the shortest TTL accepted.
	MinTTL = 10 * time.Millisecond
	// DefaultMaxHold bounds how long one hold may last through extensions.
	DefaultMaxHold = time.Hour
)

// nodeTimeoutsPerTTL is how many node timeouts the TTL of a renewed hold
// must last at least. Its end is signalled two node timeouts before its
// validity ends, so a renewal due a third of the TTL after the start of
// the hold still has the time to finish an attempt that waits a whole node
// timeout for a silent node.
const nodeTimeoutsPerTTL = 5

// Options configures a Client. The zero value is usable: every zero field
// means its default.
type Options struct {
	// Username and Password authenticate every connection. They override
	// the user information of the addresses. Empty means none.
	Username, Password string

	// TLSConfig is used for rediss:// addresses. Nil means a default
	// configuration that verifies the server against the system roots.
	TLSConfig *tls.Config

	// DialTimeout bounds one dial to a node with its handshake. Zero means
	// 2 s; negative is invalid.
	DialTimeout time.Duration

	// NodeTimeout bounds the wait for one node's reply within a round: it
	// is the nodes' deadline, shared by every caller of a connection, and
	// it is never derived from a TTL. It should be small against the TTL,
	// because a round that waits for a slow node spends the validity of
	// the hold. For a renewed hold (MutexOptions.AutoExtend, Client.Do) it
	// must be: such a hold ends two node timeouts before its validity, so
	// a Mutex with AutoExtend whose TTL is shorter than five node timeouts
	// is refused with ErrInvalidOptions (see MutexOptions.TTL). Zero means
	// DefaultNodeTimeout (50 ms); negative is invalid.
	NodeTimeout time.Duration

	// DriftFactor is the fraction of the TTL allowed for the clock drift
	// between the client and the nodes: the validity of a hold is ttl −
	// elapsed − (ttl·DriftFactor + 2 ms). Zero means 0.01; it must be
	// finite, not negative and below 1.
	DriftFactor float64

	// RetryDelayMin and RetryDelayMax bound the retry delay of a blocked
	// Lock, drawn at random in between for each wait, so that competing
	// clients fall out of step. A Lock waits one delay after a split vote,
	// or for a release of the lock, at most eight delays (docs/waiting.md).
	// Zero means 10 ms and 60 ms. When only one bound is set, the other
	// keeps its default, or takes the set bound's value if the default
	// would be on the wrong side of it. Negative values, or a minimum above
	// the maximum, are invalid. MutexOptions may override both.
	RetryDelayMin, RetryDelayMax time.Duration

	// Quarantine keeps a node that may have lost keys (a restart, a
	// promotion, a flush) out of every lock for MaxTTL and its drift
	// allowance: its votes do not count (ErrQuarantined); its releases do.
	// On by default (QuarantineOn, the zero value); QuarantineOff turns it
	// off, except for Sentinel and Cluster members. docs/deployments.md
	// gives the rules.
	Quarantine QuarantineMode

	// MaxTTL is the longest TTL any client of these nodes uses: with the
	// quarantine on, a node whose epoch marker is younger than MaxTTL and its
	// drift allowance may have lost a key that is still valid. A Mutex
	// with a longer TTL, or an ExtendFor beyond it, is refused with
	// ErrInvalidOptions. Zero means DefaultTTL.
	MaxTTL time.Duration

	// Observer is told of acquisitions, releases, extensions, losses and
	// node errors. Nil means none, at no cost. Observers combines
	// several into one.
	Observer Observer

	// Protocol selects the RESP version: ProtocolAuto (0, RESP3 with a
	// fallback to RESP2), ProtocolRESP2 or ProtocolRESP3. Other values are
	// invalid.
	Protocol Protocol

	// ClientName is sent with CLIENT SETNAME, so that the connections are
	// recognised in CLIENT LIST. Zero means "lockmux".
	// It must consist of printable ASCII characters other than space.
	ClientName string

	// clock tells the time for all elapsed-time and validity computations
	// and for the schedule of renewals and of the ends of holds. Nil means
	// the real clock (time.Now, with its monotonic reading); the package's
	// tests set one to move time by hand. Timers still wait in real time:
	// a timer is set for the time left by the clock, and whatever it wakes
	// reads the clock again before it acts.
	clock clock
}

// MutexOptions configures one Mutex. The zero value is usable: every zero
// field means its default.
type MutexOptions struct {
	// TTL is how long the lock keys live on the nodes unless extended, and
	// the upper bound of a hold's validity. It is rounded down to a whole
	// millisecond. Zero means DefaultTTL (10 s). It must be at least MinTTL
	// and exceed the drift allowance (TTL·DriftFactor + 2 ms). With
	// AutoExtend, and in Client.Do, it must last five Options.NodeTimeout
	// (250 ms by default); with the quarantine on, at most Options.MaxTTL.
	// Otherwise the Mutex is refused with ErrInvalidOptions.
	TTL time.Duration

	// RetryDelayMin and RetryDelayMax override the Client's retry delay
	// range for this Mutex: they bound the gaps between its attempts as
	// Options.RetryDelayMin says. Zero means the Client's values; the rules
	// of Options.RetryDelayMin apply.
	RetryDelayMin, RetryDelayMax time.Duration

	// RetryBackoff makes the retry delay grow: after a Lock's failed
	// attempt k, d is drawn from [b/2, b] with b = RetryDelayMin·2^(k−1),
	// at most RetryDelayMax, instead of from [RetryDelayMin,
	// RetryDelayMax]. It spares nodes that many waiters hammer while
	// notifications are unavailable; the rules of Options.RetryDelayMin
	// apply with that d. The Client's retry policies are three: the
	// jittered delay (the default), this exponential backoff, and a bound
	// on the attempts, MaxTries, which combines with either.
	RetryBackoff bool

	// MaxTries bounds the acquisition attempts of one Lock. Zero means no
	// bound: Lock tries until it acquires or its context is done. Negative
	// is invalid. A Lock that reaches it returns the last attempt's error,
	// which matches ErrNotAcquired, and says how many attempts it made.
	MaxTries int

	// AutoExtend renews the hold in the background, a third of the TTL after
	// its start and after each extension, until it is released, lost, or
	// has lasted MaxHold. A renewed hold ends two node timeouts before its
	// validity unless an extension moved it (see Mutex.Done). On the nodes
	// that speak RESP3, it also watches its keys, and renews at once when
	// one changes from outside. Off by default; Client.Do implies it.
	// docs/renewal.md gives the rules.
	AutoExtend bool

	// MaxHold bounds the length of one hold: no extension, automatic or
	// explicit, moves its expiry beyond the moment it was acquired plus
	// MaxHold, so that a stuck holder cannot keep a resource forever. An
	// AutoExtend hold that reaches it ends, as a lost one does, two node
	// timeouts before its validity: Done closes then. Zero means
	// DefaultMaxHold (1 hour); it must not be negative or shorter than TTL.
	// Set it to a very large value to renew without bound.
	MaxHold time.Duration

	// Fencing makes each acquisition also return a fencing token: a number
	// that strictly increases with every acquisition of the resource, which
	// the resource can check to reject the writes of a holder that lost the
	// lock. With Keys, each key is a resource with a counter of its own,
	// and the fence is above every one of them. It costs a second round
	// trip per acquisition and needs nodes with persistence (see the
	// package documentation, # Safety).
	Fencing bool

	// Token resumes a hold taken earlier, by this process or another: the
	// Mutex uses this value instead of a new random token and re-validates
	// it on a quorum before it reports the hold. The resumed hold's validity
	// is the TTL a quorum of nodes has left, less the drift allowance of
	// that remaining TTL (not of this TTL option, which only sets the TTL
	// of its extensions). Empty means a new random token for each
	// acquisition. When set, it must be at most maxTokenLength bytes of
	// printable ASCII characters other than space.
	Token string

	// Fair serves the waiters of a blocked Lock in the order they came. A
	// Lock that finds the lock held takes a ticket and waits in line; only
	// the first in line may try. The line decides who may try, never who
	// holds. An uncontended Lock costs one round, as without Fair. Every
	// client of a lock must set Fair alike. It combines with Fencing, not
	// with Keys. Off by default. docs/lock-family.md gives the rules and the
	// keys it adds.
	Fair bool

	// Metadata is stored with each hold on the nodes, after its token and a
	// space: the lock keys' value is "TOKEN METADATA", so that whoever
	// looks at a lock can tell who holds it and why (redlock status shows
	// it; Mutex.Metadata returns it). At most 256 bytes of printable ASCII
	// characters, spaces included. A resumption (Token) must give the
	// same Metadata: together they are the keys' value.
	Metadata string

	// Keys are extra keys for a lock over several resources at once. A node
	// votes for the lock only if it set every key, the Mutex's own key
	// included. Keys must not be empty and must not repeat each other or
	// the Mutex's key.
	Keys []string
}

// withDefaults returns o with every zero field set to its default, or an
// error wrapping ErrInvalidOptions that names the first invalid field.
func (o Options) withDefaults() (Options, error) {
	if err := connection.CheckDialTimeout(o.DialTimeout); err != nil {
		return o, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	switch {
	case o.NodeTimeout < 0:
		return o, invalidOption("Options.NodeTimeout", o.NodeTimeout, "is negative")
	case math.IsNaN(o.DriftFactor) || math.IsInf(o.DriftFactor, 0) || o.DriftFactor < 0 || o.DriftFactor >= 1:
		return o, invalidOption("Options.DriftFactor", o.DriftFactor, "is not in [0, 1)")
	case o.Quarantine != QuarantineOn && o.Quarantine != QuarantineOff:
		return o, invalidOption("Options.Quarantine", o.Quarantine, "is not QuarantineOn or QuarantineOff")
	}
	if err := connection.CheckProtocol(o.Protocol); err != nil {
		return o, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	if o.DialTimeout == 0 {
		o.DialTimeout = defaultDialTimeout
	}
	switch {
	case o.MaxTTL < 0:
		return o, invalidOption("Options.MaxTTL", o.MaxTTL, "is negative")
	case o.MaxTTL == 0:
		o.MaxTTL = DefaultTTL
	}
	if o.NodeTimeout == 0 {
		o.NodeTimeout = DefaultNodeTimeout
	}
	if o.DriftFactor == 0 {
		o.DriftFactor = defaultDriftFactor
	}
	var err error
	o.RetryDelayMin, o.RetryDelayMax, err = retryDelays("Options", o.RetryDelayMin, o.RetryDelayMax, defaultRetryDelayMin, defaultRetryDelayMax)
	if err != nil {
		return o, err
	}
	if o.ClientName == "" {
		o.ClientName = naming.DefaultClientName
	}
	if err := connection.CheckClientName(o.ClientName); err != nil {
		return o, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	if o.clock == nil {
		o.clock = realClock{}
	}
	return o, nil
}

// withDefaults returns o with every zero field set to its default, taking
// the retry delays from client, or an error wrapping ErrInvalidOptions that
// names the first invalid field. client must be the result of
// Options.withDefaults. The returned Keys slice is a copy.
func (o MutexOptions) withDefaults(client Options) (MutexOptions, error) {
	switch {
	case o.TTL < 0:
		return o, invalidOption("MutexOptions.TTL", o.TTL, "is negative")
	case o.MaxTries < 0:
		return o, invalidOption("MutexOptions.MaxTries", o.MaxTries, "is negative")
	case o.MaxHold < 0:
		return o, invalidOption("MutexOptions.MaxHold", o.MaxHold, "is negative")
	}
	if o.TTL == 0 {
		o.TTL = DefaultTTL
	}
	o.TTL = o.TTL.Truncate(time.Millisecond)
	switch {
	case o.TTL < MinTTL:
		return o, invalidOption("MutexOptions.TTL", o.TTL, "is below MinTTL ("+MinTTL.String()+")")
	case validity(o.TTL, 0, client.DriftFactor) <= 0:
		return o, invalidOption("MutexOptions.TTL", o.TTL, "does not exceed the drift allowance ("+drift(o.TTL, client.DriftFactor).String()+")")
	case client.Quarantine == QuarantineOn && o.TTL > client.MaxTTL:
		return o, invalidOption("MutexOptions.TTL", o.TTL, "exceeds Options.MaxTTL ("+client.MaxTTL.String()+"), which the quarantine relies on")
	case o.AutoExtend && o.TTL < nodeTimeoutsPerTTL*client.NodeTimeout:
		return o, invalidOption("MutexOptions.TTL", o.TTL, "of a renewed hold is shorter than five node timeouts (Options.NodeTimeout "+client.NodeTimeout.String()+")")
	}
	if o.MaxHold == 0 {
		o.MaxHold = max(DefaultMaxHold, o.TTL)
	}
	if o.MaxHold < o.TTL {
		return o, invalidOption("MutexOptions.MaxHold", o.MaxHold, "is shorter than TTL ("+o.TTL.String()+")")
	}
	var err error
	o.RetryDelayMin, o.RetryDelayMax, err = retryDelays("MutexOptions", o.RetryDelayMin, o.RetryDelayMax, client.RetryDelayMin, client.RetryDelayMax)
	if err != nil {
		return o, err
	}
	if o.Token != "" && !validToken(o.Token) {
		// The token is not quoted: whoever knows it can release the lock.
		return o, fmt.Errorf("%w: MutexOptions.Token of %d bytes is longer than maxTokenLength or holds a space or a character that is not printable ASCII", ErrInvalidOptions, len(o.Token))
	}
	if o.Fair && len(o.Keys) > 0 {
		return o, fmt.Errorf("%w: MutexOptions.Fair cannot be combined with Keys: a line is kept per lock key", ErrInvalidOptions)
	}
	if !validMetadata(o.Metadata) {
		return o, fmt.Errorf("%w: MutexOptions.Metadata of %d bytes is longer than %d bytes or holds a character that is not printable ASCII", ErrInvalidOptions, len(o.Metadata), maxMetadataLength)
	}
	if o.Token != "" && o.Fencing {
		// A resumed hold cannot learn the fence its first holder committed.
		return o, fmt.Errorf("%w: MutexOptions.Token and MutexOptions.Fencing cannot be combined: a resumed hold has no fence", ErrInvalidOptions)
	}
	if len(o.Keys) > 0 {
		for i, key := range o.Keys {
			if key == "" {
				return o, fmt.Errorf("%w: MutexOptions.Keys[%d] is empty", ErrInvalidOptions, i)
			}
			for j := range i {
				if o.Keys[j] == key {
					return o, fmt.Errorf("%w: MutexOptions.Keys[%d] %q repeats Keys[%d]", ErrInvalidOptions, i, key, j)
				}
			}
		}
		o.Keys = append([]string(nil), o.Keys...)
	}
	return o, nil
}

// checkKeys returns an error wrapping ErrInvalidOptions when a Mutex's key
// is empty or appears among its extra keys. MutexOptions.withDefaults has
// already checked the extra keys among themselves.
func checkKeys(key string, extra []string) error {
	if key == "" {
		return fmt.Errorf("%w: the key is empty", ErrInvalidOptions)
	}
	for i, other := range extra {
		if other == key {
			return fmt.Errorf("%w: MutexOptions.Keys[%d] repeats the key %q", ErrInvalidOptions, i, key)
		}
	}
	return nil
}

// retryDelays applies the defaults to a retry delay range: a zero bound
// takes its default, unless the other bound was set outside the default
// range, in which case it takes the other bound's value. It rejects negative
// bounds and a minimum above the maximum, naming the fields of owner.
func retryDelays(owner string, minimum, maximum, defaultMinimum, defaultMaximum time.Duration) (time.Duration, time.Duration, error) {
	switch {
	case minimum < 0:
		return minimum, maximum, invalidOption(owner+".RetryDelayMin", minimum, "is negative")
	case maximum < 0:
		return minimum, maximum, invalidOption(owner+".RetryDelayMax", maximum, "is negative")
	}
	switch {
	case minimum == 0 && maximum == 0:
		minimum, maximum = defaultMinimum, defaultMaximum
	case minimum == 0:
		minimum = min(defaultMinimum, maximum)
	case maximum == 0:
		maximum = max(defaultMaximum, minimum)
	}
	if minimum > maximum {
		return minimum, maximum, fmt.Errorf("%w: %s.RetryDelayMin %v exceeds RetryDelayMax %v", ErrInvalidOptions, owner, minimum, maximum)
	}
	return minimum, maximum, nil
}

// invalidOption returns an error wrapping ErrInvalidOptions that names the
// field and its value.
func invalidOption(field string, value any, problem string) error {
	if s, ok := value.(string); ok {
		return fmt.Errorf("%w: %s %q %s", ErrInvalidOptions, field, s, problem)
	}
	return fmt.Errorf("%w: %s %v %s", ErrInvalidOptions, field, value, problem)
}
