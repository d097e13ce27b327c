package dataphase

// Checksum returns the RFC 1071 Internet checksum of b: the ones'-complement
// of the ones'-complement sum of b taken as big-endian 16-bit words, an odd
// trailing byte padded with zero. OB-UDPST 9.0.0 sums native 32-bit words into
// a 64-bit accumulator and folds; on a little-endian host its stored bytes are
// exactly this value in network order, so the two agree.
//
// The caller zeroes the checksum field before computing and stores the result
// big-endian. A checksum field of 0 on the wire means "absent".
func Checksum(b []byte) uint16 {
	return ^fold(sum16(b))
}

// ChecksumValid reports whether b, with its checksum field in place, sums to
// 0xFFFF, which is how every OB-UDPST receiver verifies a non-zero checksum.
func ChecksumValid(b []byte) bool {
	return fold(sum16(b)) == 0xffff
}

func sum16(b []byte) uint64 {
	var s uint64
	n := len(b) &^ 1
	for i := 0; i < n; i += 2 {
		s += uint64(b[i])<<8 | uint64(b[i+1])
	}
	if len(b)&1 == 1 {
		s += uint64(b[len(b)-1]) << 8
	}
	return s
}

func fold(s uint64) uint16 {
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	return uint16(s)
}
