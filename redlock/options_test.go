package redlock

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/redistest"
	"github.com/lockmux/lockmux/redlock/internal/naming"
)

func TestOptionsDefaults(t *testing.T) {
	options, err := Options{}.withDefaults()
	require.NoError(t, err)
	assert.Equal(t, defaultDialTimeout, options.DialTimeout)
	assert.Equal(t, DefaultNodeTimeout, options.NodeTimeout)
	assert.Equal(t, defaultDriftFactor, options.DriftFactor)
	assert.Equal(t, defaultRetryDelayMin, options.RetryDelayMin)
	assert.Equal(t, defaultRetryDelayMax, options.RetryDelayMax)
	assert.Equal(t, naming.DefaultClientName, options.ClientName)
	assert.Equal(t, ProtocolAuto, options.Protocol)
	assert.Equal(t, realClock{}, options.clock)
	assert.Nil(t, options.Observer)

	mutexOptions, err := MutexOptions{}.withDefaults(options)
	require.NoError(t, err)
	assert.Equal(t, DefaultTTL, mutexOptions.TTL)
	assert.Equal(t, DefaultMaxHold, mutexOptions.MaxHold)
	assert.Equal(t, defaultRetryDelayMin, mutexOptions.RetryDelayMin)
	assert.Equal(t, defaultRetryDelayMax, mutexOptions.RetryDelayMax)
	assert.Zero(t, mutexOptions.MaxTries)
	assert.Empty(t, mutexOptions.Token)
	assert.Nil(t, mutexOptions.Keys)
}

func TestOptionsWithDefaults(t *testing.T) {
	clock := newManualClock()
	tests := []struct {
		name    string
		options Options
		check   func(t *testing.T, options Options)
		err     string // a part of the error message; empty for no error
	}{
		{
			name:    "values kept",
			options: Options{DialTimeout: time.Second, NodeTimeout: 5 * time.Millisecond, DriftFactor: 0.05, Protocol: ProtocolRESP2, ClientName: "orders-service", clock: clock},
			check: func(t *testing.T, options Options) {
				assert.Equal(t, time.Second, options.DialTimeout)
				assert.Equal(t, 5*time.Millisecond, options.NodeTimeout)
				assert.Equal(t, 0.05, options.DriftFactor)
				assert.Equal(t, ProtocolRESP2, options.Protocol)
				assert.Equal(t, "orders-service", options.ClientName)
				assert.Same(t, clock, options.clock)
			},
		},
		{
			name:    "retry range set",
			options: Options{RetryDelayMin: time.Millisecond, RetryDelayMax: 2 * time.Millisecond},
			check: func(t *testing.T, options Options) {
				assert.Equal(t, time.Millisecond, options.RetryDelayMin)
				assert.Equal(t, 2*time.Millisecond, options.RetryDelayMax)
			},
		},
		{
			name:    "retry minimum above the default maximum",
			options: Options{RetryDelayMin: 100 * time.Millisecond},
			check: func(t *testing.T, options Options) {
				assert.Equal(t, 100*time.Millisecond, options.RetryDelayMin)
				assert.Equal(t, 100*time.Millisecond, options.RetryDelayMax)
			},
		},
		{
			name:    "retry minimum within the default range",
			options: Options{RetryDelayMin: 20 * time.Millisecond},
			check: func(t *testing.T, options Options) {
				assert.Equal(t, 20*time.Millisecond, options.RetryDelayMin)
				assert.Equal(t, defaultRetryDelayMax, options.RetryDelayMax)
			},
		},
		{
			name:    "retry maximum below the default minimum",
			options: Options{RetryDelayMax: 5 * time.Millisecond},
			check: func(t *testing.T, options Options) {
				assert.Equal(t, 5*time.Millisecond, options.RetryDelayMin)
				assert.Equal(t, 5*time.Millisecond, options.RetryDelayMax)
			},
		},
		{name: "negative dial timeout", options: Options{DialTimeout: -1}, err: "Options.DialTimeout -1ns is negative"},
		{name: "negative node timeout", options: Options{NodeTimeout: -time.Millisecond}, err: "Options.NodeTimeout -1ms is negative"},
		{name: "negative drift factor", options: Options{DriftFactor: -0.01}, err: "Options.DriftFactor -0.01 is not in [0, 1)"},
		{name: "drift factor of one", options: Options{DriftFactor: 1}, err: "Options.DriftFactor"},
		{name: "drift factor NaN", options: Options{DriftFactor: math.NaN()}, err: "Options.DriftFactor NaN"},
		{name: "drift factor infinite", options: Options{DriftFactor: math.Inf(1)}, err: "Options.DriftFactor +Inf"},
		{name: "protocol", options: Options{Protocol: 1}, err: "Options.Protocol 1 is not 0, 2 or 3"},
		{name: "negative retry minimum", options: Options{RetryDelayMin: -1}, err: "Options.RetryDelayMin -1ns is negative"},
		{name: "negative retry maximum", options: Options{RetryDelayMax: -1}, err: "Options.RetryDelayMax -1ns is negative"},
		{name: "retry minimum above maximum", options: Options{RetryDelayMin: 2 * time.Second, RetryDelayMax: time.Second}, err: "Options.RetryDelayMin 2s exceeds RetryDelayMax 1s"},
		{name: "client name with a space", options: Options{ClientName: "my service"}, err: `Options.ClientName "my service" holds a space`},
		{name: "client name with a newline", options: Options{ClientName: "a\nb"}, err: "Options.ClientName"},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			options, err := test.options.withDefaults()
			if test.err != "" {
				require.ErrorIs(t, err, ErrInvalidOptions)
				assert.Contains(t, err.Error(), test.err)
				assert.True(t, strings.HasPrefix(err.Error(), "redlock: invalid options: "), err.Error())
				return
			}
			require.NoError(t, err)
			test.check(t, options)
		})
	}
}

func TestMutexOptionsWithDefaults(t *testing.T) {
	client, err := Options{RetryDelayMin: 20 * time.Millisecond, RetryDelayMax: 40 * time.Millisecond}.withDefaults()
	require.NoError(t, err)
	tests := []struct {
		name    string
		client  Options // zero means the client above
		options MutexOptions
		check   func(t *testing.T, options MutexOptions)
		err     string // a part of the error message; empty for no error
	}{
		{
			name:    "client retry range inherited",
			options: MutexOptions{TTL: time.Second},
			check: func(t *testing.T, options MutexOptions) {
				assert.Equal(t, time.Second, options.TTL)
				assert.Equal(t, 20*time.Millisecond, options.RetryDelayMin)
				assert.Equal(t, 40*time.Millisecond, options.RetryDelayMax)
			},
		},
		{
			name:    "retry range overridden",
			options: MutexOptions{RetryDelayMax: 10 * time.Millisecond},
			check: func(t *testing.T, options MutexOptions) {
				assert.Equal(t, 10*time.Millisecond, options.RetryDelayMin)
				assert.Equal(t, 10*time.Millisecond, options.RetryDelayMax)
			},
		},
		{
			name:    "TTL rounded down to a millisecond",
			options: MutexOptions{TTL: 1500*time.Millisecond + 999*time.Microsecond},
			check: func(t *testing.T, options MutexOptions) {
				assert.Equal(t, 1500*time.Millisecond, options.TTL)
			},
		},
		{
			name:    "minimum TTL",
			options: MutexOptions{TTL: MinTTL},
			check: func(t *testing.T, options MutexOptions) {
				assert.Equal(t, MinTTL, options.TTL)
			},
		},
		{
			name:    "renewed TTL of five node timeouts",
			options: MutexOptions{TTL: 250 * time.Millisecond, AutoExtend: true},
			check: func(t *testing.T, options MutexOptions) {
				assert.Equal(t, 250*time.Millisecond, options.TTL)
			},
		},
		{
			name:    "default max hold is at least the TTL",
			client:  Options{MaxTTL: 2 * time.Hour},
			options: MutexOptions{TTL: 2 * time.Hour},
			check: func(t *testing.T, options MutexOptions) {
				assert.Equal(t, 2*time.Hour, options.MaxHold)
			},
		},
		{
			name:    "max hold equal to the TTL",
			options: MutexOptions{TTL: time.Second, MaxHold: time.Second, MaxTries: 3, AutoExtend: true, Fencing: true},
			check: func(t *testing.T, options MutexOptions) {
				assert.Equal(t, time.Second, options.MaxHold)
				assert.Equal(t, 3, options.MaxTries)
				assert.True(t, options.AutoExtend)
				assert.True(t, options.Fencing)
			},
		},
		{
			name:    "generated token resumed",
			options: MutexOptions{Token: "0123456789abcdef0123456789abcdef01234567"},
			check: func(t *testing.T, options MutexOptions) {
				assert.Equal(t, "0123456789abcdef0123456789abcdef01234567", options.Token)
			},
		},
		{
			name:    "foreign token of the longest length",
			options: MutexOptions{Token: strings.Repeat("A-z~!", maxTokenLength/5) + "xyz"},
			check: func(t *testing.T, options MutexOptions) {
				assert.Len(t, options.Token, maxTokenLength)
			},
		},
		{
			name:    "keys copied",
			options: MutexOptions{Keys: []string{"a", "b"}},
			check: func(t *testing.T, options MutexOptions) {
				assert.Equal(t, []string{"a", "b"}, options.Keys)
			},
		},
		{name: "negative TTL", options: MutexOptions{TTL: -time.Second}, err: "MutexOptions.TTL -1s is negative"},
		{name: "TTL below the minimum", options: MutexOptions{TTL: 9 * time.Millisecond}, err: "MutexOptions.TTL 9ms is below MinTTL (10ms)"},
		{name: "TTL below a millisecond", options: MutexOptions{TTL: time.Microsecond}, err: "MutexOptions.TTL 0s is below MinTTL"},
		{
			name:    "TTL within the drift allowance",
			client:  Options{DriftFactor: 0.9, NodeTimeout: 1, DialTimeout: 1, RetryDelayMin: 1, RetryDelayMax: 1},
			options: MutexOptions{TTL: 20 * time.Millisecond},
			err:     "MutexOptions.TTL 20ms does not exceed the drift allowance (20ms)",
		},
		{name: "negative max tries", options: MutexOptions{MaxTries: -1}, err: "MutexOptions.MaxTries -1 is negative"},
		{name: "negative max hold", options: MutexOptions{MaxHold: -time.Second}, err: "MutexOptions.MaxHold -1s is negative"},
		{name: "renewed TTL shorter than five node timeouts", options: MutexOptions{TTL: 249 * time.Millisecond, AutoExtend: true},
			err: "MutexOptions.TTL 249ms of a renewed hold is shorter than five node timeouts (Options.NodeTimeout 50ms)"},
		{name: "max hold shorter than the TTL", options: MutexOptions{TTL: 10 * time.Second, MaxHold: time.Second}, err: "MutexOptions.MaxHold 1s is shorter than TTL (10s)"},
		{name: "negative retry minimum", options: MutexOptions{RetryDelayMin: -1}, err: "MutexOptions.RetryDelayMin -1ns is negative"},
		{name: "retry minimum above maximum", options: MutexOptions{RetryDelayMin: 2, RetryDelayMax: 1}, err: "MutexOptions.RetryDelayMin 2ns exceeds RetryDelayMax 1ns"},
		{name: "token with a space", options: MutexOptions{Token: "a b"}, err: "MutexOptions.Token of 3 bytes"},
		{name: "token with a control character", options: MutexOptions{Token: "a\x00"}, err: "MutexOptions.Token"},
		{name: "token with a non-ASCII character", options: MutexOptions{Token: "é"}, err: "MutexOptions.Token"},
		{name: "token too long", options: MutexOptions{Token: strings.Repeat("a", maxTokenLength+1)}, err: "MutexOptions.Token of 129 bytes"},
		{name: "empty key", options: MutexOptions{Keys: []string{"a", ""}}, err: "MutexOptions.Keys[1] is empty"},
		{name: "repeated key", options: MutexOptions{Keys: []string{"a", "b", "a"}}, err: `MutexOptions.Keys[2] "a" repeats Keys[0]`},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			clientOptions := client
			if test.client != (Options{}) {
				clientOptions = test.client
			}
			options, err := test.options.withDefaults(clientOptions)
			if test.err != "" {
				require.ErrorIs(t, err, ErrInvalidOptions)
				assert.Contains(t, err.Error(), test.err)
				return
			}
			require.NoError(t, err)
			test.check(t, options)
		})
	}
}

func TestMutexOptionsKeysAreCopied(t *testing.T) {
	client, err := Options{}.withDefaults()
	require.NoError(t, err)
	keys := []string{"a", "b"}
	options, err := MutexOptions{Keys: keys}.withDefaults(client)
	require.NoError(t, err)
	keys[0] = "changed"
	assert.Equal(t, []string{"a", "b"}, options.Keys)
}

func TestCheckKeys(t *testing.T) {
	tests := []struct {
		name  string
		key   string
		extra []string
		err   string
	}{
		{name: "single key", key: "a"},
		{name: "distinct extra keys", key: "a", extra: []string{"b", "c"}},
		{name: "empty key", key: "", err: "the key is empty"},
		{name: "extra key repeats the key", key: "a", extra: []string{"b", "a"}, err: `MutexOptions.Keys[1] repeats the key "a"`},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			err := checkKeys(test.key, test.extra)
			if test.err == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorIs(t, err, ErrInvalidOptions)
			assert.ErrorContains(t, err, test.err)
		})
	}
}

// The retry delay is drawn from the retry range; with RetryBackoff, from
// [b/2, b] where b doubles with each failed attempt from RetryDelayMin up
// to RetryDelayMax.
func TestRetryDelayPolicies(t *testing.T) {
	client := startCluster(t, 1, redistest.Options{}).client(t, Options{})
	jittered := client.NewMutex("jittered", MutexOptions{RetryDelayMin: 10 * time.Millisecond, RetryDelayMax: 60 * time.Millisecond})
	backoff := client.NewMutex("backoff", MutexOptions{RetryDelayMin: 10 * time.Millisecond, RetryDelayMax: 60 * time.Millisecond, RetryBackoff: true})
	for range 200 {
		for attempt := 1; attempt <= 6; attempt++ {
			d := jittered.retryDelay(attempt)
			assert.True(t, d >= 10*time.Millisecond && d <= 60*time.Millisecond, "jittered, attempt %d: %v", attempt, d)
		}
		bounds := []time.Duration{10, 20, 40, 60, 60, 60} // b for attempts 1 to 6, in ms
		for i, b := range bounds {
			b *= time.Millisecond
			d := backoff.retryDelay(i + 1)
			assert.True(t, d >= b/2 && d <= b, "backoff, attempt %d: %v not in [%v, %v]", i+1, d, b/2, b)
		}
	}
}

// A Lock that MaxTries stops says how many attempts failed, and its error
// still matches ErrNotAcquired and holds the last attempt's QuorumError.
func TestMaxTriesSaysHowManyAttemptsFailed(t *testing.T) {
	client := startCluster(t, 3, redistest.Options{}).client(t, Options{})
	ctx := context.Background()
	holder := client.NewMutex("bounded", MutexOptions{TTL: 10 * time.Second})
	require.NoError(t, holder.Lock(ctx))
	defer holder.Unlock(ctx)
	err := client.NewMutex("bounded", MutexOptions{MaxTries: 3, RetryDelayMin: time.Millisecond, RetryDelayMax: time.Millisecond}).Lock(ctx)
	require.ErrorIs(t, err, ErrNotAcquired)
	assert.Contains(t, err.Error(), "3 attempts failed (MutexOptions.MaxTries)")
	var quorumError *QuorumError
	assert.ErrorAs(t, err, &quorumError)
}
