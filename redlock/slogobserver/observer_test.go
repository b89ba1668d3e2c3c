package slogobserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/redistest"
	"github.com/lockmux/lockmux/internal/trustednodes"
	"github.com/lockmux/lockmux/redlock"
	"github.com/lockmux/lockmux/redlock/slogobserver"
)

// records is a JSON log, safe for concurrent writes.
type records struct {
	mu     sync.Mutex
	buffer bytes.Buffer
}

func (r *records) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.buffer.Write(p)
}

// read returns the records written so far, decoded.
func (r *records) read(t *testing.T) []map[string]any {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []map[string]any
	decoder := json.NewDecoder(bytes.NewReader(r.buffer.Bytes()))
	for decoder.More() {
		var record map[string]any
		require.NoError(t, decoder.Decode(&record))
		out = append(out, record)
	}
	return out
}

// messages returns the level and message of each record.
func messages(all []map[string]any) []string {
	var out []string
	for _, record := range all {
		out = append(out, record[slog.LevelKey].(string)+" "+record[slog.MessageKey].(string))
	}
	return out
}

// newClient returns a Client over addresses that logs at level into the
// returned records, closed when the test ends. Its node timeout is
// generous: a busy machine must not fail a round.
func newClient(t *testing.T, addresses []string, level slog.Level) (*redlock.Client, *records) {
	t.Helper()
	log := &records{}
	logger := slog.New(slog.NewJSONHandler(log, &slog.HandlerOptions{Level: level}))
	client, err := redlock.New(addresses, redlock.Options{NodeTimeout: 5 * time.Second, Observer: slogobserver.New(logger)})
	require.NoError(t, err)
	t.Cleanup(func() { client.Close() })
	return client, log
}

// startNodes starts n redis-server nodes, stated new, and returns their
// addresses.
func startNodes(t testing.TB, n int) []string {
	t.Helper()
	var addresses []string
	for _, server := range redistest.StartN(t, n, redistest.Options{}) {
		addresses = append(addresses, server.Addr())
	}
	require.NoError(t, trustednodes.Trust(context.Background(), addresses, redlock.Options{}))
	return addresses
}

// An acquisition, an extension and a release are logged at Debug, with
// the key and the nodes' count.
func TestCycleIsLoggedAtDebug(t *testing.T) {
	client, log := newClient(t, startNodes(t, 3), slog.LevelDebug)
	ctx := context.Background()
	m := client.NewMutex("orders:1", redlock.MutexOptions{TTL: 10 * time.Second})
	require.NoError(t, m.Lock(ctx))
	require.NoError(t, m.Extend(ctx))
	require.NoError(t, m.Unlock(ctx))

	all := log.read(t)
	require.Equal(t, []string{"DEBUG lock acquired", "DEBUG lock extended", "DEBUG lock released"}, messages(all))
	for _, record := range all {
		assert.Equal(t, "orders:1", record["key"])
		assert.Equal(t, 2.0, record["need"])
		assert.GreaterOrEqual(t, record["got"], 2.0)
		assert.Positive(t, record["elapsed"])
	}
	assert.Equal(t, 1.0, all[0]["attempt"])
	assert.Positive(t, all[0]["validity"])
	assert.Equal(t, false, all[1]["automatic"])
	assert.Positive(t, all[2]["held"])
}

// At Info, a healthy cycle logs nothing.
func TestHealthyCycleIsQuietAtInfo(t *testing.T) {
	client, log := newClient(t, startNodes(t, 3), slog.LevelInfo)
	ctx := context.Background()
	m := client.NewMutex("orders:2", redlock.MutexOptions{})
	require.NoError(t, m.Lock(ctx))
	require.NoError(t, m.Extend(ctx))
	require.NoError(t, m.Unlock(ctx))
	holder := client.NewMutex("orders:3", redlock.MutexOptions{})
	require.NoError(t, holder.Lock(ctx))
	require.ErrorIs(t, client.NewMutex("orders:3", redlock.MutexOptions{}).TryLock(ctx), redlock.ErrNotAcquired)
	assert.Empty(t, log.read(t))
}

// A hold whose keys every node lost is a warning, once found: the loss is
// logged at Warn, then the failed extension that found it at Info. The
// flush waits for the key on every node: a SET that came after it would
// make that node's extension a vote, which its flushed marker quarantines.
func TestLostHoldIsAWarning(t *testing.T) {
	servers := redistest.StartN(t, 3, redistest.Options{})
	var addresses []string
	for _, server := range servers {
		addresses = append(addresses, server.Addr())
	}
	require.NoError(t, trustednodes.Trust(context.Background(), addresses, redlock.Options{}))
	client, log := newClient(t, addresses, slog.LevelInfo)
	ctx := context.Background()
	m := client.NewMutex("orders:4", redlock.MutexOptions{TTL: 10 * time.Second})
	require.NoError(t, m.Lock(ctx))
	before := len(log.read(t)) // the Lock may log a node whose marker it had not read yet
	for _, server := range servers {
		for deadline := time.Now().Add(5 * time.Second); server.Do(t, "EXISTS", "orders:4") != "1"; {
			require.True(t, time.Now().Before(deadline), "%s never held the key", server.Addr())
		}
		server.Do(t, "FLUSHALL")
	}
	require.ErrorIs(t, m.Extend(ctx), redlock.ErrLockLost)

	all := log.read(t)[before:]
	require.Equal(t, []string{"WARN lock lost", "INFO lock extension failed"}, messages(all))
	lost := all[0]
	assert.Equal(t, "orders:4", lost["key"])
	assert.Contains(t, lost["error"], "not extended: 0 of 3 nodes")
	assert.Positive(t, lost["held"])
}

// A node that fails is logged at Warn with its address.
func TestNodeErrorNamesTheNode(t *testing.T) {
	closed := []string{redistest.ClosedAddress(t), redistest.ClosedAddress(t)}
	client, log := newClient(t, append(startNodes(t, 1), closed...), slog.LevelInfo)
	ctx := context.Background()
	require.ErrorIs(t, client.NewMutex("orders:5", redlock.MutexOptions{}).TryLock(ctx), redlock.ErrNotAcquired)

	all := log.read(t)
	require.Equal(t, []string{"WARN lock node error", "WARN lock node error"}, messages(all))
	var nodes []any
	for _, record := range all {
		nodes = append(nodes, record["node"])
		assert.Equal(t, "orders:5", record["key"])
		assert.Equal(t, "lock", record["operation"])
		assert.Contains(t, []any{"error", "not sent"}, record["outcome"])
		assert.NotEmpty(t, record["error"])
	}
	assert.ElementsMatch(t, []any{closed[0], closed[1]}, nodes)
}

// A nil logger means slog.Default().
func TestNilLoggerLogsToTheDefault(t *testing.T) {
	log := &records{}
	previous := slog.Default()
	slog.SetDefault(slog.New(slog.NewJSONHandler(log, nil)))
	observer := slogobserver.New(nil)
	slog.SetDefault(previous)
	observer.OnLost(redlock.LostEvent{Key: "k", Err: redlock.ErrLockLost})
	assert.Equal(t, []string{"WARN lock lost"}, messages(log.read(t)))
}

// Each event is logged at its level.
func TestLevels(t *testing.T) {
	failed := redlock.ErrNotAcquired
	tests := []struct {
		name string
		tell func(*slogobserver.Observer)
		want string
	}{
		{name: "acquired", tell: func(o *slogobserver.Observer) { o.OnAcquire(redlock.AcquireEvent{}) }, want: "DEBUG lock acquired"},
		{name: "not acquired", tell: func(o *slogobserver.Observer) { o.OnAcquire(redlock.AcquireEvent{Err: failed}) }, want: "DEBUG lock not acquired"},
		{name: "released", tell: func(o *slogobserver.Observer) { o.OnRelease(redlock.ReleaseEvent{}) }, want: "DEBUG lock released"},
		{name: "release failed", tell: func(o *slogobserver.Observer) { o.OnRelease(redlock.ReleaseEvent{Err: redlock.ErrLockLost}) }, want: "WARN lock release failed"},
		{name: "extended", tell: func(o *slogobserver.Observer) { o.OnExtend(redlock.ExtendEvent{}) }, want: "DEBUG lock extended"},
		{name: "extension failed", tell: func(o *slogobserver.Observer) { o.OnExtend(redlock.ExtendEvent{Err: failed}) }, want: "INFO lock extension failed"},
		{name: "lost", tell: func(o *slogobserver.Observer) { o.OnLost(redlock.LostEvent{Err: redlock.ErrLockLost}) }, want: "WARN lock lost"},
		{name: "node timeout", tell: func(o *slogobserver.Observer) {
			o.OnNodeError(redlock.NodeErrorEvent{Outcome: redlock.OutcomeTimeout, Err: failed})
		}, want: "WARN lock node error"},
		{name: "quarantined vote", tell: func(o *slogobserver.Observer) {
			o.OnNodeError(redlock.NodeErrorEvent{Outcome: redlock.OutcomeQuarantined, Err: failed})
		}, want: "INFO lock node error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := &records{}
			tt.tell(slogobserver.New(slog.New(slog.NewJSONHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug}))))
			assert.Equal(t, []string{tt.want}, messages(log.read(t)))
		})
	}
}
