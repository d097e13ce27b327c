package dataphase

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"

	"github.com/udpstp/udpstp/internal/testkit/golden"
)

// The fuzz targets below check, for every decoder of this package, that it
// never panics, that it accepts exactly what OB-UDPST accepts (loadAcceptable,
// statusAcceptable), that whatever it accepts re-encodes to the bytes it read,
// and that Decode(Encode(x)) == x. Their seeds are PDUs of our own encoders, a
// few real OB-UDPST 9.0.0 captures when the reference data is present, and the
// committed corpus in testdata/fuzz (written by TestWriteFuzzCorpus).

// loadClass sorts captured Load PDUs by what changes the decoder's path or
// the sender's state: stop flags, reported status loss, a checksum.
func loadClass(b []byte) string {
	if len(b) < LoadHeaderLen {
		return "short"
	}
	return fmt.Sprint(b[2], b[3], b[10]|b[11] != 0, b[30]|b[31] != 0)
}

// statusClass sorts captured Status PDUs: stop flags, a rate (server to
// client), a completed Sub-Interval, a stale tail at 188..203.
func statusClass(b []byte) string {
	if len(b) < StatusLegacyLen {
		return "short"
	}
	tail := len(b) == StatusLen && !bytes.Equal(b[188:], make([]byte, 16))
	return fmt.Sprint(b[2], b[3], !bytes.Equal(b[8:36], make([]byte, 28)), b[36]|b[37]|b[38]|b[39] != 0, tail)
}

// statusToLegacy converts a captured v20 Status PDU to the 168-byte form a
// protocol 11..19 peer exchanges (see the package doc), keeping a checksum if
// the original had one. Only v20 captures exist.
func statusToLegacy(b []byte) []byte {
	var s StatusPDU
	if s.Decode(b, false) != nil {
		return nil
	}
	had := s.Checksum != 0
	s.Checksum = 0
	out := make([]byte, StatusLen)
	out = out[:s.Encode(out, true)]
	if had {
		SealStatusChecksum(out)
	}
	return out
}

// refValid is an acceptance oracle independent of ChecksumValid.
func refValid(b []byte) bool { return golden.Checksum(b) == 0 }

// loadAcceptable is what OB-UDPST 9.0.0 accepts as a Load PDU, spelled out
// independently of LoadHeader.Decode.
func loadAcceptable(b []byte) bool {
	return len(b) >= LoadHeaderLen && b[0] == 0xbe && b[1] == 0xef && b[2] <= 2 && b[3] <= 1 &&
		(b[30]|b[31] == 0 || refValid(b[:LoadHeaderLen]))
}

// statusAcceptable is the Status PDU acceptance rule: the connection's
// length, identifier, testAction, rxStopped, and a checksum verified only when
// present at 186 (v20, see the package doc) or 146 (legacy).
func statusAcceptable(b []byte, legacy bool) bool {
	n, ck := StatusLen, statusOffChecksum
	if legacy {
		n, ck = StatusLegacyLen, statusOffLegacyCk
	}
	return len(b) == n && b[0] == 0xfe && b[1] == 0xed && b[2] <= 2 && b[3] <= 1 &&
		(b[ck]|b[ck+1] == 0 || refValid(b))
}

// statusKept reports whether the decoder keeps byte i of a Status PDU in a
// field. v20: 0..159, authMode 163, the CE counters 176..183, ECN flags 185
// and the checksum 186..187; the reserved bytes 160..162, 164..175, 184 and
// the never-written 188..203 are not kept. Legacy: all but the pads.
func statusKept(i int, legacy bool) bool {
	if legacy {
		return (i < 44 || i >= 48) && (i < 100 || i >= 104)
	}
	return i < 160 || i == 163 || (i >= 176 && i < 184) || (i >= 185 && i < 188)
}

func checkRejection(t *testing.T, err error, pdu string, acceptable bool, in []byte) {
	t.Helper()
	var pe *PDUError
	if !errors.As(err, &pe) || pe.PDU != pdu || pe.Field == "" || pe.Reason == "" {
		t.Fatalf("Decode(%x): error %#v is not a complete *PDUError for %s", in, err, pdu)
	}
	if acceptable {
		t.Fatalf("Decode(%x) rejected a valid PDU: %v", in, err)
	}
}

// FuzzLoadPDU: LoadHeader.Decode never panics, accepts exactly loadAcceptable,
// and an accepted header re-encodes to the 32 bytes it came from.
func FuzzLoadPDU(f *testing.F) {
	var b [64]byte
	for _, h := range []LoadHeader{{}, fullLoadHeader(), {SeqNo: 1, UDPPayload: 1222, LpduTimeSec: 1700000000, LpduTimeNsec: 999999999}} {
		h.Encode(b[:])
		f.Add(append([]byte(nil), b[:LoadHeaderLen]...))
		f.Add(append([]byte(nil), b[:]...))
		SealLoadChecksum(b[:])
		f.Add(append([]byte(nil), b[:]...))
	}
	f.Add([]byte{0xbe, 0xef})
	golden.AddSeeds(f, "beef", nil, loadClass)
	f.Fuzz(func(t *testing.T, in []byte) {
		var h LoadHeader
		err := h.Decode(in)
		if err != nil {
			checkRejection(t, err, "Load PDU", loadAcceptable(in), in)
			return
		}
		if !loadAcceptable(in) {
			t.Fatalf("Decode(%x) accepted an invalid header: %+v", in, h)
		}
		var out [LoadHeaderLen]byte
		h.Encode(out[:])
		if !bytes.Equal(out[:], in[:LoadHeaderLen]) {
			t.Fatalf("Encode(Decode(in)) differs\n got %x\nwant %x", out[:], in[:LoadHeaderLen])
		}
		var h2 LoadHeader
		if err := h2.Decode(out[:]); err != nil {
			t.Fatalf("Decode(Encode(x)): %v", err)
		}
		if h2 != h {
			t.Fatalf("Decode(Encode(x))\n got %+v\nwant %+v", h2, h)
		}
	})
}

// fuzzStatus is the property of both Status targets.
func fuzzStatus(t *testing.T, in []byte, legacy bool) {
	var s StatusPDU
	err := s.Decode(in, legacy)
	if err != nil {
		checkRejection(t, err, "Status PDU", statusAcceptable(in, legacy), in)
		return
	}
	if !statusAcceptable(in, legacy) {
		t.Fatalf("Decode(%x) accepted an invalid PDU: %+v", in, s)
	}
	out := bytes.Repeat([]byte{0xa5}, StatusLen) // Encode must clear what it does not write
	n := s.Encode(out, legacy)
	if n != len(in) {
		t.Fatalf("Encode wrote %d bytes, decoded %d", n, len(in))
	}
	out = out[:n]
	dropped := false
	for i := range in {
		switch {
		case statusKept(i, legacy) && out[i] != in[i]:
			t.Fatalf("byte %d: encoded %#02x, decoded from %#02x\n got %x\nwant %x", i, out[i], in[i], out, in)
		case !statusKept(i, legacy) && out[i] != 0:
			t.Fatalf("byte %d: encoded %#02x, want 0 (reserved, pad or never written)", i, out[i])
		case !statusKept(i, legacy) && in[i] != 0:
			dropped = true
		}
	}
	x := s
	if dropped && x.Checksum != 0 {
		// The checksum covered bytes no field keeps (a stale tail, a
		// reserved byte, a pad), so the re-encoded PDU cannot verify with
		// it; round-trip the rest.
		x.Checksum = 0
		x.Encode(out, legacy)
	}
	var y StatusPDU
	if err := y.Decode(out, legacy); err != nil {
		t.Fatalf("Decode(Encode(x)): %v\n%x", err, out)
	}
	if y != x {
		t.Fatalf("Decode(Encode(x))\n got %+v\nwant %+v", y, x)
	}
}

func statusSeeds(f *testing.F, legacy bool) {
	var b [StatusLen]byte
	for _, s := range []StatusPDU{{}, fullStatus(), {SeqNo: 1, RTTMinimum: NoDelay, RTTVarSample: NoDelay, ClockDeltaMin: -3}} {
		if legacy {
			s = legacyView(s)
		}
		n := s.Encode(b[:], legacy)
		f.Add(append([]byte(nil), b[:n]...))
		SealStatusChecksum(b[:n])
		f.Add(append([]byte(nil), b[:n]...))
		if !legacy {
			// What a checksum-enabled 9.0.0 sends: a stale tail and the
			// checksum at 186.
			s.Encode(b[:], false)
			copy(b[188:], []byte{0x00, 0x32, 0x00, 0x00, 0xbe, 0xef, 0x00, 0x00, 0x00, 0x00, 0x08, 0xbc, 0x04, 0xc6, 0x00, 0x05})
			f.Add(append([]byte(nil), b[:]...))
			binary.BigEndian.PutUint16(b[186:], Checksum(b[:]))
			f.Add(append([]byte(nil), b[:]...))
		}
	}
	var conv func([]byte) []byte
	if legacy {
		conv = statusToLegacy
	}
	golden.AddSeeds(f, "feed", conv, statusClass)
}

// FuzzStatusPDU: the v20 Status decoder never panics, accepts exactly the
// PDUs it should (stale bytes 188..203 ignored, checksum verified only when
// present at 186), and what it accepts re-encodes to bytes 0..187 as read
// (reserved bytes as zeros) with zeros at 188..203.
func FuzzStatusPDU(f *testing.F) {
	statusSeeds(f, false)
	f.Fuzz(func(t *testing.T, in []byte) { fuzzStatus(t, in, false) })
}

// FuzzStatusPDULegacy: as FuzzStatusPDU for the 168-byte form of protocol
// 11..19: every byte but the pads 44..47 and 100..103 re-encodes as read.
func FuzzStatusPDULegacy(f *testing.F) {
	statusSeeds(f, true)
	f.Fuzz(func(t *testing.T, in []byte) { fuzzStatus(t, in, true) })
}

// TestWriteFuzzCorpus regenerates the committed seed corpora of this
// package's fuzz targets from the OB-UDPST 9.0.0 captures: up to 12 distinct
// real PDUs per target, from different scenarios. Existing files are kept
// (the fuzzer's findings live there too); delete a directory to start afresh.
//
//	UDPSTP_WRITE_CORPUS=1 go test -run '^TestWriteFuzzCorpus$' ./dataphase
func TestWriteFuzzCorpus(t *testing.T) {
	golden.RequireCorpusWrite(t)
	golden.WriteCorpus(t, "FuzzLoadPDU", "beef", nil, loadClass)
	golden.WriteCorpus(t, "FuzzStatusPDU", "feed", nil, statusClass)
	golden.WriteCorpus(t, "FuzzStatusPDULegacy", "feed", statusToLegacy, statusClass)
}
