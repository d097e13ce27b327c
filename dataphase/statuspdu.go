package dataphase

import "encoding/binary"

// Status Feedback PDU (0xFEED), sent by the Load Receiver every Trial Interval
// (RFC 9946, the Status Feedback PDU). Protocol 20 uses a 204-byte form with a
// packed Sub-Interval block and an auth/ECN area; protocol 11..19 peers use
// the 168-byte form of OB-UDPST 8.2.0, whose Sub-Interval block carries the
// padding an unpacked C struct gets on x86-64 (4 bytes after rxDatagrams, 4 at
// the end).
const (
	StatusPDUID        = 0xFEED
	StatusLen          = 204
	StatusLegacyLen    = 168
	SubIntervalLen     = 56 // packed, protocol 20
	subIntervalLegacy  = 64
	statusOffSubInt    = 40
	statusOffChecksum  = 186 // where a checksum-enabled 9.0.0 sender really writes it (see the package doc)
	statusOffNominalCk = 202 // where 9.0.0's receiver looks for it
	statusOffLegacyCk  = 146
	statusCommonLen    = 160 // bytes 0..159 of the v20 form; the rest is the auth/ECN area
)

// NoDelay (NODEL) marks "no sample" in delay and RTT fields.
const NoDelay = 0xFFFFFFFF

// ECNFlagBleached in a Status PDU's ECNFlags: a Not-ECT Load PDU arrived while
// a CE threshold was set. Once set it stays set for the rest of the test.
const ECNFlagBleached = 0x01

// SubIntervalStats is the statistics block of the last completed Sub-Interval
// (sisSav), as the Load Receiver reports it.
type SubIntervalStats struct {
	RxDatagrams uint32 // Load PDUs received, out-of-order and duplicates included
	RxBytes     uint64 // sum of their UDPPayload fields
	DeltaTime   uint32 // measured Sub-Interval duration, us
	SeqErrLoss  uint32
	SeqErrOoo   uint32
	SeqErrDup   uint32
	DelayVarMin uint32 // ms, NoDelay when no sample
	DelayVarMax uint32
	DelayVarSum uint32
	DelayVarCnt uint32
	RTTVarMin   uint32 // ms, NoDelay when no sample
	RTTVarMax   uint32
	AccumTime   uint32 // running sum of Sub-Interval durations, ms
}

// StatusPDU is a decoded Status Feedback PDU. Trial-interval fields describe
// the interval since the previous Status PDU.
type StatusPDU struct {
	TestAction    uint8
	RxStopped     uint8 // 1: no Load PDU received for >= 1 s
	SeqNo         uint32
	Rate          SendingRate // server to client: the row to use now; client to server: zeros
	SubIntSeqNo   uint32      // Sub-Intervals completed so far; 0 = none yet
	SubInt        SubIntervalStats
	SeqErrLoss    uint32
	SeqErrOoo     uint32
	SeqErrDup     uint32
	ClockDeltaMin int32 // smallest (receive time - lpduTime) of the test, ms, signed
	DelayVarMin   uint32
	DelayVarMax   uint32
	DelayVarSum   uint32
	DelayVarCnt   uint32
	RTTMinimum    uint32 // NoDelay until the first RTT sample
	RTTVarSample  uint32 // last RTT - RTTMinimum of the trial interval; NoDelay if none
	DelayMinUpd   uint8
	Reserved1     uint8
	Reserved2     uint16 // protocol 20 only; 0
	TiDeltaTime   uint32 // us since the previous Status PDU
	TiRxDatagrams uint32
	TiRxBytes     uint32
	SpduTimeSec   uint32 // this PDU's send time, CLOCK_REALTIME
	SpduTimeNsec  uint32

	// The auth/ECN area (protocol 20 only).
	AuthMode      uint8
	TiRxCECount   uint32
	SisSavCECount uint32
	ECNFlags      uint8

	// Checksum is the value at offset 186 (protocol 20, where 9.0.0 writes it)
	// or 146 (legacy). 0 means absent. It is kept for fidelity, not for
	// re-sending: a decoded PDU re-encodes with zeros where the sender left
	// stale bytes, so a checksum it carried no longer verifies; seal a new
	// one with SealStatusChecksum instead.
	Checksum uint16
}

// statusLenFor is the length of a Status PDU of the form a peer uses.
func statusLenFor(legacy bool) int {
	if legacy {
		return StatusLegacyLen
	}
	return StatusLen
}

// statusOff maps an offset of the protocol 20 layout (below 160) to the legacy
// 168-byte layout: 4 pad bytes follow rxDatagrams (v20 offset 44 onwards moves
// by 4) and 4 more close the Sub-Interval block (v20 offset 96 onwards by 8).
func statusOff(o int, legacy bool) int {
	if !legacy || o < 44 {
		return o
	}
	if o < 96 {
		return o + 4
	}
	return o + 8
}

// Encode writes the PDU into b and returns its length: 204 bytes for protocol
// 20, 168 for legacy peers. b must hold at least that many bytes. Everything
// OB-UDPST leaves unwritten (bytes 188..203, see the package doc) is written
// as zero here, so a 9.0.0 receiver never mistakes it for a checksum.
func (s *StatusPDU) Encode(b []byte, legacy bool) int {
	n := statusLenFor(legacy)
	b = b[:n]
	clear(b)
	be := binary.BigEndian
	be.PutUint16(b[0:], StatusPDUID)
	b[2] = s.TestAction
	b[3] = s.RxStopped
	be.PutUint32(b[4:], s.SeqNo)
	s.Rate.Put(b[8:])
	be.PutUint32(b[36:], s.SubIntSeqNo)
	off := func(o int) int { return statusOff(o, legacy) }
	si := &s.SubInt
	be.PutUint32(b[off(40):], si.RxDatagrams)
	be.PutUint64(b[off(44):], si.RxBytes)
	be.PutUint32(b[off(52):], si.DeltaTime)
	be.PutUint32(b[off(56):], si.SeqErrLoss)
	be.PutUint32(b[off(60):], si.SeqErrOoo)
	be.PutUint32(b[off(64):], si.SeqErrDup)
	be.PutUint32(b[off(68):], si.DelayVarMin)
	be.PutUint32(b[off(72):], si.DelayVarMax)
	be.PutUint32(b[off(76):], si.DelayVarSum)
	be.PutUint32(b[off(80):], si.DelayVarCnt)
	be.PutUint32(b[off(84):], si.RTTVarMin)
	be.PutUint32(b[off(88):], si.RTTVarMax)
	be.PutUint32(b[off(92):], si.AccumTime)
	be.PutUint32(b[off(96):], s.SeqErrLoss)
	be.PutUint32(b[off(100):], s.SeqErrOoo)
	be.PutUint32(b[off(104):], s.SeqErrDup)
	be.PutUint32(b[off(108):], uint32(s.ClockDeltaMin))
	be.PutUint32(b[off(112):], s.DelayVarMin)
	be.PutUint32(b[off(116):], s.DelayVarMax)
	be.PutUint32(b[off(120):], s.DelayVarSum)
	be.PutUint32(b[off(124):], s.DelayVarCnt)
	be.PutUint32(b[off(128):], s.RTTMinimum)
	be.PutUint32(b[off(132):], s.RTTVarSample)
	b[off(136)] = s.DelayMinUpd
	b[off(137)] = s.Reserved1
	be.PutUint32(b[off(140):], s.TiDeltaTime)
	be.PutUint32(b[off(144):], s.TiRxDatagrams)
	be.PutUint32(b[off(148):], s.TiRxBytes)
	be.PutUint32(b[off(152):], s.SpduTimeSec)
	be.PutUint32(b[off(156):], s.SpduTimeNsec)
	if legacy {
		// The legacy checksum slot is the v20 reserved2 field (138 -> 146).
		be.PutUint16(b[statusOffLegacyCk:], s.Checksum)
		return n
	}
	be.PutUint16(b[138:], s.Reserved2)
	b[163] = s.AuthMode
	be.PutUint32(b[176:], s.TiRxCECount)
	be.PutUint32(b[180:], s.SisSavCECount)
	b[185] = s.ECNFlags
	be.PutUint16(b[statusOffChecksum:], s.Checksum)
	return n
}

// SealStatusChecksum computes the optional checksum over a whole encoded
// Status PDU (204 or 168 bytes) and stores it where the matching receiver
// verifies it: offset 202 for protocol 20 (where 9.0.0 looks)
// and 146 for legacy peers. It must run after Encode with Checksum 0.
func SealStatusChecksum(b []byte) {
	off := statusOffNominalCk
	if len(b) == StatusLegacyLen {
		off = statusOffLegacyCk
	}
	binary.BigEndian.PutUint16(b[off:], 0)
	binary.BigEndian.PutUint16(b[off:], Checksum(b))
}

var (
	errStatusLen      = &PDUError{PDU: "Status PDU", Field: "length", Reason: "not 204 bytes"}
	errStatusLegacy   = &PDUError{PDU: "Status PDU", Field: "length", Reason: "not 168 bytes (protocol 11..19)"}
	errStatusID       = &PDUError{PDU: "Status PDU", Field: "pduId", Reason: "not 0xFEED"}
	errStatusAction   = &PDUError{PDU: "Status PDU", Field: "testAction", Reason: "above 2"}
	errStatusStopped  = &PDUError{PDU: "Status PDU", Field: "rxStopped", Reason: "neither 0 nor 1"}
	errStatusChecksum = &PDUError{PDU: "Status PDU", Field: "checkSum", Reason: "does not verify"}
	errStatusRate     = &PDUError{PDU: "Status PDU", Field: "srStruct", Reason: "not a row a sending rate table holds"}
)

// Decode parses a Status PDU. legacy selects the 168-byte layout of protocol
// 11..19 connections.
//
// Protocol 20: OB-UDPST 9.0.0 never writes bytes 188..203 of the PDUs it
// sends; they hold stale receive-buffer bytes, and 202..203 (the nominal
// checksum) often holds a Load PDU's spduSeqErr. 9.0.0's own receiver verifies
// 202..203 and drops good PDUs; we ignore 188..203 and verify the 204-byte sum
// only when 186..187, where a checksum-enabled 9.0.0 build writes the
// checksum, is non-zero. This departs from the nominal layout on purpose:
// interop wins.
func (s *StatusPDU) Decode(b []byte, legacy bool) error {
	if legacy {
		if len(b) != StatusLegacyLen {
			return errStatusLegacy
		}
	} else if len(b) != StatusLen {
		return errStatusLen
	}
	be := binary.BigEndian
	if be.Uint16(b[0:]) != StatusPDUID {
		return errStatusID
	}
	if b[2] > ActionStop2 {
		return errStatusAction
	}
	if b[3] > 1 {
		return errStatusStopped
	}
	ck := statusOffChecksum
	if legacy {
		ck = statusOffLegacyCk
	}
	sum := be.Uint16(b[ck:])
	if sum != 0 && !ChecksumValid(b) {
		return errStatusChecksum
	}
	s.Checksum = sum
	s.TestAction = b[2]
	s.RxStopped = b[3]
	s.SeqNo = be.Uint32(b[4:])
	s.Rate.Load(b[8:])
	s.SubIntSeqNo = be.Uint32(b[36:])
	off := func(o int) int { return statusOff(o, legacy) }
	si := &s.SubInt
	si.RxDatagrams = be.Uint32(b[off(40):])
	si.RxBytes = be.Uint64(b[off(44):])
	si.DeltaTime = be.Uint32(b[off(52):])
	si.SeqErrLoss = be.Uint32(b[off(56):])
	si.SeqErrOoo = be.Uint32(b[off(60):])
	si.SeqErrDup = be.Uint32(b[off(64):])
	si.DelayVarMin = be.Uint32(b[off(68):])
	si.DelayVarMax = be.Uint32(b[off(72):])
	si.DelayVarSum = be.Uint32(b[off(76):])
	si.DelayVarCnt = be.Uint32(b[off(80):])
	si.RTTVarMin = be.Uint32(b[off(84):])
	si.RTTVarMax = be.Uint32(b[off(88):])
	si.AccumTime = be.Uint32(b[off(92):])
	s.SeqErrLoss = be.Uint32(b[off(96):])
	s.SeqErrOoo = be.Uint32(b[off(100):])
	s.SeqErrDup = be.Uint32(b[off(104):])
	s.ClockDeltaMin = int32(be.Uint32(b[off(108):]))
	s.DelayVarMin = be.Uint32(b[off(112):])
	s.DelayVarMax = be.Uint32(b[off(116):])
	s.DelayVarSum = be.Uint32(b[off(120):])
	s.DelayVarCnt = be.Uint32(b[off(124):])
	s.RTTMinimum = be.Uint32(b[off(128):])
	s.RTTVarSample = be.Uint32(b[off(132):])
	s.DelayMinUpd = b[off(136)]
	s.Reserved1 = b[off(137)]
	s.TiDeltaTime = be.Uint32(b[off(140):])
	s.TiRxDatagrams = be.Uint32(b[off(144):])
	s.TiRxBytes = be.Uint32(b[off(148):])
	s.SpduTimeSec = be.Uint32(b[off(152):])
	s.SpduTimeNsec = be.Uint32(b[off(156):])
	if legacy {
		s.Reserved2 = 0
		s.AuthMode, s.TiRxCECount, s.SisSavCECount, s.ECNFlags = 0, 0, 0, 0
		return nil
	}
	s.Reserved2 = be.Uint16(b[138:])
	s.AuthMode = b[163]
	s.TiRxCECount = be.Uint32(b[176:])
	s.SisSavCECount = be.Uint32(b[180:])
	s.ECNFlags = b[185]
	return nil
}
