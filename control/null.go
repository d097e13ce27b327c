package control

import "encoding/binary"

// Null PDU (0xDEAD, 48 bytes, protocol 20 only; RFC 9946, the Null PDU). The
// server sends it once from the new test socket to the Setup Request's source
// right after accepting, so a stateful firewall in front of the server lets
// the client's Test Activation in. Nobody answers it and clients never check
// it.
const (
	NullPDUID = 0xDEAD
	NullLen   = 48

	NullCmdRequest uint8 = 1
)

// NullPDU is the firewall pin-hole datagram.
type NullPDU struct {
	ProtocolVer uint16
	CmdRequest  uint8
	CmdResponse uint8
	Reserved1   uint8
	authBlock
}

// Encode writes the 48-byte PDU into b[:48].
func (p *NullPDU) Encode(b []byte) []byte {
	b = b[:NullLen]
	binary.BigEndian.PutUint16(b[0:], NullPDUID)
	binary.BigEndian.PutUint16(b[2:], p.ProtocolVer)
	b[4] = p.CmdRequest
	b[5] = p.CmdResponse
	b[6] = p.Reserved1
	p.authBlock.put(b)
	return b
}

// Decode parses a Null PDU. Clients drop anything starting with 0xDEAD
// without looking further, so this is for tests and the curious.
func (p *NullPDU) Decode(b []byte) error {
	if err := checkPDU(b, "Null PDU", NullPDUID, NullLen); err != nil {
		return err
	}
	p.ProtocolVer = binary.BigEndian.Uint16(b[2:])
	p.CmdRequest = b[4]
	p.CmdResponse = b[5]
	p.Reserved1 = b[6]
	p.authBlock.get(b)
	return nil
}

// IsNullPDU reports whether a datagram is a Null PDU by its first two bytes,
// the only test OB-UDPST's client applies (any length, no auth check).
func IsNullPDU(b []byte) bool {
	return len(b) >= 2 && binary.BigEndian.Uint16(b) == NullPDUID
}
