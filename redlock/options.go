package redlock

import (
	"crypto/tls"
	"fmt"
	"math"
	"time"

	"github.com/lockmux/lockmux/mux"
	"github.com/lockmux/lockmux/redlock/internal/connection"
	"github.com/lockmux/lockmux/redlock/internal/naming"
	"github.com/lockmux/lockmux/redlock/internal/round"
)

// Defaults of Options. A zero field of Options means its default.
const (
	defaultDialTimeout = mux.DefaultDialTimeout
	// DefaultNodeTimeout bounds the wait for one node's reply in a round.
	DefaultNodeTimeout = 50 * time.Millisecond
	defaultDriftFactor = 0.01
	// The retry delay range of a blocked Lock.
	defaultRetryDelayMin = 10 * time.Millisecond
	defaultRetryDelayMax = 60 * time.Millisecond
)

// Protocol is the RESP version spoken with the nodes, for Options.Protocol.
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

// QuarantineMode says whether a Client keeps nodes that may have lost keys
// out of the votes, for Options.Quarantine.
type QuarantineMode int

// Values of Options.Quarantine.
const (
	// QuarantineOn keeps such a node out for MaxTTL. It is the default.
	QuarantineOn QuarantineMode = iota
	// QuarantineOff counts every vote: a node restarted without its data
	// can give a held lock to a second client.
	QuarantineOff
)

// Defaults and limits of MutexOptions.
const (
	// DefaultTTL is how long a lock key lives on a node unless extended.
	DefaultTTL = 10 * time.Second
	// MinTTL is the shortest TTL accepted.
	MinTTL = 10 * time.Millisecond
	// DefaultMaxHold bounds one hold through its extensions.
	DefaultMaxHold = time.Hour
)

// nodeTimeoutsPerTTL is the least TTL of a renewed hold, in node timeouts.
// A renewal due at a third of the TTL must finish before the hold ends,
// two node timeouts before its validity (docs/renewal.md).
const nodeTimeoutsPerTTL = 5

// Options configures a Client. The zero value is usable: every zero field
// means its default.
type Options struct {
	// Username and Password authenticate every connection, over the
	// addresses' user information. Empty means none.
	Username, Password string

	// TLSConfig is used for rediss:// addresses. Nil verifies the server
	// against the system roots.
	TLSConfig *tls.Config

	// DialTimeout bounds one dial to a node with its handshake. Zero means
	// 2 s; negative is invalid.
	DialTimeout time.Duration

	// NodeTimeout bounds the wait for one node's reply in a round, for
	// every caller of a connection; a ctx never shortens it. Keep it small
	// against the TTL: a renewed hold's TTL must last five of them. Zero
	// means DefaultNodeTimeout (50 ms); negative is invalid.
	NodeTimeout time.Duration

	// DriftFactor is the fraction of the TTL allowed for clock drift: a
	// hold's validity is ttl − elapsed − (ttl·DriftFactor + 2 ms). Zero
	// means 0.01; it must be in [0, 1).
	DriftFactor float64

	// RetryDelayMin and RetryDelayMax bound the random delay a blocked
	// Lock waits between attempts (docs/waiting.md). Zero means 10 ms and
	// 60 ms, or the other bound where that default would cross it.
	// Negative values, or a minimum above the maximum, are invalid.
	RetryDelayMin, RetryDelayMax time.Duration

	// Quarantine keeps a node that may have lost keys (a restart, a
	// promotion, a flush) out of the votes for MaxTTL (ErrQuarantined).
	// The zero value is QuarantineOn; QuarantineOff does not apply to
	// Sentinel and Cluster members (docs/deployments.md).
	Quarantine QuarantineMode

	// MaxTTL is the longest TTL any client of these nodes uses, and the
	// length of the quarantine. A longer TTL or ExtendFor is refused with
	// ErrInvalidOptions. Zero means DefaultTTL.
	MaxTTL time.Duration

	// Observer is told of acquisitions, releases, extensions, losses and
	// node errors. Nil means none.
	Observer Observer

	// Protocol selects the RESP version. Zero means ProtocolAuto.
	Protocol Protocol

	// ClientName is sent with CLIENT SETNAME. Empty means "lockmux". It
	// must be printable ASCII without spaces.
	ClientName string

	// clock tells the time for validity and schedules; nil means the real
	// clock. Timers wait in real time, and what they wake reads the clock
	// again.
	clock clock
}

// MutexOptions configures one Mutex. The zero value is usable: every zero
// field means its default.
type MutexOptions struct {
	// TTL is how long the lock keys live unless extended, rounded down to
	// a millisecond. Zero means DefaultTTL (10 s). It must be at least
	// MinTTL and the drift allowance, at most Options.MaxTTL, and with
	// AutoExtend at least five Options.NodeTimeout; else ErrInvalidOptions.
	TTL time.Duration

	// RetryDelayMin and RetryDelayMax override the Client's for this
	// Mutex, under the same rules. Zero means the Client's values.
	RetryDelayMin, RetryDelayMax time.Duration

	// MaxTries bounds the attempts of one Lock; the error then matches
	// ErrNotAcquired. Zero means no bound; negative is invalid.
	MaxTries int

	// RetryBackoff doubles the retry delay: after failed attempt k it is
	// drawn from [b/2, b], b = RetryDelayMin·2^(k−1) up to RetryDelayMax.
	// Off by default.
	RetryBackoff bool

	// AutoExtend renews the hold every third of the TTL until it is
	// released, lost, or has lasted MaxHold. Done then closes two node
	// timeouts before the validity ends. Off by default; Client.Do implies
	// it (docs/renewal.md).
	AutoExtend bool

	// Fencing makes each acquisition return a fencing token that strictly
	// increases per resource, at the cost of a second round trip. Off by
	// default; it needs nodes with persistence (docs/fencing.md).
	Fencing bool

	// Fair serves blocked Locks in the order they came. Every client of a
	// lock must set it alike; it does not combine with Keys. Off by default
	// (docs/lock-family.md).
	Fair bool

	// MaxHold bounds one hold: no extension moves its expiry beyond its
	// acquisition plus MaxHold. Zero means DefaultMaxHold (1 hour); it must
	// not be shorter than TTL.
	MaxHold time.Duration

	// Token resumes a hold taken earlier, in any process, if a quorum
	// still holds it; its validity is the TTL they have left. Empty means a
	// new random token per acquisition. It must be printable ASCII without
	// spaces, at most 128 bytes (docs/lock-family.md).
	Token string

	// Metadata is stored with each hold: the keys' value is "TOKEN
	// METADATA". At most 256 bytes of printable ASCII. A resumption must
	// give the same Metadata.
	Metadata string

	// Keys are extra keys locked with the Mutex's own: a node votes only
	// if it set them all. They must be distinct and not empty.
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

// withDefaults is Options.withDefaults for a Mutex, with client's retry
// delays; client must have its defaults. Keys is copied.
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
	case round.Validity(o.TTL, 0, client.DriftFactor) <= 0:
		return o, invalidOption("MutexOptions.TTL", o.TTL, "does not exceed the drift allowance ("+round.Drift(o.TTL, client.DriftFactor).String()+")")
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
// is empty or among its extra keys.
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
// takes its default, clamped by the other bound. Errors name owner's fields.
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
