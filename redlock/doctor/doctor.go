package doctor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/lockmux/lockmux/mux"
	"github.com/lockmux/lockmux/redlock"
	"github.com/lockmux/lockmux/redlock/internal/transport"
	"github.com/lockmux/lockmux/resp"
)

// DefaultMaxClockOffset is the clock offset between a node and the client
// above which Run warns.
const DefaultMaxClockOffset = 50 * time.Millisecond

// clockSamples is how many TIME round trips Run makes per node; the one
// with the shortest round trip gives the offset.
const clockSamples = 3

// Options configures Run. The zero value is usable: every zero field means
// its default.
type Options struct {
	// LongestTTL is the longest time a lock may stay on a node, extensions
	// included: a node that restarted without persistence less than that
	// long ago may have forgotten locks that are still valid. Zero means
	// redlock.DefaultTTL (10 s); negative is invalid.
	LongestTTL time.Duration

	// MaxClockOffset is the largest difference between a node's clock and
	// the client's that passes the clock check. Zero means
	// DefaultMaxClockOffset (50 ms); negative is invalid.
	MaxClockOffset time.Duration

	// KeyPrefix is a prefix that the lock keys share, such as "orders:"
	// for the keys of ~orders:*. The permissions check probes the user's
	// rights on a key that starts with it, followed by "lockmux-doctor:"
	// and random hexadecimal digits, a key that no lock uses: it sets the
	// key and its fencing counter, with a TTL of ten seconds, and deletes
	// them again. The empty prefix probes "lockmux-doctor:…", which a user
	// who may use only some keys may not touch: the check then warns that
	// it cannot tell, rather than fail.
	KeyPrefix string
}

// withDefaults returns o with its zero fields set, or an error wrapping
// redlock.ErrInvalidOptions.
func (o Options) withDefaults() (Options, error) {
	switch {
	case o.LongestTTL < 0:
		return o, fmt.Errorf("doctor: %w: Options.LongestTTL %v is negative", redlock.ErrInvalidOptions, o.LongestTTL)
	case o.MaxClockOffset < 0:
		return o, fmt.Errorf("doctor: %w: Options.MaxClockOffset %v is negative", redlock.ErrInvalidOptions, o.MaxClockOffset)
	}
	if o.LongestTTL == 0 {
		o.LongestTTL = redlock.DefaultTTL
	}
	if o.MaxClockOffset == 0 {
		o.MaxClockOffset = DefaultMaxClockOffset
	}
	return o, nil
}

// Run checks that the Redis servers at addresses can carry Redlock
// safely, and says what to fix; docs/operations.md lists the checks. Give
// it the addresses and redlock.Options given to redlock.New: only the
// connection fields apply (credentials, TLS, dial timeout, client name,
// protocol). It dials connections of its own and closes them. It returns
// one NodeReport per node, in the order of addresses. The error matches
// redlock.ErrInvalidOptions for invalid options or addresses, with no
// reports, or the context's error when ctx ended first; the reports then
// hold what was found.
func Run(ctx context.Context, addresses []string, options redlock.Options, doctorOptions Options) ([]NodeReport, error) {
	doctorOptions, err := doctorOptions.withDefaults()
	if err != nil {
		return nil, err
	}
	groupOptions, err := transport.GroupOptions(options)
	if err != nil {
		return nil, fmt.Errorf("doctor: %w", err)
	}
	group, err := transport.NewGroup(addresses, options)
	if err != nil {
		return nil, fmt.Errorf("doctor: %w", err)
	}
	defer group.Close()
	names := make([]string, group.Len())
	for i := range names {
		names[i] = group.Address(i)
	}
	reports := diagnose(ctx, group, names, groupOptions.DialTimeout, doctorOptions)
	if ctx.Err() != nil {
		return reports, fmt.Errorf("doctor: the checks were cut short: %w", context.Cause(ctx))
	}
	return reports, nil
}

// diagnose examines every node of group at once and compares their run_ids.
// The nodes are named by addresses; the notifications check waits up to
// dialTimeout for its subscriptions; the permissions check probes a key of
// its own under options.KeyPrefix.
func diagnose(ctx context.Context, group *mux.Group, addresses []string, dialTimeout time.Duration, options Options) []NodeReport {
	announce := announcingOf(group)
	probeKey := announce.probeKey(options.KeyPrefix)
	reports := make([]NodeReport, group.Len())
	probes := make([]*permissionProbe, group.Len())
	var wait sync.WaitGroup
	for i := range reports {
		wait.Go(func() {
			reports[i], probes[i] = examineNode(ctx, nodeFacts{group: group, node: i, announce: announce}, addresses[i], options, probeKey)
		})
	}
	subscriptions := checkNotifications(ctx, group, announce, dialTimeout, probeKey, options.KeyPrefix)
	wait.Wait()
	for i := range reports {
		if reports[i].Findings[0].Severity == SeverityFail { // unreachable
			continue
		}
		reports[i].Findings = append(reports[i].Findings, subscriptions[i].finding)
		if probe := probes[i]; probe != nil {
			probe.observeSubscription(subscriptions[i])
			reports[i].Findings = append(reports[i].Findings, probe.finding(group.Username(i), options.KeyPrefix, probeKey))
		}
	}
	compareRunIDs(reports)
	return reports
}

// subscriptionCheck is what the notifications check found on one node.
type subscriptionCheck struct {
	finding Finding
	// subscribed and unsubscribed tell whether the node confirmed the
	// subscription, and then its end.
	subscribed, unsubscribed bool
	// refusal is the node's refusal of SUBSCRIBE (of UNSUBSCRIBE when
	// subscribed is set), nil when it refused neither.
	refusal *resp.ServerError
	// tracking tells whether the node turned key tracking on for the
	// subscription connection, and trackingRefusal is its refusal.
	tracking        bool
	trackingRefusal *resp.ServerError
}

// checkNotifications tells, for every node, whether it can carry release
// notifications: it subscribes, as a Client's waiters do (announce), to the release
// channel of probeKey, which no lock uses, over one more connection per
// node, then unsubscribes, and waits for each node's confirmations or
// refusal, up to dialTimeout. The connection turns key tracking on, as a
// Client's do for the keys of renewed holds: the permissions check reads
// whether the node let it. The advice for a refused channel names the
// release channels of the lock keys that start with keyPrefix.
func checkNotifications(ctx context.Context, group *mux.Group, announce announcing, dialTimeout time.Duration, probeKey, keyPrefix string) []subscriptionCheck {
	const fallback = "waiters are not woken by releases on this node, and retry at the retry delay when fewer than a quorum of nodes can notify"
	channel := announce.channel(probeKey)
	channelsRule := announce.ruleWord(partChannels, keyPrefix)
	checks := make([]subscriptionCheck, group.Len())
	var mu sync.Mutex
	pending := group.Len()
	settled := make(chan struct{})
	// settleLocked records node's finding, once; the caller holds mu.
	settleLocked := func(node int, finding Finding) {
		if checks[node].finding.Check != "" {
			return
		}
		checks[node].finding = finding
		if pending--; pending == 0 {
			close(settled)
		}
	}
	ready := make(chan struct{})
	var subscriber *mux.Subscriber
	subscriber = group.Subscribe(mux.SubscribeOptions{
		OnConnect: func(node int) {
			<-ready
			mu.Lock()
			// Tracking was turned on, or refused, before OnConnect.
			checks[node].tracking = checks[node].trackingRefusal == nil
			mu.Unlock()
			subscriber.SendTo(node, resp.AppendCommand(nil, announce.command("SUBSCRIBE"), channel))
		},
		OnInvalidate: func(mux.Invalidation) {}, // nothing is armed: tracking is only turned on
		OnTrackingUnavailable: func(node int, err error) {
			// Only an ACL's refusal concerns the permissions: a server that
			// does not know CLIENT TRACKING has nothing for an ACL to grant.
			var refusal *resp.ServerError
			if errors.As(err, &refusal) && classifyRefusal(refusal.Message) != notRefused {
				mu.Lock()
				checks[node].trackingRefusal = refusal
				mu.Unlock()
			}
		},
		OnPush: func(node int, push resp.Value) {
			if len(push.Elems) < 2 || string(push.Elems[1].Str) != channel {
				return
			}
			switch string(push.Elems[0].Str) {
			case "subscribe", "ssubscribe":
				mu.Lock()
				checks[node].subscribed = true
				mu.Unlock()
				subscriber.SendTo(node, resp.AppendCommand(nil, announce.command("UNSUBSCRIBE"), channel))
			case "unsubscribe", "sunsubscribe":
				mu.Lock()
				defer mu.Unlock()
				checks[node].unsubscribed = true
				settleLocked(node, Finding{CheckNotifications, SeverityOK, "the user may subscribe to the release channels (" +
					announce.channel("*") + ", " + announce.command("SUBSCRIBE") + ") and unsubscribe, over RESP3: releases wake waiters"})
			}
		},
		OnUnavailable: func(node int, err error) {
			mu.Lock()
			defer mu.Unlock()
			var refusal *resp.ServerError
			if !errors.As(err, &refusal) {
				settleLocked(node, Finding{CheckNotifications, SeverityWarn, fmt.Sprintf(
					"%v: %s; use Redis 6 or later, and leave Options.Protocol at ProtocolAuto", err, fallback)})
				return
			}
			checks[node].refusal = refusal
			grant := func(what, rule string) string {
				return fmt.Sprintf("allow %s to the user with the ACL rule %s (ACL SETUSER %s %s, and in the ACL file)", what, rule, group.Username(node), rule)
			}
			var message string
			switch {
			case checks[node].subscribed:
				message = fmt.Sprintf("%v: a Client stops listening to this node when its first wait ends, and then %s; %s",
					err, fallback, grant(announce.command("UNSUBSCRIBE"), announce.ruleWord("+unsubscribe", keyPrefix)))
			case classifyRefusal(refusal.Message) == refusedCommand:
				message = fmt.Sprintf("%v: %s; %s", err, fallback, grant(announce.command("SUBSCRIBE"), announce.ruleWord("+subscribe", keyPrefix)))
			default:
				message = fmt.Sprintf("%v: %s; %s", err, fallback, grant("the release channels", channelsRule))
			}
			settleLocked(node, Finding{CheckNotifications, SeverityWarn, message})
		},
	})
	close(ready)
	timer := time.NewTimer(dialTimeout)
	select {
	case <-settled:
	case <-ctx.Done():
	case <-timer.C:
	}
	timer.Stop()
	subscriber.Close()
	mu.Lock()
	defer mu.Unlock()
	for node := range checks {
		settleLocked(node, Finding{CheckNotifications, SeverityWarn, fmt.Sprintf(
			"the subscription to %s and its end were not confirmed within %v; the notifications cannot be checked", channel, dialTimeout)})
	}
	return checks
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
