package resp

import (
	"bufio"
	"bytes"
	"strings"
	"testing"
	"testing/iotest"
)

func BenchmarkEncodeSet(b *testing.B) {
	b.ReportAllocs()
	buf := make([]byte, 0, 256)
	for b.Loop() {
		buf = appendSetCommand(buf[:0], "lock:orders:42", "2f1d6c0e9a7b4c3d8e5f60718293a4b5", 30000)
	}
	b.SetBytes(int64(len(buf)))
}

func BenchmarkEncodeEvalSHA(b *testing.B) {
	b.ReportAllocs()
	buf := make([]byte, 0, 256)
	for b.Loop() {
		buf = AppendArrayHeader(buf[:0], 5)
		buf = AppendBulkString(buf, "EVALSHA")
		buf = AppendBulkString(buf, "e0e1f9fabfc9d4800c877a703b823ac0578ff8db")
		buf = AppendBulkInt(buf, 1)
		buf = AppendBulkString(buf, "lock:orders:42")
		buf = AppendBulkString(buf, "2f1d6c0e9a7b4c3d8e5f60718293a4b5")
	}
	b.SetBytes(int64(len(buf)))
}

func BenchmarkAppendCommand(b *testing.B) {
	b.ReportAllocs()
	buf := make([]byte, 0, 256)
	for b.Loop() {
		buf = AppendCommand(buf[:0], "EVALSHA", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", "1",
			"lock:orders:42", "2f1d6c0e9a7b4c3d8e5f60718293a4b5")
	}
	b.SetBytes(int64(len(buf)))
}

// appendSetCommand encodes SET key token NX PX ttl.
func appendSetCommand(dst []byte, key, token string, ttlMilliseconds int64) []byte {
	dst = AppendArrayHeader(dst, 6)
	dst = AppendBulkString(dst, "SET")
	dst = AppendBulkString(dst, key)
	dst = AppendBulkString(dst, token)
	dst = AppendBulkString(dst, "NX")
	dst = AppendBulkString(dst, "PX")
	return AppendBulkInt(dst, ttlMilliseconds)
}

// benchmarkReplies are single replies read over and over.
var benchmarkReplies = []struct {
	name  string
	reply string
}{
	{name: "OK", reply: "+OK\r\n"},
	{name: "Integer", reply: ":1\r\n"},
	{name: "NullBulk", reply: "$-1\r\n"},
	{name: "Null", reply: "_\r\n"},
	{name: "Error", reply: "-ERR x\r\n"},
	{name: "Bulk40", reply: "$40\r\n" + strings.Repeat("a", 40) + "\r\n"},
	{name: "Hello", reply: redisReplies[8]},
	{name: "Double", reply: ",3.141\r\n"},
	{name: "DoubleExponent", reply: ",1.0000000000000001e-05\r\n"},
	{name: "DoubleNaN", reply: ",nan\r\n"},
	{name: "DoubleNegativeNaN", reply: ",-nan\r\n"},
}

func BenchmarkReadReply(b *testing.B) {
	for _, bc := range benchmarkReplies {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(bc.reply)))
			reader := NewReader(&repeatReader{data: []byte(bc.reply)}, Limits{})
			for b.Loop() {
				if _, err := reader.ReadReply(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkParse(b *testing.B) {
	for _, bc := range benchmarkReplies {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(bc.reply)))
			frame := []byte(bc.reply)
			for b.Loop() {
				if _, _, err := Parse(frame, Limits{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// mixedStream returns a realistic stream of lock-client replies and the
// number of replies in it: acquisitions (+OK, $-1 or _ when taken),
// releases and extensions (:1, :0), a NOSCRIPT now and then, token reads
// (40-byte bulks) and a HELLO map on reconnects.
func mixedStream() ([]byte, int) {
	token := "$40\r\n0123456789abcdef0123456789abcdef01234567\r\n"
	pattern := []string{
		"+OK\r\n", ":1\r\n", "+OK\r\n", ":1\r\n", "$-1\r\n", ":0\r\n", "+OK\r\n", token,
		"_\r\n", ":1\r\n", "+OK\r\n", ":1\r\n", token, "+OK\r\n", ":0\r\n", "_\r\n",
	}
	var stream []byte
	replies := 0
	for round := range 40 {
		for _, reply := range pattern {
			stream = append(stream, reply...)
			replies++
		}
		if round%10 == 9 {
			stream = append(stream, "-NOSCRIPT No matching script. Please use EVAL.\r\n"...)
			replies++
		}
		if round%20 == 19 {
			stream = append(stream, redisReplies[8]...)
			replies++
		}
	}
	return stream, replies
}

func BenchmarkReaderMixedStream(b *testing.B) {
	stream, replies := mixedStream()
	b.ReportAllocs()
	b.SetBytes(int64(len(stream)))
	reader := NewReader(&repeatReader{data: stream}, Limits{})
	for b.Loop() {
		for range replies {
			if _, err := reader.ReadReply(); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkReaderMixedStreamFloor scans the same stream as
// BenchmarkReaderMixedStream with bufio.Reader.ReadSlice line by line,
// skipping bulk payloads: the least any RESP reader must do.
func BenchmarkReaderMixedStreamFloor(b *testing.B) {
	stream, _ := mixedStream()
	b.ReportAllocs()
	b.SetBytes(int64(len(stream)))
	reader := bufio.NewReaderSize(&repeatReader{data: stream}, 4096)
	for b.Loop() {
		for consumed := 0; consumed < len(stream); {
			line, err := reader.ReadSlice('\n')
			if err != nil {
				b.Fatal(err)
			}
			consumed += len(line)
			if line[0] == '$' && line[1] != '-' {
				length := 0
				for _, c := range line[1 : len(line)-2] {
					length = length*10 + int(c-'0')
				}
				skipped, err := reader.Discard(length + 2)
				if err != nil {
					b.Fatal(err)
				}
				consumed += skipped
			}
		}
	}
}

// BenchmarkReaderLargeBulk reads a 1 MiB bulk arriving in 16 KiB reads: the
// Reader waits for the whole payload instead of parsing it again per read.
func BenchmarkReaderLargeBulk(b *testing.B) {
	frame := AppendBulk(nil, bytes.Repeat([]byte("x"), 1<<20))
	b.ReportAllocs()
	b.SetBytes(int64(len(frame)))
	for b.Loop() {
		reader := NewReader(&chunkReader{data: frame, sizes: []int{16 << 10}}, Limits{})
		if _, err := reader.ReadReply(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReaderTrickle reads an array of 1024 integers arriving one byte
// per read: the parser resumes where it stopped instead of parsing the
// array again from its start at every byte.
func BenchmarkReaderTrickle(b *testing.B) {
	frame := []byte("*1024\r\n" + strings.Repeat(":1\r\n", 1024))
	b.ReportAllocs()
	b.SetBytes(int64(len(frame)))
	for b.Loop() {
		reader := NewReader(iotest.OneByteReader(bytes.NewReader(frame)), Limits{})
		if _, err := reader.ReadReply(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkClone copies a small aggregate reply, as a Conn does for each
// reply it delivers: Clone allocates the copy, CloneInto reuses the
// buffers of the last one.
func BenchmarkClone(b *testing.B) {
	v, _, err := Parse([]byte("*3\r\n:1\r\n:29998\r\n*2\r\n$14\r\nlock:orders:42\r\n:7\r\n"), Limits{})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("Clone", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = v.Clone()
		}
	})
	b.Run("CloneInto", func(b *testing.B) {
		b.ReportAllocs()
		var elems []Value
		var storage []byte
		for b.Loop() {
			_, elems, storage = v.CloneInto(elems, storage)
		}
	})
}
