package control

import (
	"encoding/binary"
	"fmt"

	"github.com/udpstp/udpstp/dataphase"
)

// Test Setup PDU (0xACE1): 56 bytes, the same layout for protocol 11 and 20
// (RFC 9946, the Test Setup PDU). The client's request has CmdRequest 1; the
// server answers with the same bytes edited in place and CmdRequest 2.
const (
	SetupPDUID = 0xACE1
	SetupLen   = 56

	SetupCmdRequest  uint8 = 1
	SetupCmdResponse uint8 = 2
)

// Setup modifier bits: the client's table options, which must match the
// server's (codes 3 and 11).
const (
	SetupJumbo          uint8 = 0x01 // jumbo rows above 1 Gbps allowed (no -j)
	SetupTraditionalMTU uint8 = 0x02 // -T: 1500-byte-MTU sizes
)

// MaxBandwidthUpstream in MaxBandwidth selects the upstream pool; the low 15
// bits are the required Mbps (0: not given).
const (
	MaxBandwidthUpstream = 0x8000
	MaxBandwidthMask     = 0x7FFF
)

// authBlock is the auth block every control PDU ends with: at len-44 three
// bytes of the PDU proper, then authMode, authUnixTime, authDigest, keyId,
// reservedAuth1 and checkSum.
type authBlock struct {
	AuthMode      uint8
	AuthUnixTime  uint32
	AuthDigest    [32]byte
	KeyID         uint8
	ReservedAuth1 uint8
	Checksum      uint16
}

func (a *authBlock) put(b []byte) {
	n := len(b)
	b[n-41] = a.AuthMode
	binary.BigEndian.PutUint32(b[n-40:], a.AuthUnixTime)
	copy(b[n-36:n-4], a.AuthDigest[:])
	b[n-4] = a.KeyID
	b[n-3] = a.ReservedAuth1
	binary.BigEndian.PutUint16(b[n-2:], a.Checksum)
}

func (a *authBlock) get(b []byte) {
	n := len(b)
	a.AuthMode = b[n-41]
	a.AuthUnixTime = binary.BigEndian.Uint32(b[n-40:])
	copy(a.AuthDigest[:], b[n-36:n-4])
	a.KeyID = b[n-4]
	a.ReservedAuth1 = b[n-3]
	a.Checksum = binary.BigEndian.Uint16(b[n-2:])
}

// SetupPDU is a Test Setup Request or Response.
type SetupPDU struct {
	ProtocolVer    uint16
	MCIndex        uint8  // connection index 0..MCCount-1
	MCCount        uint8  // configured maximum connection count, 1..24
	MCIdent        uint16 // random per client run, the same on all its connections
	CmdRequest     uint8  // SetupCmdRequest or SetupCmdResponse
	CmdResponse    uint8  // request: 0; response: a Setup* code
	MaxBandwidth   uint16 // MaxBandwidthUpstream | Mbps
	TestPort       uint16 // response: the server's new test port
	ModifierBitmap uint8  // SetupJumbo | SetupTraditionalMTU
	authBlock
}

// Encode writes the 56-byte PDU into b[:56], auth block and checksum as they
// are; sign with Sign and add a checksum with SealControlChecksum afterwards.
func (p *SetupPDU) Encode(b []byte) []byte {
	b = b[:SetupLen]
	be := binary.BigEndian
	be.PutUint16(b[0:], SetupPDUID)
	be.PutUint16(b[2:], p.ProtocolVer)
	b[4] = p.MCIndex
	b[5] = p.MCCount
	be.PutUint16(b[6:], p.MCIdent)
	b[8] = p.CmdRequest
	b[9] = p.CmdResponse
	be.PutUint16(b[10:], p.MaxBandwidth)
	be.PutUint16(b[12:], p.TestPort)
	b[14] = p.ModifierBitmap
	p.authBlock.put(b)
	return b
}

// Decode parses a Setup PDU and applies the checks under which OB-UDPST drops
// one silently (the package doc): exactly 56 bytes, pduId 0xACE1, cmdRequest 1
// or 2 (a 9.0.0 server even accepts 2 in a request) and a non-zero checksum
// that verifies. Version, bitmap and auth are Admission's business, because
// each of those gets a response code rather than silence.
func (p *SetupPDU) Decode(b []byte) error {
	if err := checkPDU(b, "Setup PDU", SetupPDUID, SetupLen); err != nil {
		return err
	}
	if c := b[8]; c != SetupCmdRequest && c != SetupCmdResponse {
		return &dataphase.PDUError{PDU: "Setup PDU", Field: fieldCmdRequest.String(), Reason: "neither 1 nor 2"}
	}
	be := binary.BigEndian
	p.ProtocolVer = be.Uint16(b[2:])
	p.MCIndex = b[4]
	p.MCCount = b[5]
	p.MCIdent = be.Uint16(b[6:])
	p.CmdRequest = b[8]
	p.CmdResponse = b[9]
	p.MaxBandwidth = be.Uint16(b[10:])
	p.TestPort = be.Uint16(b[12:])
	p.ModifierBitmap = b[14]
	p.authBlock.get(b)
	return nil
}

// checkPDU checks a control PDU's length (exactly length bytes), its
// identifier and its optional checksum, which always covers the whole PDU
// and sits in its last two bytes.
func checkPDU(b []byte, pdu string, id uint16, length int) error {
	switch f := pduFault(b, id, length); f {
	case fieldNone:
		return nil
	case fieldLength:
		return &dataphase.PDUError{PDU: pdu, Field: f.String(), Reason: fmt.Sprintf("got %d bytes, want %d", len(b), length)}
	case fieldPDUID:
		return &dataphase.PDUError{PDU: pdu, Field: f.String(), Reason: "unexpected identifier"}
	}
	return &dataphase.PDUError{PDU: pdu, Field: fieldChecksum.String(), Reason: "does not verify"}
}

// pduField is the field at fault in a datagram that is no well-formed
// control PDU, as the junk path judges it without building an error
// (pduFault, setupFault). Its String is the field's name in RFC 9946 as
// dataphase.PDUError carries it.
type pduField uint8

const (
	fieldNone        pduField = iota // no fault
	fieldLength                      // not the PDU's length
	fieldPDUID                       // not the PDU's identifier
	fieldChecksum                    // a non-zero checksum that does not verify
	fieldCmdRequest                  // a Setup PDU's cmdRequest neither 1 nor 2
	fieldCmdResponse                 // a Setup Request carrying ACKOK
)

func (f pduField) String() string {
	switch f {
	case fieldLength:
		return "length"
	case fieldPDUID:
		return "pduId"
	case fieldChecksum:
		return "checkSum"
	case fieldCmdRequest:
		return "cmdRequest"
	case fieldCmdResponse:
		return "cmdResponse"
	}
	return ""
}

// rejection classes the fault as the counters tell them apart, as
// dataphase.FieldRejection classes the field's name.
func (f pduField) rejection() dataphase.Rejection {
	switch f {
	case fieldLength:
		return dataphase.RejectSize
	case fieldChecksum:
		return dataphase.RejectChecksum
	}
	return dataphase.RejectFormat
}

// pduFault is checkPDU's judgement without an error value: the field at
// fault, or fieldNone when b passes. A server judges a flood of junk by
// it, at no allocation, and builds the error only to log it.
func pduFault(b []byte, id uint16, length int) pduField {
	switch {
	case len(b) != length:
		return fieldLength
	case binary.BigEndian.Uint16(b) != id:
		return fieldPDUID
	case binary.BigEndian.Uint16(b[len(b)-2:]) != 0 && !dataphase.ChecksumValid(b):
		return fieldChecksum
	}
	return fieldNone
}

// setupFault is the field at fault in a datagram that is no well-formed
// Setup PDU, as Decode would find it, or fieldNone (see pduFault).
func setupFault(b []byte) pduField {
	if f := pduFault(b, SetupPDUID, SetupLen); f != fieldNone {
		return f
	}
	if c := b[8]; c != SetupCmdRequest && c != SetupCmdResponse {
		return fieldCmdRequest
	}
	return fieldNone
}

// SealControlChecksum stores the optional checksum of a control PDU in its
// last two bytes, computed over the whole PDU after signing (RFC 1071, as
// dataphase's checksum.go computes it).
func SealControlChecksum(b []byte) {
	n := len(b)
	binary.BigEndian.PutUint16(b[n-2:], 0)
	binary.BigEndian.PutUint16(b[n-2:], dataphase.Checksum(b))
}
