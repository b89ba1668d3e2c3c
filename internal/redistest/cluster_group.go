package redistest

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// clusterWaitTimeout bounds the waits of a Cluster: for its nodes to meet,
// for its state to be ok, for a replica to follow, for a failover.
const clusterWaitTimeout = 30 * time.Second

// slotCount is the number of hash slots of a Redis Cluster.
const slotCount = 16384

// Cluster is a Redis Cluster started for a test: masters that share the
// slots evenly and, when asked for, one replica per master, each a
// redis-server process on a loopback port.
type Cluster struct {
	// Masters are the masters as started, Replicas[i] the replica of
	// Masters[i] (none without replicas): after a failover, roles differ.
	Masters  []*Server
	Replicas []*Server
	t        testing.TB
}

// StartCluster starts a cluster of masters masters, with a replica each
// when withReplicas is set, every server with options, and returns once
// every node sees the cluster's state ok. It forms the cluster with
// CLUSTER ADDSLOTSRANGE, CLUSTER MEET and CLUSTER REPLICATE, as
// redis-cli --cluster create does. It needs a real redis-server (7.0 or
// later); with the miniredis fallback it skips the test.
func StartCluster(t testing.TB, masters int, withReplicas bool, options Options) *Cluster {
	t.Helper()
	RequireReal(t)
	options.ExtraArgs = append(append([]string(nil), options.ExtraArgs...),
		"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "2000",
		"--repl-diskless-sync-delay", "0")
	c := &Cluster{t: t}
	for range masters {
		c.Masters = append(c.Masters, Start(t, options))
	}
	if withReplicas {
		for range masters {
			c.Replicas = append(c.Replicas, Start(t, options))
		}
	}
	for i, master := range c.Masters {
		first, last := i*slotCount/masters, (i+1)*slotCount/masters-1
		c.require(master, "OK", "CLUSTER", "ADDSLOTSRANGE", strconv.Itoa(first), strconv.Itoa(last))
	}
	all := c.Servers()
	for _, server := range all[1:] {
		c.require(server, "OK", "CLUSTER", "MEET", loopbackHost, strconv.Itoa(all[0].Port()))
	}
	for _, server := range all {
		c.waitFor("the nodes to meet", func() bool {
			return strings.Count(server.Do(t, "CLUSTER", "NODES"), " connected") == len(all)
		})
	}
	for i, replica := range c.Replicas {
		c.require(replica, "OK", "CLUSTER", "REPLICATE", c.Masters[i].Do(t, "CLUSTER", "MYID"))
		c.waitFor("the replica to follow its master", func() bool {
			return strings.Contains(replica.Do(t, "INFO", "replication"), "master_link_status:up")
		})
	}
	c.WaitOK()
	return c
}

// Servers returns every server of the cluster, masters first.
func (c *Cluster) Servers() []*Server {
	return append(append([]*Server(nil), c.Masters...), c.Replicas...)
}

// Address returns the cluster's address in the redis-cluster:// form,
// every node named.
func (c *Cluster) Address() string {
	servers := c.Servers()
	parameters := make([]string, 0, len(servers)-1)
	for _, server := range servers[1:] {
		parameters = append(parameters, "addr="+server.Addr())
	}
	address := "redis-cluster://" + servers[0].Addr()
	if len(parameters) > 0 {
		address += "?" + strings.Join(parameters, "&")
	}
	return address
}

// WaitOK waits until every node says cluster_state:ok.
func (c *Cluster) WaitOK() {
	c.t.Helper()
	c.waitOK(nil)
}

// waitOK waits until every node but gone says cluster_state:ok.
func (c *Cluster) waitOK(gone *Server) {
	c.t.Helper()
	for _, server := range c.Servers() {
		if server == gone {
			continue
		}
		c.waitFor("the cluster's state to be ok", func() bool {
			return strings.Contains(server.Do(c.t, "CLUSTER", "INFO"), "cluster_state:ok")
		})
	}
}

// MasterOf returns the server that serves slot now, as the first server
// that answers says.
func (c *Cluster) MasterOf(slot int) *Server {
	c.t.Helper()
	var nodes string
	for _, server := range c.Servers() {
		reply, err := roundTrip(server.Addr(), server.TLSConfig(), server.opts.Password, doTimeout, "CLUSTER", "NODES")
		if err == nil {
			nodes = reply
			break
		}
	}
	for _, line := range strings.Split(nodes, "\n") {
		fields := strings.Fields(line)
		if len(fields) < 9 || !strings.Contains(fields[2], "master") || strings.Contains(fields[2], "fail") {
			continue
		}
		for _, served := range fields[8:] {
			first, last, found := strings.Cut(served, "-")
			if !found {
				last = first
			}
			low, lowErr := strconv.Atoi(first)
			high, highErr := strconv.Atoi(last)
			if lowErr == nil && highErr == nil && low <= slot && slot <= high {
				return c.serverAt(fields[1])
			}
		}
	}
	c.t.Fatalf("redistest: no master serves slot %d", slot)
	return nil
}

// serverAt returns the server whose CLUSTER NODES address ("ip:port@bus")
// is address.
func (c *Cluster) serverAt(address string) *Server {
	hostPort, _, _ := strings.Cut(address, "@")
	for _, server := range c.Servers() {
		if server.Addr() == hostPort {
			return server
		}
	}
	c.t.Fatalf("redistest: %s is not a server of the cluster", address)
	return nil
}

// Failover makes the replica of Masters[i] take its master's place with
// CLUSTER FAILOVER, and returns it once it answers as a master and the
// cluster's state is ok and the old master follows it. A manual failover that did not complete within
// a few seconds (its master was busy, or had not seen the replica's
// offset yet) is asked again with FORCE, which needs only the other
// masters' votes.
func (c *Cluster) Failover(i int) *Server {
	c.t.Helper()
	replica := c.Replicas[i]
	c.require(replica, "OK", "CLUSTER", "FAILOVER")
	c.awaitPromotion(replica, manualFailoverWait, "FORCE")
	// A forced failover leaves the old master a master until it hears of
	// the new one: until then, it tells its own view of the slots.
	c.waitFor("the old master to follow the new one", func() bool {
		return strings.HasPrefix(c.Masters[i].Do(c.t, "ROLE"), "[slave ")
	})
	c.WaitOK()
	return replica
}

// Crash kills Masters[i] with SIGKILL and returns its replica once it is
// promoted and every server still running says cluster_state:ok: a master
// that fails without a word to anyone. The cluster promotes the replica on
// its own after the node timeout (2 s) and an election; when that has not
// happened within crashFailoverWait (an election lost on a loaded
// machine, retried only after twice the node timeout), the replica takes
// over with CLUSTER FAILOVER TAKEOVER, which needs no election and tells
// the clients of the dead master nothing either.
func (c *Cluster) Crash(i int) *Server {
	c.t.Helper()
	replica := c.Replicas[i]
	c.Masters[i].Kill9()
	c.awaitPromotion(replica, crashFailoverWait, "TAKEOVER")
	c.waitOK(c.Masters[i])
	return replica
}

// Rejoin starts Masters[i] again after Crash(i), with the cluster
// configuration it had and the data its persistence kept, and returns once
// it follows the replica that took its place and every server says
// cluster_state:ok. It then swaps Masters[i] and Replicas[i], so that the
// shard is a master and its replica again: a later Crash(i) kills the
// master that serves the shard now.
func (c *Cluster) Rejoin(i int) {
	c.t.Helper()
	crashed, promoted := c.Masters[i], c.Replicas[i]
	crashed.Restart(c.t)
	c.waitFor("the crashed master to follow its replica", func() bool {
		return strings.Contains(crashed.Do(c.t, "INFO", "replication"), "master_port:"+strconv.Itoa(promoted.Port())+"\r\n") &&
			strings.Contains(crashed.Do(c.t, "INFO", "replication"), "master_link_status:up")
	})
	c.Masters[i], c.Replicas[i] = promoted, crashed
	c.WaitOK()
}

// awaitPromotion waits, at most patience, for replica to answer as a
// master; if it does not by then, it asks it again with CLUSTER FAILOVER
// option, and waits for it as any wait of the Cluster.
func (c *Cluster) awaitPromotion(replica *Server, patience time.Duration, option string) {
	c.t.Helper()
	promoted := func() bool { return strings.HasPrefix(replica.Do(c.t, "ROLE"), "[master ") }
	for deadline := time.Now().Add(patience); !promoted() && time.Now().Before(deadline); {
		time.Sleep(readyPollPeriod)
	}
	if !promoted() {
		c.require(replica, "OK", "CLUSTER", "FAILOVER", option)
		c.waitFor("the replica to be promoted", promoted)
	}
}

// crashFailoverWait is how long Crash waits for the cluster to promote a
// replica on its own.
const crashFailoverWait = 10 * time.Second

// MoveSlot moves slot, with its keys, to the master to, as a resharding
// does: the slot is marked importing on to and migrating on its master,
// its keys are moved with MIGRATE, a hundred at a time, and the two
// masters, then every one of Masters that answers, are told the slot's
// new owner (CLUSTER SETSLOT NODE).
func (c *Cluster) MoveSlot(slot int, to *Server) {
	c.t.Helper()
	if c.MasterOf(slot) == to {
		return
	}
	migration := c.StartMigration(slot, to)
	migration.MoveAll()
	migration.Finish()
}

// Migration is a slot being moved from one master to another, begun by
// StartMigration: until Finish, the source answers ASK for the keys it
// no longer has, and the target TRYAGAIN for a command over several keys
// that it does not all have.
type Migration struct {
	cluster  *Cluster
	slot     int
	from, to *Server
	toID     string
}

// StartMigration marks slot importing on the master to and migrating on
// the master that serves it, and moves none of its keys.
func (c *Cluster) StartMigration(slot int, to *Server) *Migration {
	c.t.Helper()
	m := &Migration{cluster: c, slot: slot, from: c.MasterOf(slot), to: to}
	if m.from == to {
		c.t.Fatalf("redistest: %s already serves slot %d", to.Addr(), slot)
	}
	fromID := m.from.Do(c.t, "CLUSTER", "MYID")
	m.toID = to.Do(c.t, "CLUSTER", "MYID")
	c.require(to, "OK", "CLUSTER", "SETSLOT", strconv.Itoa(slot), "IMPORTING", fromID)
	c.require(m.from, "OK", "CLUSTER", "SETSLOT", strconv.Itoa(slot), "MIGRATING", m.toID)
	return m
}

// Source returns the master the slot leaves.
func (m *Migration) Source() *Server { return m.from }

// Move moves keys, of the slot, to the target with MIGRATE.
func (m *Migration) Move(keys ...string) {
	c := m.cluster
	c.t.Helper()
	host, port, _ := strings.Cut(m.to.Addr(), ":")
	if migrated := m.from.Do(c.t, append([]string{"MIGRATE", host, port, "", "0", "5000", "KEYS"}, keys...)...); migrated != "OK" && migrated != "NOKEY" {
		c.t.Fatalf("redistest: MIGRATE of slot %d to %s: %s", m.slot, m.to.Addr(), migrated)
	}
}

// MoveAll moves every key of the slot that the source still has, a
// hundred at a time.
func (m *Migration) MoveAll() {
	c := m.cluster
	c.t.Helper()
	for {
		listed := strings.Fields(strings.Trim(m.from.Do(c.t, "CLUSTER", "GETKEYSINSLOT", strconv.Itoa(m.slot), "100"), "[]"))
		if len(listed) == 0 {
			return
		}
		m.Move(listed...)
	}
}

// Finish ends the migration: the two masters, then every one of Masters
// that answers, are told the slot's new owner (CLUSTER SETSLOT NODE).
// The source must have none of the slot's keys left (Redis refuses).
func (m *Migration) Finish() {
	c := m.cluster
	c.t.Helper()
	slot := strconv.Itoa(m.slot)
	for _, master := range []*Server{m.to, m.from} {
		c.require(master, "OK", "CLUSTER", "SETSLOT", slot, "NODE", m.toID)
	}
	for _, master := range c.Masters {
		// The others would learn it by gossip; told, they know it at once.
		// A master that crashed tells nothing.
		roundTrip(master.Addr(), master.TLSConfig(), master.opts.Password, doTimeout, "CLUSTER", "SETSLOT", slot, "NODE", m.toID)
	}
}

// manualFailoverWait is how long Failover waits for a manual failover
// before it forces one.
const manualFailoverWait = 5 * time.Second

// require sends a command to server and fails the test unless it answers
// want.
func (c *Cluster) require(server *Server, want string, args ...string) {
	c.t.Helper()
	if reply := server.Do(c.t, args...); reply != want {
		c.t.Fatalf("redistest: %s on %s: %s", strings.Join(args, " "), server.Addr(), reply)
	}
}

// waitFor polls condition until it holds, failing the test after
// clusterWaitTimeout: the processes' state has no notification to wait
// on.
func (c *Cluster) waitFor(what string, condition func() bool) {
	c.t.Helper()
	for deadline := time.Now().Add(clusterWaitTimeout); !condition(); time.Sleep(readyPollPeriod) {
		if time.Now().After(deadline) {
			c.t.Fatalf("redistest: waited %v for %s", clusterWaitTimeout, what)
		}
	}
}
