package control

import (
	"math"
	"strconv"
)

// A key's strength. Both ends sign with HMAC-SHA256 keys derived from the
// shared key, and the server signs even its refusals (the package doc), so one
// captured response, or one answer to a request of the attacker's own, is
// enough to test guesses offline at the speed of SHA-256, in OB-UDPST as
// here. The protocol cannot help that; a key that is long and random can.

// MinKeyBits is the strength below which a key draws a warning at start:
// about 12 random characters of every kind, or 16 random lowercase
// letters; a human-chosen word or phrase has far less than its length
// suggests.
const MinKeyBits = 72

// KeyBits estimates an upper bound of a key's strength in bits: its length
// times the bits of the character classes it uses (lowercase, uppercase,
// digits, others), as if every character were drawn at random from them.
// A key of one repeated character counts 0.
func KeyBits(key []byte) int {
	var lower, upper, digit, other bool
	same := true
	for i, c := range key {
		switch {
		case c >= 'a' && c <= 'z':
			lower = true
		case c >= 'A' && c <= 'Z':
			upper = true
		case c >= '0' && c <= '9':
			digit = true
		default:
			other = true
		}
		if i > 0 && c != key[0] {
			same = false
		}
	}
	if same {
		return 0
	}
	pool := 0
	for _, c := range []struct {
		on bool
		n  int
	}{{lower, 26}, {upper, 26}, {digit, 10}, {other, 33}} {
		if c.on {
			pool += c.n
		}
	}
	return int(float64(len(key)) * math.Log2(float64(pool)))
}

// WeakKeys names the keys of k weaker than MinKeyBits ("the -a key", "key
// id 5"), for a warning at start; nil if there are none.
func (k *ServerKeys) WeakKeys() []string {
	if k == nil {
		return nil
	}
	var weak []string
	if len(k.Single) > 0 && KeyBits(k.Single) < MinKeyBits {
		weak = append(weak, "the -a key")
	}
	if k.File != nil {
		for _, id := range k.File.IDs() {
			if key, _ := k.File.Key(id); KeyBits(key) < MinKeyBits {
				weak = append(weak, "key id "+strconv.Itoa(int(id)))
			}
		}
	}
	return weak
}

// WeakKeyAdvice is what a warning about a weak key tells the operator.
const WeakKeyAdvice = "short enough to guess offline from one signed response (the protocol signs refusals too); use at least 20 random characters, e.g. `openssl rand -base64 30`"
