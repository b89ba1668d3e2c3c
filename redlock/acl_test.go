package redlock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/redistest"
	"github.com/lockmux/lockmux/redlock/internal/naming"
)

// The minimal ACL rule of a lockmux user, established by experiment on a
// real redis-server: a user who holds the whole rule can use every feature
// of a Client, and a user who lacks any one part of it loses something
// named below. The lock keys of the experiments are orders:1 to orders:9,
// which the pattern ~orders:? admits without their fencing counters, so
// that the counters' part can be taken away on its own; docs/acl.md gives
// the rule with ~orders:*, which admits both.

// aclPart is one part of the rule: the words ACL SETUSER takes for it.
type aclPart struct {
	name  string
	words []string
}

// minimalACL is the rule, part by part, for lock keys matching orders:?.
var minimalACL = []aclPart{
	{name: "lock keys", words: []string{"~orders:?"}},
	{name: "fencing counters", words: []string{"~orders:?" + naming.FenceKeySuffix}},
	{name: "release channels", words: []string{"resetchannels", "&" + naming.ReleasedChannelPrefix + "orders:?"}},
	{name: "+set", words: []string{"+set"}},
	{name: "+evalsha", words: []string{"+evalsha"}},
	{name: "+eval", words: []string{"+eval"}},
	{name: "+script|load", words: []string{"+script|load"}},
	{name: "+get", words: []string{"+get"}},
	{name: "+del", words: []string{"+del"}},
	{name: "+pttl", words: []string{"+pttl"}},
	{name: "+pexpire", words: []string{"+pexpire"}},
	{name: "+publish", words: []string{"+publish"}},
	{name: "+subscribe", words: []string{"+subscribe"}},
	{name: "+unsubscribe", words: []string{"+unsubscribe"}},
	{name: "+client|tracking", words: []string{"+client|tracking"}},
	{name: "+info", words: []string{"+info"}},
}

// quarantineACL are the parts the quarantine needs besides minimalACL: the
// epoch markers' keys, and TIME for the scripts that write them.
var quarantineACL = []aclPart{
	{name: "epoch markers", words: []string{naming.EpochKeysRule}},
	{name: "+time", words: []string{"+time"}},
}

// documentedACL is the rule as docs/acl.md gives it, for lock keys
// matching orders:*, with a password.
const documentedACL = "ACL SETUSER locker reset on >PASSWORD ~orders:* " + naming.EpochKeysRule + " resetchannels &" + naming.ReleasedChannelPrefix + "orders:* " +
	naming.UserCommandsRule

// The operations every experiment runs, in this order.
const (
	operationLock      = "lock and unlock"
	operationExtend    = "extend"
	operationRenew     = "renew (AutoExtend)"
	operationWatch     = "notice a key cut short (AutoExtend)"
	operationResume    = "resume by token"
	operationMulti     = "several keys"
	operationFencing   = "fencing"
	operationWait      = "wait for a release"
	operationWaitAgain = "wait for a release again"
	operationDuplicate = "find two addresses of one server"
)

var aclOperations = []string{operationLock, operationExtend, operationRenew, operationWatch, operationResume, operationMulti,
	operationFencing, operationWait, operationWaitAgain, operationDuplicate}

// aclObserver tells an experiment of failed acquisition attempts, automatic
// extensions and the nodes that cannot notify.
type aclObserver struct {
	NopObserver
	failed        chan struct{}    // one token per failed attempt; dropped when full
	renewed       chan ExtendEvent // the first automatic extension
	notifications chan error       // the first OperationSubscribe report
}

func newACLObserver() *aclObserver {
	return &aclObserver{failed: make(chan struct{}, 64), renewed: make(chan ExtendEvent, 1), notifications: make(chan error, 1)}
}

func (o *aclObserver) OnAcquire(event AcquireEvent) {
	if event.Err != nil {
		select {
		case o.failed <- struct{}{}:
		default:
		}
	}
}

func (o *aclObserver) OnExtend(event ExtendEvent) {
	if event.Automatic {
		select {
		case o.renewed <- event:
		default:
		}
	}
}

func (o *aclObserver) OnNodeError(event NodeErrorEvent) {
	if event.Operation == OperationSubscribe {
		select {
		case o.notifications <- event.Err:
		default:
		}
	}
}

// errDuplicateUnnoticed is the result of operationDuplicate when a Client
// over two addresses of one server does not say so.
var errDuplicateUnnoticed = errors.New("two addresses of one server went unnoticed")

// aclExperiment is one user's experiment on a server: run runs every
// operation as the user, and returns the error of each, nil for those that
// worked.
type aclExperiment struct {
	t       *testing.T
	server  *redistest.Server
	options Options // the user's credentials
}

// waitTimeout bounds a wait for a release: a notification wakes the waiter
// in milliseconds, and nothing else could before the hold's TTL (a minute)
// or the retry delay (an hour).
const waitTimeout = 3 * time.Second

func (e aclExperiment) client(options Options) *Client {
	options.Username, options.Password = e.options.Username, e.options.Password
	options.Protocol, options.Quarantine = e.options.Protocol, e.options.Quarantine
	client, err := New([]string{e.server.Addr()}, options)
	require.NoError(e.t, err)
	e.t.Cleanup(func() { client.Close() })
	return client
}

func (e aclExperiment) run() map[string]error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	observer := newACLObserver()
	client := e.client(Options{Observer: observer})
	results := map[string]error{
		operationLock:      e.lockAndUnlock(ctx, client),
		operationExtend:    e.extend(ctx, client),
		operationRenew:     e.renew(ctx, client, observer),
		operationWatch:     e.watch(ctx),
		operationResume:    e.resume(ctx, client),
		operationMulti:     e.lockAndUnlock(ctx, client, "orders:5", "orders:6"),
		operationFencing:   e.fencing(ctx, client),
		operationDuplicate: e.duplicate(ctx),
	}
	results[operationWait], results[operationWaitAgain] = e.waits(ctx, client)
	return results
}

// lockAndUnlock locks the keys and unlocks them; the first key is the
// Mutex's.
func (e aclExperiment) lockAndUnlock(ctx context.Context, client *Client, keys ...string) error {
	if len(keys) == 0 {
		keys = []string{"orders:1"}
	}
	m := client.NewMutex(keys[0], MutexOptions{TTL: 10 * time.Second, Keys: keys[1:]})
	if err := m.TryLock(ctx); err != nil {
		return err
	}
	return m.Unlock(ctx)
}

func (e aclExperiment) extend(ctx context.Context, client *Client) error {
	m := client.NewMutex("orders:2", MutexOptions{TTL: 10 * time.Second})
	if err := m.TryLock(ctx); err != nil {
		return err
	}
	return errors.Join(m.Extend(ctx), m.Unlock(ctx))
}

// renew returns the error of the first automatic extension of a hold.
func (e aclExperiment) renew(ctx context.Context, client *Client, observer *aclObserver) error {
	m := client.NewMutex("orders:3", MutexOptions{TTL: time.Second, AutoExtend: true})
	if err := m.TryLock(ctx); err != nil {
		return err
	}
	defer m.Unlock(ctx)
	select {
	case event := <-observer.renewed:
		return event.Err
	case <-ctx.Done():
		return fmt.Errorf("no renewal: %w", ctx.Err())
	}
}

// watch returns nil once a renewed hold, whose next renewal is due in
// twenty seconds, extends at once after its key was cut short from
// outside, or the report that the node cannot watch the hold's keys.
func (e aclExperiment) watch(ctx context.Context) error {
	observer := newACLObserver()
	m := e.client(Options{Observer: observer}).NewMutex("orders:w", MutexOptions{TTL: 10 * time.Second, AutoExtend: true})
	if err := m.TryLock(ctx); err != nil {
		return err
	}
	defer m.Unlock(ctx)
	if reply := e.server.Do(e.t, "PEXPIRE", "orders:w", "5000"); reply != "1" {
		return fmt.Errorf("PEXPIRE answered %s", reply)
	}
	waitContext, cancel := context.WithTimeout(ctx, waitTimeout)
	defer cancel()
	for {
		select {
		case event := <-observer.renewed:
			return event.Err
		case err := <-observer.notifications:
			if strings.Contains(err.Error(), "not watched") {
				return err
			}
		case <-waitContext.Done():
			return fmt.Errorf("the cut went unnoticed: %w", waitContext.Err())
		}
	}
}

// resume takes a hold over, by its token, in another Client.
func (e aclExperiment) resume(ctx context.Context, client *Client) error {
	holder := client.NewMutex("orders:4", MutexOptions{TTL: 10 * time.Second})
	if err := holder.TryLock(ctx); err != nil {
		return err
	}
	resumed := e.client(Options{}).NewMutex("orders:4", MutexOptions{TTL: 10 * time.Second, Token: holder.Token()})
	if err := resumed.TryLock(ctx); err != nil {
		holder.Unlock(ctx)
		return err
	}
	return resumed.Unlock(ctx)
}

func (e aclExperiment) fencing(ctx context.Context, client *Client) error {
	m := client.NewMutex("orders:7", MutexOptions{TTL: 10 * time.Second, Fencing: true})
	if err := m.TryLock(ctx); err != nil {
		return err
	}
	fence := m.Fence()
	if err := m.Unlock(ctx); err != nil {
		return err
	}
	if fence < 1 {
		return fmt.Errorf("fence %d", fence)
	}
	return nil
}

// duplicate reports nil when a Client over two addresses of the server
// finds out that they reach one server.
func (e aclExperiment) duplicate(ctx context.Context) error {
	port := e.server.Addr()[strings.LastIndexByte(e.server.Addr(), ':')+1:]
	client, err := New([]string{e.server.Addr(), "localhost:" + port}, Options{Username: e.options.Username, Password: e.options.Password})
	require.NoError(e.t, err)
	defer client.Close()
	m := client.NewMutex("orders:9", MutexOptions{TTL: 10 * time.Second})
	err = m.TryLock(ctx)
	switch {
	case errors.Is(err, ErrDuplicateNode):
		return nil
	case err == nil:
		m.Unlock(ctx)
	}
	return fmt.Errorf("%w: %v", errDuplicateUnnoticed, err)
}

// waits has a waiter of another Client wait for the release of a lock,
// twice: the second time for the release of the first waiter's hold, once
// the first waiter's subscription was dropped. The Client that waits
// retries only every hour, and the holds last a minute: only a
// notification can hand the lock over within waitTimeout.
func (e aclExperiment) waits(ctx context.Context, client *Client) (first, second error) {
	holder := client.NewMutex("orders:8", MutexOptions{TTL: 10 * time.Second})
	if err := holder.TryLock(ctx); err != nil {
		return err, err
	}
	observer := newACLObserver()
	waiters := e.client(Options{Observer: observer, RetryDelayMin: time.Hour, RetryDelayMax: time.Hour})
	// The first wait's subscription is dropped when it ends, rather than
	// kept for the next waiter: the second wait subscribes again, and the
	// first's end unsubscribes (+unsubscribe).
	waiters.notifier.IdleLimit = 0
	firstWaiter := waiters.NewMutex("orders:8", MutexOptions{TTL: 10 * time.Second})
	if first = e.handOver(ctx, holder, firstWaiter, observer); first != nil {
		return first, fmt.Errorf("not run: %w", first)
	}
	secondWaiter := waiters.NewMutex("orders:8", MutexOptions{TTL: 10 * time.Second})
	if second = e.handOver(ctx, firstWaiter, secondWaiter, observer); second != nil {
		return nil, second
	}
	return nil, secondWaiter.Unlock(ctx)
}

// handOver starts waiter's Lock, unlocks holder once the waiter waits for
// the release (its look after subscribing failed too) or its node cannot
// notify, and returns nil once the waiter holds the lock; otherwise the
// report of a node that cannot notify, or the error of the waiter's Lock.
func (e aclExperiment) handOver(ctx context.Context, holder, waiter *Mutex, observer *aclObserver) error {
	for len(observer.failed) > 0 {
		<-observer.failed
	}
	waitContext, cancel := context.WithTimeout(ctx, waitTimeout)
	defer cancel()
	locked := make(chan error, 1)
	go func() { locked <- waiter.Lock(waitContext) }()
	defer func() {
		if locked != nil {
			cancel()
			<-locked
		}
	}()
	for failures := 0; failures < 2; failures++ {
		select {
		case <-observer.failed:
		case err := <-observer.notifications:
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if err := holder.Unlock(ctx); err != nil {
		return err
	}
	err := <-locked
	locked = nil
	return err
}

// aclFailure is how an operation fails for a user who lacks a part of the
// rule.
type aclFailure struct {
	name    string
	matches func(err error) bool
}

var (
	// refusedByNode: the node refused a command the Client sent, with
	// NOPERM, which the Client reports as ErrConfig.
	refusedByNode = aclFailure{"refused by the node (NOPERM, ErrConfig)", func(err error) bool {
		return errors.Is(err, ErrConfig) && strings.Contains(err.Error(), "NOPERM")
	}}
	// refusedInScript: the node refused a command that a script calls,
	// with an error whose code is ERR (Redis 7.0: "The user executing the
	// script can't …"; 7.2: "ACL failure in script"), which the Client
	// reports as ErrConfig too.
	refusedInScript = aclFailure{"refused in a script (ERR, ErrConfig)", func(err error) bool {
		message := err.Error()
		return errors.Is(err, ErrConfig) &&
			(strings.Contains(message, "The user executing the script can't") || strings.Contains(message, "ACL failure in script"))
	}}
	// notificationsUnavailable: the Client reports the node unable to
	// notify, and waiters fall back to retrying.
	notificationsUnavailable = aclFailure{"ErrNotificationsUnavailable", func(err error) bool {
		return errors.Is(err, ErrNotificationsUnavailable) && errors.Is(err, ErrConfig)
	}}
	// notWoken: nothing announced the release; the waiter waited until
	// its context ended.
	notWoken = aclFailure{"not woken by the release", func(err error) bool {
		return errors.Is(err, context.DeadlineExceeded) && errors.Is(err, ErrNotAcquired)
	}}
	// notWatched: the Client reports that the node cannot watch the keys
	// of renewed holds, which are renewed on their schedule.
	notWatched = aclFailure{"keys not watched (ErrNotificationsUnavailable, ErrConfig)", func(err error) bool {
		return errors.Is(err, ErrNotificationsUnavailable) && errors.Is(err, ErrConfig) && strings.Contains(err.Error(), "not watched")
	}}
	// quarantinedVotes: the nodes' epoch markers cannot be read, and
	// their votes do not count.
	quarantinedVotes = aclFailure{"quarantined (ErrNotAcquired, ErrQuarantined)", func(err error) bool {
		return errors.Is(err, ErrNotAcquired) && quarantined(err)
	}}
	// duplicateUnnoticed: a Client over two addresses of one server does
	// not say so.
	duplicateUnnoticed = aclFailure{"ErrDuplicateNode not reported", func(err error) bool {
		return errors.Is(err, errDuplicateUnnoticed)
	}}
)

// everyLockOperation names the operations that need a lock at all.
func everyLockOperation(failure aclFailure) map[string]aclFailure {
	failures := make(map[string]aclFailure)
	for _, operation := range aclOperations {
		if operation != operationDuplicate {
			failures[operation] = failure
		}
	}
	return failures
}

// userRule returns the ACL SETUSER arguments that make user hold the parts
// of the rule but the one named without, and extra words.
func userRule(user, without string, extra ...string) []string {
	arguments := []string{"ACL", "SETUSER", user, "reset", "on", ">pw"}
	for _, part := range slices.Concat(minimalACL, quarantineACL) {
		if part.name != without {
			arguments = append(arguments, part.words...)
		}
	}
	return append(arguments, extra...)
}

// checkExperiment runs the operations for user and checks that those named
// in failures fail as said, and that every other one works.
func checkExperiment(t *testing.T, server *redistest.Server, options Options, failures map[string]aclFailure) {
	t.Helper()
	results := aclExperiment{t: t, server: server, options: options}.run()
	for _, operation := range aclOperations {
		err := results[operation]
		failure, fails := failures[operation]
		if !fails {
			assert.NoError(t, err, operation)
			continue
		}
		if assert.Error(t, err, "%s: should fail: %s", operation, failure.name) {
			assert.True(t, failure.matches(err), "%s: should fail: %s; got: %v", operation, failure.name, err)
		}
	}
}

// A user who holds the whole rule can use every operation, and a user who
// lacks any one part of it loses what the table says: taking each part
// away in turn shows that the rule holds nothing it does not need. The
// quarantine is off here: TestQuarantineACLParts covers its parts.
func TestMinimalACLRule(t *testing.T) {
	redistest.RequireReal(t)
	server := redistest.Start(t, redistest.Options{})
	tests := []struct {
		without  string // the part of the rule left out
		failures map[string]aclFailure
	}{
		{without: "", failures: nil},
		{without: "lock keys", failures: everyLockOperation(refusedByNode)},
		{without: "fencing counters", failures: map[string]aclFailure{operationFencing: refusedByNode}},
		{without: "release channels", failures: map[string]aclFailure{
			operationWait: notificationsUnavailable, operationWaitAgain: notificationsUnavailable}},
		{without: "+set", failures: map[string]aclFailure{
			operationLock: refusedByNode, operationExtend: refusedByNode, operationRenew: refusedByNode, operationWatch: refusedByNode,
			operationResume: refusedByNode, operationMulti: refusedInScript, operationFencing: refusedInScript, operationWait: refusedByNode, operationWaitAgain: refusedByNode}},
		{without: "+evalsha", failures: map[string]aclFailure{
			operationExtend: refusedByNode, operationRenew: refusedByNode, operationWatch: refusedByNode, operationResume: refusedByNode,
			operationMulti: refusedByNode, operationFencing: refusedByNode, operationWait: refusedByNode, operationWaitAgain: refusedByNode}},
		{without: "+eval", failures: map[string]aclFailure{
			operationLock: refusedByNode, operationExtend: refusedByNode, operationWatch: notWatched, operationResume: refusedByNode,
			operationMulti: refusedByNode, operationFencing: refusedByNode, operationWait: refusedByNode, operationWaitAgain: refusedByNode}},
		{without: "+script|load", failures: func() map[string]aclFailure {
			failures := everyLockOperation(refusedByNode)
			failures[operationDuplicate] = duplicateUnnoticed // no connection comes up
			return failures
		}()},
		{without: "+get", failures: map[string]aclFailure{
			operationLock: refusedInScript, operationExtend: refusedInScript, operationRenew: refusedInScript, operationWatch: notWatched,
			operationResume: refusedInScript, operationMulti: refusedInScript, operationFencing: refusedInScript, operationWait: refusedInScript, operationWaitAgain: refusedInScript}},
		{without: "+del", failures: map[string]aclFailure{
			operationLock: refusedInScript, operationExtend: refusedInScript, operationResume: refusedInScript,
			operationMulti: refusedInScript, operationFencing: refusedInScript, operationWait: refusedInScript, operationWaitAgain: refusedInScript}},
		{without: "+pttl", failures: map[string]aclFailure{
			operationWatch: notWatched, operationResume: refusedInScript, operationWait: refusedInScript, operationWaitAgain: refusedInScript}},
		{without: "+pexpire", failures: map[string]aclFailure{
			operationExtend: refusedInScript, operationRenew: refusedInScript, operationWatch: refusedInScript}},
		{without: "+publish", failures: map[string]aclFailure{operationWait: notWoken, operationWaitAgain: notWoken}},
		{without: "+subscribe", failures: map[string]aclFailure{
			operationWait: notificationsUnavailable, operationWaitAgain: notificationsUnavailable}},
		{without: "+unsubscribe", failures: map[string]aclFailure{operationWaitAgain: notificationsUnavailable}},
		{without: "+client|tracking", failures: map[string]aclFailure{operationWatch: notWatched}},
		{without: "+info", failures: map[string]aclFailure{operationDuplicate: duplicateUnnoticed}},
	}
	require.Len(t, tests, len(minimalACL)+1, "one case per part of the rule, and the whole rule")
	for i, tt := range tests {
		name := "the whole rule"
		if tt.without != "" {
			name = "without " + tt.without
		}
		t.Run(name, func(t *testing.T) {
			server.Do(t, "FLUSHALL")
			trustServers(t, server)
			user := "locker" + strconv.Itoa(i)
			require.Equal(t, "OK", server.Do(t, userRule(user, tt.without)...))
			checkExperiment(t, server, Options{Username: user, Password: "pw", Quarantine: QuarantineOff}, tt.failures)
		})
	}
}

// With the quarantine on (the default), a user who lacks the epoch
// markers' keys, TIME or INFO cannot show that a node kept its keys: every
// node's vote is quarantined.
func TestQuarantineACLParts(t *testing.T) {
	redistest.RequireReal(t)
	server := redistest.Start(t, redistest.Options{})
	trustServers(t, server)
	withoutInfo := everyLockOperation(quarantinedVotes)
	withoutInfo[operationDuplicate] = duplicateUnnoticed
	tests := []struct {
		without  string
		failures map[string]aclFailure
	}{
		{without: "", failures: nil},
		{without: "epoch markers", failures: everyLockOperation(quarantinedVotes)},
		{without: "+time", failures: everyLockOperation(quarantinedVotes)},
		{without: "+info", failures: withoutInfo},
	}
	for i, tt := range tests {
		name := "the whole rule"
		if tt.without != "" {
			name = "without " + tt.without
		}
		t.Run(name, func(t *testing.T) {
			user := "guarded" + strconv.Itoa(i)
			require.Equal(t, "OK", server.Do(t, userRule(user, tt.without)...))
			checkExperiment(t, server, Options{Username: user, Password: "pw"}, tt.failures)
		})
	}
}

// The rule as docs/acl.md gives it, for lock keys matching orders:*, lets
// a user use every operation, and its commands are the parts established
// above: naming.UserCommandsRule, which the doctor checks, is this rule.
func TestMinimalACLRuleAsTheDocsGiveIt(t *testing.T) {
	var commands []string
	for _, part := range slices.Concat(minimalACL, quarantineACL) {
		if strings.HasPrefix(part.name, "+") {
			commands = append(commands, part.words...)
		}
	}
	assert.Equal(t, strings.Join(commands, " "), naming.UserCommandsRule)
	page, err := os.ReadFile("../docs/acl.md")
	require.NoError(t, err)
	assert.True(t, strings.Contains(string(page), documentedACL), "docs/acl.md gives the rule %q", documentedACL)

	redistest.RequireReal(t)
	server := redistest.Start(t, redistest.Options{})
	trustServers(t, server)
	arguments := strings.Fields(strings.Replace(documentedACL, ">PASSWORD", ">pw", 1))
	require.Equal(t, "OK", server.Do(t, arguments...))
	checkExperiment(t, server, Options{Username: "locker", Password: "pw"}, nil)
}

// Two parts that only some users need: +select for an address that names
// a database, and +client|setname for a Client that asks for RESP2 (which
// names its connections with CLIENT SETNAME rather than HELLO). Without
// them no connection comes up, and every operation fails with ErrConfig.
func TestConditionalACLParts(t *testing.T) {
	redistest.RequireReal(t)
	server := redistest.Start(t, redistest.Options{})
	tests := []struct {
		name     string
		part     string
		database string // the address's path
		options  Options
		refusal  error
	}{
		{name: "a database", part: "+select", database: "/1", options: Options{Quarantine: QuarantineOff}, refusal: ErrConfig},
		{name: "RESP2", part: "+client|setname", options: Options{Protocol: ProtocolRESP2, Quarantine: QuarantineOff}, refusal: ErrConfig},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, granted := range []bool{true, false} {
				user := "locker-" + strconv.Itoa(i) + "-" + strconv.FormatBool(granted)
				var extra []string
				if granted {
					extra = []string{tt.part}
				}
				require.Equal(t, "OK", server.Do(t, userRule(user, "", extra...)...))
				client, err := New([]string{"redis://" + user + ":pw@" + server.Addr() + tt.database}, tt.options)
				require.NoError(t, err)
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				err = aclExperiment{t: t}.lockAndUnlock(ctx, client)
				cancel()
				client.Close()
				if granted {
					assert.NoError(t, err, "with %s", tt.part)
					continue
				}
				if assert.Error(t, err, "without %s", tt.part) {
					assert.ErrorIs(t, err, tt.refusal)
					assert.Contains(t, err.Error(), "NOPERM")
					assert.Contains(t, err.Error(), "'"+strings.TrimPrefix(tt.part, "+")+"'")
				}
			}
		})
	}
}
