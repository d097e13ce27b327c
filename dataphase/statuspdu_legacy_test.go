package dataphase

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/udpstp/udpstp/internal/testkit/golden"
)

// legacyStatusCarried is false at the bytes of a pre-11 Status PDU that no
// field of ours carries: for protocols 8 and 9 reserved3 (134..135), for
// 10 the Sub-Interval block's pads (44..47, 100..103) and reserved3 (146).
func legacyStatusCarried(proto uint16, i int) bool {
	if proto <= status32ProtoMax {
		return i != 134 && i != 135
	}
	return !(i >= 44 && i < 48 || i >= 100 && i < 104 || i == 146 || i == 147)
}

// TestGoldenLegacyDataPDUs decodes every captured Load and Status PDU of
// OB-UDPST 7.2.0, 7.5.1 and 8.1.0 (and of udpstp's server answering them)
// in its protocol's layout, re-encodes each Status PDU to the bytes on the
// wire, and checks that the other versions' layouts refuse it.
func TestGoldenLegacyDataPDUs(t *testing.T) {
	for _, sc := range golden.LegacyScenarios(t) {
		t.Run(sc.Name, func(t *testing.T) {
			pdus := sc.PDUs(t, "pdus.jsonl")
			proto := golden.ProtocolVersion(pdus)
			if proto < 8 || proto > 10 {
				t.Fatalf("protocol version %d in a legacy capture", proto)
			}
			var wide [StatusLegacyLen]byte
			var nStatus, nLoad int
			var lastSeq = map[int]uint32{}
			for i, p := range pdus {
				switch p.ID {
				case "feed":
					nStatus++
					if p.Len != StatusLenProto(proto) {
						t.Fatalf("pdu %d: Status PDU of %d bytes, want %d", i, p.Len, StatusLenProto(proto))
					}
					var s StatusPDU
					if err := s.DecodeProto(p.Bytes, proto, &wide); err != nil {
						t.Fatalf("pdu %d: %v", i, err)
					}
					if s.Checksum != 0 {
						t.Errorf("pdu %d: a checksum before protocol 11", i)
					}
					var out [StatusLen]byte
					got := out[:s.EncodeProto(out[:], proto)]
					if len(got) != p.Len {
						t.Fatalf("pdu %d: re-encoded to %d bytes, want %d", i, len(got), p.Len)
					}
					for j := range got {
						if legacyStatusCarried(proto, j) && got[j] != p.Bytes[j] {
							t.Fatalf("pdu %d: byte %d re-encodes as %#x, was %#x\n ours %x\n ref  %x", i, j, got[j], p.Bytes[j], got, p.Bytes)
						}
					}
					for _, other := range []uint16{9, 10, 11, 20} {
						if StatusLenProto(other) != StatusLenProto(proto) && s.DecodeProto(p.Bytes, other, &wide) == nil {
							t.Errorf("pdu %d: protocol %d's layout accepted a protocol %d Status PDU", i, other, proto)
						}
					}
				case "beef":
					nLoad++
					var h LoadHeader
					if err := h.DecodeProto(p.Bytes, proto); err != nil {
						t.Fatalf("pdu %d: %v", i, err)
					}
					if int(h.UDPPayload) != p.Len {
						t.Errorf("pdu %d: udpPayload %d, datagram %d bytes", i, h.UDPPayload, p.Len)
					}
					if proto < RTTDelayProtoMin && (h.RTTRespDelay != 0 || h.Checksum != 0) {
						t.Errorf("pdu %d: protocol %d has no rttRespDelay or checksum, got %d/%d", i, proto, h.RTTRespDelay, h.Checksum)
					}
					if h.SeqNo <= lastSeq[p.SrcPort] {
						t.Errorf("pdu %d: lpduSeqNo %d after %d", i, h.SeqNo, lastSeq[p.SrcPort])
					}
					lastSeq[p.SrcPort] = h.SeqNo
					var enc [LoadHeaderLen]byte
					h.Encode(enc[:])
					n := LoadHeaderLenProto(proto)
					if proto >= RTTDelayProtoMin {
						n = loadOffChecksum // 8.1.0's reserved1 is not ours to echo
					}
					if !bytes.Equal(enc[:n], p.Bytes[:n]) {
						t.Errorf("pdu %d: Load header re-encodes differently\n ours %x\n ref  %x", i, enc[:n], p.Bytes[:n])
					}
				}
			}
			if nStatus == 0 || nLoad == 0 {
				t.Fatalf("%d Status and %d Load PDUs in the capture", nStatus, nLoad)
			}
		})
	}
}

// TestStatusV8RxBytes: protocols 8 and 9 carry the low 32 bits of the
// Sub-Interval's byte count, and what they carry comes back.
func TestStatusV8RxBytes(t *testing.T) {
	s := StatusPDU{SubInt: SubIntervalStats{RxDatagrams: 7, RxBytes: 1<<32 + 1234, DeltaTime: 99, AccumTime: 5}, SpduTimeNsec: 42}
	var b [StatusLen]byte
	n := s.EncodeProto(b[:], 8)
	if n != StatusV8Len {
		t.Fatalf("length %d", n)
	}
	if got := binary.BigEndian.Uint32(b[44:]); got != 1234 {
		t.Errorf("rxBytes on the wire %d, want 1234", got)
	}
	var d StatusPDU
	var w [StatusLegacyLen]byte
	if err := d.DecodeProto(b[:n], 9, &w); err != nil {
		t.Fatal(err)
	}
	want := s
	want.SubInt.RxBytes = 1234
	if d != want {
		t.Errorf("decoded %+v\nwant %+v", d, want)
	}
}

// legacyFuzzSeeds adds the captured PDUs of one id and protocol range as
// seeds.
func legacyFuzzSeeds(f *testing.F, id string, lo, hi uint16) {
	for _, sc := range golden.LegacyScenarios(f) {
		pdus := sc.PDUs(f, "pdus.jsonl")
		if v := golden.ProtocolVersion(pdus); v < lo || v > hi {
			continue
		}
		n := 0
		for _, p := range pdus {
			if p.ID == id && n < 4 {
				f.Add(p.Bytes)
				n++
			}
		}
	}
}

// fuzzLegacyStatus: the pre-11 Status decoder never panics, accepts exactly
// the PDUs of its length with a valid identifier, test action and
// rxStopped, and re-encodes what it accepts to the bytes it read (those no
// field carries aside).
func fuzzLegacyStatus(t *testing.T, in []byte, proto uint16) {
	var s StatusPDU
	var w [StatusLegacyLen]byte
	err := s.DecodeProto(in, proto, &w)
	ok := len(in) == StatusLenProto(proto) && binary.BigEndian.Uint16(in) == StatusPDUID && in[2] <= ActionStop2 && in[3] <= 1
	if (err == nil) != ok {
		t.Fatalf("accepted %v, want %v (err %v) for %x", err == nil, ok, err, in)
	}
	if err != nil {
		return
	}
	var out [StatusLen]byte
	got := out[:s.EncodeProto(out[:], proto)]
	for j := range got {
		if legacyStatusCarried(proto, j) && got[j] != in[j] {
			t.Fatalf("byte %d re-encodes as %#x, was %#x", j, got[j], in[j])
		}
	}
}

// FuzzStatusPDUV8 fuzzes the 156-byte Status PDU of protocols 8 and 9.
func FuzzStatusPDUV8(f *testing.F) {
	legacyFuzzSeeds(f, "feed", 8, 9)
	f.Fuzz(func(t *testing.T, in []byte) { fuzzLegacyStatus(t, in, 8) })
}

// FuzzStatusPDUV10 fuzzes the 168-byte Status PDU of protocol 10, whose
// checksum slot is a reserved field.
func FuzzStatusPDUV10(f *testing.F) {
	legacyFuzzSeeds(f, "feed", 10, 10)
	f.Fuzz(func(t *testing.T, in []byte) { fuzzLegacyStatus(t, in, 10) })
}

// FuzzLoadPDUV8 fuzzes the Load header of protocols 8 to 10: never a panic,
// never a checksum verdict (there is none), the fields as read.
func FuzzLoadPDUV8(f *testing.F) {
	legacyFuzzSeeds(f, "beef", 8, 10)
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, proto := range []uint16{8, 10} {
			var h LoadHeader
			err := h.DecodeProto(in, proto)
			ok := len(in) >= LoadHeaderLenProto(proto) && binary.BigEndian.Uint16(in) == LoadPDUID && in[2] <= ActionStop2 && in[3] <= 1
			if (err == nil) != ok {
				t.Fatalf("protocol %d: accepted %v, want %v (err %v)", proto, err == nil, ok, err)
			}
			if err == nil && (h.Checksum != 0 || h.SeqNo != binary.BigEndian.Uint32(in[4:]) ||
				proto < RTTDelayProtoMin && h.RTTRespDelay != 0) {
				t.Fatalf("protocol %d: decoded %+v from %x", proto, h, in)
			}
		}
	})
}

// TestWriteLegacyFuzzCorpus writes the committed seeds of the fuzz targets
// above from the legacy captures.
//
//	UDPSTP_WRITE_CORPUS=1 go test -run '^TestWriteLegacyFuzzCorpus$' ./dataphase
func TestWriteLegacyFuzzCorpus(t *testing.T) {
	golden.RequireCorpusWrite(t)
	for _, c := range []struct {
		name, id string
		lo, hi   uint16
	}{{"FuzzStatusPDUV8", "feed", 8, 9}, {"FuzzStatusPDUV10", "feed", 10, 10}, {"FuzzLoadPDUV8", "beef", 8, 10}} {
		var in [][]byte
		for _, sc := range golden.LegacyScenarios(t) {
			pdus := sc.PDUs(t, "pdus.jsonl")
			if v := golden.ProtocolVersion(pdus); v < c.lo || v > c.hi {
				continue
			}
			for _, p := range golden.Spread(pdus) {
				if p.ID == c.id && len(in) < 12 {
					in = append(in, p.Bytes)
				}
			}
		}
		golden.WriteCorpusInputs(t, c.name, in)
	}
}
