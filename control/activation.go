package control

import (
	"encoding/binary"

	"github.com/udpstp/udpstp/dataphase"
)

// Test Activation PDU (0xACE2; RFC 9946, the Test Activation PDU): 104 bytes
// for protocol 20, 60 bytes for protocol 11..19. The client requests the
// test's parameters; the server answers with the same bytes, its coerced
// values written back, and (upstream) the first sending rate.
const (
	ActivationPDUID     = 0xACE2
	ActivationLen       = 104
	ActivationLegacyLen = 60

	ActivationUpstream   uint8 = 1 // client sends load
	ActivationDownstream uint8 = 2 // server sends load
)

// Activation modifier bits.
const (
	ActivationStartIndex    uint8 = 0x01 // SRIndexConf is a starting row (-I @n), not a fixed one
	ActivationRandomPayload uint8 = 0x02 // -X; kept only if the server allows it
)

// ActivationPDU is a Test Activation Request or Response.
type ActivationPDU struct {
	ProtocolVer     uint16
	CmdRequest      uint8  // ActivationUpstream or ActivationDownstream
	CmdResponse     uint8  // request 0; response ActivationAccepted
	LowThresh       uint16 // ms
	UpperThresh     uint16 // ms
	TrialInt        uint16 // ms, the Status PDU period
	TestIntTime     uint16 // s
	SubIntPeriodSec uint8  // protocol 11..19 only: the Sub-Interval in seconds; protocol 20 echoes it
	DSCPECN         uint8
	SRIndexConf     uint16 // fixed or starting row; dataphase.AutoRateIndex = automatic
	UseOwDelVar     uint8
	HighSpeedDelta  uint8
	SlowAdjThresh   uint16
	SeqErrThresh    uint16
	IgnoreOooDup    uint8
	ModifierBitmap  uint8 // ActivationStartIndex | ActivationRandomPayload
	RateAdjAlgo     uint8 // dataphase.AlgorithmB or dataphase.AlgorithmC
	ECNCEThresh     uint8 // protocol 20: "reserved2" carries the CE threshold
	Rate            dataphase.SendingRate

	// Protocol 20 fields, some in slots OB-UDPST 9.0.0's header calls
	// reserved (it carries srAdjSuppCount in its reserved4).
	SubIntPeriod   uint16 // ms, at offset 56
	Reserved3      uint16 // at 58, echoed (legacy: the checksum, see authBlock.Checksum)
	SRAdjSuppCount uint16 // at 60: initial Sub-Intervals with rate adjustment suppressed
	Reserved5      uint8  // at 62, echoed
	authBlock
}

// Encode writes the PDU into b and returns it: 104 bytes, or the 60-byte
// legacy form whose checksum (authBlock.Checksum) sits at offset 58 and which
// has no auth block.
func (p *ActivationPDU) Encode(b []byte, legacy bool) []byte {
	n := ActivationLen
	if legacy {
		n = ActivationLegacyLen
	}
	b = b[:n]
	be := binary.BigEndian
	be.PutUint16(b[0:], ActivationPDUID)
	be.PutUint16(b[2:], p.ProtocolVer)
	b[4] = p.CmdRequest
	b[5] = p.CmdResponse
	be.PutUint16(b[6:], p.LowThresh)
	be.PutUint16(b[8:], p.UpperThresh)
	be.PutUint16(b[10:], p.TrialInt)
	be.PutUint16(b[12:], p.TestIntTime)
	b[14] = p.SubIntPeriodSec
	b[15] = p.DSCPECN
	be.PutUint16(b[16:], p.SRIndexConf)
	b[18] = p.UseOwDelVar
	b[19] = p.HighSpeedDelta
	be.PutUint16(b[20:], p.SlowAdjThresh)
	be.PutUint16(b[22:], p.SeqErrThresh)
	b[24] = p.IgnoreOooDup
	b[25] = p.ModifierBitmap
	b[26] = p.RateAdjAlgo
	b[27] = p.ECNCEThresh
	p.Rate.Put(b[28:])
	be.PutUint16(b[56:], p.SubIntPeriod)
	if legacy {
		be.PutUint16(b[58:], p.Checksum)
		return b
	}
	be.PutUint16(b[58:], p.Reserved3)
	be.PutUint16(b[60:], p.SRAdjSuppCount)
	b[62] = p.Reserved5
	p.authBlock.put(b)
	return b
}

// Decode parses a Test Activation PDU of a connection whose protocol version
// is 20 (legacy false: exactly 104 bytes) or 11..19 (legacy true: exactly 60).
// It drops what OB-UDPST drops silently: wrong identifier, cmdRequest other
// than 1 or 2, a non-zero checksum that fails. Parameter ranges are not
// errors: the server coerces them (Coerce; see the package doc).
// A server takes shorter requests too: see DecodeRequest.
func (p *ActivationPDU) Decode(b []byte, legacy bool) error {
	want := ActivationLen
	if legacy {
		want = ActivationLegacyLen
	}
	if err := checkPDU(b, "Test Activation PDU", ActivationPDUID, want); err != nil {
		return err
	}
	if c := b[4]; c != ActivationUpstream && c != ActivationDownstream {
		return &dataphase.PDUError{PDU: "Test Activation PDU", Field: "cmdRequest", Reason: "neither 1 (upstream) nor 2 (downstream)"}
	}
	be := binary.BigEndian
	p.ProtocolVer = be.Uint16(b[2:])
	p.CmdRequest = b[4]
	p.CmdResponse = b[5]
	p.LowThresh = be.Uint16(b[6:])
	p.UpperThresh = be.Uint16(b[8:])
	p.TrialInt = be.Uint16(b[10:])
	p.TestIntTime = be.Uint16(b[12:])
	p.SubIntPeriodSec = b[14]
	p.DSCPECN = b[15]
	p.SRIndexConf = be.Uint16(b[16:])
	p.UseOwDelVar = b[18]
	p.HighSpeedDelta = b[19]
	p.SlowAdjThresh = be.Uint16(b[20:])
	p.SeqErrThresh = be.Uint16(b[22:])
	p.IgnoreOooDup = b[24]
	p.ModifierBitmap = b[25]
	p.RateAdjAlgo = b[26]
	p.ECNCEThresh = b[27]
	p.Rate.Load(b[28:])
	p.SubIntPeriod = be.Uint16(b[56:])
	if legacy {
		p.Reserved3, p.SRAdjSuppCount, p.Reserved5 = 0, 0, 0
		p.authBlock = authBlock{Checksum: be.Uint16(b[58:])}
		return nil
	}
	p.Reserved3 = be.Uint16(b[58:])
	p.SRAdjSuppCount = be.Uint16(b[60:])
	p.Reserved5 = b[62]
	p.authBlock.get(b)
	return nil
}

// DecodeRequest parses a Test Activation Request on the server. It is
// Decode, except that a protocol 20 connection also takes 60 to 103 bytes,
// as OB-UDPST 9.0.0's server does (see the package doc): the fields past the
// received length read as zero (OB-UDPST reads whatever its buffer held
// there, so its answer to such a request is not defined; ours is), and
// the response keeps the request's length, which DecodeRequest returns. A
// short request has no auth block, so it cannot pass authentication.
func (p *ActivationPDU) DecodeRequest(b []byte, legacy bool) (int, error) {
	if legacy || len(b) < ActivationLegacyLen || len(b) >= ActivationLen {
		return len(b), p.Decode(b, legacy)
	}
	var full [ActivationLen]byte
	copy(full[:], b)
	return len(b), p.Decode(full[:], false)
}
