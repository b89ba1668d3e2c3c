package otel_test

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	lockmuxotel "github.com/lockmux/lockmux/contrib/otel"
	"github.com/lockmux/lockmux/internal/redistest"
	"github.com/lockmux/lockmux/redlock"
)

// A Lock, an Extend and an Unlock that go well make one span each, named
// and attributed by the conventions, with the durations the metrics saw.
func TestSpansOfALockCycle(t *testing.T) {
	tm := newTelemetry(t, lockmuxotel.Options{})
	client := newClient(t, addressesOf(redistest.StartN(t, 3, redistest.Options{})), tm.observer)
	ctx := context.Background()
	m := client.NewMutex("orders:1", redlock.MutexOptions{TTL: 10 * time.Second})
	require.NoError(t, m.Lock(ctx))
	require.NoError(t, m.Extend(ctx))
	require.NoError(t, m.Unlock(ctx))

	require.Equal(t, []string{"lockmux.lock", "lockmux.extend", "lockmux.unlock"}, tm.names())
	spans := tm.ended()
	for _, span := range spans {
		assert.Equal(t, trace.SpanKindClient, span.SpanKind(), span.Name())
		assert.Equal(t, codes.Unset, span.Status().Code, span.Name())
		assert.Equal(t, lockmuxotel.ScopeName, span.InstrumentationScope().Name)
		assert.Empty(t, span.Events(), span.Name())
		assert.False(t, span.Parent().IsValid(), span.Name())
		attributes := attributesOf(span.Attributes())
		assert.Equal(t, "redis", attributes["db.system.name"].AsString(), span.Name())
		// A round ends once a quorum confirmed: the last reply may not count.
		assert.Contains(t, []int64{2, 3}, attributes["lockmux.got"].AsInt64(), span.Name())
		assert.Equal(t, int64(2), attributes["lockmux.need"].AsInt64(), span.Name())
		assert.NotContains(t, attributes, attribute.Key("lockmux.key"), span.Name())
		assert.NotContains(t, attributes, attribute.Key("error.type"), span.Name())
	}
	lock, extend, unlock := attributesOf(spans[0].Attributes()), attributesOf(spans[1].Attributes()), attributesOf(spans[2].Attributes())
	assert.Equal(t, "acquired", lock["lockmux.result"].AsString())
	assert.Equal(t, int64(1), lock["lockmux.attempt"].AsInt64())
	assert.Positive(t, lock["lockmux.validity"].AsFloat64())
	assert.LessOrEqual(t, lock["lockmux.validity"].AsFloat64(), time.Minute.Seconds())
	assert.Equal(t, "extended", extend["lockmux.result"].AsString())
	assert.False(t, extend["lockmux.automatic"].AsBool())
	assert.Positive(t, extend["lockmux.validity"].AsFloat64())
	assert.Equal(t, "released", unlock["lockmux.result"].AsString())
	assert.Positive(t, unlock["lockmux.held"].AsFloat64())

	// Each span lasts the operation's Elapsed, which the histograms
	// recorded: it starts that long before it ends.
	metrics := tm.metrics(t)
	for i, name := range []string{"lockmux.acquire.duration", "lockmux.extend.duration", "lockmux.release.duration"} {
		point := histogramPoint(t, metrics, name)
		require.Equal(t, uint64(1), point.Count, name)
		duration := spans[i].EndTime().Sub(spans[i].StartTime())
		assert.Positive(t, duration, name)
		assert.InDelta(t, point.Sum, duration.Seconds(), 1e-9, name)
	}
}

// A refused attempt's span fails, with each node's outcome as an event;
// the key is in no attribute, event or status unless asked for.
func TestFailedAttemptSpanHasEachNodesOutcome(t *testing.T) {
	servers := redistest.StartN(t, 2, redistest.Options{})
	closed := redistest.ClosedAddress(t)
	addresses := append(addressesOf(servers), closed)
	holder := newClient(t, addresses, nil).NewMutex("orders:2", redlock.MutexOptions{TTL: 10 * time.Second})
	ctx := context.Background()
	require.NoError(t, holder.Lock(ctx))

	for _, recordKeys := range []bool{false, true} {
		t.Run("RecordKeys="+strconv.FormatBool(recordKeys), func(t *testing.T) {
			tm := newTelemetry(t, lockmuxotel.Options{RecordKeys: recordKeys})
			client := newClient(t, addresses, tm.observer)
			require.ErrorIs(t, client.NewMutex("orders:2", redlock.MutexOptions{}).TryLock(ctx), redlock.ErrNotAcquired)

			require.Equal(t, []string{"lockmux.lock"}, tm.names())
			span := tm.ended()[0]
			attributes := attributesOf(span.Attributes())
			assert.Equal(t, codes.Error, span.Status().Code)
			assert.Equal(t, "not_acquired", attributes["error.type"].AsString())
			assert.Equal(t, "not_acquired", attributes["lockmux.result"].AsString())
			assert.Equal(t, int64(0), attributes["lockmux.got"].AsInt64())
			assert.Equal(t, int64(2), attributes["lockmux.need"].AsInt64())
			assert.Zero(t, attributes["lockmux.validity"].AsFloat64())

			events := span.Events()
			require.Len(t, events, 3)
			for i, event := range events {
				assert.Equal(t, "lockmux.node", event.Name)
				assert.False(t, event.Time.Before(span.StartTime()), "event %d before its span", i)
				node := attributesOf(event.Attributes)
				host, port, err := net.SplitHostPort(addresses[i])
				require.NoError(t, err)
				number, err := strconv.Atoi(port)
				require.NoError(t, err)
				assert.Equal(t, host, node["server.address"].AsString(), i)
				assert.Equal(t, int64(number), node["server.port"].AsInt64(), i)
				if i < len(servers) {
					assert.Equal(t, "held", node["lockmux.node.outcome"].AsString(), i)
					assert.NotContains(t, node, attribute.Key("lockmux.node.error"), i)
				} else {
					assert.Contains(t, []string{"not sent", "error"}, node["lockmux.node.outcome"].AsString())
					assert.NotEmpty(t, node["lockmux.node.error"].AsString())
				}
			}

			if recordKeys {
				assert.Equal(t, "orders:2", attributes["lockmux.key"].AsString())
				assert.Contains(t, span.Status().Description, `"orders:2"`)
				return
			}
			assert.Equal(t, "not_acquired", span.Status().Description)
			assertNoKey(t, span, "orders:2")
		})
	}
}

// assertNoKey fails when key is in any attribute, event or the status of
// span.
func assertNoKey(t *testing.T, span sdktrace.ReadOnlySpan, key string) {
	t.Helper()
	attributes := span.Attributes()
	for _, event := range span.Events() {
		attributes = append(attributes, event.Attributes...)
	}
	for _, a := range attributes {
		assert.NotContains(t, a.Value.Emit(), key, a.Key)
	}
	assert.NotContains(t, span.Status().Description, key)
}

// A hold whose keys every node lost: the extension fails and finds it
// lost, which makes a span of the hold, and its release fails.
func TestSpansOfALostHold(t *testing.T) {
	tm := newTelemetry(t, lockmuxotel.Options{})
	servers := redistest.StartN(t, 3, redistest.Options{})
	client := newClient(t, addressesOf(servers), tm.observer)
	ctx := context.Background()
	m := client.NewMutex("orders:3", redlock.MutexOptions{TTL: 10 * time.Second})
	require.NoError(t, m.Lock(ctx))
	for _, server := range servers {
		server.Do(t, "FLUSHALL")
	}
	require.ErrorIs(t, m.Extend(ctx), redlock.ErrLockLost)
	require.ErrorIs(t, m.Unlock(ctx), redlock.ErrLockLost)

	require.Equal(t, []string{"lockmux.lock", "lockmux.lost", "lockmux.extend", "lockmux.unlock"}, tm.names())
	spans := tm.ended()
	for _, span := range spans[1:] {
		attributes := attributesOf(span.Attributes())
		assert.Equal(t, codes.Error, span.Status().Code, span.Name())
		assert.Equal(t, "lock_lost", attributes["error.type"].AsString(), span.Name())
	}
	lost := spans[1]
	assert.Equal(t, "lost", attributesOf(lost.Attributes())["lockmux.result"].AsString())
	// The lost hold's span runs from the acquisition to the loss.
	held := lost.EndTime().Sub(lost.StartTime())
	assert.InDelta(t, attributesOf(lost.Attributes())["lockmux.held"].AsFloat64(), held.Seconds(), 1e-9)
	assert.False(t, lost.StartTime().After(spans[0].EndTime()), "the hold starts before its Lock returns")

	extend := spans[2]
	assert.Equal(t, "failed", attributesOf(extend.Attributes())["lockmux.result"].AsString())
	require.Len(t, extend.Events(), 3)
	for _, event := range extend.Events() {
		assert.Equal(t, "missing", attributesOf(event.Attributes)["lockmux.node.outcome"].AsString())
	}
	assert.Equal(t, "lost", attributesOf(spans[3].Attributes())["lockmux.result"].AsString())
}

// extendSignal is an Observer that says when a renewal happened.
type extendSignal struct {
	redlock.NopObserver
	renewed chan struct{}
}

// OnExtend signals a renewal, once.
func (s *extendSignal) OnExtend(event redlock.ExtendEvent) {
	if event.Automatic && event.Err == nil {
		select {
		case s.renewed <- struct{}{}:
		default:
		}
	}
}

// A renewal makes a lockmux.extend span with lockmux.automatic set; the
// Observer works beside another through redlock.Observers.
func TestSpanOfARenewal(t *testing.T) {
	tm := newTelemetry(t, lockmuxotel.Options{Attributes: []attribute.KeyValue{attribute.String("lockmux.client", "orders")}})
	signal := &extendSignal{renewed: make(chan struct{}, 1)}
	// The shortest TTL a renewal allows is five node timeouts; a renewal
	// comes a third of the TTL after the acquisition.
	client, err := redlock.New(addressesOf(redistest.StartN(t, 3, redistest.Options{})),
		redlock.Options{NodeTimeout: 400 * time.Millisecond, Observer: redlock.Observers(tm.observer, signal)})
	require.NoError(t, err)
	t.Cleanup(func() { client.Close() })
	ctx := context.Background()
	m := client.NewMutex("orders:4", redlock.MutexOptions{TTL: 2 * time.Second, AutoExtend: true})
	require.NoError(t, m.Lock(ctx))
	select {
	case <-signal.renewed:
	case <-time.After(time.Minute):
		t.Fatal("no renewal within a minute")
	}
	require.NoError(t, m.Unlock(ctx))

	var renewals int
	for _, span := range tm.ended() {
		attributes := attributesOf(span.Attributes())
		assert.Equal(t, "orders", attributes["lockmux.client"].AsString(), span.Name())
		if span.Name() == "lockmux.extend" && attributes["lockmux.automatic"].AsBool() {
			renewals++
			assert.Equal(t, "extended", attributes["lockmux.result"].AsString())
			assert.Equal(t, codes.Unset, span.Status().Code)
		}
	}
	assert.Positive(t, renewals)
	names := strings.Join(tm.names(), " ")
	assert.True(t, strings.HasPrefix(names, "lockmux.lock lockmux.extend"), names)
	assert.True(t, strings.HasSuffix(names, "lockmux.unlock"), names)
}
