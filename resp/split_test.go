package resp

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// TestSplitInvariance feeds every test stream through a Reader one byte at a
// time and split in two at every position, and checks that the Reader gives
// what Parse gives on the whole input.
func TestSplitInvariance(t *testing.T) {
	for _, stream := range allStreams() {
		t.Run(stream.name, func(t *testing.T) {
			input := []byte(stream.input)
			wantValues, wantErr := parseStream(input, stream.limits)
			check := func(how string, source io.Reader) {
				t.Helper()
				values, err := readStream(source, stream.limits)
				if !sameStream(values, err, wantValues, wantErr) {
					t.Fatalf("%s: got %v, %v; want %v, %v", how, values, err, wantValues, wantErr)
				}
			}
			check("whole", bytes.NewReader(input))
			if len(input) > 1<<16 {
				// The depth payload: a few splits only.
				check("chunks of 4093", &chunkReader{data: input, sizes: []int{4093}})
				check("chunks of 1, 2 and 3", &chunkReader{data: input, sizes: []int{1, 2, 3}})
				return
			}
			check("one byte at a time", iotest.OneByteReader(bytes.NewReader(input)))
			for split := 1; split < len(input); split++ {
				check("split at "+itoa(split), io.MultiReader(bytes.NewReader(input[:split]), bytes.NewReader(input[split:])))
			}
		})
	}
}

// TestSplitInvarianceConcatenated reads all valid frames and Redis replies as
// one stream, in chunks of every size up to 64 bytes.
func TestSplitInvarianceConcatenated(t *testing.T) {
	var builder strings.Builder
	for _, frame := range validFrames {
		if frame.limits == (Limits{}) {
			builder.WriteString(frame.input)
		}
	}
	for _, reply := range redisReplies {
		builder.WriteString(reply)
	}
	input := []byte(builder.String())
	wantValues, wantErr := parseStream(input, Limits{})
	if wantErr != io.EOF {
		t.Fatalf("Parse of the stream: %v", wantErr)
	}
	for size := 1; size <= 64; size++ {
		values, err := readStream(&chunkReader{data: input, sizes: []int{size}}, Limits{})
		if !sameStream(values, err, wantValues, wantErr) {
			t.Fatalf("chunks of %d: %d values, %v; want %d values, %v", size, len(values), err, len(wantValues), wantErr)
		}
	}
}

func itoa(n int) string {
	return string(AppendBulkInt(nil, int64(n))[len("$1\r\n") : len(AppendBulkInt(nil, int64(n)))-2])
}
