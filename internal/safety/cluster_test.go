//go:build linux

package safety_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/faultnet"
	"github.com/lockmux/lockmux/internal/redistest"
	"github.com/lockmux/lockmux/internal/safety"
)

// nodeNames name the lock nodes in messages, as RELIABILITY.md does.
var nodeNames = []string{"A", "B", "C", "D", "E", "F", "G"}

// cluster is the servers of a run: N lock nodes and one resource node for
// the fenced writes, all real redis-server processes on loopback.
type cluster struct {
	t        testing.TB
	nodes    []*redistest.Server
	resource *redistest.Server
	// clocks are the clock files of the nodes' LD_PRELOAD shim, "" without
	// the shim; offsets and rates are what was last written to them, and
	// clockSequence numbers the writes, which the shim acknowledges.
	clocks        []string
	offsets       []int64
	rates         []float64
	clockSequence int64
	// replica, with clusterOptions.replica, is a replica of the last lock
	// node, with a clock file of its own (replicaClock): F34 promotes it,
	// and the two swap places (see nemesis.failover).
	replica      *redistest.Server
	replicaClock string
	// proxied are, per node, the proxies that proxies started for it,
	// which F34 points at the promoted replica.
	proxiedMu sync.Mutex
	proxied   [][]*faultnet.Proxy
	// member, with clusterOptions.member, is a Redis Cluster of three
	// masters with a replica each, one more lock node after the plain
	// ones: the clients reach it directly, as its redirects name its
	// servers' own addresses.
	member *redistest.Cluster
}

// clusterOptions configures startCluster.
type clusterOptions struct {
	nodes int
	// shim starts the lock nodes under the clock shim; the caller has
	// checked that it could be built.
	shim string
	// replica starts a replica of the last lock node (cluster.replica).
	replica bool
	// member starts a Redis Cluster member (cluster.member).
	member bool
}

// startCluster starts the lock nodes with appendonly yes and appendfsync
// always, ready for the faults of the chaos run: LOADING answers during a
// slow load (F22), noeviction (F20), DEBUG from loopback (F28).
func startCluster(t testing.TB, options clusterOptions) *cluster {
	t.Helper()
	redistest.RequireReal(t)
	c := &cluster{t: t}
	clockDir := t.TempDir()
	// nodeOptions are the options of a lock node whose clock file is
	// named name.
	nodeOptions := func(name string, extra ...string) (redistest.Options, string) {
		node := redistest.Options{
			Persistence: redistest.PersistenceAOF,
			ExtraArgs: append([]string{
				"--maxmemory-policy", "noeviction",
				"--key-load-delay", "1000", // µs per key: F22 makes loading slow with filler keys
				"--loading-process-events-interval-bytes", "1024",
				"--repl-diskless-sync-delay", "0", // a replica is fed at once
			}, extra...),
		}
		clock := ""
		if options.shim != "" {
			clock = filepath.Join(clockDir, name+".clk")
			require.NoError(t, os.WriteFile(clock, []byte("0 1.0\n"), 0o644))
			node.Env = []string{"LD_PRELOAD=" + options.shim, "CLOCKSHIFT_FILE=" + clock}
		}
		return node, clock
	}
	for i := range options.nodes {
		node, clock := nodeOptions(nodeNames[i])
		c.nodes = append(c.nodes, redistest.Start(t, node))
		c.clocks = append(c.clocks, clock)
		c.offsets = append(c.offsets, 0)
		c.rates = append(c.rates, 1)
	}
	if options.replica {
		last := c.nodes[len(c.nodes)-1]
		var replica redistest.Options
		replica, c.replicaClock = nodeOptions(nodeNames[len(c.nodes)-1]+"-replica", "--replicaof", "127.0.0.1", strconv.Itoa(last.Port()))
		c.replica = redistest.Start(t, replica)
		c.awaitReplica()
	}
	if options.member {
		c.member = redistest.StartCluster(t, 3, true, redistest.Options{})
	}
	c.resource = redistest.Start(t, redistest.Options{})
	return c
}

// awaitReplica waits until the replica follows its master.
func (c *cluster) awaitReplica() {
	c.t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(c.replica.Do(c.t, "INFO", "replication"), "master_link_status:up"); {
		require.False(c.t, time.Now().After(deadline), "the replica did not follow its master")
		time.Sleep(10 * time.Millisecond) // a process's state: nothing to wait on
	}
}

// addresses returns the nodes' own addresses, the cluster member's last.
func (c *cluster) addresses() []string {
	var out []string
	for _, node := range c.nodes {
		out = append(out, node.Addr())
	}
	return c.withMember(out)
}

// withMember returns addresses with the cluster member's appended, if
// there is one.
func (c *cluster) withMember(addresses []string) []string {
	if c.member == nil {
		return addresses
	}
	return append(addresses, c.member.Address())
}

// proxies starts one faultnet proxy per node for one client.
func (c *cluster) proxies(t testing.TB) []*faultnet.Proxy {
	c.proxiedMu.Lock()
	defer c.proxiedMu.Unlock()
	if c.proxied == nil {
		c.proxied = make([][]*faultnet.Proxy, len(c.nodes))
	}
	var out []*faultnet.Proxy
	for i, node := range c.nodes {
		proxy := faultnet.New(t, node.Addr())
		c.proxied[i] = append(c.proxied[i], proxy)
		out = append(out, proxy)
	}
	return out
}

// retarget points every proxy of node i at upstream (see
// faultnet.Proxy.Retarget).
func (c *cluster) retarget(i int, upstream string) {
	c.proxiedMu.Lock()
	defer c.proxiedMu.Unlock()
	for _, proxy := range c.proxied[i] {
		proxy.Retarget(upstream)
	}
}

// proxyAddresses returns the addresses clients dial for proxies.
func proxyAddresses(proxies []*faultnet.Proxy) []string {
	var out []string
	for _, p := range proxies {
		out = append(out, p.Addr())
	}
	return out
}

// setClock moves the wall clock of node i: offset milliseconds ahead of
// its continuous course, which runs at rate. A change of rate does not
// jump (the shim rebases it); a change of offset does. It returns once the
// node applied the change (see awaitClock).
func (c *cluster) setClock(i int, offsetMilliseconds int64, rate float64) {
	c.t.Helper()
	require.NotEmpty(c.t, c.clocks[i], "the nodes run without the clock shim")
	c.clockSequence++
	temporary := c.clocks[i] + ".new"
	text := strconv.FormatInt(offsetMilliseconds, 10) + " " + strconv.FormatFloat(rate, 'f', -1, 64) + " " +
		strconv.FormatInt(c.clockSequence, 10) + "\n"
	require.NoError(c.t, os.WriteFile(temporary, []byte(text), 0o644))
	require.NoError(c.t, os.Rename(temporary, c.clocks[i]))
	c.offsets[i], c.rates[i] = offsetMilliseconds, rate
	c.awaitClock(i, c.clockSequence)
}

// awaitClock waits until node i's shim acknowledged the clock file's write
// number sequence: the shim writes the number of each write it applied to
// the file's ".ack" beside it. The shim reads the clock file when the
// server reads its clock, at most every 10 ms, so awaitClock has the node
// read its clock (TIME) until the acknowledgement comes. A node that does
// not answer is down or stopped: a new process reads the file at its
// first reading of the clock, before it answers anything, and a stopped
// one when it runs again, so there is nothing to wait for.
func (c *cluster) awaitClock(i int, sequence int64) {
	c.t.Helper()
	want := strconv.FormatInt(sequence, 10) + "\n"
	deadline := time.Now().Add(10 * time.Second)
	for {
		if acknowledged, err := os.ReadFile(c.clocks[i] + ".ack"); err == nil && string(acknowledged) == want {
			return
		}
		require.True(c.t, time.Now().Before(deadline), "node %s did not apply its clock within 10 s", nodeNames[i])
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		_, err := safety.Command(ctx, c.nodes[i].Addr(), "TIME")
		cancel()
		if err != nil {
			return
		}
		time.Sleep(time.Millisecond) // the interval of the poll for the acknowledgement
	}
}

// resourceLog reads the final log of the fenced resource for keys.
func (c *cluster) resourceLog(t testing.TB, keys []string) map[string][]string {
	t.Helper()
	out := make(map[string][]string)
	for _, key := range keys {
		reply, err := safety.Command(context.Background(), c.resource.Addr(), "LRANGE", resourceLogKey(key), "0", "-1")
		require.NoError(t, err)
		require.False(t, reply.IsError(), "LRANGE: %s", reply)
		log := []string{}
		for _, element := range reply.Elems {
			log = append(log, string(element.Str))
		}
		out[key] = log
	}
	return out
}

// leftoverLocks lists, on every node and every master of the cluster
// member, the lock keys still there, fencing and ticket counters excepted.
func (c *cluster) leftoverLocks(t testing.TB) []string {
	t.Helper()
	servers, names := c.nodes, nodeNames[:len(c.nodes)]
	if c.member != nil {
		servers = append(slices.Clone(servers), c.member.Masters...)
		names = slices.Clone(names)
		for i := range c.member.Masters {
			names = append(names, fmt.Sprintf("%s%d", memberName, i))
		}
	}
	var leftovers []string
	for i, node := range servers {
		keys, err := safety.LockKeys(context.Background(), node.Addr(), "lock:*", fenceCounterSuffix, ticketCounterSuffix)
		require.NoError(t, err)
		for _, key := range keys {
			leftovers = append(leftovers, fmt.Sprintf("%s:%s", names[i], key))
		}
	}
	return leftovers
}

// memberName names the cluster member in messages; its masters are
// memberName0 to memberName2, in the order of Cluster.Masters.
const memberName = "cluster"

// fenceCounterSuffix and ticketCounterSuffix end redlock's fencing
// counters and the ticket counters of fair locks, which have no TTL by
// design.
const (
	fenceCounterSuffix  = ":lockmux-fence"
	ticketCounterSuffix = ":tickets"
)

// shimSource is the LD_PRELOAD clock shim of RELIABILITY.md §7.3, changed
// so that a change of rate is continuous: it rebases the fake clock on the
// moment the rate changes instead of multiplying the whole run by the new
// rate, which would jump. The clock file holds "offset_ms rate sequence";
// the fake wall clock is base_fake + (real − base_real)·rate + offset, and
// the shim writes the sequence number of each change it applied to the
// file's ".ack" beside it, for setClock to wait on. Only
// CLOCK_REALTIME, gettimeofday and time are changed: redis-server's timers
// use CLOCK_MONOTONIC, which passes through. Raw syscalls avoid the
// dlsym recursion that breaks libfaketime with jemalloc.
const shimSource = `#define _GNU_SOURCE
#include <time.h>
#include <sys/time.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <fcntl.h>
#include <stdlib.h>
#include <stdio.h>
#include <pthread.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long long base_real, base_fake, offset_ns, last_read, acknowledged;
static double rate = 1.0;
static int started;

static long long raw(clockid_t c) {
	struct timespec t;
	syscall(SYS_clock_gettime, c, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void acknowledge(const char *path, long long sequence) {
	char name[4096], text[32];
	int n = snprintf(name, sizeof name, "%s.ack", path);
	if (n < 0 || n >= (int)sizeof name) return;
	int fd = open(name, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) return;
	n = snprintf(text, sizeof text, "%lld\n", sequence);
	if (write(fd, text, n) != n) { close(fd); return; }
	close(fd);
}

static void refresh(long long real) {
	long long mono = raw(CLOCK_MONOTONIC);
	if (last_read && mono - last_read < 10000000LL) return;
	last_read = mono;
	const char *path = getenv("CLOCKSHIFT_FILE");
	if (!path) return;
	int fd = open(path, O_RDONLY);
	if (fd < 0) return;
	char b[64];
	ssize_t n = read(fd, b, sizeof b - 1);
	close(fd);
	if (n <= 0) return;
	b[n] = 0;
	char *end;
	long long off = strtoll(b, &end, 10);
	if (end == b) return;
	double r = strtod(end, &end);
	long long sequence = strtoll(end, NULL, 10);
	if (r <= 0) r = 1.0;
	if (r != rate) {
		base_fake = base_fake + (long long)((real - base_real) * rate);
		base_real = real;
		rate = r;
	}
	offset_ns = off * 1000000LL;
	if (sequence != acknowledged) {
		acknowledge(path, sequence);
		acknowledged = sequence;
	}
}

static long long fake_now(void) {
	long long real = raw(CLOCK_REALTIME);
	pthread_mutex_lock(&lock);
	if (!started) { base_real = real; base_fake = real; started = 1; }
	refresh(real);
	long long f = base_fake + (long long)((real - base_real) * rate) + offset_ns;
	pthread_mutex_unlock(&lock);
	return f;
}

int clock_gettime(clockid_t c, struct timespec *ts) {
	if (c != CLOCK_REALTIME && c != CLOCK_REALTIME_COARSE) return syscall(SYS_clock_gettime, c, ts);
	long long f = fake_now();
	ts->tv_sec = f / 1000000000LL;
	ts->tv_nsec = f % 1000000000LL;
	return 0;
}

int gettimeofday(struct timeval *tv, void *tz) {
	(void)tz;
	long long f = fake_now();
	if (tv) { tv->tv_sec = f / 1000000000LL; tv->tv_usec = (f % 1000000000LL) / 1000; }
	return 0;
}

time_t time(time_t *t) {
	long long f = fake_now();
	time_t s = f / 1000000000LL;
	if (t) *t = s;
	return s;
}
`

// buildShim compiles the clock shim with gcc into a temporary directory of
// t and returns the library's path, or "" with the reason when gcc is
// missing or fails.
func buildShim(t testing.TB) (string, string) {
	t.Helper()
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		return "", "gcc is not installed, so the LD_PRELOAD clock shim of RELIABILITY.md §7.3 cannot be built"
	}
	dir := t.TempDir()
	source := filepath.Join(dir, "clockshift.c")
	library := filepath.Join(dir, "libclockshift.so")
	require.NoError(t, os.WriteFile(source, []byte(shimSource), 0o644))
	output, err := exec.Command(gcc, "-O2", "-shared", "-fPIC", "-o", library, source, "-lpthread").CombinedOutput()
	if err != nil {
		return "", fmt.Sprintf("gcc failed to build the clock shim: %v\n%s", err, output)
	}
	return library, ""
}
