package dataphase

import "encoding/binary"

// The Data Phase PDUs of protocols 8, 9 and 10 (OB-UDPST 7.1.0 to 8.1.0),
// as docs/compatibility.md lays them out. They are mapped onto the 168-byte
// form of protocol 11 and back, so one decoder and one encoder judge every
// version:
//
//   - Protocol 10 (8.0.0, 8.1.0): the same 168-byte Status PDU and 32-byte
//     Load header as protocol 11, but the checksum slots (Status 146, Load
//     30) are reserved fields there: never verified, never written.
//   - Protocols 8 and 9 (7.x): a 156-byte Status PDU whose Sub-Interval
//     block has a 32-bit rxBytes and no padding, and a 28-byte Load header
//     without rttRespDelay and checksum (bytes 28..31 are filler).
const (
	StatusV8Len      = 156
	LoadHeaderV8Len  = 28
	ChecksumProtoMin = 11 // the first version with header checksums (OB-UDPST 8.2.0)
	RTTDelayProtoMin = 10 // the first version with the Load PDU's rttRespDelay
	status32ProtoMax = 9  // the last version with the 156-byte Status PDU
)

// StatusLenProto is the length of a Status PDU for a peer of protocol
// version proto (0: the newest).
func StatusLenProto(proto uint16) int {
	switch {
	case proto != 0 && proto <= status32ProtoMax:
		return StatusV8Len
	case proto != 0 && proto < 20:
		return StatusLegacyLen
	}
	return StatusLen
}

// LoadHeaderLenProto is the length of the Load PDU header a peer of
// protocol version proto sends and reads (0: the newest).
func LoadHeaderLenProto(proto uint16) int {
	if proto != 0 && proto < RTTDelayProtoMin {
		return LoadHeaderV8Len
	}
	return LoadHeaderLen
}

// NarrowStatusV8 turns an encoded 168-byte Status PDU into the 156-byte form
// of protocols 8 and 9 in place and returns it. Only the low 32 bits of
// rxBytes survive, as in OB-UDPST 7.x's own uint32_t field.
func NarrowStatusV8(b []byte) []byte {
	_ = b[StatusLegacyLen-1]
	copy(b[44:48], b[52:56]) // rxBytes: the low half of the 64-bit field at 48
	copy(b[48:92], b[56:100])
	copy(b[92:156], b[104:168])
	return b[:StatusV8Len]
}

// WidenStatusV8 writes the 168-byte form of a 156-byte Status PDU into w,
// its checksum slot zero (protocols 8 and 9 have none).
func WidenStatusV8(w *[StatusLegacyLen]byte, b []byte) {
	_ = b[StatusV8Len-1]
	copy(w[0:44], b[0:44])
	clear(w[44:52])
	copy(w[52:56], b[44:48])
	copy(w[56:100], b[48:92])
	clear(w[100:104])
	copy(w[104:168], b[92:156])
	binary.BigEndian.PutUint16(w[statusOffLegacyCk:], 0)
}

// DecodeProto parses a Status PDU of a peer of protocol version proto (0 or
// 20: the newest; 11..19: the 168-byte form). Before protocol 11 there is
// no checksum to verify: the slot is a reserved field whatever it holds.
// w is scratch space the caller owns, so a decode allocates nothing.
func (s *StatusPDU) DecodeProto(b []byte, proto uint16, w *[StatusLegacyLen]byte) error {
	switch {
	case proto == 0 || proto >= 20:
		return s.Decode(b, false)
	case proto >= ChecksumProtoMin:
		return s.Decode(b, true)
	case proto > status32ProtoMax:
		if len(b) != StatusLegacyLen {
			return errStatusLegacy
		}
		copy(w[:], b)
		binary.BigEndian.PutUint16(w[statusOffLegacyCk:], 0)
	default:
		if len(b) != StatusV8Len {
			return errStatusV8
		}
		WidenStatusV8(w, b)
	}
	if err := s.Decode(w[:], true); err != nil {
		return err
	}
	s.Checksum = 0
	return nil
}

// EncodeProto writes the Status PDU for a peer of protocol version proto
// into b (at least 168 bytes) and returns its length.
func (s *StatusPDU) EncodeProto(b []byte, proto uint16) int {
	legacy := proto != 0 && proto < 20
	n := s.Encode(b, legacy)
	if legacy && proto <= status32ProtoMax {
		return len(NarrowStatusV8(b[:n]))
	}
	return n
}

var errStatusV8 = &PDUError{PDU: "Status PDU", Field: "length", Reason: "not 156 bytes (protocol 8, 9)"}

// DecodeProto parses a Load PDU header of a peer of protocol version proto.
// Before protocol 10 the header is 28 bytes and rttRespDelay is absent (0);
// before 11 the checksum slot is not one (never verified, read as 0). The
// bytes past the header are filler in every version.
func (h *LoadHeader) DecodeProto(b []byte, proto uint16) error {
	if proto == 0 || proto >= ChecksumProtoMin {
		return h.Decode(b)
	}
	if len(b) < LoadHeaderLenProto(proto) {
		return errLoadShortV8
	}
	var w [LoadHeaderLen]byte
	copy(w[:], b)
	if proto < RTTDelayProtoMin {
		clear(w[LoadHeaderV8Len:])
	} else {
		clear(w[loadOffChecksum:])
	}
	return h.Decode(w[:])
}

var errLoadShortV8 = &PDUError{PDU: "Load PDU", Field: "length", Reason: "shorter than the header of its protocol version"}
