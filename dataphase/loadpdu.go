package dataphase

import "encoding/binary"

// Load PDU (0xBEEF): a 32-byte header followed by filler up to UDPPayload
// bytes (RFC 9946, the Load PDU). The layout is the same for protocol versions
// 11 and 20.
const (
	LoadPDUID     = 0xBEEF
	LoadHeaderLen = 32

	loadOffChecksum = 30
)

// Test actions carried by Load and Status PDUs (the stop handshake: see the
// package doc). Any non-zero
// value means "stop"; values above 2 make the PDU invalid.
const (
	ActionTest  uint8 = 0
	ActionStop1 uint8 = 1 // sent only by a client whose own safety timer fired
	ActionStop2 uint8 = 2 // the exchanged stop
)

// SpduSeqErrOoO in a Load PDU's SpduSeqErr means the last Status PDU arrived
// out of order or duplicated, not a count.
const SpduSeqErrOoO = 0xFFFF

// LoadHeader is the decoded 32-byte header of a Load PDU.
type LoadHeader struct {
	TestAction   uint8  // ActionTest, ActionStop1 or ActionStop2
	RxStopped    uint8  // 1: the Load Sender has seen no Status PDU for >= 1 s
	SeqNo        uint32 // lpduSeqNo, first = 1, one counter for both transmitters
	UDPPayload   uint16 // whole UDP payload length of this datagram, header included
	SpduSeqErr   uint16 // Status PDU sequence error at the last Status PDU (SpduSeqErrOoO: reordered)
	SpduTimeSec  uint32 // echo of the last Status PDU's send time (0/0 before any)
	SpduTimeNsec uint32
	LpduTimeSec  uint32 // this PDU's send time, CLOCK_REALTIME Unix seconds
	LpduTimeNsec uint32
	RTTRespDelay uint16 // ms from receipt of the last Status PDU to this send
	Checksum     uint16 // 0 = absent; else RFC 1071 over the 32 header bytes
}

// Encode writes the 32-byte header into b[:32], Checksum as it is (0 unless the
// caller sealed one with SealLoadChecksum). It does not touch the filler.
func (h *LoadHeader) Encode(b []byte) {
	_ = b[LoadHeaderLen-1]
	binary.BigEndian.PutUint16(b[0:], LoadPDUID)
	b[2] = h.TestAction
	b[3] = h.RxStopped
	binary.BigEndian.PutUint32(b[4:], h.SeqNo)
	binary.BigEndian.PutUint16(b[8:], h.UDPPayload)
	binary.BigEndian.PutUint16(b[10:], h.SpduSeqErr)
	binary.BigEndian.PutUint32(b[12:], h.SpduTimeSec)
	binary.BigEndian.PutUint32(b[16:], h.SpduTimeNsec)
	binary.BigEndian.PutUint32(b[20:], h.LpduTimeSec)
	binary.BigEndian.PutUint32(b[24:], h.LpduTimeNsec)
	binary.BigEndian.PutUint16(b[28:], h.RTTRespDelay)
	binary.BigEndian.PutUint16(b[30:], h.Checksum)
}

// SealLoadChecksum computes the optional header checksum over the 32 header
// bytes (never the filler) and stores it at offset 30.
func SealLoadChecksum(b []byte) {
	binary.BigEndian.PutUint16(b[loadOffChecksum:], 0)
	binary.BigEndian.PutUint16(b[loadOffChecksum:], Checksum(b[:LoadHeaderLen]))
}

// Rejections of Load PDUs. They are values, not formatted per datagram, so a
// flood of invalid datagrams costs no allocation.
var (
	errLoadShort    = &PDUError{PDU: "Load PDU", Field: "length", Reason: "shorter than the 32-byte header"}
	errLoadID       = &PDUError{PDU: "Load PDU", Field: "pduId", Reason: "not 0xBEEF"}
	errLoadAction   = &PDUError{PDU: "Load PDU", Field: "testAction", Reason: "above 2"}
	errLoadStopped  = &PDUError{PDU: "Load PDU", Field: "rxStopped", Reason: "neither 0 nor 1"}
	errLoadChecksum = &PDUError{PDU: "Load PDU", Field: "checkSum", Reason: "does not verify over the header"}
	errLoadLength   = &PDUError{PDU: "Load PDU", Field: "length", Reason: "udpPayload differs from the datagram's real length"}
)

// Decode parses a Load PDU header from b, which holds at least the first 32
// bytes of the datagram (receivers read only the header; the filler is never
// interpreted). It checks what OB-UDPST 9.0.0 checks:
// the identifier, testAction <= 2, rxStopped in {0,1} and a non-zero checksum.
// UDPPayload is not compared with the datagram length, which the header
// alone does not give; Conn does, with the length the socket reported.
func (h *LoadHeader) Decode(b []byte) error {
	if len(b) < LoadHeaderLen {
		return errLoadShort
	}
	if binary.BigEndian.Uint16(b[0:]) != LoadPDUID {
		return errLoadID
	}
	if b[2] > ActionStop2 {
		return errLoadAction
	}
	if b[3] > 1 {
		return errLoadStopped
	}
	ck := binary.BigEndian.Uint16(b[30:])
	if ck != 0 && !ChecksumValid(b[:LoadHeaderLen]) {
		return errLoadChecksum
	}
	h.Checksum = ck
	h.TestAction = b[2]
	h.RxStopped = b[3]
	h.SeqNo = binary.BigEndian.Uint32(b[4:])
	h.UDPPayload = binary.BigEndian.Uint16(b[8:])
	h.SpduSeqErr = binary.BigEndian.Uint16(b[10:])
	h.SpduTimeSec = binary.BigEndian.Uint32(b[12:])
	h.SpduTimeNsec = binary.BigEndian.Uint32(b[16:])
	h.LpduTimeSec = binary.BigEndian.Uint32(b[20:])
	h.LpduTimeNsec = binary.BigEndian.Uint32(b[24:])
	h.RTTRespDelay = binary.BigEndian.Uint16(b[28:])
	return nil
}
