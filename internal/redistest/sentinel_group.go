package redistest

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// sentinelWaitTimeout bounds the waits of a SentinelGroup: for a replica
// to follow its master, for the sentinels to see the replica, and for a
// failover to finish.
const sentinelWaitTimeout = 20 * time.Second

// SentinelGroup is a master that Redis Sentinel serves, started for a
// test: a master, a replica of it, and sentinels that monitor it, each a
// redis-server process on a loopback port.
type SentinelGroup struct {
	// Name is the name the sentinels give the master.
	Name string
	// Servers are the master and its replica, as started: after a
	// failover the replica is the master (see Master).
	Servers   []*Server
	Sentinels []*Server
	// SentinelPassword is the sentinels' password, "" without.
	SentinelPassword string
	t                testing.TB
}

// StartSentinelGroup starts a master with options, a replica of it, then
// sentinels sentinels monitoring it under name with a quorum of a
// majority of them, and returns once every sentinel knows the replica and
// the other sentinels (SENTINEL CKQUORUM), which takes a few seconds.
// It needs a real redis-server; with the miniredis fallback it skips the
// test.
func StartSentinelGroup(t testing.TB, name string, sentinels int, options Options) *SentinelGroup {
	t.Helper()
	return StartSentinelGroupWithPassword(t, name, sentinels, options, "")
}

// StartSentinelGroupWithPassword is StartSentinelGroup for sentinels that
// ask for password (requirepass), which Address then gives.
func StartSentinelGroupWithPassword(t testing.TB, name string, sentinels int, options Options, password string) *SentinelGroup {
	t.Helper()
	RequireReal(t)
	g := &SentinelGroup{Name: name, SentinelPassword: password, t: t}
	// Either server may be the master after a failover: neither waits
	// before it sends a replica its data (repl-diskless-sync-delay is 5 s
	// by default).
	options.ExtraArgs = append(append([]string(nil), options.ExtraArgs...), "--repl-diskless-sync-delay", "0")
	master := Start(t, options)
	replicaOptions := options
	replicaOptions.ExtraArgs = append(append([]string(nil), options.ExtraArgs...), "--replicaof", loopbackHost, strconv.Itoa(master.Port()))
	if options.Password != "" {
		replicaOptions.ExtraArgs = append(replicaOptions.ExtraArgs, "--masterauth", options.Password)
	}
	replica := Start(t, replicaOptions)
	g.Servers = []*Server{master, replica}
	g.waitFor("the replica to follow the master", func() bool {
		return strings.Contains(replica.Do(t, "INFO", "replication"), "master_link_status:up")
	})
	for range sentinels {
		g.Sentinels = append(g.Sentinels, Start(t, Options{Password: password, Sentinel: &Sentinel{MasterName: name, Master: master.Addr(), Quorum: sentinels/2 + 1}}))
	}
	for _, sentinel := range g.Sentinels {
		g.waitFor("the sentinels to know the replica fit to promote", func() bool {
			return replicaFit(sentinel.Do(t, "SENTINEL", "REPLICAS", name), replica.Port())
		})
		// The sentinels find each other through the master, within a few
		// seconds: until then they cannot authorize a failover.
		g.waitFor("the sentinels to know each other", func() bool {
			return strings.HasPrefix(sentinel.Do(t, "SENTINEL", "CKQUORUM", name), "OK ")
		})
	}
	return g
}

// replicaFit reports whether a sentinel's SENTINEL REPLICAS reply, as Do
// renders it, shows the replica at port fit to be promoted: linked to its
// master, and its INFO read recently (a sentinel promotes no replica whose
// INFO it has not read).
func replicaFit(replicas string, port int) bool {
	fields := strings.Fields(strings.NewReplacer("[", " ", "]", " ").Replace(replicas))
	value := func(name string) string {
		for i := 0; i+1 < len(fields); i++ {
			if fields[i] == name {
				return fields[i+1]
			}
		}
		return ""
	}
	refreshed, err := strconv.Atoi(value("info-refresh"))
	return value("port") == strconv.Itoa(port) && value("master-link-status") == "ok" && value("flags") == "slave" &&
		err == nil && refreshed < 10000
}

// Address returns the group's address in the redis-sentinel:// form,
// every sentinel named.
func (g *SentinelGroup) Address() string {
	var parameters []string
	for _, sentinel := range g.Sentinels[1:] {
		parameters = append(parameters, "addr="+sentinel.Addr())
	}
	if g.SentinelPassword != "" {
		parameters = append(parameters, "sentinel_password="+g.SentinelPassword)
	}
	address := "redis-sentinel://" + g.Sentinels[0].Addr() + "/" + g.Name
	if len(parameters) > 0 {
		address += "?" + strings.Join(parameters, "&")
	}
	return address
}

// Master returns the server the sentinels name as the master.
func (g *SentinelGroup) Master() *Server {
	g.t.Helper()
	reply := g.Sentinels[0].Do(g.t, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", g.Name)
	for _, server := range g.Servers {
		_, port, _ := net.SplitHostPort(server.Addr())
		if reply == "["+loopbackHost+" "+port+"]" {
			return server
		}
	}
	g.t.Fatalf("redistest: the sentinels name %s as the master of %q, which the group did not start", reply, g.Name)
	return nil
}

// Failover makes the sentinels promote the replica (SENTINEL FAILOVER)
// and returns the new master once every sentinel names it and it answers
// as a master.
func (g *SentinelGroup) Failover() *Server {
	g.t.Helper()
	old := g.Master()
	next := g.Servers[0]
	if next == old {
		next = g.Servers[1]
	}
	if reply := g.Sentinels[0].Do(g.t, "SENTINEL", "FAILOVER", g.Name); reply != "OK" {
		g.t.Fatalf("redistest: SENTINEL FAILOVER %s: %s", g.Name, reply)
	}
	_, port, _ := net.SplitHostPort(next.Addr())
	for _, sentinel := range g.Sentinels {
		g.waitFor("the sentinels to name the new master", func() bool {
			return sentinel.Do(g.t, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", g.Name) == "["+loopbackHost+" "+port+"]"
		})
	}
	g.waitFor("the new master to answer as one", func() bool {
		return strings.HasPrefix(next.Do(g.t, "ROLE"), "[master ")
	})
	return next
}

// waitFor polls condition until it holds, failing the test after
// sentinelWaitTimeout: the processes' state has no notification to wait
// on.
func (g *SentinelGroup) waitFor(what string, condition func() bool) {
	g.t.Helper()
	for deadline := time.Now().Add(sentinelWaitTimeout); !condition(); time.Sleep(readyPollPeriod) {
		if time.Now().After(deadline) {
			g.t.Fatalf("redistest: %q: waited %v for %s", g.Name, sentinelWaitTimeout, what)
		}
	}
}

// String names the group for messages.
func (g *SentinelGroup) String() string { return fmt.Sprintf("sentinel group %q", g.Name) }
