package bench

import (
	"crypto/rand"
	"encoding/hex"
)

// tokenRandomBytes is the number of random bytes in a lock token, as
// lockmux uses: 20 bytes from crypto/rand, written in hexadecimal.
const tokenRandomBytes = 20

// newToken fills dst with a new random token without allocating.
func newToken(dst *[2 * tokenRandomBytes]byte) error {
	random := dst[tokenRandomBytes:]
	if _, err := rand.Read(random); err != nil {
		return err
	}
	// hex.Encode writes byte i's digits to dst[2i] and dst[2i+1], never
	// past the unread byte tokenRandomBytes+i+1, so it can work in place.
	hex.Encode(dst[:], random)
	return nil
}

// newTokenString returns a new random token as a string, for the peers
// whose API takes one.
func newTokenString() (string, error) {
	var token [2 * tokenRandomBytes]byte
	if err := newToken(&token); err != nil {
		return "", err
	}
	return string(token[:]), nil
}
