package control

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/udpstp/udpstp/dataphase"
	"github.com/udpstp/udpstp/internal/testkit/golden"
)

// The fuzz targets below check, for every control PDU decoder, that it never
// panics, that it drops exactly what OB-UDPST drops silently (the package
// doc), that whatever it accepts re-encodes to every byte it came from, and
// that Decode(Encode(x)) == x. Their seeds are PDUs of our own encoders, a few
// real OB-UDPST 9.0.0 captures when the reference data is present, and the
// committed corpus in testdata/fuzz (written by TestWriteFuzzCorpus).

// setupClass sorts captured Setup PDUs: request or response, the response
// code, the auth mode, the length, a checksum. Refusals and crafted requests
// are rare in the captures; this keeps them in the corpus.
func setupClass(b []byte) string {
	if len(b) < 16 {
		return "short"
	}
	return fmt.Sprint(len(b), b[2:4], b[8], b[9], b[15], b[len(b)-2]|b[len(b)-1] != 0)
}

// nullClass sorts captured Null PDUs by auth mode.
func nullClass(b []byte) string {
	if len(b) < 8 {
		return "short"
	}
	return fmt.Sprint(b[7])
}

// activationClass sorts captured Test Activation PDUs: direction, request or
// response, modifier bits, a rate, the ECN threshold, the auth mode.
func activationClass(b []byte) string {
	if len(b) < ActivationLegacyLen {
		return "short"
	}
	auth := byte(0)
	if len(b) == ActivationLen {
		auth = b[63]
	}
	return fmt.Sprint(b[4], b[5], b[25], b[27] != 0, !bytes.Equal(b[28:56], make([]byte, 28)), auth)
}

// activationToLegacy converts a captured v20 Test Activation PDU to the
// 60-byte form of protocol 11..19 (only v20 captures exist), keeping a
// checksum if the original had one.
func activationToLegacy(b []byte) []byte {
	var a ActivationPDU
	if a.Decode(b, false) != nil {
		return nil
	}
	had := a.Checksum != 0
	a.Checksum = 0
	out := a.Encode(make([]byte, ActivationLen), true)
	if had {
		SealControlChecksum(out)
	}
	return out
}

// fuzzChecksumOK is an acceptance oracle independent of dataphase: a zero
// checksum field (the last two bytes) means absent; otherwise OB-UDPST's
// checksum over the whole PDU must verify.
func fuzzChecksumOK(b []byte) bool {
	return b[len(b)-2]|b[len(b)-1] == 0 || golden.Checksum(b) == 0
}

// fuzzCheck is the property shared by the control targets. decode returns,
// on success, the re-encoding of what it decoded and whether a second
// Decode of that re-encoding equals the first, and the decoder's error.
func fuzzCheck(t *testing.T, in []byte, pdu string, acceptable bool, decode func([]byte) ([]byte, bool, error)) {
	t.Helper()
	out, same, err := decode(in)
	if err != nil {
		var pe *dataphase.PDUError
		if !errors.As(err, &pe) || pe.PDU != pdu || pe.Field == "" || pe.Reason == "" {
			t.Fatalf("Decode(%x): error %#v is not a complete *dataphase.PDUError for %s", in, err, pdu)
		}
		if acceptable {
			t.Fatalf("Decode(%x) rejected a valid PDU: %v", in, err)
		}
		return
	}
	if !acceptable {
		t.Fatalf("Decode(%x) accepted an invalid %s", in, pdu)
	}
	if !bytes.Equal(out, in) {
		t.Fatalf("Encode(Decode(in)) differs\n got %x\nwant %x", out, in)
	}
	if !same {
		t.Fatalf("Decode(Encode(x)) != x for %x", in)
	}
}

// dirty is an encode buffer full of junk, so an encoder that leaves a byte
// unwritten shows.
func dirty() []byte { return bytes.Repeat([]byte{0xa5}, ActivationLen+8) }

func fuzzSetup(t *testing.T, in []byte) {
	ok := len(in) == SetupLen && in[0] == 0xac && in[1] == 0xe1 && (in[8] == 1 || in[8] == 2) && fuzzChecksumOK(in)
	fuzzCheck(t, in, "Setup PDU", ok, func(b []byte) ([]byte, bool, error) {
		var p, q SetupPDU
		if err := p.Decode(b); err != nil {
			return nil, false, err
		}
		out := p.Encode(dirty())
		err := q.Decode(out)
		return out, err == nil && q == p, nil
	})
}

func fuzzNull(t *testing.T, in []byte) {
	ok := len(in) == NullLen && in[0] == 0xde && in[1] == 0xad && fuzzChecksumOK(in)
	fuzzCheck(t, in, "Null PDU", ok, func(b []byte) ([]byte, bool, error) {
		var p, q NullPDU
		if err := p.Decode(b); err != nil {
			return nil, false, err
		}
		out := p.Encode(dirty())
		err := q.Decode(out)
		return out, err == nil && q == p, nil
	})
}

func fuzzActivation(t *testing.T, in []byte, legacy bool) {
	n := ActivationLen
	if legacy {
		n = ActivationLegacyLen
	}
	ok := len(in) == n && in[0] == 0xac && in[1] == 0xe2 && (in[4] == 1 || in[4] == 2) && fuzzChecksumOK(in)
	fuzzCheck(t, in, "Test Activation PDU", ok, func(b []byte) ([]byte, bool, error) {
		var p, q ActivationPDU
		if err := p.Decode(b, legacy); err != nil {
			return nil, false, err
		}
		out := p.Encode(dirty(), legacy)
		err := q.Decode(out, legacy)
		return out, err == nil && q == p, nil
	})
}

// addSealed adds b and a copy with its checksum sealed.
func addSealed(f *testing.F, b []byte) {
	f.Add(append([]byte(nil), b...))
	c := append([]byte(nil), b...)
	SealControlChecksum(c)
	f.Add(c)
}

// FuzzSetupPDU: SetupPDU.Decode never panics, drops exactly what OB-UDPST
// 9.0.0 drops silently (SetupPDU.Decode), and what it accepts re-encodes to
// the same 56 bytes.
func FuzzSetupPDU(f *testing.F) {
	req := SetupPDU{ProtocolVer: ProtocolVersion, MCCount: 1, MCIdent: 0x1234, CmdRequest: SetupCmdRequest, ModifierBitmap: SetupJumbo}
	addSealed(f, req.Encode(make([]byte, SetupLen)))
	resp := req
	resp.CmdRequest, resp.CmdResponse, resp.TestPort = SetupCmdResponse, SetupAccepted, 33000
	addSealed(f, resp.Encode(make([]byte, SetupLen)))
	full := populatedSetup()
	addSealed(f, full.Encode(make([]byte, SetupLen)))
	f.Add(req.Encode(make([]byte, SetupLen))[:52]) // protocol 10 size
	golden.AddSeeds(f, "ace1", nil, setupClass)
	f.Fuzz(fuzzSetup)
}

// FuzzNullPDU: NullPDU.Decode never panics, drops wrong lengths, identifiers
// and checksums, and what it accepts re-encodes to the same 48 bytes.
func FuzzNullPDU(f *testing.F) {
	plain := NullPDU{ProtocolVer: ProtocolVersion, CmdRequest: NullCmdRequest}
	addSealed(f, plain.Encode(make([]byte, NullLen)))
	full := populatedNull()
	addSealed(f, full.Encode(make([]byte, NullLen)))
	golden.AddSeeds(f, "dead", nil, nullClass)
	f.Fuzz(fuzzNull)
}

func activationSeeds(f *testing.F, legacy bool) {
	req := ActivationPDU{
		ProtocolVer: ProtocolVersion, CmdRequest: ActivationDownstream, LowThresh: 30, UpperThresh: 90,
		TrialInt: 50, TestIntTime: 10, SRIndexConf: 0xffff, HighSpeedDelta: 10, SlowAdjThresh: 3,
		SeqErrThresh: 10, IgnoreOooDup: 1, SubIntPeriod: 1000,
	}
	addSealed(f, req.Encode(make([]byte, ActivationLen), legacy))
	full := populatedActivation()
	addSealed(f, full.Encode(make([]byte, ActivationLen), legacy))
	var conv func([]byte) []byte
	if legacy {
		conv = activationToLegacy
	}
	golden.AddSeeds(f, "ace2", conv, activationClass)
}

// FuzzActivationPDU: the v20 (104-byte) Test Activation decoder never panics,
// drops exactly what OB-UDPST 9.0.0 drops (ActivationPDU.Decode), and what it
// accepts re-encodes to the same bytes.
func FuzzActivationPDU(f *testing.F) {
	activationSeeds(f, false)
	f.Fuzz(func(t *testing.T, in []byte) { fuzzActivation(t, in, false) })
}

// FuzzActivationPDULegacy: as FuzzActivationPDU for the 60-byte form of
// protocol 11..19, checksum at 58.
func FuzzActivationPDULegacy(f *testing.F) {
	activationSeeds(f, true)
	f.Fuzz(func(t *testing.T, in []byte) { fuzzActivation(t, in, true) })
}

// TestWriteFuzzCorpus regenerates the committed seed corpora of this
// package's fuzz targets from the OB-UDPST 9.0.0 captures: up to 12 distinct
// real PDUs per target, from different scenarios. Existing files are kept
// (the fuzzer's findings live there too); delete a directory to start afresh.
//
//	UDPSTP_WRITE_CORPUS=1 go test -run '^TestWriteFuzzCorpus$' ./control
func TestWriteFuzzCorpus(t *testing.T) {
	golden.RequireCorpusWrite(t)
	golden.WriteCorpus(t, "FuzzSetupPDU", "ace1", nil, setupClass)
	golden.WriteCorpus(t, "FuzzNullPDU", "dead", nil, nullClass)
	golden.WriteCorpus(t, "FuzzActivationPDU", "ace2", nil, activationClass)
	golden.WriteCorpus(t, "FuzzActivationPDULegacy", "ace2", activationToLegacy, activationClass)
}
