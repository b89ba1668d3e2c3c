package redlock

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNewToken(t *testing.T) {
	const count = 10_000
	seen := make(map[[tokenLength]byte]bool, count)
	for range count {
		var token [tokenLength]byte
		require.NoError(t, newToken(&token))
		for _, c := range token {
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
				t.Fatalf("token %q holds %q, not a lowercase hexadecimal digit", token[:], c)
			}
		}
		require.False(t, seen[token], "token %q repeated", token[:])
		seen[token] = true
		require.True(t, validToken(string(token[:])))
	}
}

func TestNewTokenUsesEveryDigit(t *testing.T) {
	// Over many tokens, each digit value appears in each position: a bug in
	// the in-place expansion would pin a position to a few values.
	var digits [tokenLength][16]bool
	for range 2_000 {
		var token [tokenLength]byte
		require.NoError(t, newToken(&token))
		for position, c := range token {
			value := c - '0'
			if c >= 'a' {
				value = c - 'a' + 10
			}
			digits[position][value] = true
		}
	}
	for position := range digits {
		for value, found := range digits[position] {
			assert.True(t, found, "digit %x never appears at position %d", value, position)
		}
	}
}

func TestValidToken(t *testing.T) {
	tests := []struct {
		name  string
		token string
		want  bool
	}{
		{name: "generated form", token: "0123456789abcdef0123456789abcdef01234567", want: true},
		{name: "one character", token: "x", want: true},
		{name: "printable punctuation", token: "!~{}:-", want: true},
		{name: "empty", token: "", want: false},
		{name: "space", token: "a b", want: false},
		{name: "tab", token: "a\tb", want: false},
		{name: "delete", token: "a\x7f", want: false},
		{name: "non-ASCII", token: "ü", want: false},
		{name: "longest", token: strings.Repeat("a", maxTokenLength), want: true},
		{name: "too long", token: strings.Repeat("a", maxTokenLength+1), want: false},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			assert.Equal(t, test.want, validToken(test.token))
		})
	}
}
