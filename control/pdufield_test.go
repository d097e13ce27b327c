package control

import (
	"testing"

	"github.com/udpstp/udpstp/dataphase"
)

// TestPDUFieldNames: the junk path's typed fields class a fault as the
// decoders' errors do (the same counter for the datagram whether it is
// judged by pduField or by its *dataphase.PDUError), and a Setup
// datagram's fault is the field Decode names.
func TestPDUFieldNames(t *testing.T) {
	for f := fieldLength; f <= fieldCmdResponse; f++ {
		if f.String() == "" {
			t.Fatalf("field %d has no name", f)
		}
		if got, want := f.rejection(), dataphase.FieldRejection(f.String()); got != want {
			t.Errorf("%s: rejection %v, the decoders' %v", f, got, want)
		}
	}
	good := encodeSetupProto(&SetupPDU{ProtocolVer: ProtocolVersion, MCCount: 1, CmdRequest: SetupCmdRequest}, make([]byte, SetupLen))
	for _, c := range []struct {
		name string
		b    func() []byte
	}{
		{"short", func() []byte { return append([]byte(nil), good[:SetupLen-1]...) }},
		{"id", func() []byte { b := append([]byte(nil), good...); b[0] ^= 0xff; return b }},
		{"checksum", func() []byte {
			b := append([]byte(nil), good...)
			SealControlChecksum(b)
			b[5] ^= 0x01
			return b
		}},
		{"cmdRequest", func() []byte { b := append([]byte(nil), good...); b[8] = 7; return b }},
	} {
		b := c.b()
		var req SetupPDU
		err := req.Decode(b)
		f := setupFault(b)
		pe, ok := err.(*dataphase.PDUError)
		if !ok || f == fieldNone || pe.Field != f.String() {
			t.Errorf("%s: setupFault %q, Decode %v", c.name, f, err)
		}
	}
	if f := setupFault(good); f != fieldNone {
		t.Errorf("a good request's fault: %q", f)
	}
}
