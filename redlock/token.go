package redlock

import (
	"crypto/rand"
	"fmt"
)

// tokenRandomBytes is the number of random bytes in a generated token.
const tokenRandomBytes = 20

// tokenLength is the length of a generated token, in hexadecimal.
const tokenLength = 2 * tokenRandomBytes

// maxTokenLength is the longest token that MutexOptions.Token accepts.
const maxTokenLength = 128

// maxMetadataLength is the longest MutexOptions.Metadata accepted.
const maxMetadataLength = 256

const hexDigits = "0123456789abcdef"

// newToken fills dst with 20 bytes from crypto/rand in lowercase
// hexadecimal. It does not allocate.
func newToken(dst *[tokenLength]byte) error {
	// Expand the random bytes in place from the second half: byte i's
	// digits go to dst[2i:2i+2], never past the next unread byte.
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

// validToken reports whether token is 1 to maxTokenLength bytes of
// printable ASCII other than space.
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

// validMetadata reports whether metadata is at most maxMetadataLength
// bytes of printable ASCII, spaces included.
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

// splitValue returns the token and metadata of a lock key's value, split
// at its first space.
func splitValue(value []byte) (token, metadata []byte) {
	for i, c := range value {
		if c == ' ' {
			return value[:i], value[i+1:]
		}
	}
	return value, nil
}

// valueLength is the length of a Mutex's lock keys' value.
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
