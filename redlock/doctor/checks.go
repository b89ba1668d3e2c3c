package doctor

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/lockmux/lockmux/mux"
	"github.com/lockmux/lockmux/redlock/internal/naming"
	"github.com/lockmux/lockmux/redlock/internal/quarantine"
	"github.com/lockmux/lockmux/resp"
)

// nodeFacts is one node of a group, and what INFO told about it.
type nodeFacts struct {
	group    *mux.Group
	node     int
	announce announcing // how a Client of the group announces releases
	info     map[string]string
}

// do sends one request to the node.
func (f nodeFacts) do(ctx context.Context, request *mux.Request) error {
	if err := f.group.Do(ctx, f.node, request); err != nil {
		return err
	}
	return request.Err()
}

// examineNode runs on one node every check but the run_id comparison and
// the notifications, and probes the user's permissions on probeKey; the
// probe is nil for a node that cannot be reached.
func examineNode(ctx context.Context, facts nodeFacts, address string, options Options, probeKey string) (NodeReport, *permissionProbe) {
	report := NodeReport{Address: address}
	info := mux.NewRequest("INFO")
	if err := facts.do(ctx, info); err != nil {
		report.Findings = []Finding{{CheckReachable, SeverityFail,
			fmt.Sprintf("cannot reach the node: %v; check the address, that redis-server runs, and that this host may connect to it", err)}}
		return report, nil
	}
	report.Findings = append(report.Findings, Finding{CheckReachable, SeverityOK,
		fmt.Sprintf("answered INFO in %v", info.Latency().Round(time.Microsecond))})

	if reply := info.Reply(); reply.IsError() {
		facts.info = map[string]string{}
		report.Findings = append(report.Findings, Finding{CheckRole, SeverityWarn,
			fmt.Sprintf("INFO was refused (%v): the role, cluster mode, run_id and uptime cannot be checked; allow INFO for this user", reply.Err())})
	} else {
		facts.info = parseInfo(string(reply.Str))
		report.Findings = append(report.Findings, facts.checkRole(), facts.checkCluster(ctx))
	}
	if sentinel, ok := facts.checkSentinel(ctx); ok {
		report.Findings = append(report.Findings, sentinel)
	}
	report.Version = facts.info["redis_version"]
	report.RunID = facts.info["run_id"]

	persistence, durable := facts.checkPersistence(ctx)
	report.Findings = append(report.Findings, persistence, facts.checkEviction(ctx), facts.checkUptime(options.LongestTTL, durable),
		facts.checkEpoch(ctx, options.LongestTTL))
	clock, offset, measured := facts.checkClock(ctx, options.MaxClockOffset)
	report.Findings = append(report.Findings, clock)
	report.ClockOffset, report.ClockMeasured = offset, measured

	probe, err := facts.probePermissions(ctx, probeKey)
	if err != nil {
		probe.problems = append(probe.problems, err.Error())
	}
	probe.observeInfo(info.Reply())
	return report, probe
}

// parseInfo reads the "field:value" lines of an INFO reply.
func parseInfo(text string) map[string]string {
	fields := make(map[string]string)
	for line := range strings.Lines(text) {
		line = strings.TrimRight(line, "\r\n")
		if line == "" || line[0] == '#' {
			continue
		}
		if name, value, found := strings.Cut(line, ":"); found {
			fields[name] = value
		}
	}
	return fields
}

func (f nodeFacts) checkRole() Finding {
	switch role := f.info["role"]; role {
	case "master":
		replicas, _ := strconv.Atoi(f.info["connected_slaves"])
		if f.group.ServedBySentinel(f.node) {
			return Finding{CheckRole, SeverityOK, fmt.Sprintf(
				"master with %d replica(s), served by Sentinel: a client quarantines a replica it promotes", replicas)}
		}
		if f.group.IsCluster(f.node) {
			return Finding{CheckRole, SeverityOK, fmt.Sprintf(
				"a master of the cluster, with %d replica(s): a client quarantines the cluster when one is promoted", replicas)}
		}
		if replicas > 0 {
			return Finding{CheckRole, SeverityWarn, fmt.Sprintf(
				"master with %d replica(s): replication is asynchronous, so a replica promoted after a failover may miss recent locks; "+
					"if Sentinel fails it over, give its redis-sentinel:// address, so that the clients quarantine a promoted replica; "+
					"otherwise remove the replicas, or keep the quarantine on (redlock.Options.Quarantine, on by default)", replicas)}
		}
		return Finding{CheckRole, SeverityOK, "master without replicas"}
	case "slave", "replica":
		return Finding{CheckRole, SeverityFail, fmt.Sprintf(
			"a replica of %s:%s: it refuses lock writes and shares its data with its master; "+
				"point lockmux at independent masters only (REPLICAOF NO ONE, or another address)",
			f.info["master_host"], f.info["master_port"])}
	case "":
		return Finding{CheckRole, SeverityWarn, "INFO does not report the role; make sure the node is a master without replicas"}
	default:
		return Finding{CheckRole, SeverityFail, fmt.Sprintf("role %q: lockmux needs independent masters", role)}
	}
}

func (f nodeFacts) checkCluster(ctx context.Context) Finding {
	switch enabled := f.info["cluster_enabled"]; {
	case f.group.IsCluster(f.node):
		return f.checkClusterState(ctx)
	case enabled == "0":
		return Finding{CheckCluster, SeverityOK, "standalone (cluster_enabled:0)"}
	case enabled == "1":
		return Finding{CheckCluster, SeverityFail,
			"runs in cluster mode, and its address is a plain one, which follows no MOVED or ASK redirect: " +
				"give the cluster as redis-cluster://host:port, so that each key goes to the master of its slot"}
	default:
		return Finding{CheckCluster, SeverityWarn, "INFO does not report cluster_enabled; make sure the node is not in cluster mode"}
	}
}

// checkClusterState asks a Redis Cluster member whether its state is ok
// and every slot is served (CLUSTER INFO).
func (f nodeFacts) checkClusterState(ctx context.Context) Finding {
	request := mux.NewRequest("CLUSTER", "INFO")
	if err := f.do(ctx, request); err != nil {
		return Finding{CheckCluster, SeverityFail, fmt.Sprintf("CLUSTER INFO failed: %v", err)}
	}
	if reply := request.Reply(); reply.IsError() {
		return Finding{CheckCluster, SeverityFail, fmt.Sprintf("CLUSTER INFO was refused (%v); allow it for this user", reply.Err())}
	}
	info := parseInfo(string(request.Reply().Str))
	state, served := info["cluster_state"], info["cluster_slots_ok"]
	if state != "ok" || served != strconv.Itoa(mux.SlotCount) {
		return Finding{CheckCluster, SeverityFail, fmt.Sprintf(
			"cluster_state:%s, %s of %d slots served (%s in doubt, %s failed): the keys of the slots not served cannot be locked on this member; "+
				"check the cluster with CLUSTER NODES", state, served, mux.SlotCount, info["cluster_slots_pfail"], info["cluster_slots_fail"])}
	}
	return Finding{CheckCluster, SeverityOK, fmt.Sprintf("Redis Cluster of %s master(s) serving every slot (cluster_state:ok); "+
		"a client quarantines it after a failover of any of them", info["cluster_size"])}
}

// checkSentinel asks the sentinels of a master that Redis Sentinel
// serves where it is and whether they have their quorum; ok is false for
// any other node, which has no such check.
func (f nodeFacts) checkSentinel(ctx context.Context) (finding Finding, ok bool) {
	if !f.group.ServedBySentinel(f.node) {
		return Finding{}, false
	}
	var problems []string
	masters := map[string][]string{}
	for _, report := range f.group.AskSentinels(ctx, f.node) {
		if report.Master != "" {
			masters[report.Master] = append(masters[report.Master], report.Sentinel)
		}
		if report.Err != nil {
			problems = append(problems, fmt.Sprintf("sentinel %s: %v", report.Sentinel, report.Err))
		}
	}
	switch {
	case len(masters) > 1:
		var named []string
		for master, sentinels := range masters {
			named = append(named, fmt.Sprintf("%s names %s", strings.Join(sentinels, ", "), master))
		}
		sort.Strings(named)
		return Finding{CheckSentinel, SeverityFail, "the sentinels disagree on the master (" + strings.Join(named, "; ") +
			"): a failover is under way, or they are split; check them with SENTINEL MASTERS"}, true
	case len(masters) == 0:
		return Finding{CheckSentinel, SeverityFail, "no sentinel named the master: " + strings.Join(problems, "; ")}, true
	case len(problems) > 0:
		return Finding{CheckSentinel, SeverityWarn, strings.Join(problems, "; ") +
			"; the others name the master, but a failover needs their quorum: check the sentinels"}, true
	}
	var master string
	for only := range masters {
		master = only
	}
	if port := f.info["tcp_port"]; port != "" && !strings.HasSuffix(master, ":"+port) {
		return Finding{CheckSentinel, SeverityWarn, fmt.Sprintf(
			"the sentinels name %s, and the client reached a server on port %s: a failover is under way", master, port)}, true
	}
	return Finding{CheckSentinel, SeverityOK, fmt.Sprintf("%d sentinel(s) agree the master is %s and have their quorum", len(masters[master]), master)}, true
}

// checkPersistence grades appendonly and appendfsync, and reports whether
// every acknowledged write survives a crash.
func (f nodeFacts) checkPersistence(ctx context.Context) (Finding, bool) {
	const fix = "set appendonly yes and appendfsync always (CONFIG SET, and in redis.conf), " +
		"or keep a node that crashed down for longer than the longest TTL before it rejoins"
	appendOnly := ""
	switch f.info["aof_enabled"] {
	case "1":
		appendOnly = "yes"
	case "0":
		appendOnly = "no"
	default:
		value, err := f.config(ctx, "appendonly")
		if err != nil {
			return Finding{CheckPersistence, SeverityWarn, fmt.Sprintf("cannot read appendonly (%v); %s", err, fix)}, false
		}
		appendOnly = value
	}
	if appendOnly != "yes" {
		return Finding{CheckPersistence, SeverityWarn,
			"appendonly " + appendOnly + ": a restarted node forgets every lock it held and can grant it again; " + fix}, false
	}
	fsync, err := f.config(ctx, "appendfsync")
	switch {
	case err != nil:
		return Finding{CheckPersistence, SeverityWarn, fmt.Sprintf(
			"appendonly yes, but appendfsync cannot be read (%v); make sure it is always", err)}, false
	case fsync != "always":
		return Finding{CheckPersistence, SeverityWarn,
			"appendonly yes, appendfsync " + fsync + ": a crash loses the writes not yet synced, locks included; " + fix}, false
	}
	return Finding{CheckPersistence, SeverityOK, "appendonly yes, appendfsync always: acknowledged locks survive a crash"}, true
}

func (f nodeFacts) checkEviction(ctx context.Context) Finding {
	policy, found := f.info["maxmemory_policy"]
	if !found {
		value, err := f.config(ctx, "maxmemory-policy")
		if err != nil {
			return Finding{CheckEviction, SeverityWarn, fmt.Sprintf(
				"cannot read maxmemory-policy (%v); make sure it is noeviction", err)}
		}
		policy = value
	}
	if policy == "noeviction" {
		return Finding{CheckEviction, SeverityOK, "noeviction: lock keys are never evicted"}
	}
	message := "maxmemory-policy " + policy + ": under memory pressure the node may evict lock keys, and an evicted lock is a lost one; " +
		"set maxmemory-policy noeviction"
	if f.info["maxmemory"] == "0" {
		message += " (nothing is evicted while maxmemory is 0, but a limit set later would start it)"
	}
	return Finding{CheckEviction, SeverityWarn, message}
}

// checkUptime warns about a node that restarted less than longestTTL ago
// and does not persist every write: it may have forgotten locks that other
// nodes still hold.
func (f nodeFacts) checkUptime(longestTTL time.Duration, durable bool) Finding {
	seconds, err := strconv.ParseInt(f.info["uptime_in_seconds"], 10, 64)
	if err != nil {
		return Finding{CheckUptime, SeverityWarn, "INFO does not report uptime_in_seconds; the time since the last restart is unknown"}
	}
	uptime := time.Duration(seconds) * time.Second
	switch {
	case uptime >= longestTTL:
		return Finding{CheckUptime, SeverityOK, fmt.Sprintf("up %v, longer than the longest TTL (%v)", uptime, longestTTL)}
	case durable:
		return Finding{CheckUptime, SeverityOK, fmt.Sprintf(
			"up %v, less than the longest TTL (%v), but appendfsync always kept its locks across the restart", uptime, longestTTL)}
	}
	return Finding{CheckUptime, SeverityWarn, fmt.Sprintf(
		"up only %v, less than the longest TTL (%v): if it restarted without its data, it may have forgotten locks that are still valid; "+
			"wait %v before relying on it, and enable appendonly yes with appendfsync always", uptime, longestTTL, longestTTL-uptime)}
}

// config returns the value of one configuration parameter with CONFIG GET.
func (f nodeFacts) config(ctx context.Context, parameter string) (string, error) {
	request := mux.NewRequest("CONFIG", "GET", parameter)
	if err := f.do(ctx, request); err != nil {
		return "", err
	}
	reply := request.Reply()
	if reply.IsError() {
		return "", fmt.Errorf("CONFIG GET refused: %w", reply.Err())
	}
	elements := reply.Elems
	if len(elements) < 2 {
		return "", fmt.Errorf("CONFIG GET %s returned nothing", parameter)
	}
	return string(elements[1].Str), nil
}

// checkClock compares the node's clock with the client's: it reads TIME a
// few times and keeps the reading with the shortest round trip, taken to
// be read halfway through it. measured is false when the node's clock
// could not be read.
func (f nodeFacts) checkClock(ctx context.Context, maxOffset time.Duration) (finding Finding, offset time.Duration, measured bool) {
	var roundTrip time.Duration
	found := false
	request := mux.NewRequest("TIME")
	for range clockSamples {
		start := time.Now()
		if err := f.do(ctx, request); err != nil {
			return Finding{CheckClock, SeverityWarn, fmt.Sprintf("cannot read the node's clock: %v", err)}, 0, false
		}
		end := time.Now()
		if reply := request.Reply(); reply.IsError() {
			return Finding{CheckClock, SeverityWarn, fmt.Sprintf("TIME was refused (%v); the clock cannot be checked", reply.Err())}, 0, false
		}
		server, ok := parseTime(request.Reply())
		if !ok {
			return Finding{CheckClock, SeverityWarn, "TIME gave an unexpected reply; the clock cannot be checked"}, 0, false
		}
		rtt := end.Sub(start)
		if !found || rtt < roundTrip {
			// Strip the monotonic readings: the node's clock is a wall clock.
			middle := start.Round(0).Add(rtt / 2)
			offset, roundTrip, found = server.Sub(middle), rtt, true
		}
	}
	uncertainty := roundTrip / 2
	describe := fmt.Sprintf("%v (±%v)", absoluteDuration(offset).Round(time.Microsecond), uncertainty.Round(time.Microsecond))
	direction := "ahead of"
	if offset < 0 {
		direction = "behind"
	}
	if absoluteDuration(offset)-uncertainty > maxOffset {
		return Finding{CheckClock, SeverityWarn, fmt.Sprintf(
			"clock %s %s this host's, beyond %v: keep the clocks of the nodes and clients synchronised with NTP, "+
				"slewed rather than stepped, because a node whose clock jumps expires its locks early", describe, direction, maxOffset)}, offset, true
	}
	return Finding{CheckClock, SeverityOK, fmt.Sprintf("clock %s %s this host's", describe, direction)}, offset, true
}

// parseTime reads the reply of TIME: seconds and microseconds.
func parseTime(reply resp.Value) (time.Time, bool) {
	if len(reply.Elems) != 2 {
		return time.Time{}, false
	}
	seconds, err := strconv.ParseInt(string(reply.Elems[0].Str), 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	microseconds, err := strconv.ParseInt(string(reply.Elems[1].Str), 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.Unix(seconds, microseconds*1000), true
}

func absoluteDuration(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// readEpochScript reads the epoch marker and the node's time, and changes
// nothing: {marker or "", seconds, microseconds}.
const readEpochScript = `local t = redis.call("TIME")
return {redis.call("GET", KEYS[1]) or "", t[1], t[2]}`

// checkEpoch reads the node's epoch marker, the key of
// redlock.Options.Quarantine, and tells what a client that quarantines
// would conclude, with longestTTL as its MaxTTL: a node without a marker,
// or with one written by another server process, is quarantined for the
// longest TTL when such a client connects; one with a younger marker for
// what remains of it. Without the quarantine the marker does not matter:
// these are warnings, never failures.
func (f nodeFacts) checkEpoch(ctx context.Context, longestTTL time.Duration) Finding {
	if f.group.IsCluster(f.node) {
		return f.checkClusterEpochs(ctx, longestTTL)
	}
	epochKey := naming.EpochKey
	request := mux.NewRequest("EVAL", readEpochScript, "1", epochKey)
	if err := f.do(ctx, request); err != nil {
		return Finding{CheckEpoch, SeverityWarn, fmt.Sprintf("cannot read the epoch marker %s: %v", epochKey, err)}
	}
	reply := request.Reply()
	if reply.IsError() || len(reply.Elems) != 3 {
		return Finding{CheckEpoch, SeverityWarn, fmt.Sprintf("the epoch marker %s could not be read (%v); "+
			"a client that quarantines (the default) needs GET and SET on it", epochKey, reply)}
	}
	seconds, _ := strconv.ParseInt(string(reply.Elems[1].Str), 10, 64)
	micros, _ := strconv.ParseInt(string(reply.Elems[2].Str), 10, 64)
	now := seconds*1000 + micros/1000
	const restate = "; state new nodes with redlock trust-nodes --force, and only those"
	owner, written, found := strings.Cut(string(reply.Elems[0].Str), " ")
	written, _, _ = strings.Cut(written, " ") // the writer's replication ID follows
	switch at, err := strconv.ParseInt(written, 10, 64); {
	case len(reply.Elems[0].Str) == 0:
		return Finding{CheckEpoch, SeverityWarn, fmt.Sprintf("no epoch marker: the node is new, or lost its data (a restart without "+
			"persistence, a flush); a client that quarantines (the default) keeps it out of the locks for the longest TTL (%v) when it connects, "+
			"less the time the server shows it has kept every key since it started%s",
			longestTTL, restate)}
	case !found || err != nil:
		return Finding{CheckEpoch, SeverityWarn, fmt.Sprintf("the epoch marker %s holds %q, not a run_id and a time: a client with "+
			"the quarantine writes it anew and keeps the node out of the locks for the longest TTL (%v)", epochKey, reply.Elems[0].Str, longestTTL)}
	case f.info["run_id"] != "" && owner != f.info["run_id"]:
		return Finding{CheckEpoch, SeverityWarn, fmt.Sprintf("the epoch marker was written by another server process (run_id %s): "+
			"the node restarted or was promoted since, and a client that quarantines (the default) keeps it out of the locks for the longest "+
			"TTL (%v) when it connects", owner, longestTTL)}
	default:
		age := time.Duration(now-at) * time.Millisecond
		if age < longestTTL {
			return Finding{CheckEpoch, SeverityWarn, fmt.Sprintf("the epoch marker is %v old: a client that quarantines (the default) keeps "+
				"the node out of the locks for %v more", age.Round(time.Millisecond), (longestTTL - age).Round(time.Millisecond))}
		}
		return Finding{CheckEpoch, SeverityOK, fmt.Sprintf("the epoch marker is older than the longest TTL (%v): a client with "+
			"the quarantine lets the node vote", longestTTL)}
	}
}

// checkClusterEpochs is checkEpoch for a Redis Cluster node, whose masters
// each keep an epoch marker of their own: a master without one of its own
// server process, or with a young one, keeps its shard out of the locks of
// a client that quarantines.
func (f nodeFacts) checkClusterEpochs(ctx context.Context, longestTTL time.Duration) Finding {
	requests, err := quarantine.AskMasters(ctx, f.group, f.node, quarantine.AgeScript)
	if err != nil {
		return Finding{CheckEpoch, SeverityWarn, fmt.Sprintf("cannot read the epoch markers of the cluster's masters: %v", err)}
	}
	var out []string
	for _, request := range requests {
		age := request.Reply()
		switch {
		case age.Type != resp.TypeInteger:
			out = append(out, fmt.Sprintf("%s: its marker could not be read (%v)", request.Server(), age))
		case age.Int < 0:
			out = append(out, fmt.Sprintf("%s: no marker of its own server process (new, restarted, promoted or flushed)", request.Server()))
		case time.Duration(age.Int)*time.Millisecond < longestTTL:
			out = append(out, fmt.Sprintf("%s: its marker is %v old", request.Server(), (time.Duration(age.Int)*time.Millisecond).Round(time.Millisecond)))
		}
	}
	if len(out) > 0 {
		return Finding{CheckEpoch, SeverityWarn, strings.Join(out, "; ") + fmt.Sprintf(": a client, which quarantines a cluster member, keeps "+
			"those masters' shards out of the locks until their markers are older than the longest TTL (%v); state new masters with "+
			"redlock trust-nodes --force, and only those", longestTTL)}
	}
	return Finding{CheckEpoch, SeverityOK, fmt.Sprintf("the epoch markers of the %d master(s) are older than the longest TTL (%v): "+
		"every shard votes", len(requests), longestTTL)}
}
