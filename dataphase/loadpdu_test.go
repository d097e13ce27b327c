package dataphase

import (
	"bytes"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/udpstp/udpstp/internal/testkit/race"
)

// fullLoadHeader has a distinct non-zero value in every field, so that a
// field written at the wrong offset or with the wrong width shows.
func fullLoadHeader() LoadHeader {
	return LoadHeader{
		TestAction:   ActionStop2,
		RxStopped:    1,
		SeqNo:        0x01020304,
		UDPPayload:   0x0506,
		SpduSeqErr:   0x0708,
		SpduTimeSec:  0x090a0b0c,
		SpduTimeNsec: 0x0d0e0f10,
		LpduTimeSec:  0x11121314,
		LpduTimeNsec: 0x15161718,
		RTTRespDelay: 0x191a,
	}
}

// fullLoadHeaderWire is fullLoadHeader at the offsets of RFC 9946's Load PDU.
const fullLoadHeaderWire = "beef" + "02" + "01" + "01020304" + "0506" + "0708" +
	"090a0b0c" + "0d0e0f10" + "11121314" + "15161718" + "191a" + "0000"

func loadHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// wantPDUError fails unless err is a *PDUError for pdu naming field.
func wantPDUError(t *testing.T, err error, pdu, field string) {
	t.Helper()
	var pe *PDUError
	if !errors.As(err, &pe) {
		t.Fatalf("error %v (%T), want a *PDUError", err, err)
	}
	if pe.PDU != pdu || pe.Field != field {
		t.Fatalf("error for %q field %q (%v), want %q field %q", pe.PDU, pe.Field, err, pdu, field)
	}
	if pe.Reason == "" || pe.Error() == "" {
		t.Fatalf("error %#v has no reason", pe)
	}
}

// TestLoadHeaderWire protects the Load PDU header layout: every field at its
// offset of RFC 9946's Load PDU, big-endian, and the way back.
func TestLoadHeaderWire(t *testing.T) {
	h := fullLoadHeader()
	var b [LoadHeaderLen]byte
	h.Encode(b[:])
	if want := loadHex(t, fullLoadHeaderWire); !bytes.Equal(b[:], want) {
		t.Fatalf("Encode\n got %x\nwant %x", b[:], want)
	}
	var got LoadHeader
	if err := got.Decode(b[:]); err != nil {
		t.Fatal(err)
	}
	if got != h {
		t.Fatalf("Decode(Encode(h))\n got %+v\nwant %+v", got, h)
	}
}

// TestLoadHeaderFiller checks that Encode leaves the filler alone and that
// Decode reads only the header: a receiver never interprets the filler and
// accepts any datagram of at least 32 bytes (LoadHeader.Decode).
func TestLoadHeaderFiller(t *testing.T) {
	h := fullLoadHeader()
	b := bytes.Repeat([]byte{0xa5}, 1222)
	h.Encode(b)
	if !bytes.Equal(b[LoadHeaderLen:], bytes.Repeat([]byte{0xa5}, len(b)-LoadHeaderLen)) {
		t.Fatal("Encode wrote into the filler")
	}
	for _, n := range []int{LoadHeaderLen, LoadHeaderLen + 1, 64, len(b)} {
		var got LoadHeader
		if err := got.Decode(b[:n]); err != nil {
			t.Fatalf("%d bytes: %v", n, err)
		}
		if got != h {
			t.Fatalf("%d bytes: got %+v, want %+v", n, got, h)
		}
	}
}

// TestLoadHeaderAccepts lists headers that must pass: every legal testAction
// and rxStopped value, an absent checksum and a sealed one, whatever the
// filler holds.
func TestLoadHeaderAccepts(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(h *LoadHeader)
		seal   bool
	}{
		{"zero", func(h *LoadHeader) { *h = LoadHeader{} }, false},
		{"running", func(h *LoadHeader) { h.TestAction, h.RxStopped = ActionTest, 0 }, false},
		{"stop1", func(h *LoadHeader) { h.TestAction = ActionStop1 }, false},
		{"stop2 rxStopped", func(h *LoadHeader) { h.TestAction, h.RxStopped = ActionStop2, 1 }, false},
		{"spduSeqErr out of order", func(h *LoadHeader) { h.SpduSeqErr = SpduSeqErrOoO }, false},
		{"all ones", func(h *LoadHeader) {
			*h = LoadHeader{TestAction: 2, RxStopped: 1, SeqNo: ^uint32(0), UDPPayload: ^uint16(0), SpduSeqErr: ^uint16(0),
				SpduTimeSec: ^uint32(0), SpduTimeNsec: ^uint32(0), LpduTimeSec: ^uint32(0), LpduTimeNsec: ^uint32(0), RTTRespDelay: ^uint16(0)}
		}, false},
		{"sealed", func(h *LoadHeader) {}, true},
		{"sealed zero", func(h *LoadHeader) { *h = LoadHeader{} }, true},
		{"sealed stop", func(h *LoadHeader) { h.TestAction = ActionStop1 }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := fullLoadHeader()
			tt.mutate(&h)
			b := bytes.Repeat([]byte{0x5a}, 100)
			h.Encode(b)
			if tt.seal {
				SealLoadChecksum(b)
				h.Checksum = uint16(b[30])<<8 | uint16(b[31])
				if h.Checksum == 0 || !ChecksumValid(b[:LoadHeaderLen]) {
					t.Fatalf("sealed header %x does not verify", b[:LoadHeaderLen])
				}
				// The checksum covers the header only.
				b[LoadHeaderLen] ^= 0xff
			}
			var got LoadHeader
			if err := got.Decode(b); err != nil {
				t.Fatal(err)
			}
			if got != h {
				t.Fatalf("got %+v, want %+v", got, h)
			}
		})
	}
}

// TestLoadHeaderRejects protects every rejection of LoadHeader.Decode (what
// OB-UDPST 9.0.0 rejects): each returns
// a *PDUError naming the field, so that receivers can count them by kind.
func TestLoadHeaderRejects(t *testing.T) {
	sealed := func(mutate func(b []byte)) []byte {
		b := make([]byte, 64)
		h := fullLoadHeader()
		h.Encode(b)
		SealLoadChecksum(b)
		mutate(b)
		return b
	}
	plain := func(mutate func(b []byte)) []byte {
		b := make([]byte, LoadHeaderLen)
		h := fullLoadHeader()
		h.Encode(b)
		mutate(b)
		return b
	}
	tests := []struct {
		name  string
		in    []byte
		field string
	}{
		{"empty", nil, "length"},
		{"one byte", []byte{0xbe}, "length"},
		{"31 bytes", plain(func([]byte) {})[:LoadHeaderLen-1], "length"},
		{"Status PDU id", plain(func(b []byte) { b[0], b[1] = 0xfe, 0xed }), "pduId"},
		{"id off by one", plain(func(b []byte) { b[1] = 0xee }), "pduId"},
		{"id byte-swapped", plain(func(b []byte) { b[0], b[1] = 0xef, 0xbe }), "pduId"},
		{"testAction 3", plain(func(b []byte) { b[2] = 3 }), "testAction"},
		{"testAction 255", plain(func(b []byte) { b[2] = 0xff }), "testAction"},
		{"rxStopped 2", plain(func(b []byte) { b[3] = 2 }), "rxStopped"},
		{"rxStopped 255", plain(func(b []byte) { b[3] = 0xff }), "rxStopped"},
		{"arbitrary checksum", plain(func(b []byte) { b[30], b[31] = 0x12, 0x34 }), "checkSum"},
		{"checksum 0xffff", plain(func(b []byte) { b[30], b[31] = 0xff, 0xff }), "checkSum"},
		{"sealed then seqNo changed", sealed(func(b []byte) { b[7]++ }), "checkSum"},
		{"sealed then checksum changed", sealed(func(b []byte) { b[31] ^= 1 }), "checkSum"},
		{"sealed then times changed", sealed(func(b []byte) { b[20] ^= 0x80 }), "checkSum"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h LoadHeader
			wantPDUError(t, h.Decode(tt.in), "Load PDU", tt.field)
		})
	}
}

// TestLoadHeaderNoAllocs keeps the per-datagram path allocation-free,
// rejections included: a flood of invalid datagrams must not feed the GC.
func TestLoadHeaderNoAllocs(t *testing.T) {
	var b [LoadHeaderLen]byte
	h := fullLoadHeader()
	bad := loadHex(t, fullLoadHeaderWire)
	bad[2] = 3
	tests := []struct {
		name string
		f    func()
	}{
		{"Encode", func() { h.Encode(b[:]) }},
		{"Decode", func() {
			if err := h.Decode(b[:]); err != nil {
				panic(err)
			}
		}},
		{"Decode short", func() { _ = h.Decode(b[:3]) }},
		{"Decode rejected", func() { _ = h.Decode(bad) }},
		{"SealLoadChecksum", func() { SealLoadChecksum(b[:]) }},
	}
	h.Encode(b[:])
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if n := race.AllocsPerRun(100, tt.f); n != 0 {
				t.Fatalf("%v allocations, want 0", n)
			}
		})
	}
}
