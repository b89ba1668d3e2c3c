package resp

import "io"

// Buffer sizes of a Reader.
const (
	initialBufferSize = 4 << 10
	// growthStep bounds how much a full buffer grows at once, so memory is
	// committed only as bytes arrive: a frame that declares 512 MiB and
	// sends 10 bytes costs the initial buffer and nothing more.
	growthStep = 64 << 10
	// retainedBufferSize is the largest buffer kept once it is empty; a
	// larger one, grown for a rare large frame, is dropped.
	retainedBufferSize = 64 << 10
	// retainedElements is the most elements a Reader keeps between replies.
	retainedElements = 1024
	// maxEmptyReads is how many reads returning nothing are tolerated in a
	// row before giving up with io.ErrNoProgress, as bufio does.
	maxEmptyReads = 100
)

// Reader reads replies from a byte stream, such as a connection, through
// its own buffer. A Reader is not safe for concurrent use.
//
// After a *ProtocolError the Reader is poisoned: the stream cannot be
// resynchronised, and every later ReadReply returns the same error until
// Reset. Close the connection.
type Reader struct {
	source io.Reader
	limits Limits // with defaults filled
	// buf[start:end] holds the bytes read and not yet consumed; the frame
	// being read starts at start.
	buf        []byte
	start, end int
	// need is the buffered length, from start, at which parsing the
	// pending frame again can give another result, learnt from the last
	// ErrIncomplete (see parser.need): no use parsing before.
	need int
	// pendingErr is a read error that came with data, held back until the
	// data is used, as bufio does.
	pendingErr error
	// resume is set while the parser holds the unfinished frame at start,
	// whose bytes have not moved since: the next parse continues it.
	resume bool
	// failure latches the first *ProtocolError.
	failure error
	parser  parser
	// fastLineLength bounds the lines of the fast path: the smaller of
	// maxFastLineLength and limits.MaxLineLength.
	fastLineLength int
}

// NewReader returns a Reader of replies from rd, within limits (zero fields
// mean the defaults, fields above the hard maximums are lowered to them; use
// Limits.Validate to reject them instead). Its buffer starts at 4 KiB and
// grows by at most 64 KiB at a time, only as bytes arrive.
func NewReader(rd io.Reader, limits Limits) *Reader {
	limits = limits.withDefaults()
	return &Reader{
		source: rd,
		limits: limits,
		buf:    make([]byte, initialBufferSize),
		parser: parser{limits: limits},

		fastLineLength: min(maxFastLineLength, limits.MaxLineLength),
	}
}

// ReadReply reads one whole frame and returns it, skipping any attributes
// before it. Pushes are returned like replies, with Type TypePush.
//
// The Value points into the Reader's buffer and element memory, and stays
// valid until the next ReadReply or Reset: use Value.Clone to keep it longer.
//
// The underlying reader's errors are returned as they are, so that
// errors.Is(err, os.ErrDeadlineExceeded) detects a timeout; the bytes read
// so far stay buffered. io.EOF means the stream ended between frames, and
// io.ErrUnexpectedEOF within one. A *ProtocolError poisons the Reader.
func (r *Reader) ReadReply() (Value, error) {
	if r.failure != nil {
		return Value{}, r.failure
	}
	if r.start == r.end {
		r.start, r.end = 0, 0
		if len(r.buf) > retainedBufferSize {
			r.buf = make([]byte, initialBufferSize)
		}
	}
	if cap(r.parser.arena) > retainedElements {
		r.parser.arena, r.parser.scratch = nil, nil
	}
	for {
		if buffered := r.end - r.start; buffered > 0 && buffered >= r.need {
			frame := r.buf[r.start:r.end]
			// The fast path: a whole short scalar, built in place.
			if t, text, integer, length := fastScalar(frame, r.fastLineLength, r.limits.MaxBulkLength); length > 0 {
				r.start += length
				r.need = 0
				return Value{Type: t, Null: text == nil && t != TypeInteger, Int: integer, Str: text}, nil
			}
			var v Value
			n, err := r.parser.parse(frame, &v, r.resume)
			r.resume = err == ErrIncomplete
			switch {
			case err == nil:
				r.start += n
				r.need = 0
				return v, nil
			case err == ErrIncomplete:
				r.need = r.parser.need
			default:
				r.failure = err
				return Value{}, err
			}
		}
		if err := r.fill(); err != nil {
			if err == io.EOF && r.start != r.end {
				err = io.ErrUnexpectedEOF
			}
			return Value{}, err
		}
	}
}

// Buffered returns the number of bytes read from the stream and not yet
// consumed by ReadReply.
func (r *Reader) Buffered() int {
	return r.end - r.start
}

// Reset discards the buffered bytes and any error, and makes r read from rd
// with the same buffer and limits.
func (r *Reader) Reset(rd io.Reader) {
	r.source = rd
	r.start, r.end, r.need = 0, 0, 0
	r.pendingErr, r.failure, r.resume = nil, nil, false
}

// fill reads more bytes into the buffer, making room first: consumed bytes
// are dropped, and a full buffer grows (see grow).
func (r *Reader) fill() error {
	if err := r.pendingErr; err != nil {
		r.pendingErr = nil
		return err
	}
	if r.start > 0 {
		copy(r.buf, r.buf[r.start:r.end])
		r.end -= r.start
		r.start = 0
		r.resume = false // the values parsed so far point at moved bytes
	}
	if r.end == len(r.buf) {
		r.grow()
	}
	for range maxEmptyReads {
		n, err := r.source.Read(r.buf[r.end:])
		if n < 0 || n > len(r.buf)-r.end {
			return errInvalidRead
		}
		r.end += n
		if err != nil {
			if n > 0 {
				r.pendingErr = err
				return nil
			}
			return err
		}
		if n > 0 {
			return nil
		}
	}
	return io.ErrNoProgress
}

// grow enlarges the full buffer towards r.need. Each step adds at most
// growthStep bytes until the buffer reaches 1 MiB (the default bulk limit),
// then at most a sixteenth of its size, which keeps the total copying linear
// for large limits while committing at most 6.25% more than has arrived.
func (r *Reader) grow() {
	size := len(r.buf)
	step := max(growthStep, size/16)
	// Up to the frame's known size when that is closer, and by doubling
	// while the buffer is small; r.need > size, since the buffer is full.
	target := min(size+step, max(r.need, 2*size))
	buf := make([]byte, target)
	copy(buf, r.buf[:r.end])
	r.buf = buf // values parsed so far keep the old buffer, unchanged
}
