package control

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/udpstp/udpstp/dataphase"
)

// pduDigest is a recognisable 32-byte digest: 0x20, 0x21, ... 0x3f.
func pduDigest() (d [32]byte) {
	for i := range d {
		d[i] = byte(0x20 + i)
	}
	return d
}

const pduDigestHex = "202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f"

// populatedSetup has a distinct non-zero value in every field but the
// checksum.
func populatedSetup() SetupPDU {
	return SetupPDU{
		ProtocolVer:    0x0102,
		MCIndex:        3,
		MCCount:        4,
		MCIdent:        0x0506,
		CmdRequest:     SetupCmdResponse,
		CmdResponse:    SetupAuthTime,
		MaxBandwidth:   MaxBandwidthUpstream | 9,
		TestPort:       0x0a0b,
		ModifierBitmap: SetupJumbo | SetupTraditionalMTU,
		authBlock: authBlock{
			AuthMode:      1,
			AuthUnixTime:  0x11121314,
			AuthDigest:    pduDigest(),
			KeyID:         0x40,
			ReservedAuth1: 0x41,
		},
	}
}

// populatedSetupWire is populatedSetup at the offsets of RFC 9946's Test
// Setup PDU.
const populatedSetupWire = "ace1 0102 03 04 0506 02 08 8009 0a0b 03 01 11121314" + pduDigestHex + "40 41 0000"

func populatedNull() NullPDU {
	return NullPDU{
		ProtocolVer: ProtocolVersion,
		CmdRequest:  NullCmdRequest,
		CmdResponse: 2,
		Reserved1:   3,
		authBlock: authBlock{
			AuthMode:      1,
			AuthUnixTime:  0x11121314,
			AuthDigest:    pduDigest(),
			KeyID:         5,
			ReservedAuth1: 6,
		},
	}
}

// populatedNullWire is populatedNull at the offsets of RFC 9946's Null PDU.
const populatedNullWire = "dead 0014 01 02 03 01 11121314" + pduDigestHex + "05 06 0000"

func populatedActivation() ActivationPDU {
	return ActivationPDU{
		ProtocolVer:     ProtocolVersion,
		CmdRequest:      ActivationUpstream,
		CmdResponse:     ActivationAccepted,
		LowThresh:       0x0102,
		UpperThresh:     0x0203,
		TrialInt:        0x0304,
		TestIntTime:     0x0405,
		SubIntPeriodSec: 6,
		DSCPECN:         7,
		SRIndexConf:     0x0809,
		UseOwDelVar:     1,
		HighSpeedDelta:  0x0b,
		SlowAdjThresh:   0x0c0d,
		SeqErrThresh:    0x0e0f,
		IgnoreOooDup:    1,
		ModifierBitmap:  ActivationStartIndex | ActivationRandomPayload,
		RateAdjAlgo:     dataphase.AlgorithmC,
		ECNCEThresh:     0x0a,
		Rate: dataphase.SendingRate{
			TxInterval1: 0x11, UDPPayload1: 0x12, BurstSize1: 0x13,
			TxInterval2: 0x14, UDPPayload2: 0x15, BurstSize2: 0x16, UDPAddon2: 0x80000017,
		},
		SubIntPeriod:   1000,
		Reserved3:      0x1516,
		SRAdjSuppCount: 0x1718,
		Reserved5:      0x19,
		authBlock: authBlock{
			AuthMode:      1,
			AuthUnixTime:  0x21222324,
			AuthDigest:    pduDigest(),
			KeyID:         0x42,
			ReservedAuth1: 0x43,
		},
	}
}

// populatedActivationWire is populatedActivation at the v20 offsets of
// RFC 9946's Test Activation PDU; its first 58 bytes are also the legacy
// form's.
const populatedActivationWire = "ace2 0014 01 01 0102 0203 0304 0405 06 07 0809 01 0b 0c0d 0e0f 01 03 01 0a" +
	"00000011 00000012 00000013 00000014 00000015 00000016 80000017" +
	"03e8 1516 1718 19 01 21222324" + pduDigestHex + "42 43 0000"

// legacyActivation is what survives the 60-byte form: no auth block and no
// protocol 20 fields after offset 58.
func legacyActivation(a ActivationPDU) ActivationPDU {
	a.Reserved3, a.SRAdjSuppCount, a.Reserved5 = 0, 0, 0
	a.authBlock = authBlock{Checksum: a.Checksum}
	return a
}

// wantControlError fails unless err is a *dataphase.PDUError for pdu naming
// field.
func wantControlError(t *testing.T, err error, pdu, field string) {
	t.Helper()
	var pe *dataphase.PDUError
	if !errors.As(err, &pe) {
		t.Fatalf("error %v (%T), want a *dataphase.PDUError", err, err)
	}
	if pe.PDU != pdu || pe.Field != field {
		t.Fatalf("error for %q field %q (%v), want %q field %q", pe.PDU, pe.Field, err, pdu, field)
	}
	if pe.Reason == "" {
		t.Fatalf("error %#v has no reason", pe)
	}
}

// TestControlPDUWire protects the byte layout of the three control PDUs (RFC
// 9946's Test Setup, Null and Test Activation PDUs): a fully populated struct
// encodes to the expected bytes over a dirty buffer and decodes back to
// itself.
func TestControlPDUWire(t *testing.T) {
	t.Run("Setup", func(t *testing.T) {
		p := populatedSetup()
		buf := bytes.Repeat([]byte{0xee}, 64)
		got := p.Encode(buf)
		if want := unhex(t, populatedSetupWire); !bytes.Equal(got, want) {
			t.Fatalf("Encode\n got %x\nwant %x", got, want)
		}
		if !bytes.Equal(buf[SetupLen:], bytes.Repeat([]byte{0xee}, 64-SetupLen)) {
			t.Fatal("Encode wrote past 56 bytes")
		}
		var q SetupPDU
		if err := q.Decode(got); err != nil {
			t.Fatal(err)
		}
		if q != p {
			t.Fatalf("Decode(Encode(p))\n got %+v\nwant %+v", q, p)
		}
	})
	t.Run("Null", func(t *testing.T) {
		p := populatedNull()
		buf := bytes.Repeat([]byte{0xee}, 64)
		got := p.Encode(buf)
		if want := unhex(t, populatedNullWire); !bytes.Equal(got, want) {
			t.Fatalf("Encode\n got %x\nwant %x", got, want)
		}
		var q NullPDU
		if err := q.Decode(got); err != nil {
			t.Fatal(err)
		}
		if q != p {
			t.Fatalf("Decode(Encode(p))\n got %+v\nwant %+v", q, p)
		}
	})
	t.Run("Activation v20", func(t *testing.T) {
		p := populatedActivation()
		buf := bytes.Repeat([]byte{0xee}, 128)
		got := p.Encode(buf, false)
		if want := unhex(t, populatedActivationWire); !bytes.Equal(got, want) {
			t.Fatalf("Encode\n got %x\nwant %x", got, want)
		}
		if !bytes.Equal(buf[ActivationLen:], bytes.Repeat([]byte{0xee}, 128-ActivationLen)) {
			t.Fatal("Encode wrote past 104 bytes")
		}
		var q ActivationPDU
		if err := q.Decode(got, false); err != nil {
			t.Fatal(err)
		}
		if q != p {
			t.Fatalf("Decode(Encode(p))\n got %+v\nwant %+v", q, p)
		}
	})
	t.Run("Activation legacy", func(t *testing.T) {
		p := populatedActivation()
		buf := bytes.Repeat([]byte{0xee}, 128)
		got := p.Encode(buf, true)
		want := append(unhex(t, populatedActivationWire)[:58], 0, 0) // checksum at 58 ends the PDU
		if !bytes.Equal(got, want) {
			t.Fatalf("Encode\n got %x\nwant %x", got, want)
		}
		if !bytes.Equal(buf[ActivationLegacyLen:], bytes.Repeat([]byte{0xee}, 128-ActivationLegacyLen)) {
			t.Fatal("legacy Encode wrote past 60 bytes")
		}
		// A used struct must not keep protocol 20 fields.
		q := populatedActivation()
		if err := q.Decode(got, true); err != nil {
			t.Fatal(err)
		}
		if w := legacyActivation(p); q != w {
			t.Fatalf("Decode(Encode(p))\n got %+v\nwant %+v", q, w)
		}
	})
}

// TestActivationWireExample decodes an example Test Activation Request: the
// request of a 9.0.0 client run with `-d -t 5` and otherwise default options,
// and encodes the stated values back to it.
func TestActivationWireExample(t *testing.T) {
	in := unhex(t, "ace2 0014 02 00 001e 005a 0032 0005 00 00 ffff 00 0a 0003 000a 01 00 00 00"+
		strings.Repeat("00", 28)+"03e8 0000 0000 00 00"+strings.Repeat("00", 40))
	if len(in) != ActivationLen {
		t.Fatalf("example is %d bytes, want %d", len(in), ActivationLen)
	}
	want := ActivationPDU{
		ProtocolVer:    20,
		CmdRequest:     ActivationDownstream,
		LowThresh:      30,
		UpperThresh:    90,
		TrialInt:       50,
		TestIntTime:    5,
		SRIndexConf:    dataphase.AutoRateIndex,
		HighSpeedDelta: 10,
		SlowAdjThresh:  3,
		SeqErrThresh:   10,
		IgnoreOooDup:   1,
		RateAdjAlgo:    dataphase.AlgorithmB,
		SubIntPeriod:   1000,
		authBlock:      authBlock{AuthMode: AuthNone},
	}
	var got ActivationPDU
	if err := got.Decode(in, false); err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("Decode\n got %+v\nwant %+v", got, want)
	}
	var buf [ActivationLen]byte
	if enc := want.Encode(buf[:], false); !bytes.Equal(enc, in) {
		t.Fatalf("Encode\n got %x\nwant %x", enc, in)
	}
}

// TestNullWireExample decodes an unauthenticated Null PDU,
// `dead 0014 01 00 00 00` and 40 zero bytes, and encodes it back.
func TestNullWireExample(t *testing.T) {
	in := unhex(t, "dead 0014 01 00 00 00"+strings.Repeat("00", 40))
	if len(in) != NullLen {
		t.Fatalf("example is %d bytes, want %d", len(in), NullLen)
	}
	want := NullPDU{ProtocolVer: ProtocolVersion, CmdRequest: NullCmdRequest}
	var got NullPDU
	if err := got.Decode(in); err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("Decode\n got %+v\nwant %+v", got, want)
	}
	if !IsNullPDU(in) {
		t.Fatal("IsNullPDU(example) = false")
	}
	var buf [NullLen]byte
	if enc := want.Encode(buf[:]); !bytes.Equal(enc, in) {
		t.Fatalf("Encode\n got %x\nwant %x", enc, in)
	}
}

// TestIsNullPDU protects the client's only test of a Null PDU: its first two
// bytes, at any length.
func TestIsNullPDU(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		want bool
	}{
		{"empty", nil, false},
		{"one byte", []byte{0xde}, false},
		{"id only", []byte{0xde, 0xad}, true},
		{"long", append([]byte{0xde, 0xad}, make([]byte, 100)...), true},
		{"Setup PDU", []byte{0xac, 0xe1, 0, 0x14}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsNullPDU(tt.in); got != tt.want {
				t.Fatalf("IsNullPDU(%x) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

// TestSealControlChecksum protects the optional control checksum (RFC 1071,
// dataphase's checksum.go): SealControlChecksum's output verifies over the
// whole PDU, sits in the last two bytes, is accepted by Decode, and survives a
// re-encode.
func TestSealControlChecksum(t *testing.T) {
	type codec struct {
		name   string
		encode func(b []byte) []byte
		decode func(b []byte) (checksum uint16, reencoded []byte, err error)
	}
	codecs := []codec{
		{"Setup", func(b []byte) []byte { p := populatedSetup(); return p.Encode(b) },
			func(b []byte) (uint16, []byte, error) {
				var p SetupPDU
				err := p.Decode(b)
				return p.Checksum, p.Encode(make([]byte, SetupLen)), err
			}},
		{"Setup unauthenticated", func(b []byte) []byte {
			p := SetupPDU{ProtocolVer: 20, MCCount: 1, MCIdent: 7, CmdRequest: 1, ModifierBitmap: 1}
			return p.Encode(b)
		},
			func(b []byte) (uint16, []byte, error) {
				var p SetupPDU
				err := p.Decode(b)
				return p.Checksum, p.Encode(make([]byte, SetupLen)), err
			}},
		{"Null", func(b []byte) []byte { p := populatedNull(); return p.Encode(b) },
			func(b []byte) (uint16, []byte, error) {
				var p NullPDU
				err := p.Decode(b)
				return p.Checksum, p.Encode(make([]byte, NullLen)), err
			}},
		{"Activation v20", func(b []byte) []byte { p := populatedActivation(); return p.Encode(b, false) },
			func(b []byte) (uint16, []byte, error) {
				var p ActivationPDU
				err := p.Decode(b, false)
				return p.Checksum, p.Encode(make([]byte, ActivationLen), false), err
			}},
		{"Activation legacy", func(b []byte) []byte { p := populatedActivation(); return p.Encode(b, true) },
			func(b []byte) (uint16, []byte, error) {
				var p ActivationPDU
				err := p.Decode(b, true)
				return p.Checksum, p.Encode(make([]byte, ActivationLen), true), err
			}},
	}
	for _, c := range codecs {
		t.Run(c.name, func(t *testing.T) {
			b := c.encode(make([]byte, ActivationLen))
			SealControlChecksum(b)
			ck := binary.BigEndian.Uint16(b[len(b)-2:])
			if ck == 0 || !dataphase.ChecksumValid(b) {
				t.Fatalf("sealed PDU %x: checksum %#04x does not verify", b, ck)
			}
			got, re, err := c.decode(b)
			if err != nil {
				t.Fatalf("sealed PDU rejected: %v", err)
			}
			if got != ck {
				t.Fatalf("decoded checksum %#04x, want %#04x", got, ck)
			}
			if !bytes.Equal(re, b) {
				t.Fatalf("re-encoded sealed PDU differs\n got %x\nwant %x", re, b)
			}
		})
	}
}

// TestControlPDURejects protects every silent drop of a Setup or Test
// Activation Request (length, identifier, cmdRequest, a non-zero checksum that
// does not verify): each is a *dataphase.PDUError naming the field.
func TestControlPDURejects(t *testing.T) {
	setup := func(mutate func(b []byte)) []byte {
		p := populatedSetup()
		b := p.Encode(make([]byte, SetupLen))
		mutate(b)
		return b
	}
	null := func(mutate func(b []byte)) []byte {
		p := populatedNull()
		b := p.Encode(make([]byte, NullLen))
		mutate(b)
		return b
	}
	ta := func(legacy bool, mutate func(b []byte)) []byte {
		p := populatedActivation()
		b := p.Encode(make([]byte, ActivationLen), legacy)
		mutate(b)
		return b
	}
	sealThen := func(mutate func(b []byte)) func(b []byte) {
		return func(b []byte) { SealControlChecksum(b); mutate(b) }
	}
	none := func([]byte) {}
	const (
		setupPDU = "Setup PDU"
		nullPDU  = "Null PDU"
		taPDU    = "Test Activation PDU"
	)
	decodeSetup := func(b []byte) error { var p SetupPDU; return p.Decode(b) }
	decodeNull := func(b []byte) error { var p NullPDU; return p.Decode(b) }
	decodeTA := func(b []byte) error { var p ActivationPDU; return p.Decode(b, false) }
	decodeTALegacy := func(b []byte) error { var p ActivationPDU; return p.Decode(b, true) }
	tests := []struct {
		name   string
		decode func([]byte) error
		in     []byte
		pdu    string
		field  string
	}{
		{"Setup empty", decodeSetup, nil, setupPDU, "length"},
		{"Setup 55 bytes", decodeSetup, setup(none)[:SetupLen-1], setupPDU, "length"},
		{"Setup 57 bytes", decodeSetup, append(setup(none), 0), setupPDU, "length"},
		{"Setup protocol 10 size", decodeSetup, setup(none)[:52], setupPDU, "length"},
		{"Setup given a TA", decodeSetup, ta(false, none), setupPDU, "length"},
		{"Setup TA id", decodeSetup, setup(func(b []byte) { b[1] = 0xe2 }), setupPDU, "pduId"},
		{"Setup Null id", decodeSetup, setup(func(b []byte) { b[0], b[1] = 0xde, 0xad }), setupPDU, "pduId"},
		{"Setup cmdRequest 0", decodeSetup, setup(func(b []byte) { b[8] = 0 }), setupPDU, "cmdRequest"},
		{"Setup cmdRequest 3", decodeSetup, setup(func(b []byte) { b[8] = 3 }), setupPDU, "cmdRequest"},
		{"Setup cmdRequest 255", decodeSetup, setup(func(b []byte) { b[8] = 0xff }), setupPDU, "cmdRequest"},
		{"Setup arbitrary checksum", decodeSetup, setup(func(b []byte) { b[54], b[55] = 0xbe, 0xef }), setupPDU, "checkSum"},
		{"Setup sealed then field changed", decodeSetup, setup(sealThen(func(b []byte) { b[12]++ })), setupPDU, "checkSum"},
		{"Setup sealed then digest changed", decodeSetup, setup(sealThen(func(b []byte) { b[40] ^= 1 })), setupPDU, "checkSum"},

		{"Null 47 bytes", decodeNull, null(none)[:NullLen-1], nullPDU, "length"},
		{"Null 49 bytes", decodeNull, append(null(none), 0), nullPDU, "length"},
		{"Null given a Setup", decodeNull, setup(func(b []byte) { b[0], b[1] = 0xde, 0xad }), nullPDU, "length"},
		{"Null Setup id", decodeNull, null(func(b []byte) { b[0], b[1] = 0xac, 0xe1 }), nullPDU, "pduId"},
		{"Null arbitrary checksum", decodeNull, null(func(b []byte) { b[46], b[47] = 0x12, 0x34 }), nullPDU, "checkSum"},
		{"Null sealed then time changed", decodeNull, null(sealThen(func(b []byte) { b[9]++ })), nullPDU, "checkSum"},

		{"TA v20 given 60 bytes", decodeTA, ta(true, none), taPDU, "length"},
		{"TA v20 103 bytes", decodeTA, ta(false, none)[:ActivationLen-1], taPDU, "length"},
		{"TA v20 105 bytes", decodeTA, append(ta(false, none), 0), taPDU, "length"},
		{"TA v20 Setup id", decodeTA, ta(false, func(b []byte) { b[1] = 0xe1 }), taPDU, "pduId"},
		{"TA v20 cmdRequest 0", decodeTA, ta(false, func(b []byte) { b[4] = 0 }), taPDU, "cmdRequest"},
		{"TA v20 cmdRequest 3", decodeTA, ta(false, func(b []byte) { b[4] = 3 }), taPDU, "cmdRequest"},
		{"TA v20 arbitrary checksum", decodeTA, ta(false, func(b []byte) { b[102], b[103] = 0, 1 }), taPDU, "checkSum"},
		{"TA v20 sealed then rate changed", decodeTA, ta(false, sealThen(func(b []byte) { b[30]++ })), taPDU, "checkSum"},
		{"TA v20 sealed then srAdjSuppCount changed", decodeTA, ta(false, sealThen(func(b []byte) { b[61]++ })), taPDU, "checkSum"},

		{"TA legacy given 104 bytes", decodeTALegacy, ta(false, none), taPDU, "length"},
		{"TA legacy 59 bytes", decodeTALegacy, ta(true, none)[:ActivationLegacyLen-1], taPDU, "length"},
		{"TA legacy 61 bytes", decodeTALegacy, append(ta(true, none), 0), taPDU, "length"},
		{"TA legacy Null id", decodeTALegacy, ta(true, func(b []byte) { b[0], b[1] = 0xde, 0xad }), taPDU, "pduId"},
		{"TA legacy cmdRequest 0", decodeTALegacy, ta(true, func(b []byte) { b[4] = 0 }), taPDU, "cmdRequest"},
		{"TA legacy cmdRequest 255", decodeTALegacy, ta(true, func(b []byte) { b[4] = 0xff }), taPDU, "cmdRequest"},
		{"TA legacy arbitrary checksum", decodeTALegacy, ta(true, func(b []byte) { b[58], b[59] = 0xff, 0xff }), taPDU, "checkSum"},
		{"TA legacy sealed then subIntPeriodSec changed", decodeTALegacy, ta(true, sealThen(func(b []byte) { b[14]++ })), taPDU, "checkSum"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantControlError(t, tt.decode(tt.in), tt.pdu, tt.field)
		})
	}
}

// TestControlPDUAccepts protects what must not be dropped: a Setup Request
// with cmdRequest 2 (a 9.0.0 server accepts it), both TA directions, any
// version or code (Admission's business, not the codec's), and a Null PDU
// whatever its cmdRequest (nobody checks it).
func TestControlPDUAccepts(t *testing.T) {
	tests := []struct {
		name string
		f    func() error
	}{
		{"Setup cmdRequest 1", func() error {
			p := populatedSetup()
			p.CmdRequest = 1
			var q SetupPDU
			return q.Decode(p.Encode(make([]byte, SetupLen)))
		}},
		{"Setup cmdRequest 2", func() error { p := populatedSetup(); var q SetupPDU; return q.Decode(p.Encode(make([]byte, SetupLen))) }},
		{"Setup protocol 10, code 255", func() error {
			p := populatedSetup()
			p.ProtocolVer, p.CmdResponse, p.AuthMode = 10, 0xff, 2
			var q SetupPDU
			return q.Decode(p.Encode(make([]byte, SetupLen)))
		}},
		{"Null cmdRequest 0", func() error {
			p := populatedNull()
			p.CmdRequest = 0
			var q NullPDU
			return q.Decode(p.Encode(make([]byte, NullLen)))
		}},
		{"Null cmdRequest 255", func() error {
			p := populatedNull()
			p.CmdRequest = 0xff
			var q NullPDU
			return q.Decode(p.Encode(make([]byte, NullLen)))
		}},
		{"TA upstream", func() error {
			p := populatedActivation()
			var q ActivationPDU
			return q.Decode(p.Encode(make([]byte, ActivationLen), false), false)
		}},
		{"TA downstream legacy", func() error {
			p := populatedActivation()
			p.CmdRequest = ActivationDownstream
			var q ActivationPDU
			return q.Decode(p.Encode(make([]byte, ActivationLen), true), true)
		}},
		{"TA bad parameters", func() error {
			p := ActivationPDU{CmdRequest: ActivationDownstream, CmdResponse: ActivationBadParam, TrialInt: 0, TestIntTime: 0xffff, SRIndexConf: 5000}
			var q ActivationPDU
			return q.Decode(p.Encode(make([]byte, ActivationLen), false), false)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.f(); err != nil {
				t.Fatal(err)
			}
		})
	}
}
