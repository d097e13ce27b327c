package control

// Authentication of Control Phase PDUs: RFC 9946's authentication mode 1,
// as OB-UDPST 9.0.0 implements it (see the package doc).
//
// Every protocol-version-20 control PDU (Setup Request/Response, Null
// Request, Test Activation Request/Response) ends with the same 44-byte
// block, so one set of end-relative offsets serves all of them:
//
//	len-44  3 bytes  other fields of the PDU (covered by the digest, not ours)
//	len-41  u8       authMode
//	len-40  u32 BE   authUnixTime
//	len-36  32 bytes authDigest
//	len-4   u8       keyId
//	len-3   u8       reservedAuth1
//	len-2   u16      checkSum
//
// Which key signs what (authMode 1, pver >= 20):
//
//	client key: Setup Request, Test Activation Request       (client -> server)
//	server key: Setup Response, Null Request, TA Response    (server -> client)
//
// Both keys are derived once per Test Connection from the shared ASCII key
// and the authUnixTime of the Setup Request (DeriveKeys). Every PDU carries
// its sender's own fresh authUnixTime, and each is checked against the
// receiver's clock (CheckTime), but the keys are never re-derived.
//
// Legacy peers (pver 11..19) sign only the Setup Request, keyed with the raw
// ASCII key, and the server does not sign its answer (the package doc: how
// OB-UDPST 9.0.0 answers).

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"hash"
	"strconv"
	"time"
)

// authMode values. RFC 9946 also defines mode 2 (control and Status PDUs
// authenticated), but OB-UDPST 9.0.0 does not implement it and answers it
// with code 6 (or 4 when it has no key); we do the same, so there is no
// constant for it.
const (
	AuthNone    = 0 // no authentication
	AuthControl = 1 // Control Phase PDUs carry an HMAC-SHA256 digest
)

// AuthWindow is how far, in seconds and in either direction, a PDU's
// authUnixTime may be from the verifier's clock. Bounds are inclusive.
const AuthWindow = 5

// MaxKeyLen is the longest shared key OB-UDPST accepts, in bytes.
const MaxKeyLen = 64

// The codes this file returns are the Setup cmdResponse codes of codes.go,
// with 0 for "no objection": SetupAuthNotConf (4),
// SetupAuthRequired (5), SetupAuthMode (6), SetupAuthFail (7) and
// SetupAuthTime (8). A client adds 100 to a code for a failed setup and 150
// for a failed activation to get its ErrorStatus (107/157, 108/158).

// End-relative offsets of the auth block; see the package comment above.
const (
	authBlockLen   = 44
	authModeBack   = 41
	authTimeBack   = 40
	authDigestBack = 36
	authKeyIDBack  = 4
	authRsvdBack   = 3
	authCsumBack   = 2
	authDigestLen  = sha256.Size
)

// kdfLabel is the KBKDF Label. OB-UDPST hands it to OpenSSL as the "salt"
// parameter, which KBKDF uses as the Label of NIST SP 800-108.
const kdfLabel = "UDPSTP"

// SessionKeys are the two per-connection HMAC keys of protocol version 20.
type SessionKeys struct {
	Client [32]byte // signs Setup Request and TA Request
	Server [32]byte // signs Setup Response, Null Request and TA Response
}

// DeriveKeys runs the KBKDF of NIST SP 800-108 in counter mode with
// HMAC-SHA256, as OB-UDPST 9.0.0 does through OpenSSL (protocol 20's keys
// derived per Setup; see the package doc):
//
//	K(i) = HMAC-SHA256(key, BE32(i) || "UDPSTP" || 0x00 || Context || BE32(512))
//
// where Context is setupTime (the Setup Request's authUnixTime) written in
// decimal ASCII. K(1) is the client key and K(2) the server key.
func DeriveKeys(key []byte, setupTime uint32) SessionKeys {
	// 4 + 6 + 1 + up to 10 digits + 4 = at most 25 bytes.
	var buf [32]byte
	in := buf[:4]
	in = append(in, kdfLabel...)
	in = append(in, 0)
	in = strconv.AppendUint(in, uint64(setupTime), 10)
	in = binary.BigEndian.AppendUint32(in, 2*32*8) // L: 512 bits of output

	var ks SessionKeys
	mac := hmac.New(sha256.New, key)
	binary.BigEndian.PutUint32(in[:4], 1)
	mac.Write(in)
	mac.Sum(ks.Client[:0])
	mac.Reset()
	binary.BigEndian.PutUint32(in[:4], 2)
	mac.Write(in)
	mac.Sum(ks.Server[:0])
	return ks
}

// Sign fills the auth block of a control PDU and stores its digest: it sets
// authMode 1, authUnixTime now, keyId and reservedAuth1 0, then computes
// HMAC-SHA256(key, pdu) with authDigest and checkSum zeroed. The checksum
// is left at zero; a sender that uses checksums adds it afterwards, over the
// digest too (SealControlChecksum).
//
// key is a SessionKeys half for pver >= 20, or the raw ASCII key for a
// legacy Setup Request. pdu must be a whole control PDU (at least 44 bytes).
func Sign(pdu []byte, key []byte, now uint32, keyID uint8) {
	n := len(pdu)
	if n < authBlockLen {
		panic("control: Sign: PDU shorter than the auth block")
	}
	pdu[n-authModeBack] = AuthControl
	binary.BigEndian.PutUint32(pdu[n-authTimeBack:], now)
	pdu[n-authKeyIDBack] = keyID
	pdu[n-authRsvdBack] = 0
	pdu[n-authCsumBack] = 0
	pdu[n-authCsumBack+1] = 0
	var sum [authDigestLen]byte
	mac := hmac.New(sha256.New, key)
	sumAuth(mac, pdu, sum[:0])
	copy(pdu[n-authDigestBack:], sum[:])
}

// VerifyDigest reports whether pdu carries the HMAC-SHA256 digest that key
// gives over it (authDigest and checkSum taken as zero). It does not look
// at authMode or the time; pdu is not modified.
func VerifyDigest(pdu []byte, key []byte) bool {
	n := len(pdu)
	if n < authBlockLen {
		return false
	}
	var sum [authDigestLen]byte
	mac := hmac.New(sha256.New, key)
	sumAuth(mac, pdu, sum[:0])
	return hmac.Equal(sum[:], pdu[n-authDigestBack:n-authKeyIDBack])
}

// zeroDigest stands in for the authDigest and checkSum fields while hashing.
var zeroDigest [authDigestLen]byte

// sumAuth appends to dst the digest of pdu as if its authDigest and
// checkSum fields were zero. Feeding the MAC piecewise avoids copying the
// PDU and leaves the caller's bytes alone.
func sumAuth(mac hash.Hash, pdu []byte, dst []byte) []byte {
	n := len(pdu)
	mac.Write(pdu[:n-authDigestBack])
	mac.Write(zeroDigest[:])
	mac.Write(pdu[n-authKeyIDBack : n-authCsumBack])
	mac.Write(zeroDigest[:2])
	return mac.Sum(dst)
}

// CheckTime reports whether authTime lies within AuthWindow seconds of
// now, bounds included: now-5 <= authTime <= now+5.
func CheckTime(authTime uint32, now time.Time) bool {
	t, s := int64(authTime), now.Unix()
	return t >= s-AuthWindow && t <= s+AuthWindow
}

// AuthMode returns the authMode byte of a control PDU (0 if the PDU is too
// short to hold an auth block).
func AuthMode(pdu []byte) uint8 {
	if len(pdu) < authBlockLen {
		return 0
	}
	return pdu[len(pdu)-authModeBack]
}

// AuthTime returns the authUnixTime of a control PDU.
func AuthTime(pdu []byte) uint32 {
	if len(pdu) < authBlockLen {
		return 0
	}
	return binary.BigEndian.Uint32(pdu[len(pdu)-authTimeBack:])
}

// AuthDigest returns a control PDU's authDigest (zero if the PDU is too
// short to have one).
func AuthDigest(pdu []byte) (d [authDigestLen]byte) {
	if len(pdu) >= authBlockLen {
		copy(d[:], pdu[len(pdu)-authDigestBack:])
	}
	return d
}

// AuthKeyID returns the keyId of a control PDU.
func AuthKeyID(pdu []byte) uint8 {
	if len(pdu) < authBlockLen {
		return 0
	}
	return pdu[len(pdu)-authKeyIDBack]
}

// ClearAuth zeroes authUnixTime, authDigest, keyId and reservedAuth1 but
// leaves authMode alone. A v20 server does this to every response whose
// request had authMode != 1 (the package doc: how OB-UDPST 9.0.0 answers).
func ClearAuth(pdu []byte) {
	n := len(pdu)
	if n < authBlockLen {
		return
	}
	clear(pdu[n-authTimeBack : n-authCsumBack])
}

// ClearDigest zeroes only authDigest. A server answering a legacy (pver <
// 20) Setup Request whose digest it checked echoes the auth block this way.
func ClearDigest(pdu []byte) {
	n := len(pdu)
	if n < authBlockLen {
		return
	}
	clear(pdu[n-authDigestBack : n-authKeyIDBack])
}

// answerAuth writes the auth block of a Setup or Test Activation Response,
// which is its request edited in place (see the package doc): protocol 20
// signs it with the server's key (a zero key when none was tried) if the
// request asked for authentication (authMode 1), else clears it
// (ClearAuth); older versions echo the request's block, with the digest
// zeroed when it was checked. Every version zeroes the checksum the
// request carried, which the edited fields would no longer verify
// against; a sender that uses checksums adds its own afterwards.
func answerAuth(resp []byte, pver uint16, authMode, keyID uint8, keys SessionKeys, checked bool, now time.Time) {
	clear(resp[len(resp)-authCsumBack:])
	switch {
	case pver < AuthECNProtocolVer:
		if checked {
			ClearDigest(resp)
		}
	case authMode == AuthControl:
		Sign(resp, keys.Server[:], uint32(now.Unix()), keyID)
	default:
		ClearAuth(resp)
	}
}

// verifyPDU is the check both peers apply to an authenticated PDU from the
// other side: authMode 1, digest, then time.
func verifyPDU(pdu []byte, key []byte, now time.Time) uint8 {
	if AuthMode(pdu) != AuthControl || !VerifyDigest(pdu, key) {
		return SetupAuthFail
	}
	if !CheckTime(AuthTime(pdu), now) {
		return SetupAuthTime
	}
	return 0
}

// VerifyResponse is the keyed client's check of a Setup Response or TA
// Response (RFC 9946's authentication mode 1). It returns 0 when all is well,
// SetupAuthFail (7) when authMode is not 1 or the digest is not
// HMAC(keys.Server), or SetupAuthTime (8) when the digest is right but
// authUnixTime is more than 5 s away from now. The client maps 7/8 to
// ErrorStatus 107/108 for a Setup Response and 157/158 for a TA Response.
//
// OB-UDPST runs this before it looks at cmdResponse, so a rejection the
// server could not sign properly (code 4, signed with a zero key) surfaces
// as 7, not 4; we keep that order for identical exit codes. The client
// never checks the Null Request.
func VerifyResponse(pdu []byte, keys SessionKeys, now time.Time) uint8 {
	return verifyPDU(pdu, keys.Server[:], now)
}

// VerifyRequest is the server's check of a TA Request on a connection
// whose Setup Request had authMode 1 and pver >= 20: authMode must be 1,
// the digest HMAC(keys.Client), the time within ±5 s of now. Codes as for
// VerifyResponse; on anything but 0 OB-UDPST sends no answer at
// all (the client times out), and so should we.
func VerifyRequest(pdu []byte, keys SessionKeys, now time.Time) uint8 {
	return verifyPDU(pdu, keys.Client[:], now)
}

// VerifySetup is the authentication step of the server's Setup Request
// processing (its place in the order of checks: see the package doc). It only
// acts when the request has authMode 1 and the server has a key; otherwise it
// returns zero keys and 0, and CheckMode decides later.
//
// Keys are tried in this order: the key-file entry for the PDU's keyId (if
// any), then the -a key (if set, whatever the keyId). For pver >= 20 each
// candidate's session keys are derived from the PDU's authUnixTime and the
// client key is checked; for pver < 20 the raw key is. The first match
// wins; its time is then checked against now.
//
// Results:
//
//	0              keys of the matching key (the connection keeps them)
//	SetupAuthTime  keys of the matching key (the rejection is signed with them)
//	SetupAuthFail  keys derived from the last key tried, zero if none was
//	               tried: OB-UDPST signs its code-7 rejection with that
//	               server key
//
// For pver < 20 the returned SessionKeys are always zero: legacy responses
// are not signed. The caller must still clear the digest of its response
// (ClearDigest) whenever Checked reports that a check ran.
func (k *ServerKeys) VerifySetup(pdu []byte, pver uint16, now time.Time) (SessionKeys, uint8) {
	if !k.Checked(pdu) {
		return SessionKeys{}, 0
	}
	var cands [2][]byte
	nc := 0
	if k.File != nil {
		if key, ok := k.File.Key(AuthKeyID(pdu)); ok {
			cands[nc] = key
			nc++
		}
	}
	if len(k.Single) > 0 {
		cands[nc] = k.Single
		nc++
	}

	var keys SessionKeys
	authTime := AuthTime(pdu)
	for _, key := range cands[:nc] {
		mac := key
		if pver >= 20 {
			keys = DeriveKeys(key, authTime)
			mac = keys.Client[:]
		}
		if VerifyDigest(pdu, mac) {
			if !CheckTime(authTime, now) {
				return keys, SetupAuthTime
			}
			return keys, 0
		}
	}
	return keys, SetupAuthFail
}

// Checked reports whether VerifySetup checks this Setup Request, i.e. it
// has authMode 1 and the server has at least one key. For a legacy
// request this is also when the response's digest goes back zeroed.
func (k *ServerKeys) Checked(pdu []byte) bool {
	return k != nil && k.Configured() && AuthMode(pdu) == AuthControl
}

// CheckMode returns the Setup code for the request's authMode against the
// server's configuration: SetupAuthNotConf (4) for authMode != 0 on a
// server without a key, SetupAuthRequired (5) for authMode 0 on a keyed
// server, SetupAuthMode (6) for authMode > 1, else 0. The
// server applies it after the version, multi-connection, jumbo, MTU and
// bandwidth checks, not together with VerifySetup (the package doc): the
// order decides which code a bad request gets.
func (k *ServerKeys) CheckMode(authMode uint8) uint8 {
	keyed := k != nil && k.Configured()
	switch {
	case authMode != AuthNone && !keyed:
		return SetupAuthNotConf
	case authMode == AuthNone && keyed:
		return SetupAuthRequired
	case authMode > AuthControl:
		return SetupAuthMode
	}
	return 0
}

// AuthError is an authentication failure seen by a client, carrying the
// Setup code that describes it (SetupAuthFail or SetupAuthTime).
type AuthError struct {
	Code uint8  // SetupAuthFail or SetupAuthTime
	PDU  string // what failed, e.g. "setup response"
}

func (e *AuthError) Error() string {
	switch e.Code {
	case SetupAuthFail:
		return "authentication failure of " + e.PDU
	case SetupAuthTime:
		return "authentication time invalid in " + e.PDU
	}
	return "authentication error " + strconv.Itoa(int(e.Code)) + " in " + e.PDU
}
