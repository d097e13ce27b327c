package control

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"slices"
	"time"

	"github.com/udpstp/udpstp/dataphase"
)

// The Control Phase PDUs of protocols 8, 9 and 10 (OB-UDPST 7.1.0 to 8.1.0;
// docs/compatibility.md has the layouts and what each old server checks).
// They are mapped onto the protocol 11 forms on arrival and back on the
// way out, so Admission, Coerce and the Data Phase judge one layout:
//
//   - Setup, protocols 8 and 9: 48 bytes. No multi-connection fields (one
//     connection: mcIndex 0, mcCount 1), the request and response codes at
//     4 and 5, maxBandwidth at 6 (protocol 8: reserved, read as 0), the
//     test port at 8, the modifier bitmap at 10 (protocol 8: jumboStatus, a
//     BOOL whose 1 is the jumbo bit), the auth block from 11, no keyId or
//     checksum.
//   - Setup, protocol 10: 52 bytes, the protocol 11 layout without keyId,
//     reserved and checksum.
//   - Test Activation, protocols 8 to 10: 56 bytes, protocol 11's 60
//     without the trailing reserved field and checksum. Protocol 8's
//     modifier bitmap and rate algorithm are reserved (0: Algorithm B).
const (
	MinLegacyProtocolVer uint16 = 8  // the oldest layout we answer (OB-UDPST 7.1.0)
	ChecksumProtocolVer  uint16 = 11 // the first with header checksums and keyId (8.2.0)
	multiConnProtocolVer uint16 = 10 // the first with mcIndex/mcCount/mcIdent (8.0.0)
	bandwidthProtocolVer uint16 = 9  // the first with maxBandwidth (7.5.0)

	SetupV8Len      = 48
	SetupV10Len     = 52
	ActivationV8Len = 56
)

// setupForm is the layout a Setup PDU arrived in, chosen by its length.
type setupForm uint8

const (
	setupCurrent setupForm = iota // 56 bytes: protocol 11..20
	setupV8                       // 48 bytes: protocol 8, 9
	setupV10                      // 52 bytes: protocol 10
)

// widenSetup returns a Setup PDU of any known layout in the 56-byte form
// and the layout it came in. It widens in place when b has the capacity
// (the control loop's receive buffer has), so a flood of old-layout
// requests costs no allocation. A 48- or 52-byte PDU whose version is newer
// than its layout is returned as it is (Decode then drops it), as an old
// OB-UDPST server drops a PDU of the wrong size.
func widenSetup(b []byte) ([]byte, setupForm) {
	if len(b) < 4 {
		return b, setupCurrent
	}
	pver := binary.BigEndian.Uint16(b[2:])
	form := setupCurrent
	switch {
	case len(b) == SetupV10Len && pver <= multiConnProtocolVer:
		form = setupV10
	case len(b) == SetupV8Len && pver < multiConnProtocolVer:
		form = setupV8
	default:
		return b, setupCurrent
	}
	w := b[:len(b):len(b)]
	if cap(b) >= SetupLen {
		w = b[:SetupLen]
	} else {
		w = append(w, make([]byte, SetupLen-len(b))...)
	}
	if form == setupV8 {
		copy(w[16:52], w[12:48])
		copy(w[8:16], w[4:12])
		w[4], w[5], w[6], w[7] = 0, 1, 0, 0 // one connection, index 0
		if pver < bandwidthProtocolVer {
			w[10], w[11] = 0, 0 // reserved in protocol 8
		}
	}
	clear(w[52:])
	return w, form
}

// accepts reports whether a Setup PDU of this layout may carry version
// pver; any other gets BADVER, as OB-UDPST 7.x (8..9) and 8.0/8.1 (10) give it.
func (f setupForm) accepts(pver uint16) bool {
	switch f {
	case setupV8:
		return pver >= MinLegacyProtocolVer && pver < multiConnProtocolVer
	case setupV10:
		return pver == multiConnProtocolVer
	}
	return pver >= MinProtocolVersion && pver <= ProtocolVersion
}

// narrow turns a 56-byte Setup Response back into the request's layout.
func (f setupForm) narrow(resp []byte) []byte {
	switch f {
	case setupV10:
		return resp[:SetupV10Len]
	case setupV8:
		copy(resp[4:12], resp[8:16])
		copy(resp[12:48], resp[16:52])
		return resp[:SetupV8Len]
	}
	return resp
}

// encodeSetupProto writes a Setup PDU in the layout of protocol version
// p.ProtocolVer (the client's --protocol) into b and returns it.
func encodeSetupProto(p *SetupPDU, b []byte) []byte {
	full := p.Encode(b)
	switch {
	case p.ProtocolVer >= ChecksumProtocolVer:
		return full
	case p.ProtocolVer >= multiConnProtocolVer:
		return setupV10.narrow(full)
	}
	return setupV8.narrow(full)
}

// encodeActivationProto writes a Test Activation Request in the layout of
// its protocol version: 104 bytes for 20, 60 for 11..19 (the Sub-Interval
// in seconds, no protocol 20 fields), 56 before 11 (protocol 8 without the
// modifier bitmap and algorithm it reserves).
func encodeActivationProto(ta *ActivationPDU, pver uint16) []byte {
	b := make([]byte, ActivationLen)
	if pver >= AuthECNProtocolVer {
		return ta.Encode(b, false)
	}
	ta.SubIntPeriodSec = uint8(ta.SubIntPeriod / 1000)
	ta.SubIntPeriod, ta.ECNCEThresh, ta.SRAdjSuppCount = 0, 0, 0
	if pver < bandwidthProtocolVer {
		ta.ModifierBitmap, ta.RateAdjAlgo = 0, 0
	}
	out := ta.Encode(b, true)
	if preChecksum(pver) {
		out = out[:ActivationV8Len]
	}
	return out
}

// protocol is the version a client speaks (--protocol).
func (c *ClientConfig) protocol() uint16 {
	if c.Protocol <= 0 || c.Protocol > int(ProtocolVersion) {
		return ProtocolVersion
	}
	return uint16(c.Protocol)
}

// widenActivation returns a Test Activation PDU of a protocol 8..10
// connection (56 bytes) in the 60-byte protocol 11 form, its checksum 0;
// ok is false when the length is not 56 (OB-UDPST 7.x and 8.1 drop it).
func widenActivation(b []byte) (w []byte, ok bool) {
	if len(b) != ActivationV8Len {
		return nil, false
	}
	var f [ActivationLegacyLen]byte
	copy(f[:], b)
	return f[:], true
}

// preChecksum reports whether protocol version pver predates the header
// checksum and the 60-byte Test Activation PDU.
func preChecksum(pver uint16) bool { return pver < ChecksumProtocolVer }

// tableForProto is the sending rate table a Test Connection of protocol
// version pver uses. Protocols 8 and 9 know no RandomSize bit (OB-UDPST
// 8.0.0 added it): they would read row 0's random add-on as a 2 GB size and
// send nothing. Their row 0 is the one OB-UDPST 7.5.1 has instead, a
// 48-byte add-on every millisecond.
func tableForProto(t []dataphase.SendingRate, pver uint16) []dataphase.SendingRate {
	if pver >= multiConnProtocolVer {
		return t
	}
	c := slices.Clone(t)
	for i := range c {
		r := &c[i]
		if (r.UDPPayload1|r.UDPPayload2|r.UDPAddon2)&dataphase.RandomSize != 0 {
			*r = dataphase.SendingRate{TxInterval2: 1000, UDPAddon2: 48}
		}
	}
	return c
}

// verifySetup checks a Setup Request's digest: protocol 11 and 20 as
// VerifySetup does, 8 to 10 as OB-UDPST 7.x, 8.0 and 8.1 do (verifyAuth).
func verifySetup(k *ServerKeys, w []byte, f setupForm, pver uint16, now time.Time) (SessionKeys, uint8) {
	if f == setupCurrent {
		return k.VerifySetup(w, pver, now)
	}
	return SessionKeys{}, f.verifyAuth(w, k, now)
}

// verifyAuth checks the digest of a protocol 8..10 Setup Request, given in
// its 56-byte form w: HMAC-SHA256 keyed with the raw key (-a; else key 0
// of -K, these versions carry no key ID) over the request as it came, 48
// or 52 bytes, with authDigest zeroed, and its time within AuthWindow.
// OB-UDPST before 8.2.0 allows 150 s; we keep 5 s, the window the replay
// cache covers (replay.go): a signed request captured and sent again 6 to
// 150 s later would otherwise be taken. A client whose clock is further
// off gets AUTHTIME. It returns 0, SetupAuthFail or SetupAuthTime. These
// versions sign nothing else: the response's digest is cleared.
func (f setupForm) verifyAuth(w []byte, k *ServerKeys, now time.Time) uint8 {
	var c [SetupLen]byte
	copy(c[:], w)
	b := f.narrow(c[:])
	clear(b[len(b)-authDigestLen:])
	key := k.Single
	if key == nil && k.File != nil {
		key, _ = k.File.Key(0)
	}
	mac := hmac.New(sha256.New, key)
	mac.Write(b)
	if !hmac.Equal(mac.Sum(nil), w[SetupV10Len-authDigestLen:SetupV10Len]) {
		return SetupAuthFail
	}
	if !CheckTime(AuthTime(w), now) {
		return SetupAuthTime
	}
	return 0
}
