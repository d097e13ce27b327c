package dataphase

import "testing"

// The codecs run once per datagram on both ends of a test at up to several
// hundred thousand datagrams per second, so their cost and their (zero)
// allocations are tracked here. SetBytes is the PDU size: the 32-byte header
// for Load PDUs (the filler is neither written nor read), the whole PDU for
// Status.

// BenchmarkLoadEncode measures writing one Load PDU header.
func BenchmarkLoadEncode(b *testing.B) {
	h := fullLoadHeader()
	var buf [LoadHeaderLen]byte
	b.SetBytes(LoadHeaderLen)
	b.ReportAllocs()
	for b.Loop() {
		h.SeqNo++
		h.Encode(buf[:])
	}
}

func benchLoadDecode(b *testing.B, sealed bool) {
	in := fullLoadHeader()
	buf := make([]byte, DefaultPayload)
	in.Encode(buf)
	if sealed {
		SealLoadChecksum(buf)
	}
	var h LoadHeader
	b.SetBytes(LoadHeaderLen)
	b.ReportAllocs()
	for b.Loop() {
		if err := h.Decode(buf); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoadDecode measures parsing and validating one Load PDU header.
func BenchmarkLoadDecode(b *testing.B) { benchLoadDecode(b, false) }

// BenchmarkLoadDecodeChecksum measures a Load PDU header with a checksum to
// verify.
func BenchmarkLoadDecodeChecksum(b *testing.B) { benchLoadDecode(b, true) }

func benchStatusEncode(b *testing.B, legacy bool) {
	s := fullStatus()
	var buf [StatusLen]byte
	b.SetBytes(int64(s.Encode(buf[:], legacy)))
	b.ReportAllocs()
	for b.Loop() {
		s.SeqNo++
		s.Encode(buf[:], legacy)
	}
}

func benchStatusDecode(b *testing.B, legacy bool) {
	in := fullStatus()
	if legacy {
		in = legacyView(in)
	}
	var buf [StatusLen]byte
	n := in.Encode(buf[:], legacy)
	var s StatusPDU
	b.SetBytes(int64(n))
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Decode(buf[:n], legacy); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStatusEncode measures writing one 204-byte Status PDU.
func BenchmarkStatusEncode(b *testing.B) { benchStatusEncode(b, false) }

// BenchmarkStatusDecode measures parsing one 204-byte Status PDU.
func BenchmarkStatusDecode(b *testing.B) { benchStatusDecode(b, false) }

// BenchmarkStatusEncodeLegacy measures writing one 168-byte Status PDU.
func BenchmarkStatusEncodeLegacy(b *testing.B) { benchStatusEncode(b, true) }

// BenchmarkStatusDecodeLegacy measures parsing one 168-byte Status PDU.
func BenchmarkStatusDecodeLegacy(b *testing.B) { benchStatusDecode(b, true) }
