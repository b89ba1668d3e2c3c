package resp

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/lockmux/lockmux/internal/workgroup"
)

func TestReaderReadsFrames(t *testing.T) {
	stream := "+OK\r\n:1\r\n$-1\r\n_\r\n-ERR x\r\n$5\r\nhello\r\n>2\r\n+pub\r\n+x\r\n|1\r\n+a\r\n+b\r\n$1\r\nv\r\n*2\r\n:1\r\n%1\r\n+k\r\n+v\r\n"
	want := []Value{
		simple("OK"), integer(1), {Type: TypeBulkString, Null: true}, {Type: TypeNull, Null: true},
		simpleErr("ERR x"), bulk("hello"), push(simple("pub"), simple("x")), bulk("v"),
		array(integer(1), mapOf(simple("k"), simple("v"))),
	}
	reader := NewReader(strings.NewReader(stream), Limits{})
	for i, wantValue := range want {
		v, err := reader.ReadReply()
		if err != nil {
			t.Fatalf("reply %d: error %v", i, err)
		}
		if !valuesEqual(v, wantValue) {
			t.Errorf("reply %d = %v, want %v", i, v, wantValue)
		}
	}
	if _, err := reader.ReadReply(); err != io.EOF {
		t.Errorf("after the last reply: error %v, want io.EOF", err)
	}
	if reader.Buffered() != 0 {
		t.Errorf("Buffered() = %d, want 0", reader.Buffered())
	}
}

func TestReaderEndOfStream(t *testing.T) {
	tests := []struct {
		name    string
		source  io.Reader
		wantErr error
	}{
		{name: "empty", source: strings.NewReader(""), wantErr: io.EOF},
		{name: "truncated bulk", source: strings.NewReader("$5\r\nhel"), wantErr: io.ErrUnexpectedEOF},
		{name: "type byte only", source: strings.NewReader("*"), wantErr: io.ErrUnexpectedEOF},
		{name: "data with EOF", source: iotest.DataErrReader(strings.NewReader("$5\r\nhel")), wantErr: io.ErrUnexpectedEOF},
		{name: "other error", source: iotest.ErrReader(io.ErrClosedPipe), wantErr: io.ErrClosedPipe},
		{name: "timeout error", source: iotest.TimeoutReader(strings.NewReader("+")), wantErr: iotest.ErrTimeout},
		{name: "no progress", source: zeroReader{}, wantErr: io.ErrNoProgress},
		{name: "invalid count", source: badCountReader{}, wantErr: errInvalidRead},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewReader(tc.source, Limits{}).ReadReply()
			if err != tc.wantErr {
				t.Errorf("ReadReply() error = %v, want %v", err, tc.wantErr)
			}
		})
	}
}

// zeroReader reads nothing, forever.
type zeroReader struct{}

func (zeroReader) Read([]byte) (int, error) { return 0, nil }

// badCountReader claims to have read more than it was given.
type badCountReader struct{}

func (badCountReader) Read(p []byte) (int, error) { return len(p) + 1, nil }

func TestReaderDataWithError(t *testing.T) {
	// A read that returns data and io.EOF together still yields the frame.
	reader := NewReader(iotest.DataErrReader(strings.NewReader("+OK\r\n")), Limits{})
	v, err := reader.ReadReply()
	if err != nil || !v.IsOK() {
		t.Fatalf("ReadReply() = %v, %v; want OK", v, err)
	}
	if _, err := reader.ReadReply(); err != io.EOF {
		t.Errorf("ReadReply() error = %v, want io.EOF", err)
	}
}

func TestReaderPoisoned(t *testing.T) {
	reader := NewReader(strings.NewReader("+OK\r\n:12a\r\n+OK\r\n"), Limits{})
	if v, err := reader.ReadReply(); err != nil || !v.IsOK() {
		t.Fatalf("ReadReply() = %v, %v; want OK", v, err)
	}
	_, first := reader.ReadReply()
	var protocolErr *ProtocolError
	if !errors.As(first, &protocolErr) || protocolErr.Offset != 3 {
		t.Fatalf("ReadReply() error = %v, want a *ProtocolError at offset 3", first)
	}
	for range 3 {
		if _, err := reader.ReadReply(); err != first {
			t.Fatalf("ReadReply() after a protocol error = %v, want the same error %v", err, first)
		}
	}
	reader.Reset(strings.NewReader("+OK\r\n"))
	if v, err := reader.ReadReply(); err != nil || !v.IsOK() {
		t.Errorf("ReadReply() after Reset = %v, %v; want OK", v, err)
	}
}

// TestReaderServerReplies reads every reply of serverReplies from one
// stream, whole and byte by byte: none of them poisons the Reader, so each
// is followed by the next.
func TestReaderServerReplies(t *testing.T) {
	var stream []byte
	for _, reply := range serverReplies {
		stream = append(stream, reply.input...)
	}
	sources := []struct {
		name   string
		source io.Reader
	}{
		{name: "whole", source: bytes.NewReader(stream)},
		{name: "byte by byte", source: iotest.OneByteReader(bytes.NewReader(stream))},
	}
	for _, tc := range sources {
		t.Run(tc.name, func(t *testing.T) {
			reader := NewReader(tc.source, Limits{})
			for _, reply := range serverReplies {
				v, err := reader.ReadReply()
				if err != nil {
					t.Fatalf("%s: ReadReply() error %v", reply.name, err)
				}
				if !valuesEqual(v, reply.want) {
					t.Errorf("%s: ReadReply() = %v, want %v", reply.name, v, reply.want)
				}
			}
			if _, err := reader.ReadReply(); err != io.EOF {
				t.Errorf("after the last reply: error %v, want io.EOF", err)
			}
		})
	}
}

func TestReaderBufferedAndReset(t *testing.T) {
	reader := NewReader(strings.NewReader("+OK\r\n:1\r\n$3\r\nab"), Limits{})
	if _, err := reader.ReadReply(); err != nil {
		t.Fatal(err)
	}
	if got := reader.Buffered(); got != 10 {
		t.Errorf("Buffered() = %d, want 10", got)
	}
	reader.Reset(strings.NewReader(":2\r\n"))
	if reader.Buffered() != 0 {
		t.Errorf("Buffered() after Reset = %d, want 0", reader.Buffered())
	}
	if v, err := reader.ReadReply(); err != nil || !valuesEqual(v, integer(2)) {
		t.Errorf("ReadReply() after Reset = %v, %v; want 2", v, err)
	}
}

// TestReaderDeadline reads from a net.Pipe: a timeout is returned as is, no
// partial value is returned, and the bytes read so far stay buffered, so the
// frame completes once the deadline is moved and the rest arrives.
func TestReaderDeadline(t *testing.T) {
	client, server := net.Pipe()
	defer client.Close()
	defer server.Close()
	var writer workgroup.Group
	writer.Go(func() error {
		_, err := server.Write([]byte("$10\r\nhello"))
		return err
	})

	reader := NewReader(client, Limits{})
	if err := client.SetReadDeadline(time.Now().Add(50 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	v, err := reader.ReadReply()
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("ReadReply() = %v, %v; want os.ErrDeadlineExceeded", v, err)
	}
	var netErr net.Error
	if !errors.As(err, &netErr) || !netErr.Timeout() {
		t.Errorf("ReadReply() error %v is not a net.Error timeout", err)
	}
	if err := writer.Wait(); err != nil {
		t.Fatal(err)
	}
	if reader.Buffered() != 10 {
		t.Errorf("Buffered() = %d, want 10", reader.Buffered())
	}

	writer.Go(func() error {
		_, err := server.Write([]byte("world\r\n"))
		return err
	})
	if err := client.SetReadDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	v, err = reader.ReadReply()
	if err != nil || !valuesEqual(v, bulk("helloworld")) {
		t.Errorf("ReadReply() = %v, %v; want \"helloworld\"", v, err)
	}
	if err := writer.Wait(); err != nil {
		t.Fatal(err)
	}
}

// TestReaderWaitsForKnownLength checks that a Reader does not parse a large
// bulk again until all of it has arrived.
func TestReaderWaitsForKnownLength(t *testing.T) {
	payload := bytes.Repeat([]byte("x"), 1<<20)
	frame := append(AppendBulk(nil, payload), "+OK\r\n"...)
	source := &chunkReader{data: frame, sizes: []int{1024}}
	reader := NewReader(source, Limits{})
	reader.fill()
	if _, err := reader.parser.parse(reader.buf[:reader.end], new(Value), false); err != ErrIncomplete {
		t.Fatalf("parse of the first chunk: %v, want ErrIncomplete", err)
	}
	if want := len(frame) - len("\r\n+OK\r\n") + 1; reader.parser.need != want {
		t.Errorf("need = %d, want the offset of the CR after the payload plus one, %d", reader.parser.need, want)
	}

	reader.Reset(&chunkReader{data: frame, sizes: []int{1024}})
	parses := 0
	for {
		if buffered := reader.end - reader.start; buffered > 0 && buffered >= reader.need {
			parses++
		}
		if _, err := parseBuffered(reader); err == nil {
			break
		}
		if err := reader.fill(); err != nil {
			t.Fatal(err)
		}
	}
	if parses > 3 {
		t.Errorf("parsed %d times, want at most 3", parses)
	}
}

func TestReaderLargeFrames(t *testing.T) {
	payload := bytes.Repeat([]byte("0123456789"), 100_000)
	var stream []byte
	stream = AppendBulk(stream, payload)
	stream = append(stream, "+OK\r\n"...)
	stream = append(stream, "+"+strings.Repeat("y", 60_000)+"\r\n"...)
	stream = append(stream, "*1000\r\n"+strings.Repeat("$3\r\nabc\r\n", 1000)...)
	for _, size := range []int{1, 1024, 4096, 100_000} {
		values, err := readStream(&chunkReader{data: stream, sizes: []int{size}}, Limits{})
		if err != io.EOF || len(values) != 4 {
			t.Fatalf("chunks of %d: %d values, error %v", size, len(values), err)
		}
		if !bytes.Equal(values[0].Str, payload) || !values[1].IsOK() || len(values[2].Str) != 60_000 || len(values[3].Elems) != 1000 {
			t.Fatalf("chunks of %d: wrong values", size)
		}
		for i, element := range values[3].Elems {
			if !valuesEqual(element, bulk("abc")) {
				t.Fatalf("chunks of %d: element %d = %v", size, i, element)
			}
		}
	}
}

func TestReaderShrinksAfterLargeFrame(t *testing.T) {
	large := AppendBulk(nil, bytes.Repeat([]byte("x"), 500_000))
	reader := NewReader(io.MultiReader(bytes.NewReader(large), strings.NewReader("+OK\r\n")), Limits{})
	if _, err := reader.ReadReply(); err != nil {
		t.Fatal(err)
	}
	if len(reader.buf) < 500_000 {
		t.Fatalf("buffer of %d bytes holds a 500 kB frame", len(reader.buf))
	}
	if v, err := reader.ReadReply(); err != nil || !v.IsOK() {
		t.Fatalf("ReadReply() = %v, %v; want OK", v, err)
	}
	if len(reader.buf) != initialBufferSize {
		t.Errorf("buffer of %d bytes after the large frame, want %d", len(reader.buf), initialBufferSize)
	}
}

func TestReaderGrowthSteps(t *testing.T) {
	// A 3 MiB bulk arriving in 8 KiB reads: each step adds at most 64 KiB
	// until 1 MiB, then at most a sixteenth, and the buffer never holds
	// more than that beyond the bytes that arrived.
	limits := Limits{MaxBulkLength: 4 << 20}
	frame := AppendBulk(nil, bytes.Repeat([]byte("x"), 3<<20))
	source := &chunkReader{data: frame, sizes: []int{8 << 10}}
	reader := NewReader(source, limits)
	size := len(reader.buf)
	for {
		v, err := parseBuffered(reader)
		if err == nil {
			if len(v.Str) != 3<<20 {
				t.Fatalf("read %d bytes", len(v.Str))
			}
			break
		}
		if err := reader.fill(); err != nil {
			t.Fatal(err)
		}
		if grown := len(reader.buf) - size; grown > 0 {
			if grown > max(growthStep, size/16) {
				t.Fatalf("buffer grew from %d by %d", size, grown)
			}
			size = len(reader.buf)
		}
		if arrived := len(frame) - len(source.data); len(reader.buf) > arrived+max(growthStep, arrived/16)+initialBufferSize {
			t.Fatalf("buffer of %d bytes after %d bytes arrived", len(reader.buf), arrived)
		}
	}
}

// parseBuffered does one step of ReadReply without reading: it parses the
// buffered bytes if enough have arrived.
func parseBuffered(r *Reader) (Value, error) {
	if buffered := r.end - r.start; buffered == 0 || buffered < r.need {
		return Value{}, ErrIncomplete
	}
	var v Value
	n, err := r.parser.parse(r.buf[r.start:r.end], &v, r.resume)
	r.resume = err == ErrIncomplete
	switch err {
	case nil:
		r.start += n
		r.need = 0
	case ErrIncomplete:
		r.need = r.parser.need
	}
	return v, err
}

// TestReaderResumesAggregates checks that an aggregate arriving in pieces is
// not parsed again from its start: the parser keeps the elements finished so
// far and continues after them.
func TestReaderResumesAggregates(t *testing.T) {
	frame := "*2\r\n:1\r\n*2\r\n$3\r\nabc\r\n:3\r\n"
	reader := NewReader(&chunkReader{data: []byte(frame)}, Limits{})
	for reader.end < len("*2\r\n:1\r\n*2\r\n$3\r\nabc\r\n:") {
		if _, err := parseBuffered(reader); err != ErrIncomplete {
			t.Fatalf("parse of %q: error %v, want ErrIncomplete", reader.buf[:reader.end], err)
		}
		if err := reader.fill(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := parseBuffered(reader); err != ErrIncomplete {
		t.Fatalf("parse of %q: error %v, want ErrIncomplete", reader.buf[:reader.end], err)
	}
	// Stopped at the start of ":3", inside the inner array, with 1 element
	// of the outer array and 1 of the inner one kept.
	if want := len("*2\r\n:1\r\n*2\r\n$3\r\nabc\r\n"); reader.parser.pos != want {
		t.Errorf("parser stopped at %d, want %d", reader.parser.pos, want)
	}
	if len(reader.parser.stack) != 2 || len(reader.parser.scratch) != 2 || !reader.resume {
		t.Errorf("parser keeps %d levels and %d elements, resume %t; want 2, 2, true",
			len(reader.parser.stack), len(reader.parser.scratch), reader.resume)
	}
	v, err := reader.ReadReply()
	want := array(integer(1), array(bulk("abc"), integer(3)))
	if err != nil || !valuesEqual(v, want) {
		t.Errorf("ReadReply() = %v, %v; want %v", v, err, want)
	}
}
