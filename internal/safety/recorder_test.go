package safety_test

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/safety"
	"github.com/lockmux/lockmux/internal/workgroup"
)

func TestRecorderStampsInOrder(t *testing.T) {
	rec := safety.NewRecorder()
	defer rec.Close()
	var recorders workgroup.Group
	for g := range 8 {
		recorders.Go(func() error {
			for range 500 {
				if _, err := rec.Record(safety.Event{Kind: safety.KindRead, Worker: string(rune('a' + g))}); err != nil {
					return err
				}
			}
			return nil
		})
	}
	require.NoError(t, recorders.Wait())
	history := rec.History()
	require.Len(t, history, 8*500)
	for i := 1; i < len(history); i++ {
		require.LessOrEqual(t, history[i-1].T, history[i].T, "stamps follow the order of the history")
	}
}

func TestRecorderPhasesAndPolls(t *testing.T) {
	rec := safety.NewRecorder()
	defer rec.Close()
	ack, err := rec.Record(safety.Event{Kind: safety.KindPoll})
	require.NoError(t, err)
	assert.Equal(t, safety.PhaseRun, ack.Phase)
	stamp := rec.SetPhase(safety.PhaseIdle)
	ack, _ = rec.Record(safety.Event{Kind: safety.KindPoll})
	assert.Equal(t, safety.PhaseIdle, ack.Phase)
	assert.Greater(t, ack.T, stamp)
	history := rec.History()
	require.Len(t, history, 1, "polls are not kept")
	assert.Equal(t, safety.KindPhase, history[0].Kind)
	assert.Equal(t, string(safety.PhaseIdle), history[0].What)
}

func TestRemoteSink(t *testing.T) {
	rec := safety.NewRecorder()
	dir, err := os.MkdirTemp("", "safety")
	require.NoError(t, err)
	defer os.RemoveAll(dir)
	socket := filepath.Join(dir, "rec.sock")
	require.NoError(t, rec.Listen(socket))

	sinks := make([]*safety.RemoteSink, 3)
	for i := range sinks {
		sinks[i], err = safety.Dial(socket)
		require.NoError(t, err)
	}
	before := safety.Now()
	var recorders workgroup.Group
	for i, sink := range sinks {
		recorders.Go(func() error {
			for range 100 {
				ack, err := sink.Record(safety.Event{Kind: safety.KindEnter, Worker: string(rune('a' + i)), Deadline: 42})
				if err != nil {
					return fmt.Errorf("sink %d: %w", i, err)
				}
				if ack.Phase != safety.PhaseRun || ack.T <= before {
					return fmt.Errorf("sink %d: acknowledged in phase %q at %d, want phase %q after %d", i, ack.Phase, ack.T, safety.PhaseRun, before)
				}
			}
			return nil
		})
	}
	require.NoError(t, recorders.Wait())
	rec.SetPhase(safety.PhaseStop)
	ack, err := sinks[0].Record(safety.Event{Kind: safety.KindPoll})
	require.NoError(t, err)
	assert.Equal(t, safety.PhaseStop, ack.Phase)

	history := rec.History()
	require.Len(t, history, 301)
	assert.Equal(t, int64(42), history[0].Deadline, "fields survive the trip")
	require.NoError(t, rec.Close())
	require.NoError(t, rec.Err())
	_, err = sinks[1].Record(safety.Event{Kind: safety.KindPoll})
	assert.Error(t, err, "a closed recorder fails the sink")
	_, err = sinks[1].Record(safety.Event{Kind: safety.KindPoll})
	assert.Error(t, err, "and keeps failing it")
	for _, sink := range sinks {
		sink.Close()
	}
}

func TestRecorderRejectsGarbage(t *testing.T) {
	rec := safety.NewRecorder()
	dir, err := os.MkdirTemp("", "safety")
	require.NoError(t, err)
	defer os.RemoveAll(dir)
	socket := filepath.Join(dir, "rec.sock")
	require.NoError(t, rec.Listen(socket))
	defer rec.Close()
	sink, err := safety.Dial(socket)
	require.NoError(t, err)
	defer sink.Close()

	raw, err := net.Dial("unix", socket)
	require.NoError(t, err)
	defer raw.Close()
	_, err = raw.Write([]byte("not json\n"))
	require.NoError(t, err)
	_, err = raw.Read(make([]byte, 1))
	assert.Error(t, err, "the recorder closes a connection that sends garbage")
	assert.ErrorContains(t, rec.Err(), "bad event")

	_, err = sink.Record(safety.Event{Kind: safety.KindPoll})
	assert.NoError(t, err, "other connections go on")
	assert.Empty(t, rec.History())
}

func TestJSONLRoundTrip(t *testing.T) {
	history := []safety.Event{
		{T: 1, Kind: safety.KindAcquireOK, Worker: "p1.g0", Key: "lock:1", Hold: "p1.g0#1", Fence: 7, Deadline: 99, At: 2, Token: "abc"},
		{T: 2, Kind: safety.KindNemesis, What: "F1 kill -9", Node: "C"},
	}
	var buffer bytes.Buffer
	require.NoError(t, safety.WriteJSONL(&buffer, history))
	assert.Contains(t, buffer.String(), `"ev":"acq_ok"`)
	back, err := safety.ReadJSONL(&buffer)
	require.NoError(t, err)
	assert.Equal(t, history, back)
	_, err = safety.ReadJSONL(bytes.NewReader([]byte("{\"t\":1}\nnot json\n")))
	assert.Error(t, err)
}

func TestDeadlineTranslatesMonotonicTime(t *testing.T) {
	for _, d := range []time.Duration{-time.Second, 0, 5 * time.Millisecond, time.Hour} {
		now := safety.Now()
		deadline := safety.Deadline(time.Now().Add(d))
		assert.InDelta(t, float64(now+int64(d)), float64(deadline), float64(time.Millisecond), "%v", d)
	}
	assert.Zero(t, safety.Deadline(time.Time{}))
	// A wall-clock jump does not move a monotonic deadline: the reading
	// stripped of its monotonic part is what a jump would affect.
	until := time.Now().Add(time.Second)
	assert.InDelta(t, float64(safety.Now()+int64(time.Second)), float64(safety.Deadline(until)), float64(5*time.Millisecond))
}

func TestHygieneCounts(t *testing.T) {
	baseline := safety.Goroutines(-1, 0)
	release := make(chan struct{})
	var wait sync.WaitGroup
	// Twenty leaked goroutines: goroutines of earlier tests that end
	// meanwhile cannot hide them all.
	for range 20 {
		wait.Go(func() { <-release })
	}
	assert.Greater(t, safety.Goroutines(baseline, 50*time.Millisecond), baseline, "leaked goroutines are seen")
	close(release)
	wait.Wait()
	assert.LessOrEqual(t, safety.Goroutines(baseline, 5*time.Second), baseline)

	descriptors, err := safety.Descriptors(-1, 0)
	if err != nil {
		t.Skip(err)
	}
	var files []*os.File // leaked descriptors, more than others can hide by closing theirs
	for range 20 {
		file, err := os.Open(os.Args[0])
		require.NoError(t, err)
		files = append(files, file)
	}
	got, err := safety.Descriptors(descriptors, 50*time.Millisecond)
	require.NoError(t, err)
	assert.Greater(t, got, descriptors, "leaked descriptors are seen")
	for _, file := range files {
		file.Close()
	}
	got, err = safety.Descriptors(descriptors, 5*time.Second)
	require.NoError(t, err)
	assert.LessOrEqual(t, got, descriptors)
}
