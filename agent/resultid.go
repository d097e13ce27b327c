package agent

import (
	"crypto/rand"
	"encoding/hex"
)

// newResultID is a stored result's ID: a random (version 4) UUID, RFC 9562
// section 5.4, from crypto/rand. These few lines replace
// github.com/google/uuid, whose NewString was the only use: the format is
// the same, and crypto/rand.Read does not fail (it panics only if the
// kernel's random source is gone, as uuid.NewString would).
func newResultID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40 // version 4
	b[8] = b[8]&0x3f | 0x80 // the RFC's variant
	var s [36]byte
	hex.Encode(s[0:8], b[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], b[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], b[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], b[8:10])
	s[23] = '-'
	hex.Encode(s[24:], b[10:])
	return string(s[:])
}
