package redistest

import (
	"bufio"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAppendCommand(t *testing.T) {
	t.Parallel()
	got := appendCommand(nil, []string{"SET", "k", ""})
	assert.Equal(t, "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n", string(got))
}

func TestReadReply(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		input   string
		want    string
		wantErr bool
	}{
		{name: "simple string", input: "+OK\r\n", want: "OK"},
		{name: "error", input: "-ERR wrong\r\n", want: "-ERR wrong"},
		{name: "integer", input: ":-42\r\n", want: "-42"},
		{name: "bulk string", input: "$5\r\nhe\r\no\r\n", want: "he\r\no"},
		{name: "empty bulk string", input: "$0\r\n\r\n", want: ""},
		{name: "null bulk string", input: "$-1\r\n", want: "(nil)"},
		{name: "null array", input: "*-1\r\n", want: "(nil)"},
		{name: "resp3 null", input: "_\r\n", want: "(nil)"},
		{name: "array", input: "*2\r\n$10\r\nappendonly\r\n$2\r\nno\r\n", want: "[appendonly no]"},
		{name: "nested array", input: "*2\r\n:1\r\n*1\r\n+x\r\n", want: "[1 [x]]"},
		{name: "missing CR", input: "+OK\n", wantErr: true},
		{name: "bad bulk terminator", input: "$2\r\nokxx", wantErr: true},
		{name: "bad length", input: "$x\r\n", wantErr: true},
		{name: "unknown type", input: "?\r\n", wantErr: true},
		{name: "too deep", input: strings.Repeat("*1\r\n", maxReplyDepth+2) + ":1\r\n", wantErr: true},
		{name: "truncated", input: "$5\r\nab", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readReply(bufio.NewReader(strings.NewReader(tt.input)), 0)
			if tt.wantErr {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestLastLines(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		text string
		n    int
		want string
	}{
		{name: "fewer lines than asked", text: "a\nb\n", n: 5, want: "a\nb"},
		{name: "last two", text: "a\nb\nc\n", n: 2, want: "b\nc"},
		{name: "no final newline", text: "a\nb", n: 1, want: "b"},
		{name: "empty", text: "", n: 3, want: ""},
		{name: "zero lines", text: "a\n", n: 0, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, lastLines([]byte(tt.text), tt.n))
		})
	}
}
