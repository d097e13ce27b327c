package dataphase

import (
	"encoding/binary"
	"strings"
	"testing"
)

// TestInvalidCountedByKind: each invalid datagram counts once, under its
// PDU and what failed (the counters -G and the metrics show), and warns
// with OB-UDPST's line for its PDU.
func TestInvalidCountedByKind(t *testing.T) {
	load := func(mod func(b []byte) int) func(b []byte) int {
		return func(b []byte) int {
			h := LoadHeader{SeqNo: 1, UDPPayload: LoadHeaderLen}
			h.Encode(b)
			return mod(b)
		}
	}
	status := func(mod func(b []byte) int) func(b []byte) int {
		return func(b []byte) int {
			s := fullStatus()
			s.Encode(b, false)
			return mod(b)
		}
	}
	for _, tc := range []struct {
		name     string
		sender   bool // the Conn is the Load Sender: it takes Status PDUs
		make     func(b []byte) int
		want     Counter
		wantText string
	}{
		{"load short", false, load(func(b []byte) int { return 20 }), CountLoadInvalidSize, "WARNING: Received invalid load PDU (20,0xBEEF:"},
		{"load checksum", false, load(func(b []byte) int { b[31] ^= 0x5a; b[30] |= 1; return LoadHeaderLen }), CountLoadInvalidChecksum, "WARNING: Received invalid load PDU (32,0xBEEF:"},
		{"load id", false, load(func(b []byte) int { b[0] = 0xAB; return LoadHeaderLen }), CountLoadInvalidFormat, "WARNING: Received invalid load PDU (32,0xABEF:"},
		{"status short", true, status(func(b []byte) int { return 100 }), CountStatusInvalidSize, "WARNING: Received invalid status PDU (100,0xFEED:"},
		{"status checksum", true, status(func(b []byte) int { binary.BigEndian.PutUint16(b[186:], 0x1234); return StatusLen }), CountStatusInvalidChecksum, "WARNING: Received invalid status PDU (204,0xFEED:"},
		{"status id", true, status(func(b []byte) int { b[1] = 0xEF; return StatusLen }), CountStatusInvalidFormat, "WARNING: Received invalid status PDU (204,0xFEEF:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewConn(hostileParams(false, tc.sender, 0), hostileStart)
			if c.LoadSender() != tc.sender {
				t.Fatalf("load sender %v, want %v", c.LoadSender(), tc.sender)
			}
			var b RecvBatch
			b.Pair = hostileStart
			b.Dgrams[0] = InDatagram{Len: tc.make(b.Buf(0)), Time: hostileStart.Mono}
			b.N = 1
			c.Receive(&b)
			for k := range c.counts {
				want := uint64(0)
				if Counter(k) == tc.want {
					want = 1
				}
				if c.counts[k] != want {
					t.Errorf("counter %s = %d, want %d", counterInfo[k].Name, c.counts[k], want)
				}
			}
			ev := c.Events()
			if len(ev) != 1 || ev[0].Kind != EvWarning || ev[0].Code != WarnInvalidPDU || !strings.HasPrefix(ev[0].Text, tc.wantText) {
				t.Fatalf("events %+v, want one warning %d %q...", ev, WarnInvalidPDU, tc.wantText)
			}
		})
	}
}
