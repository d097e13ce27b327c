package dataphase

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/udpstp/udpstp/internal/testkit/race"
)

// fullStatus has a distinct non-zero value in every field, a negative
// ClockDeltaMin included, and no checksum.
func fullStatus() StatusPDU {
	return StatusPDU{
		TestAction:  ActionStop1,
		RxStopped:   1,
		SeqNo:       0x01020304,
		Rate:        SendingRate{0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x80000017},
		SubIntSeqNo: 0x21222324,
		SubInt: SubIntervalStats{
			RxDatagrams: 0x31323334,
			RxBytes:     0x35363738393a3b3c,
			DeltaTime:   0x3d3e3f40,
			SeqErrLoss:  0x41424344,
			SeqErrOoo:   0x45464748,
			SeqErrDup:   0x494a4b4c,
			DelayVarMin: 0x4d4e4f50,
			DelayVarMax: 0x51525354,
			DelayVarSum: 0x55565758,
			DelayVarCnt: 0x595a5b5c,
			RTTVarMin:   0x5d5e5f60,
			RTTVarMax:   0x61626364,
			AccumTime:   0x65666768,
		},
		SeqErrLoss:    0x71727374,
		SeqErrOoo:     0x75767778,
		SeqErrDup:     0x797a7b7c,
		ClockDeltaMin: -0x0d0c0b0a,
		DelayVarMin:   0x81828384,
		DelayVarMax:   0x85868788,
		DelayVarSum:   0x898a8b8c,
		DelayVarCnt:   0x8d8e8f90,
		RTTMinimum:    0x91929394,
		RTTVarSample:  NoDelay,
		DelayMinUpd:   1,
		Reserved1:     0x97,
		Reserved2:     0x9899,
		TiDeltaTime:   0xa1a2a3a4,
		TiRxDatagrams: 0xa5a6a7a8,
		TiRxBytes:     0xa9aaabac,
		SpduTimeSec:   0xb1b2b3b4,
		SpduTimeNsec:  0x3b9ac9ff,
		AuthMode:      1,
		TiRxCECount:   0xc1c2c3c4,
		SisSavCECount: 0xc5c6c7c8,
		ECNFlags:      ECNFlagBleached,
	}
}

// legacyView is what survives a trip through the 168-byte form: the v20-only
// fields are gone.
func legacyView(s StatusPDU) StatusPDU {
	s.Reserved2 = 0
	s.AuthMode, s.TiRxCECount, s.SisSavCECount, s.ECNFlags = 0, 0, 0, 0
	return s
}

func wireU32(b []byte, off int) uint32   { return binary.BigEndian.Uint32(b[off:]) }
func wireU16at(b []byte, off int) uint16 { return binary.BigEndian.Uint16(b[off:]) }

// TestStatusWireV20 protects the 204-byte layout of protocol 20 (RFC 9946's
// Status Feedback PDU and its auth/ECN area as OB-UDPST 9.0.0 writes it):
// spot checks of every region, and zeros wherever 9.0.0 writes zeros or
// leaves stale bytes (164..175, 184, 188..203), even over a dirty buffer.
func TestStatusWireV20(t *testing.T) {
	s := fullStatus()
	b := bytes.Repeat([]byte{0xee}, StatusLen+8)
	if n := s.Encode(b, false); n != StatusLen {
		t.Fatalf("Encode returned %d, want %d", n, StatusLen)
	}
	if !bytes.Equal(b[StatusLen:], bytes.Repeat([]byte{0xee}, 8)) {
		t.Fatal("Encode wrote past 204 bytes")
	}
	b = b[:StatusLen]
	checkWire(t, b, []wireCheck{
		{"pduId", 0, wireU16, StatusPDUID},
		{"testAction", 2, wireU8, uint32(s.TestAction)},
		{"rxStopped", 3, wireU8, 1},
		{"spduSeqNo", 4, wireU32, s.SeqNo},
		{"srStruct.txInterval1", 8, wireU32, s.Rate.TxInterval1},
		{"srStruct.udpAddon2", 32, wireU32, s.Rate.UDPAddon2},
		{"subIntSeqNo", 36, wireU32, s.SubIntSeqNo},
		{"sisSav.rxDatagrams", 40, wireU32, s.SubInt.RxDatagrams},
		{"sisSav.rxBytes high", 44, wireU32, uint32(s.SubInt.RxBytes >> 32)},
		{"sisSav.rxBytes low", 48, wireU32, uint32(s.SubInt.RxBytes)},
		{"sisSav.deltaTime", 52, wireU32, s.SubInt.DeltaTime},
		{"sisSav.accumTime", 92, wireU32, s.SubInt.AccumTime},
		{"seqErrLoss", 96, wireU32, s.SeqErrLoss},
		{"clockDeltaMin", 108, wireU32, uint32(s.ClockDeltaMin)},
		{"rttVarSample", 132, wireU32, NoDelay},
		{"delayMinUpd", 136, wireU8, 1},
		{"reserved1", 137, wireU8, 0x97},
		{"reserved2", 138, wireU16, 0x9899},
		{"tiDeltaTime", 140, wireU32, s.TiDeltaTime},
		{"spduTime_sec", 152, wireU32, s.SpduTimeSec},
		{"spduTime_nsec", 156, wireU32, s.SpduTimeNsec},
		{"auth reserved 160", 160, wireU32, 0x00000001}, // 160..162 zero, authMode at 163
		{"zero 164", 164, wireU32, 0},
		{"zero 168", 168, wireU32, 0},
		{"zero 172", 172, wireU32, 0},
		{"tiRxCECount", 176, wireU32, s.TiRxCECount},
		{"sisSavCECount", 180, wireU32, s.SisSavCECount},
		{"reserved 184", 184, wireU8, 0},
		{"ecn flags", 185, wireU8, ECNFlagBleached},
		{"checksum 186", 186, wireU16, 0},
	})
	if !bytes.Equal(b[188:], make([]byte, 16)) {
		t.Errorf("bytes 188..203 = %x, want zeros (9.0.0 leaves them stale; we write zeros)", b[188:])
	}
	var got StatusPDU
	if err := got.Decode(b, false); err != nil {
		t.Fatal(err)
	}
	if got != s {
		t.Fatalf("Decode(Encode(s))\n got %+v\nwant %+v", got, s)
	}
}

func wireU8(b []byte, off int) uint32  { return uint32(b[off]) }
func wireU16(b []byte, off int) uint32 { return uint32(wireU16at(b, off)) }

// wireCheck is one field of an encoded PDU: its name, offset, reader and
// expected value.
type wireCheck struct {
	name string
	off  int
	got  func(b []byte, off int) uint32
	want uint32
}

// checkWire reports every field of checks that b does not hold.
func checkWire(t *testing.T, b []byte, checks []wireCheck) {
	t.Helper()
	for _, c := range checks {
		if got := c.got(b, c.off); got != c.want {
			t.Errorf("%s at %d: %#x, want %#x", c.name, c.off, got, c.want)
		}
	}
}

// TestStatusWireLegacy protects the 168-byte form of protocol 11..19 peers
// (OB-UDPST 8.2.0's unpacked C struct, see the package doc): fields at the
// padded offsets, zero pads at 44..47 and 100..103, the checksum at 146, and
// the rule that the legacy form is the v20 form's first 160 bytes with two
// 4-byte pads inserted.
func TestStatusWireLegacy(t *testing.T) {
	s := fullStatus()
	b := bytes.Repeat([]byte{0xee}, StatusLen)
	if n := s.Encode(b, true); n != StatusLegacyLen {
		t.Fatalf("Encode returned %d, want %d", n, StatusLegacyLen)
	}
	if !bytes.Equal(b[StatusLegacyLen:], bytes.Repeat([]byte{0xee}, StatusLen-StatusLegacyLen)) {
		t.Fatal("legacy Encode wrote past 168 bytes")
	}
	b = b[:StatusLegacyLen]
	if !bytes.Equal(b[44:48], make([]byte, 4)) || !bytes.Equal(b[100:104], make([]byte, 4)) {
		t.Fatalf("pads 44..47 = %x, 100..103 = %x, want zeros", b[44:48], b[100:104])
	}
	checkWire(t, b, []wireCheck{
		{"pduId", 0, wireU16, StatusPDUID},
		{"subIntSeqNo", 36, wireU32, s.SubIntSeqNo},
		{"sisSav.rxDatagrams", 40, wireU32, s.SubInt.RxDatagrams},
		{"sisSav.rxBytes high", 48, wireU32, uint32(s.SubInt.RxBytes >> 32)},
		{"sisSav.rxBytes low", 52, wireU32, uint32(s.SubInt.RxBytes)},
		{"sisSav.deltaTime", 56, wireU32, s.SubInt.DeltaTime},
		{"sisSav.accumTime", 96, wireU32, s.SubInt.AccumTime},
		{"seqErrLoss", 104, wireU32, s.SeqErrLoss},
		{"seqErrOoo", 108, wireU32, s.SeqErrOoo},
		{"clockDeltaMin", 116, wireU32, uint32(s.ClockDeltaMin)},
		{"rttMinimum", 136, wireU32, s.RTTMinimum},
		{"delayMinUpd", 144, wireU8, 1},
		{"reserved1", 145, wireU8, 0x97},
		{"checksum", 146, wireU16, 0},
		{"tiDeltaTime", 148, wireU32, s.TiDeltaTime},
		{"tiRxBytes", 156, wireU32, s.TiRxBytes},
		{"spduTime_sec", 160, wireU32, s.SpduTimeSec},
		{"spduTime_nsec", 164, wireU32, s.SpduTimeNsec},
	})

	// The legacy form is v20 bytes 0..159 (reserved2 0)
	// with zero pads inserted after bytes 43 and 95.
	v := legacyView(s)
	var v20 [StatusLen]byte
	v.Encode(v20[:], false)
	var conv []byte
	conv = append(conv, v20[:44]...)
	conv = append(conv, 0, 0, 0, 0)
	conv = append(conv, v20[44:96]...)
	conv = append(conv, 0, 0, 0, 0)
	conv = append(conv, v20[96:160]...)
	if !bytes.Equal(b, conv) {
		t.Fatalf("legacy form is not the padded v20 form\n got %x\nwant %x", b, conv)
	}

	var got StatusPDU
	if err := got.Decode(b, true); err != nil {
		t.Fatal(err)
	}
	if got != v {
		t.Fatalf("Decode(Encode(s))\n got %+v\nwant %+v", got, v)
	}
	// A legacy decode must not keep v20-only fields from a previous PDU.
	got = fullStatus()
	if err := got.Decode(b, true); err != nil || got != v {
		t.Fatalf("Decode over a used struct: %v\n got %+v\nwant %+v", err, got, v)
	}
}

// TestStatusClockDeltaMinSigned protects the signedness of clockDeltaMin in
// its 32-bit field: negative values are two's complement on the wire and come
// back negative, in both layouts.
func TestStatusClockDeltaMinSigned(t *testing.T) {
	for _, v := range []int32{0, 1, -1, -2, -12345, 2147483647, -2147483648} {
		for _, legacy := range []bool{false, true} {
			name := "v20"
			off := 108
			if legacy {
				name, off = "legacy", 116
			}
			t.Run(fmt.Sprintf("%s/%d", name, v), func(t *testing.T) {
				s := StatusPDU{ClockDeltaMin: v}
				var b [StatusLen]byte
				n := s.Encode(b[:], legacy)
				if got := int32(wireU32(b[:], off)); got != v {
					t.Fatalf("wire value at %d: %d, want %d", off, got, v)
				}
				var got StatusPDU
				if err := got.Decode(b[:n], legacy); err != nil {
					t.Fatal(err)
				}
				if got.ClockDeltaMin != v {
					t.Fatalf("ClockDeltaMin %d, want %d", got.ClockDeltaMin, v)
				}
			})
		}
	}
}

// TestStatusStaleTail protects the interop rule of the package doc: OB-UDPST
// 9.0.0 never writes bytes 188..203, so they carry stale Load PDU header
// bytes, often a non-zero spduSeqErr at 202..203 (the nominal checksum). We
// must ignore them, not drop the PDU.
func TestStatusStaleTail(t *testing.T) {
	tails := []struct {
		name string
		tail []byte
	}{
		{"captured tail", []byte{0x00, 0x32, 0x00, 0x00, 0xbe, 0xef, 0x00, 0x00, 0x00, 0x00, 0x08, 0xbc, 0x04, 0xc6, 0x00, 0x00}},
		{"spduSeqErr 5 at 202", append(make([]byte, 14), 0x00, 0x05)},
		{"out-of-order marker at 202", append(bytes.Repeat([]byte{0x42}, 14), 0xff, 0xff)},
		{"all ones", bytes.Repeat([]byte{0xff}, 16)},
		{"noise", []byte{0x9a, 0x01, 0x77, 0x3c, 0xbe, 0xef, 0x02, 0x01, 0xde, 0xad, 0xbe, 0xef, 0x12, 0x34, 0xab, 0xcd}},
	}
	for _, tt := range tails {
		t.Run(tt.name, func(t *testing.T) {
			s := fullStatus()
			var b [StatusLen]byte
			s.Encode(b[:], false)
			copy(b[188:], tt.tail)
			if ChecksumValid(b[:]) {
				t.Fatal("test tail happens to verify; pick another")
			}
			var got StatusPDU
			if err := got.Decode(b[:], false); err != nil {
				t.Fatalf("PDU with stale bytes 188..203 %x rejected: %v", tt.tail, err)
			}
			if got != s {
				t.Fatalf("got %+v, want %+v", got, s)
			}
		})
	}
}

// TestStatusChecksum protects where a Status checksum is looked for and how
// it is verified: at 186 over all 204 bytes (what a checksum-enabled 9.0.0
// sender writes, stale tail included), at 146 over 168 bytes for legacy
// peers, and that our own SealStatusChecksum output is accepted by both us
// and, by construction, a 9.0.0 receiver (it verifies at 202 for v20).
func TestStatusChecksum(t *testing.T) {
	tail := []byte{0x00, 0x32, 0x00, 0x00, 0xbe, 0xef, 0x00, 0x00, 0x00, 0x00, 0x08, 0xbc, 0x04, 0xc6, 0x00, 0x05}

	t.Run("9.0.0 sender at 186", func(t *testing.T) {
		s := fullStatus()
		var b [StatusLen]byte
		s.Encode(b[:], false)
		copy(b[188:], tail)
		ck := Checksum(b[:]) // computed with 186..187 zero, over all 204 bytes
		binary.BigEndian.PutUint16(b[186:], ck)
		var got StatusPDU
		if err := got.Decode(b[:], false); err != nil {
			t.Fatalf("valid checksum at 186 rejected: %v", err)
		}
		want := s
		want.Checksum = ck
		if got != want {
			t.Fatalf("got %+v, want %+v", got, want)
		}
	})
	t.Run("SealStatusChecksum v20", func(t *testing.T) {
		s := fullStatus()
		var b [StatusLen]byte
		s.Encode(b[:], false)
		SealStatusChecksum(b[:])
		if wireU16at(b[:], 202) == 0 || wireU16at(b[:], 186) != 0 {
			t.Fatalf("sealed v20 PDU: %#x at 202, %#x at 186; want the checksum at 202 only", wireU16at(b[:], 202), wireU16at(b[:], 186))
		}
		if !ChecksumValid(b[:]) {
			t.Fatal("sealed v20 PDU does not verify over 204 bytes")
		}
		var got StatusPDU
		if err := got.Decode(b[:], false); err != nil {
			t.Fatalf("our own sealed PDU rejected: %v", err)
		}
		if got != s {
			t.Fatalf("got %+v, want %+v", got, s)
		}
	})
	t.Run("SealStatusChecksum legacy", func(t *testing.T) {
		s := legacyView(fullStatus())
		var b [StatusLen]byte
		n := s.Encode(b[:], true)
		SealStatusChecksum(b[:n])
		ck := wireU16at(b[:], 146)
		if ck == 0 || !ChecksumValid(b[:n]) {
			t.Fatalf("sealed legacy PDU: checksum %#x at 146 does not verify", ck)
		}
		// 9.0.0 computes it over the first 160 bytes of the
		// v20 form; the zero pads do not change the sum.
		var v20 [StatusLen]byte
		s.Encode(v20[:], false)
		if want := Checksum(v20[:statusCommonLen]); ck != want {
			t.Fatalf("legacy checksum %#x, 9.0.0 computes %#x over the v20 form", ck, want)
		}
		var got StatusPDU
		if err := got.Decode(b[:n], true); err != nil {
			t.Fatalf("sealed legacy PDU rejected: %v", err)
		}
		want := s
		want.Checksum = ck
		if got != want {
			t.Fatalf("got %+v, want %+v", got, want)
		}
	})
}

// TestStatusRejects protects every rejection: wrong length for the
// connection's layout, wrong identifier, testAction > 2, rxStopped > 1 and a
// non-zero checksum that does not verify; each is a *PDUError naming the
// field.
func TestStatusRejects(t *testing.T) {
	enc := func(legacy bool, mutate func(b []byte)) []byte {
		s := fullStatus()
		b := make([]byte, StatusLen)
		b = b[:s.Encode(b, legacy)]
		mutate(b)
		return b
	}
	sealed := func(legacy bool, mutate func(b []byte)) []byte {
		return enc(legacy, func(b []byte) {
			if !legacy {
				// As a checksum-enabled 9.0.0 build writes it.
				binary.BigEndian.PutUint16(b[186:], Checksum(b))
			} else {
				SealStatusChecksum(b)
			}
			mutate(b)
		})
	}
	none := func([]byte) {}
	tests := []struct {
		name   string
		legacy bool
		in     []byte
		field  string
	}{
		{"v20 empty", false, nil, "length"},
		{"v20 203 bytes", false, enc(false, none)[:StatusLen-1], "length"},
		{"v20 205 bytes", false, append(enc(false, none), 0), "length"},
		{"v20 given a legacy PDU", false, enc(true, none), "length"},
		{"legacy given a v20 PDU", true, enc(false, none), "length"},
		{"legacy 167 bytes", true, enc(true, none)[:StatusLegacyLen-1], "length"},
		{"legacy 169 bytes", true, append(enc(true, none), 0), "length"},
		{"v20 Load id", false, enc(false, func(b []byte) { b[0], b[1] = 0xbe, 0xef }), "pduId"},
		{"legacy id", true, enc(true, func(b []byte) { b[1] = 0xee }), "pduId"},
		{"v20 testAction 3", false, enc(false, func(b []byte) { b[2] = 3 }), "testAction"},
		{"legacy testAction 255", true, enc(true, func(b []byte) { b[2] = 0xff }), "testAction"},
		{"v20 rxStopped 2", false, enc(false, func(b []byte) { b[3] = 2 }), "rxStopped"},
		{"legacy rxStopped 2", true, enc(true, func(b []byte) { b[3] = 2 }), "rxStopped"},
		{"v20 arbitrary checksum at 186", false, enc(false, func(b []byte) { b[186], b[187] = 0x12, 0x34 }), "checkSum"},
		{"v20 sealed at 186 then field changed", false, sealed(false, func(b []byte) { b[100]++ }), "checkSum"},
		{"v20 sealed at 186 then tail changed", false, sealed(false, func(b []byte) { b[195] ^= 0x10 }), "checkSum"},
		{"legacy arbitrary checksum at 146", true, enc(true, func(b []byte) { b[146], b[147] = 0x12, 0x34 }), "checkSum"},
		{"legacy sealed then field changed", true, sealed(true, func(b []byte) { b[160]++ }), "checkSum"},
		{"legacy sealed then pad changed", true, sealed(true, func(b []byte) { b[45] = 1 }), "checkSum"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s StatusPDU
			wantPDUError(t, s.Decode(tt.in, tt.legacy), "Status PDU", tt.field)
		})
	}
}

// TestStatusNoAllocs keeps Status encoding and decoding allocation-free in
// both layouts, rejections included.
func TestStatusNoAllocs(t *testing.T) {
	s := fullStatus()
	var v20, leg, bad [StatusLen]byte
	s.Encode(v20[:], false)
	s.Encode(leg[:], true)
	s.Encode(bad[:], false)
	bad[3] = 7
	var d StatusPDU
	tests := []struct {
		name string
		f    func()
	}{
		{"Encode v20", func() { s.Encode(v20[:], false) }},
		{"Encode legacy", func() { s.Encode(leg[:], true) }},
		{"Decode v20", func() {
			if err := d.Decode(v20[:], false); err != nil {
				panic(err)
			}
		}},
		{"Decode legacy", func() {
			if err := d.Decode(leg[:StatusLegacyLen], true); err != nil {
				panic(err)
			}
		}},
		{"Decode v20 rejected", func() { _ = d.Decode(bad[:], false) }},
		{"Decode legacy wrong length", func() { _ = d.Decode(leg[:], true) }},
		{"SealStatusChecksum", func() { SealStatusChecksum(v20[:]) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if n := race.AllocsPerRun(100, tt.f); n != 0 {
				t.Fatalf("%v allocations, want 0", n)
			}
		})
	}
}
