package redlock

import (
	"crypto/rand"
	"fmt"
)

// tokenRandomBytes is the number of random bytes in a generated token.
const tokenRandomBytes = 20

// tokenLength is the length of a generated token: its random bytes in
// hexadecimal.
const tokenLength = 2 * tokenRandomBytes

// maxTokenLength is the longest token that MutexOptions.Token accepts.
const maxTokenLength = 128

// maxMetadataLength is the longest MutexOptions.Metadata accepted.
const maxMetadataLength = 256

const hexDigits = "0123456789abcdef"

// newToken fills dst with a new token: 20 bytes from crypto/rand written as
// 40 lowercase hexadecimal characters. It does not allocate.
func newToken(dst *[tokenLength]byte) error {
	// Read the random bytes into the second half of dst and expand them in
	// place from the front. The digits of byte i go to dst[2i] and dst[2i+1],
	// before dst[20+i+1] where the next unread byte lies, and byte i itself is
	// read before its digits are written.
	random := dst[tokenLength-tokenRandomBytes:]
	if _, err := rand.Read(random); err != nil {
		return fmt.Errorf("redlock: generate token: %w", err)
	}
	for i := range tokenRandomBytes {
		value := dst[tokenLength-tokenRandomBytes+i]
		dst[2*i] = hexDigits[value>>4]
		dst[2*i+1] = hexDigits[value&0x0f]
	}
	return nil
}

// validToken reports whether token can be used as a lock's value: 1 to
// maxTokenLength bytes, each a printable ASCII character other than space.
// Generated tokens always qualify.
func validToken(token string) bool {
	if len(token) == 0 || len(token) > maxTokenLength {
		return false
	}
	for i := 0; i < len(token); i++ {
		if token[i] <= ' ' || token[i] > '~' {
			return false
		}
	}
	return true
}

// validMetadata reports whether metadata can follow a token in a lock's
// value: at most maxMetadataLength bytes, each a printable ASCII
// character or a space.
func validMetadata(metadata string) bool {
	if len(metadata) > maxMetadataLength {
		return false
	}
	for i := 0; i < len(metadata); i++ {
		if metadata[i] < ' ' || metadata[i] > '~' {
			return false
		}
	}
	return true
}

// splitValue returns the token and the metadata of a lock key's value:
// what comes before its first space, and what comes after it. A token
// holds no space.
func splitValue(value []byte) (token, metadata []byte) {
	for i, c := range value {
		if c == ' ' {
			return value[:i], value[i+1:]
		}
	}
	return value, nil
}

// valueLength is the length of the lock keys' value of a Mutex's holds:
// its token, and a space and the metadata with MutexOptions.Metadata.
func valueLength(options MutexOptions) int {
	length := tokenLength
	if options.Token != "" {
		length = len(options.Token)
	}
	if options.Metadata != "" {
		length += 1 + len(options.Metadata)
	}
	return length
}
