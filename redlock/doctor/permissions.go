package doctor

import (
	"context"
	_ "embed"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/lockmux/lockmux/mux"
	"github.com/lockmux/lockmux/redlock/internal/naming"
	"github.com/lockmux/lockmux/resp"
)

// permissionsScript calls, with pcall, every command that the lock
// scripts call, on the probe key, and says which ones the ACL refused.
//
//go:embed permissions.lua
var permissionsScript string

// permissionsLua is permissionsScript, loaded by the check itself with
// SCRIPT LOAD, as a Client's connections load theirs.
var permissionsLua = mux.NewScript(permissionsScript)

// probeKeyInfix follows Options.KeyPrefix in the probe key, before random
// hexadecimal digits.
const probeKeyInfix = "lockmux-doctor:"

// probeTTL is the TTL, in milliseconds, of every key the permissions check
// sets: a key it may set but not delete goes away by itself.
const probeTTL = "10000"

// probeKey returns a key under prefix that no lock uses: the permissions
// check sets it and deletes it again, with its fencing counter, and the
// notifications check subscribes to its release channel. With sharded
// announcements (a node is a Redis Cluster), its random digits are a hash
// tag, so that the key, its counter and its release channel share a slot,
// as a lock's must.
func (a announcing) probeKey(prefix string) string {
	digits := strconv.FormatUint(rand.Uint64()|1<<63, 16)
	if a.sharded {
		digits = "{" + digits + "}"
	}
	return prefix + probeKeyInfix + digits
}

// The parts of the minimal ACL rule of a lockmux user that are not
// commands.
const (
	partKeys      = "keys"
	partFenceKeys = "fencing counters"
	partEpochKeys = "epoch markers"
	partChannels  = "channels"
)

// permission is one part of the minimal ACL rule of a lockmux user.
type permission struct {
	// part is the command's rule word (such as "+get"), or partKeys,
	// partFenceKeys or partChannels.
	part string
	// severity grades a node whose user lacks it.
	severity Severity
	// without says what a Client cannot do without it.
	without string
}

// permissions lists the rule in the order of docs/acl.md: the keys, the
// channels, and the commands of naming.UserCommandsRule.
var permissions = []permission{
	{partKeys, SeverityFail, "every operation fails with ErrConfig (NOPERM)"},
	{partFenceKeys, SeverityWarn, "fenced Locks (MutexOptions.Fencing) fail with ErrConfig"},
	{partEpochKeys, SeverityFail, "with the quarantine on (the default), the node's votes never count: every Lock fails"},
	{partChannels, SeverityWarn, "waiters are not woken by releases, and retry at the retry delay"},
	{"+set", SeverityFail, "every Lock fails"},
	{"+evalsha", SeverityFail, "Extend, renewals, multi-key, fenced and waiting Locks and resumptions fail with ErrConfig"},
	{"+eval", SeverityFail, "every Unlock fails with ErrConfig: locks stay until their TTL ends"},
	{"+script|load", SeverityFail, "no connection of a Client comes up: every operation fails with ErrConfig"},
	{"+get", SeverityFail, "Unlock, Extend, renewals, multi-key and fenced Locks and resumptions fail (their scripts call GET)"},
	{"+del", SeverityFail, "every Unlock fails (the release script calls DEL)"},
	{"+pttl", SeverityFail, "resumptions fail, and so do the refused attempts of waiting, multi-key and fenced Locks (their scripts call PTTL)"},
	{"+pexpire", SeverityFail, "Extend and renewals fail (the extension script calls PEXPIRE)"},
	{"+publish", SeverityWarn, "releases are not announced: waiters sleep until the holder's TTL ends or eight retry delays pass"},
	{"+subscribe", SeverityWarn, "waiters cannot listen for releases, and retry at the retry delay"},
	{"+unsubscribe", SeverityWarn, "the first wait that ends makes a Client stop listening to the node; later waiters retry at the retry delay"},
	{"+client|tracking", SeverityWarn, "the keys of renewed holds are not watched: a key cut short from outside is noticed only at the next renewal"},
	{"+info", SeverityFail, "a Client cannot find two addresses of one server (ErrDuplicateNode) and, with the quarantine on (the default), the node's votes never count"},
	{"+time", SeverityFail, "with the quarantine on (the default), the node's votes never count: its epoch script calls TIME"},
}

// refusal is what the ACL refused in an error reply.
type refusal uint8

const (
	notRefused refusal = iota // not an ACL refusal: another error
	refusedCommand
	refusedKey
	refusedChannel
)

// classifyRefusal tells what an error message refuses. It knows the
// refusals of commands sent by the user (NOPERM …) and of commands called
// by a script ("The user executing the script can't …" up to Redis 7.0,
// "ACL failure in script: …" from 7.2), which name the command, a key
// or a channel.
func classifyRefusal(message string) refusal {
	lower := strings.ToLower(message)
	if string(resp.ErrorCode([]byte(message))) != "NOPERM" &&
		!strings.Contains(lower, "the user executing the script") && !strings.Contains(lower, "acl failure in script") {
		return notRefused
	}
	switch {
	case strings.Contains(lower, "run this command"), strings.Contains(lower, "permissions to run the"):
		return refusedCommand
	case strings.Contains(lower, "channel"):
		return refusedChannel
	case strings.Contains(lower, "key"):
		return refusedKey
	}
	return refusedCommand
}

// permissionProbe is what the permissions check found on one node.
type permissionProbe struct {
	announce announcing
	allowed  map[string]bool   // the parts that a probe showed allowed
	refused  map[string]string // the parts refused, with the node's refusal
	problems []string          // errors that are not refusals
}

func newPermissionProbe(announce announcing) *permissionProbe {
	return &permissionProbe{announce: announce, allowed: make(map[string]bool), refused: make(map[string]string)}
}

// allow notes that a probe ran what part grants.
func (p *permissionProbe) allow(part string) { p.allowed[part] = true }

// refuse notes the node's refusal of part; the first refusal is kept.
func (p *permissionProbe) refuse(part, message string) {
	if _, found := p.refused[part]; !found {
		p.refused[part] = message
	}
}

// observe notes the reply to command: part is the part of the rule that
// grants the command, and keys the parts that grant its keys (partKeys,
// then partFenceKeys for a command over a fencing counter too), nil for a
// command without keys. It reports whether the command ran.
func (p *permissionProbe) observe(command, part string, keys []string, reply resp.Value) bool {
	if !reply.IsError() {
		p.allow(part)
		for _, key := range keys {
			p.allow(key)
		}
		return true
	}
	message := string(reply.Str)
	switch classifyRefusal(message) {
	case refusedCommand:
		p.refuse(part, message)
	case refusedKey:
		p.allow(part) // the ACL checks the command before its keys
		if len(keys) > 0 {
			p.refuse(keys[len(keys)-1], message)
		}
	case refusedChannel:
		p.allow(part)
		p.refuse(partChannels, message)
	default:
		p.problems = append(p.problems, command+" answered "+message)
	}
	return false
}

// observeScript notes the replies of permissionsScript's commands.
func (p *permissionProbe) observeScript(reply resp.Value) {
	elements := reply.Elems
	if reply.Type != resp.TypeArray || len(elements)%2 != 0 {
		p.problems = append(p.problems, "the probe script gave an unexpected reply")
		return
	}
	for i := 0; i < len(elements); i += 2 {
		name, message := string(elements[i].Str), string(elements[i+1].Str)
		if message == "" {
			p.allow("+" + name)
			if name == "publish" {
				p.allow(partChannels)
			}
			continue
		}
		command := strings.ToUpper(name)
		if name == "publish" {
			command = p.announce.command(command)
		}
		p.observe(command+" in a script", "+"+name, []string{partKeys}, resp.Value{Type: resp.TypeError, Str: []byte(message)})
	}
}

// probePermissions runs on the node the commands that a Client sends,
// on the probe key, as a Client sends them: SET NX PX, SCRIPT LOAD,
// EVALSHA and EVAL of a script that calls every command the lock scripts
// call, over the probe key alone and over the probe key and its fencing
// counter. It returns early only for a failure of the connection.
func (f nodeFacts) probePermissions(ctx context.Context, probeKey string) (*permissionProbe, error) {
	probe := newPermissionProbe(f.announce)
	channel, publish := f.announce.channel(probeKey), f.announce.command("PUBLISH")
	fenceKey := probeKey + naming.FenceKeySuffix
	const value = "lockmux-doctor"
	calls := []struct {
		command, part string
		keys          []string // the parts that grant the command's keys
		arguments     []string
	}{
		{"SET", "+set", []string{partKeys}, []string{"SET", probeKey, value, "NX", "PX", probeTTL}},
		{"TIME", "+time", nil, []string{"TIME"}},
		{"GET", "+get", []string{partEpochKeys}, []string{"GET", naming.EpochKey}},
		{"SCRIPT LOAD", "+script|load", nil, []string{"SCRIPT", "LOAD", permissionsLua.Source()}},
		{"EVALSHA", "+evalsha", []string{partKeys}, []string{"EVALSHA", permissionsLua.SHA(), "1", probeKey, value, channel, publish}},
		{"EVALSHA", "+evalsha", []string{partKeys, partFenceKeys}, []string{"EVALSHA", permissionsLua.SHA(), "2", probeKey, fenceKey, value, channel, publish}},
		{"EVAL", "+eval", []string{partKeys}, []string{"EVAL", permissionsLua.Source(), "1", probeKey, value, channel, publish}},
		{"EVAL", "+eval", []string{partKeys, partFenceKeys}, []string{"EVAL", permissionsLua.Source(), "2", probeKey, fenceKey, value, channel, publish}},
	}
	for _, call := range calls {
		_, commandRefused := probe.refused[call.part]
		_, keysRefused := probe.refused[partKeys]
		if commandRefused || keysRefused && len(call.keys) == 2 {
			continue // refused already, or a refusal of the counter could not be told from one of the key
		}
		request := mux.NewRequest(call.arguments...)
		if err := f.do(ctx, request); err != nil {
			return probe, err
		}
		reply := request.Reply()
		if reply.IsError() && string(resp.ErrorCode(reply.Str)) == "NOSCRIPT" {
			// SCRIPT LOAD was refused: EVALSHA itself passed the ACL.
			probe.observe(call.command, call.part, call.keys, resp.Value{Type: resp.TypeSimpleString})
			continue
		}
		if probe.observe(call.command, call.part, call.keys, reply) && strings.HasPrefix(call.command, "EVAL") {
			probe.observeScript(reply)
		}
	}
	return probe, nil
}

// observeInfo notes the reply to the INFO that the node's checks began
// with.
func (p *permissionProbe) observeInfo(reply resp.Value) {
	p.observe("INFO", "+info", nil, reply)
}

// observeSubscription notes what the notifications check found.
func (p *permissionProbe) observeSubscription(check subscriptionCheck) {
	if check.subscribed {
		p.allow("+subscribe")
		p.allow(partChannels)
	}
	if check.unsubscribed {
		p.allow("+unsubscribe")
	}
	if check.tracking {
		p.allow("+client|tracking")
	}
	if check.trackingRefusal != nil {
		p.observe("CLIENT TRACKING", "+client|tracking", nil, resp.Value{Type: resp.TypeError, Str: []byte(check.trackingRefusal.Message)})
	}
	if check.refusal != nil {
		command := "SUBSCRIBE"
		if check.subscribed {
			command = "UNSUBSCRIBE"
		}
		p.observe(p.announce.command(command), "+"+strings.ToLower(command), nil, resp.Value{Type: resp.TypeError, Str: []byte(check.refusal.Message)})
	}
}

// finding grades what probe found for user, whose lock keys start with
// prefix, probed on probeKey.
func (p *permissionProbe) finding(user, prefix, probeKey string) Finding {
	severity := SeverityOK
	var missing, words, unchecked, outside []string
	for _, permission := range permissions {
		refusal, refused := p.refused[permission.part]
		switch {
		case refused && prefix == "" && permission.part == partKeys:
			outside = append(outside, "the probe key "+probeKey)
			severity = max(severity, SeverityWarn)
		case refused && prefix == "" && permission.part == partChannels:
			outside = append(outside, "its release channel "+p.announce.channel(probeKey))
			severity = max(severity, SeverityWarn)
		case refused:
			missing = append(missing, fmt.Sprintf("%s (%s; the node said: %s)", p.announce.ruleWord(permission.part, prefix), permission.without, refusal))
			words = append(words, p.announce.ruleWord(permission.part, prefix))
			severity = max(severity, permission.severity)
		case !p.allowed[permission.part]:
			unchecked = append(unchecked, p.announce.ruleWord(permission.part, prefix))
			severity = max(severity, SeverityWarn)
		}
	}
	if len(p.problems) > 0 {
		severity = max(severity, SeverityWarn)
	}
	if severity == SeverityOK {
		return Finding{CheckPermissions, SeverityOK, fmt.Sprintf(
			"the user %s may run every command lockmux sends (%s), on keys such as %s and their fencing counters, and use their release channels",
			user, p.announce.rule(), probeKey)}
	}
	var message []string
	if len(missing) > 0 {
		pronoun := "it"
		if len(missing) > 1 {
			pronoun = "them"
		}
		message = append(message, fmt.Sprintf("the user %s lacks %s; grant %s with ACL SETUSER %s %s (and in the ACL file)",
			user, strings.Join(missing, ", "), pronoun, user, strings.Join(words, " ")))
	}
	if len(outside) > 0 {
		message = append(message, fmt.Sprintf(
			"the user %s may not use %s, so its rights on its lock keys and their release channels are unknown: "+
				"give the prefix of the lock keys (Options.KeyPrefix, redlock doctor --key-prefix) to check them",
			user, strings.Join(outside, " nor ")))
	}
	if len(unchecked) > 0 {
		message = append(message, "could not check "+strings.Join(unchecked, " "))
	}
	if len(p.problems) > 0 {
		message = append(message, strings.Join(p.problems, "; "))
	}
	return Finding{CheckPermissions, severity, strings.Join(message, "; ")}
}
