package safety

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
)

// maxLineLength bounds one JSON line of a RemoteSink.
const maxLineLength = 64 << 10

// Recorder keeps the history of a run and stamps its events (see the
// package documentation). The zero value is not usable; call NewRecorder.
//
// A Recorder is safe for concurrent use.
type Recorder struct {
	// mu guards every field below; Record stamps under it, which makes the
	// stamps and the order of events agree.
	mu       sync.Mutex
	events   []Event
	phase    Phase
	listener net.Listener
	conns    map[net.Conn]struct{}
	errs     []error
	closed   bool

	// goroutines are the accept loop and one reader per connection.
	goroutines sync.WaitGroup
}

// NewRecorder returns an empty Recorder in PhaseRun.
func NewRecorder() *Recorder {
	return &Recorder{phase: PhaseRun, conns: make(map[net.Conn]struct{})}
}

// Record stamps e with Now, keeps it unless it is a KindPoll, and returns
// the stamp with the current phase. It never fails.
func (r *Recorder) Record(e Event) (Ack, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e.T = Now()
	if e.Kind != KindPoll {
		r.events = append(r.events, e)
	}
	return Ack{T: e.T, Phase: r.phase}, nil
}

// SetPhase moves the run to phase p, records a KindPhase event and returns
// its stamp. Workers learn the phase from their next acknowledgement.
func (r *Recorder) SetPhase(p Phase) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.phase = p
	e := Event{T: Now(), Kind: KindPhase, What: string(p)}
	r.events = append(r.events, e)
	return e.T
}

// Phase returns the current phase.
func (r *Recorder) Phase() Phase {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.phase
}

// Len returns the number of events recorded.
func (r *Recorder) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.events)
}

// Events returns a copy of the events from index from on, in order.
func (r *Recorder) Events(from int) []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	if from >= len(r.events) {
		return nil
	}
	return append([]Event(nil), r.events[max(from, 0):]...)
}

// History returns a copy of the whole history.
func (r *Recorder) History() []Event { return r.Events(0) }

// Listen accepts RemoteSink connections on the unix socket at path until
// Close. Each connection is served by a goroutine of the Recorder.
func (r *Recorder) Listen(path string) error {
	listener, err := net.Listen("unix", path)
	if err != nil {
		return fmt.Errorf("safety: listen on %s: %w", path, err)
	}
	r.mu.Lock()
	if r.closed || r.listener != nil {
		r.mu.Unlock()
		listener.Close()
		return errors.New("safety: recorder closed or already listening")
	}
	r.listener = listener
	r.mu.Unlock()
	r.goroutines.Go(func() { r.accept(listener) })
	return nil
}

// accept serves the listener until it is closed.
func (r *Recorder) accept(listener net.Listener) {
	for {
		c, err := listener.Accept()
		if err != nil {
			return
		}
		r.mu.Lock()
		if r.closed {
			r.mu.Unlock()
			c.Close()
			return
		}
		r.conns[c] = struct{}{}
		r.mu.Unlock()
		r.goroutines.Go(func() { r.serve(c) })
	}
}

// serve records the events that arrive on c, one JSON line each, and
// answers each with its Ack.
func (r *Recorder) serve(c net.Conn) {
	defer func() {
		r.mu.Lock()
		delete(r.conns, c)
		r.mu.Unlock()
		c.Close()
	}()
	scanner := bufio.NewScanner(c)
	scanner.Buffer(make([]byte, 4096), maxLineLength)
	writer := bufio.NewWriter(c)
	encoder := json.NewEncoder(writer)
	for scanner.Scan() {
		var e Event
		if err := json.Unmarshal(scanner.Bytes(), &e); err != nil {
			r.fail(fmt.Errorf("safety: bad event %q: %w", scanner.Bytes(), err))
			return
		}
		ack, _ := r.Record(e)
		if err := encoder.Encode(ack); err != nil {
			r.fail(fmt.Errorf("safety: acknowledge: %w", err))
			return
		}
		if err := writer.Flush(); err != nil {
			r.fail(fmt.Errorf("safety: acknowledge: %w", err))
			return
		}
	}
	if err := scanner.Err(); err != nil && !errors.Is(err, net.ErrClosed) {
		r.fail(fmt.Errorf("safety: read events: %w", err))
	}
}

// fail keeps a transport error for Err, unless the Recorder is closing.
func (r *Recorder) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.closed {
		r.errs = append(r.errs, err)
	}
}

// Err returns the transport errors met while serving remote workers, or
// nil.
func (r *Recorder) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return errors.Join(r.errs...)
}

// Close stops listening, closes the remote connections and waits for the
// Recorder's goroutines. The history stays readable. Calling it again does
// nothing.
func (r *Recorder) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	var err error
	if r.listener != nil {
		err = r.listener.Close()
	}
	for c := range r.conns {
		c.Close()
	}
	r.mu.Unlock()
	r.goroutines.Wait()
	return err
}

// WriteJSONL writes history to w, one JSON event per line.
func WriteJSONL(w io.Writer, history []Event) error {
	buffered := bufio.NewWriter(w)
	encoder := json.NewEncoder(buffered)
	for _, e := range history {
		if err := encoder.Encode(e); err != nil {
			return fmt.Errorf("safety: write history: %w", err)
		}
	}
	if err := buffered.Flush(); err != nil {
		return fmt.Errorf("safety: write history: %w", err)
	}
	return nil
}

// ReadJSONL reads a history written by WriteJSONL.
func ReadJSONL(rd io.Reader) ([]Event, error) {
	scanner := bufio.NewScanner(rd)
	scanner.Buffer(make([]byte, 4096), maxLineLength)
	var history []Event
	for scanner.Scan() {
		var e Event
		if err := json.Unmarshal(scanner.Bytes(), &e); err != nil {
			return history, fmt.Errorf("safety: read history line %d: %w", len(history)+1, err)
		}
		history = append(history, e)
	}
	if err := scanner.Err(); err != nil {
		return history, fmt.Errorf("safety: read history: %w", err)
	}
	return history, nil
}
