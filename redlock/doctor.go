package redlock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lockmux/lockmux/mux"
	"github.com/lockmux/lockmux/resp"
)

// Severity grades one finding of Doctor.
type Severity uint8

// The severities of a finding, from best to worst.
const (
	// SeverityOK means the check passed.
	SeverityOK Severity = iota
	// SeverityWarn means the node works, but a failure of the kind the
	// check looks at (a crash, memory pressure, a clock step) could break
	// mutual exclusion, or waiting Locks are not woken by releases; the
	// message says what to change. It is also the grade of a check that
	// could not be made (a command was refused).
	SeverityWarn
	// SeverityFail means the node cannot carry Redlock safely as it is
	// configured: it is unreachable, a replica, in cluster mode, or the same
	// server as another address.
	SeverityFail
)

// String returns "ok", "warn" or "fail".
func (s Severity) String() string {
	switch s {
	case SeverityOK:
		return "ok"
	case SeverityWarn:
		return "warn"
	case SeverityFail:
		return "fail"
	}
	return "severity(" + strconv.Itoa(int(s)) + ")"
}

// The names of the checks of Doctor, in the order a NodeReport lists them.
const (
	// CheckReachable is the check that the node answers.
	CheckReachable = "reachable"
	// CheckRole is the check that the node is a master, not a replica,
	// and has no replicas that could take over after a failover.
	CheckRole = "role"
	// CheckCluster is the check that the node is not in cluster mode.
	CheckCluster = "cluster"
	// CheckRunID is the check that no other configured address reaches
	// the same server.
	CheckRunID = "run_id"
	// CheckPersistence is the check for appendonly yes with appendfsync always.
	CheckPersistence = "persistence"
	// CheckEviction is the check for maxmemory-policy noeviction.
	CheckEviction = "maxmemory-policy"
	// CheckUptime is the check that the node has run for longer than the
	// longest TTL, or persists every write.
	CheckUptime = "uptime"
	// CheckClock is the check that the node's clock agrees with the client's.
	CheckClock = "clock"
	// CheckNotifications is the check that the node can carry the release
	// notifications that wake waiting Locks: the client speaks RESP3 to it,
	// and the ACL lets the user subscribe to the release channels
	// ("lockmux:released:" followed by the key).
	CheckNotifications = "notifications"
)

// DefaultMaxClockOffset is the clock offset between a node and the client
// above which Doctor warns.
const DefaultMaxClockOffset = 50 * time.Millisecond

// clockSamples is how many TIME round trips Doctor makes per node; the one
// with the shortest round trip gives the offset.
const clockSamples = 3

// DoctorOptions configures Doctor. The zero value is usable: every zero
// field means its default.
type DoctorOptions struct {
	// LongestTTL is the longest time a lock may stay on a node, extensions
	// included: a node that restarted without persistence less than that
	// long ago may have forgotten locks that are still valid. Zero means
	// DefaultTTL; negative is invalid.
	LongestTTL time.Duration

	// MaxClockOffset is the largest difference between a node's clock and
	// the client's that passes the clock check. Zero means
	// DefaultMaxClockOffset (50 ms); negative is invalid.
	MaxClockOffset time.Duration
}

// withDefaults returns o with its zero fields set, or an error wrapping
// ErrInvalidOptions.
func (o DoctorOptions) withDefaults() (DoctorOptions, error) {
	switch {
	case o.LongestTTL < 0:
		return o, invalidOption("DoctorOptions.LongestTTL", o.LongestTTL, "is negative")
	case o.MaxClockOffset < 0:
		return o, invalidOption("DoctorOptions.MaxClockOffset", o.MaxClockOffset, "is negative")
	}
	if o.LongestTTL == 0 {
		o.LongestTTL = DefaultTTL
	}
	if o.MaxClockOffset == 0 {
		o.MaxClockOffset = DefaultMaxClockOffset
	}
	return o, nil
}

// Finding is the result of one check on one node.
type Finding struct {
	// Check is the name of the check, one of the Check constants.
	Check string
	// Severity grades the result.
	Severity Severity
	// Message says what was found and, unless the check passed, what to
	// change.
	Message string
}

// NodeReport holds the findings of Doctor for one node.
type NodeReport struct {
	// Address is the node's address as configured, without its password.
	Address string
	// Version is the server's redis_version, or "" when unknown.
	Version string
	// RunID is the server's run_id, or "" when unknown.
	RunID string
	// ClockOffset is how far the node's clock is ahead of the client's
	// (negative when behind), corrected for half the round trip; it is
	// meaningful only when the clock check ran.
	ClockOffset time.Duration
	// Findings holds one entry per check that ran, in the order of the
	// Check constants. An unreachable node has only CheckReachable.
	Findings []Finding
}

// Severity returns the worst severity among the report's findings.
func (r NodeReport) Severity() Severity {
	worst := SeverityOK
	for _, finding := range r.Findings {
		worst = max(worst, finding.Severity)
	}
	return worst
}

// Doctor checks that the Client's nodes can carry Redlock safely and says
// what to fix: for each node, whether it is reachable, a master, not in
// cluster mode, a server distinct from the other nodes (run_id), persisting
// every write (appendonly yes, appendfsync always), never evicting keys
// (maxmemory-policy noeviction), running for longer than the longest TTL,
// keeping a clock close to the client's (measured with TIME), and able to
// notify waiters of releases (RESP3, and an ACL that allows the release
// channels). A service can run it at start-up and refuse to start, or log,
// when a report's Severity is SeverityFail.
//
// Doctor reads INFO and, where INFO does not tell, CONFIG GET; a node that
// refuses CONFIG gets a warning rather than a failure. For the
// notifications it dials one more connection per node, as the Client's
// waiters do, and subscribes to a release channel. It returns one
// NodeReport per node, in the order of Client.Addresses, and an error only
// for invalid options, a closed Client, or a context that ended before the
// checks did (the reports then hold what was found so far).
func (c *Client) Doctor(ctx context.Context, options DoctorOptions) ([]NodeReport, error) {
	options, err := options.withDefaults()
	if err != nil {
		return nil, err
	}
	if c.closed.Load() {
		return nil, ErrClosed
	}
	reports := diagnose(ctx, c.group, c.addresses, c.options, options)
	if ctx.Err() != nil {
		return reports, fmt.Errorf("redlock: doctor: the checks were cut short: %w", context.Cause(ctx))
	}
	return reports, nil
}

// Doctor runs the checks of Client.Doctor on the servers at addresses
// without building a Client, so that it can also report what New refuses,
// such as two addresses that reach the same server. It dials the nodes with
// options, runs the checks and closes the connections. It fails only for
// invalid options or addresses.
func Doctor(ctx context.Context, addresses []string, options Options, doctorOptions DoctorOptions) ([]NodeReport, error) {
	options, err := options.withDefaults()
	if err != nil {
		return nil, err
	}
	doctorOptions, err = doctorOptions.withDefaults()
	if err != nil {
		return nil, err
	}
	if len(addresses) == 0 {
		return nil, fmt.Errorf("%w: no addresses", ErrInvalidOptions)
	}
	group, err := mux.New(addresses, options.groupOptions())
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	defer group.Close()
	names := make([]string, group.Len())
	for i := range names {
		names[i] = group.Address(i)
	}
	return diagnose(ctx, group, names, options, doctorOptions), nil
}

// diagnose examines every node of group at once and compares their run_ids.
// The nodes are named by addresses; clientOptions are those of the
// connections the notifications check makes, as a Client's waiters do.
func diagnose(ctx context.Context, group *mux.Group, addresses []string, clientOptions Options, options DoctorOptions) []NodeReport {
	reports := make([]NodeReport, group.Len())
	var wait sync.WaitGroup
	for i := range reports {
		wait.Go(func() {
			reports[i] = examineNode(ctx, nodeFacts{group: group, node: i}, addresses[i], options)
		})
	}
	notifications := checkNotifications(ctx, group, clientOptions)
	wait.Wait()
	for i := range reports {
		if reports[i].Findings[0].Severity != SeverityFail { // reachable
			reports[i].Findings = append(reports[i].Findings, notifications[i])
		}
	}
	compareRunIDs(reports)
	return reports
}

// nodeFacts is one node of a group, and what INFO told about it.
type nodeFacts struct {
	group *mux.Group
	node  int
	info  map[string]string
}

// do sends one request to the node.
func (f nodeFacts) do(ctx context.Context, request *mux.Request) error {
	if err := f.group.Do(ctx, f.node, request); err != nil {
		return err
	}
	return request.Err()
}

// examineNode runs every check but the run_id comparison on one node.
func examineNode(ctx context.Context, facts nodeFacts, address string, options DoctorOptions) NodeReport {
	report := NodeReport{Address: address}
	info := mux.NewRequest("INFO")
	if err := facts.do(ctx, info); err != nil {
		report.Findings = []Finding{{CheckReachable, SeverityFail,
			fmt.Sprintf("cannot reach the node: %v; check the address, that redis-server runs, and that this host may connect to it", err)}}
		return report
	}
	report.Findings = append(report.Findings, Finding{CheckReachable, SeverityOK,
		fmt.Sprintf("answered INFO in %v", info.Latency().Round(time.Microsecond))})

	if reply := info.Reply(); reply.IsError() {
		facts.info = map[string]string{}
		report.Findings = append(report.Findings, Finding{CheckRole, SeverityWarn,
			fmt.Sprintf("INFO was refused (%v): the role, cluster mode, run_id and uptime cannot be checked; allow INFO for this user", reply.Err())})
	} else {
		facts.info = parseInfo(string(reply.Str))
		report.Findings = append(report.Findings, facts.checkRole(), facts.checkCluster())
	}
	report.Version = facts.info["redis_version"]
	report.RunID = facts.info["run_id"]

	persistence, durable := facts.checkPersistence(ctx)
	report.Findings = append(report.Findings, persistence, facts.checkEviction(ctx), facts.checkUptime(options.LongestTTL, durable))
	clock, offset := facts.checkClock(ctx, options.MaxClockOffset)
	report.Findings = append(report.Findings, clock)
	report.ClockOffset = offset
	return report
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
		if replicas > 0 {
			return Finding{CheckRole, SeverityWarn, fmt.Sprintf(
				"master with %d replica(s): replication is asynchronous, so a replica promoted after a failover may miss recent locks; "+
					"do not let replicas take over lock nodes (no Sentinel or cluster failover), or remove them", replicas)}
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

func (f nodeFacts) checkCluster() Finding {
	switch f.info["cluster_enabled"] {
	case "0":
		return Finding{CheckCluster, SeverityOK, "standalone (cluster_enabled:0)"}
	case "1":
		return Finding{CheckCluster, SeverityFail,
			"runs in cluster mode: lockmux does not follow MOVED or ASK redirects, and a cluster fails over to replicas; " +
				"use standalone servers (cluster-enabled no)"}
	default:
		return Finding{CheckCluster, SeverityWarn, "INFO does not report cluster_enabled; make sure the node is not in cluster mode"}
	}
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
// be read halfway through it.
func (f nodeFacts) checkClock(ctx context.Context, maxOffset time.Duration) (Finding, time.Duration) {
	var offset, roundTrip time.Duration
	found := false
	request := mux.NewRequest("TIME")
	for range clockSamples {
		start := time.Now()
		if err := f.do(ctx, request); err != nil {
			return Finding{CheckClock, SeverityWarn, fmt.Sprintf("cannot read the node's clock: %v", err)}, 0
		}
		end := time.Now()
		if reply := request.Reply(); reply.IsError() {
			return Finding{CheckClock, SeverityWarn, fmt.Sprintf("TIME was refused (%v); the clock cannot be checked", reply.Err())}, 0
		}
		server, ok := parseTime(request.Reply())
		if !ok {
			return Finding{CheckClock, SeverityWarn, "TIME gave an unexpected reply; the clock cannot be checked"}, 0
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
				"slewed rather than stepped, because a node whose clock jumps expires its locks early", describe, direction, maxOffset)}, offset
	}
	return Finding{CheckClock, SeverityOK, fmt.Sprintf("clock %s %s this host's", describe, direction)}, offset
}

// checkNotifications tells, for every node, whether it can carry release
// notifications: it subscribes, as the Client's waiters do, to a release
// channel that no lock uses, over one more connection per node, and waits
// for each node's confirmation or refusal, up to the dial timeout.
func checkNotifications(ctx context.Context, group *mux.Group, options Options) []Finding {
	const fallback = "waiters are not woken by releases on this node, and retry at the retry delay when fewer than a quorum of nodes can notify"
	channel := releasedChannelPrefix + "lockmux-doctor"
	findings := make([]Finding, group.Len())
	var mu sync.Mutex
	pending := group.Len()
	settled := make(chan struct{})
	settle := func(node int, finding Finding) {
		mu.Lock()
		defer mu.Unlock()
		if findings[node].Check != "" {
			return
		}
		findings[node] = finding
		if pending--; pending == 0 {
			close(settled)
		}
	}
	ready := make(chan struct{})
	var subscriber *mux.Subscriber
	subscriber = group.Subscribe(mux.SubscribeOptions{
		OnConnect: func(node int) {
			<-ready
			subscriber.SendTo(node, resp.AppendCommand(nil, "SUBSCRIBE", channel))
		},
		OnPush: func(node int, push resp.Value) {
			if len(push.Elems) >= 2 && string(push.Elems[0].Str) == "subscribe" && string(push.Elems[1].Str) == channel {
				settle(node, Finding{CheckNotifications, SeverityOK, "the user may subscribe to the release channels (" + releasedChannelPrefix + "*) over RESP3: releases wake waiters"})
			}
		},
		OnUnavailable: func(node int, err error) {
			advice := "; use Redis 6 or later, and leave Options.Protocol at ProtocolAuto"
			var refusal *resp.ServerError
			if errors.As(err, &refusal) {
				advice = fmt.Sprintf("; allow the release channels to the user with the ACL rule %s (ACL SETUSER %s %s, and in the ACL file)",
					releaseChannelsRule, group.Username(node), releaseChannelsRule)
			}
			settle(node, Finding{CheckNotifications, SeverityWarn, fmt.Sprintf("%v: %s%s", err, fallback, advice)})
		},
	})
	close(ready)
	timer := time.NewTimer(options.DialTimeout)
	select {
	case <-settled:
	case <-ctx.Done():
	case <-timer.C:
	}
	timer.Stop()
	subscriber.Close()
	for node := range findings {
		settle(node, Finding{CheckNotifications, SeverityWarn, fmt.Sprintf(
			"the subscription to %s was not confirmed within %v; the notifications cannot be checked", channel, options.DialTimeout)})
	}
	return findings
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

// compareRunIDs adds the run_id finding to every reachable node's report:
// a failure for each address whose server another address also reaches.
func compareRunIDs(reports []NodeReport) {
	byRunID := make(map[string][]string)
	for _, report := range reports {
		if report.RunID != "" {
			byRunID[report.RunID] = append(byRunID[report.RunID], report.Address)
		}
	}
	for i := range reports {
		report := &reports[i]
		if len(report.Findings) == 0 || report.Findings[0].Severity == SeverityFail {
			continue // unreachable
		}
		var finding Finding
		switch others := byRunID[report.RunID]; {
		case report.RunID == "":
			finding = Finding{CheckRunID, SeverityWarn, "the run_id is unknown, so a second address reaching the same server would go unnoticed"}
		case len(others) > 1:
			finding = Finding{CheckRunID, SeverityFail, fmt.Sprintf(
				"the same server (run_id %s) is reached through %s: it would count more than once in a quorum; keep one address per server",
				report.RunID, strings.Join(others, " and "))}
		default:
			finding = Finding{CheckRunID, SeverityOK, "a distinct server (run_id " + report.RunID + ")"}
		}
		report.Findings = insertFinding(report.Findings, finding)
	}
}

// insertFinding places the run_id finding after the cluster check, to keep
// the order of the Check constants.
func insertFinding(findings []Finding, finding Finding) []Finding {
	position := len(findings)
	for i, existing := range findings {
		if existing.Check == CheckPersistence {
			position = i
			break
		}
	}
	findings = append(findings, Finding{})
	copy(findings[position+1:], findings[position:])
	findings[position] = finding
	return findings
}
