package golden

import "encoding/binary"

// Checksum computes a PDU checksum the way OB-UDPST 9.0.0 does on a
// little-endian host: native 32-bit words summed into a 64-bit accumulator,
// folded and complemented, the result then read back in network order (RFC
// 1071 section 2(B), byte-order independence). It is 0 over a buffer whose
// checksum field verifies. The tests use it as an oracle independent of
// dataphase.Checksum, whose algorithm is deliberately different.
func Checksum(b []byte) uint16 {
	p := make([]byte, (len(b)+3)&^3)
	copy(p, b)
	var s uint64
	for i := 0; i < len(p); i += 4 {
		s += uint64(binary.LittleEndian.Uint32(p[i:]))
	}
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	c := ^uint16(s)
	return c<<8 | c>>8 // the stored little-endian bytes, read big-endian
}
