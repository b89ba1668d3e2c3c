// Package manyholds measures one Client that keeps many renewed holds:
// how long they take to take, the memory each costs, the client's CPU
// while it renews them, the commands a renewal costs the nodes, how late
// the renewals run against their schedule, and how many holds are lost.
// bench's BenchmarkHolds and `redlock bench --holds` run it.
package manyholds

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/lockmux/lockmux/redlock"
)

// Defaults of Options.
const (
	DefaultTTL    = 30 * time.Second
	DefaultKeep   = 2 * time.Minute
	DefaultTakers = 256
	DefaultPrefix = "manyholds:"
)

// Options says what Run measures. The zero value of a field means its
// default.
type Options struct {
	// Holds is the number of holds, each a Mutex with AutoExtend.
	Holds int
	// TTL is the holds' TTL (DefaultTTL, 30 s). Run raises the Client's
	// MaxTTL to it.
	TTL time.Duration
	// Keep is how long the holds are kept once taken (DefaultKeep).
	Keep time.Duration
	// Takers is the number of goroutines that take the holds
	// (DefaultTakers).
	Takers int
	// Prefix starts every key (DefaultPrefix); the hold's index follows.
	Prefix string
	// Client is the Client's options; Run sets its Observer and MaxTTL.
	Client redlock.Options
	// Progress, when not nil, is called about once a second while the
	// holds are kept, with the time kept so far and the holds lost.
	Progress func(kept time.Duration, lost int64)
}

// Result is what Run measured.
type Result struct {
	Holds, Nodes int
	TTL          time.Duration
	// TakenIn is the time from the first Lock to the last one's return.
	TakenIn time.Duration
	// BytesPerHold is the live heap the holds added, less their keys,
	// divided by Holds, measured after a garbage collection at the end of
	// the keep, once each hold was renewed; BytesPerHoldTaken is the same
	// right after they were taken.
	BytesPerHold, BytesPerHoldTaken float64
	// Kept is how long the holds were kept, and CPU the client process's
	// CPU time (user and system) meanwhile.
	Kept, CPU time.Duration
	// Renewals counts the automatic extensions while kept, and
	// FailedRenewals those that failed.
	Renewals, FailedRenewals uint64
	// Commands counts the commands the client sent the nodes while kept:
	// the scripts they ran (EVALSHA and EVAL). NodeCommands counts every
	// command they processed, those the scripts called included.
	Commands, NodeCommands uint64
	// LatenessP99 and LatenessMax are the 99th percentile and the maximum
	// of how late renewals started against their schedule: a third of the
	// TTL after the hold's previous extension, or its acquisition.
	LatenessP99, LatenessMax time.Duration
	// Lost counts the holds lost by the end.
	Lost int64
}

// CoreShare is the share of one core the client used while it kept the
// holds: 0.1 is 10 %.
func (r Result) CoreShare() float64 { return r.CPU.Seconds() / r.Kept.Seconds() }

// CommandsPerRenewal is the commands sent per renewal while kept.
func (r Result) CommandsPerRenewal() float64 { return perRenewal(r.Commands, r.Renewals) }

// NodeCommandsPerRenewal is the commands the nodes processed per renewal
// while kept, those the scripts called included.
func (r Result) NodeCommandsPerRenewal() float64 { return perRenewal(r.NodeCommands, r.Renewals) }

func perRenewal(count, renewals uint64) float64 {
	if renewals == 0 {
		return 0
	}
	return float64(count) / float64(renewals)
}

// Run takes opts.Holds renewed holds on one new Client over the nodes,
// keeps them for opts.Keep, releases them and reports what it measured.
func Run(ctx context.Context, addresses []string, opts Options) (Result, error) {
	opts = opts.withDefaults()
	result := Result{Holds: opts.Holds, Nodes: len(addresses), TTL: opts.TTL}
	keys := make([]string, opts.Holds)
	keyBytes := 0
	for i := range keys {
		keys[i] = opts.Prefix + strconv.Itoa(i)
		keyBytes += len(keys[i])
	}
	watch := newWatch(opts.Holds, opts.TTL/3, len(opts.Prefix))
	clientOptions := opts.Client
	clientOptions.Observer = watch
	clientOptions.MaxTTL = max(clientOptions.MaxTTL, opts.TTL)
	counter, err := newCommandCounter(addresses)
	if err != nil {
		return result, err
	}
	defer counter.close()

	heapBefore := liveHeap()
	client, err := redlock.New(addresses, clientOptions)
	if err != nil {
		return result, err
	}
	defer client.Close()
	mutexes := make([]*redlock.Mutex, opts.Holds)
	start := time.Now()
	if err := take(ctx, client, keys, mutexes, opts, watch); err != nil {
		return result, err
	}
	result.TakenIn = time.Since(start)
	// The keys are the caller's, and the slice of Mutexes the harness's.
	harness := int64(keyBytes) + int64(opts.Holds)*8
	bytesPerHold := func() float64 {
		return float64(int64(liveHeap())-int64(heapBefore)-harness) / float64(opts.Holds)
	}
	result.BytesPerHoldTaken = bytesPerHold()

	commandsBefore, err := counter.count(ctx)
	if err != nil {
		return result, err
	}
	watch.counting.Store(true)
	cpuBefore := processCPU()
	keepStart := time.Now()
	keep(ctx, opts, watch)
	result.Kept = time.Since(keepStart)
	result.CPU = processCPU() - cpuBefore
	watch.counting.Store(false)
	commandsAfter, err := counter.count(ctx)
	if err != nil {
		return result, err
	}
	result.Commands = commandsAfter.scripts - commandsBefore.scripts
	result.NodeCommands = commandsAfter.all - commandsBefore.all
	result.BytesPerHold = bytesPerHold()
	result.Renewals, result.FailedRenewals = watch.renewals.Load(), watch.failed.Load()
	lateness := watch.lateness.Summary()
	result.LatenessP99, result.LatenessMax = lateness.P99, lateness.Maximum
	for _, m := range mutexes {
		select {
		case <-m.Done():
			result.Lost++
		default:
		}
	}
	release(mutexes, opts.Takers)
	return result, ctx.Err()
}

func (o Options) withDefaults() Options {
	if o.TTL == 0 {
		o.TTL = DefaultTTL
	}
	if o.Keep == 0 {
		o.Keep = DefaultKeep
	}
	if o.Takers == 0 {
		o.Takers = DefaultTakers
	}
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	return o
}

// take locks a Mutex per key with opts.Takers goroutines.
func take(ctx context.Context, client *redlock.Client, keys []string, mutexes []*redlock.Mutex, opts Options, watch *watch) error {
	var next atomic.Int64
	var group sync.WaitGroup
	errs := make([]error, opts.Takers)
	for taker := range opts.Takers {
		group.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(keys) || ctx.Err() != nil {
					return
				}
				m := client.NewMutex(keys[i], redlock.MutexOptions{TTL: opts.TTL, AutoExtend: true})
				if err := m.Lock(ctx); err != nil {
					errs[taker] = fmt.Errorf("manyholds: lock %s: %w", keys[i], err)
					return
				}
				watch.taken(i)
				mutexes[i] = m
			}
		})
	}
	group.Wait()
	if err := errors.Join(errs...); err != nil {
		release(mutexes, opts.Takers)
		return err
	}
	return ctx.Err()
}

// keep waits opts.Keep, or until ctx ends, reporting progress.
func keep(ctx context.Context, opts Options, watch *watch) {
	end := time.Now().Add(opts.Keep)
	ticker := time.NewTicker(time.Second)
	defer ticker.Stop()
	timer := time.NewTimer(opts.Keep)
	defer timer.Stop()
	start := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
			return
		case now := <-ticker.C:
			if opts.Progress != nil && now.Before(end) {
				opts.Progress(now.Sub(start), watch.lost.Load())
			}
		}
	}
}

// release unlocks the Mutexes taken, with takers goroutines.
func release(mutexes []*redlock.Mutex, takers int) {
	var next atomic.Int64
	var group sync.WaitGroup
	for range takers {
		group.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(mutexes) {
					return
				}
				if m := mutexes[i]; m != nil {
					_ = m.Unlock(context.Background())
				}
			}
		})
	}
	group.Wait()
}

// liveHeap returns the bytes of live heap objects after a collection.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(sample)
	return sample[0].Value.Uint64()
}

// processCPU returns the user and system CPU time of the process so far.
func processCPU() time.Duration {
	var usage syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &usage); err != nil {
		return 0
	}
	return time.Duration(usage.Utime.Nano() + usage.Stime.Nano())
}
