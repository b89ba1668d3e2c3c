package resp

import (
	"bytes"
	"io"
)

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
	// need is a lower bound on the bytes from start that the pending frame
	// needs, learnt from the last ErrIncomplete: no use parsing before.
	need int
	// pendingErr is a read error that came with data, held back until the
	// data is used, as bufio does.
	pendingErr error
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

// maxFastLineLength bounds the simple strings and errors of the fast path:
// longer lines take the general parser.
const maxFastLineLength = 128

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
			// Fast path for the replies of a lock client: a whole short
			// scalar, built in place. Anything else, including every
			// error, takes the general parser.
			switch frame[0] {
			case '+', '-':
				if end := fastLineEnd(frame, r.fastLineLength); end > 0 {
					r.start += end + 2
					r.need = 0
					return Value{Type: Type(frame[0]), Str: frame[1:end:end]}, nil
				}
			case ':':
				if n, length := fastInteger(frame); length > 0 {
					r.start += length
					r.need = 0
					return Value{Type: TypeInteger, Int: n}, nil
				}
			case '$':
				if payload, end := fastBulk(frame, r.limits.MaxBulkLength); end > 0 {
					r.start += end + 2
					r.need = 0
					if payload == 0 {
						return Value{Type: TypeBulkString, Null: true}, nil
					}
					return Value{Type: TypeBulkString, Str: frame[payload:end:end]}, nil
				}
			case '_':
				if len(frame) >= 3 && frame[1] == '\r' && frame[2] == '\n' {
					r.start += 3
					r.need = 0
					return Value{Type: TypeNull, Null: true}, nil
				}
			}
			var v Value
			n, err := r.parser.parse(frame, &v)
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
	r.pendingErr, r.failure = nil, nil
}

// fill reads more bytes into the buffer, making room first: consumed bytes
// are dropped, and a full buffer grows by at most growthStep (or an eighth of
// its size, when that is larger; see grow).
func (r *Reader) fill() error {
	if err := r.pendingErr; err != nil {
		r.pendingErr = nil
		return err
	}
	if r.start > 0 {
		copy(r.buf, r.buf[r.start:r.end])
		r.end -= r.start
		r.start = 0
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
// then at most a sixteenth of its size, which keeps the copying linear for
// large limits while committing at most 6.25% more than has arrived.
func (r *Reader) grow() {
	size := len(r.buf)
	step := max(growthStep, size/16)
	// Up to the frame's known size when that is closer, and by doubling
	// while the buffer is small; r.need > size, since the buffer is full.
	target := min(size+step, max(r.need, 2*size))
	buf := make([]byte, target)
	copy(buf, r.buf[:r.end])
	r.buf = buf
}

// The fast path of ReadReply. Each function recognises a whole, valid frame
// of the common shape only, and returns 0 for anything else: the general
// parser then decides, so the fast path needs no error handling and cannot
// change any result. FuzzParseChunked checks that the Reader and Parse agree.

// fastLineEnd returns the index of the CR ending the simple string or error
// in frame, if the whole line is there, holds at most maxLength bytes, and
// is valid.
func fastLineEnd(frame []byte, maxLength int) int {
	window := frame[:min(len(frame), 1+maxLength+1)]
	end := bytes.IndexByte(window, '\r')
	if end < 1 || end+1 >= len(frame) || frame[end+1] != '\n' || bytes.IndexByte(frame[1:end], '\n') >= 0 {
		return 0
	}
	return end
}

// fastInteger returns the value and length of the integer frame of at most
// 18 digits at the start of frame, if it is whole and valid.
func fastInteger(frame []byte) (n int64, length int) {
	i := 1
	negative := i < len(frame) && frame[i] == '-'
	if negative {
		i++
	}
	first := i
	for ; i < len(frame) && i-first < 18; i++ {
		c := frame[i]
		if c < '0' || c > '9' {
			break
		}
		n = n*10 + int64(c-'0')
	}
	digits := i - first
	if digits == 0 || frame[first] == '0' && (digits > 1 || negative) {
		return 0, 0
	}
	if i+1 >= len(frame) || frame[i] != '\r' || frame[i+1] != '\n' {
		return 0, 0
	}
	if negative {
		n = -n
	}
	return n, i + 2
}

// fastBulk returns the bounds of the payload of the bulk string at the start
// of frame, if it is whole and valid, with a length of at most 9 digits and
// at most limit. A null bulk string gives a payload start of 0 and its end
// minus 2 as end, so that end+2 is always the frame's length.
func fastBulk(frame []byte, limit int) (payload, end int) {
	if len(frame) >= 5 && frame[1] == '-' {
		if frame[2] == '1' && frame[3] == '\r' && frame[4] == '\n' {
			return 0, 3
		}
		return 0, 0
	}
	i := 1
	length := 0
	for ; i < len(frame) && i < 10; i++ {
		c := frame[i]
		if c < '0' || c > '9' {
			break
		}
		length = length*10 + int(c-'0')
	}
	if i == 1 || frame[1] == '0' && i > 2 || length > limit {
		return 0, 0
	}
	payload = i + 2
	end = payload + length
	if end+1 >= len(frame) || frame[i] != '\r' || frame[i+1] != '\n' || frame[end] != '\r' || frame[end+1] != '\n' {
		return 0, 0
	}
	return payload, end
}
