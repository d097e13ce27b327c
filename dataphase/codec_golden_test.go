package dataphase

import (
	"bytes"
	"testing"

	"github.com/udpstp/udpstp/internal/testkit/golden"
)

// TestGoldenDataPDUs decodes every captured Load and Status PDU of OB-UDPST
// 9.0.0, checks it against the scenario, and re-encodes it to the bytes 9.0.0
// really writes.
func TestGoldenDataPDUs(t *testing.T) {
	golden.ForEachCapture(t, func(t *testing.T, _ golden.Scenario, e golden.Expect, pdus []golden.PDU) {
		checkDataFlow(t, e, pdus)
	})
}

func checkDataFlow(t *testing.T, e golden.Expect, pdus []golden.PDU) {
	table := BuildRateTable(TableOptions{NoJumbo: !e.Jumbo, TraditionalMTU: e.Traditional})
	sizes := map[uint32]bool{}
	var maxRandom uint32
	for _, r := range table {
		for _, f := range []uint32{r.UDPPayload1, r.UDPPayload2, r.UDPAddon2} {
			if f&RandomSize != 0 {
				maxRandom = max(maxRandom, f&^RandomSize)
			} else if f != 0 {
				sizes[f] = true
			}
		}
	}
	loadDir, statusDir := "s2c", "c2s"
	if e.Upstream {
		loadDir, statusDir = "c2s", "s2c"
	}
	var (
		buf        [StatusLen]byte
		lastStatus = map[string]uint32{}
		nLoad      int
		nStatus    int
		stopped    bool
	)
	for i, p := range pdus {
		switch p.ID {
		case "beef":
			nLoad++
			var h LoadHeader
			if err := h.Decode(p.Bytes); err != nil {
				t.Fatalf("pdu %d: %v", i, err)
			}
			h.Encode(buf[:])
			if !bytes.Equal(buf[:LoadHeaderLen], p.Bytes[:LoadHeaderLen]) {
				t.Fatalf("pdu %d: re-encoded Load header differs\n got %x\nwant %x", i, buf[:LoadHeaderLen], p.Bytes[:LoadHeaderLen])
			}
			if p.Dir != loadDir {
				t.Errorf("pdu %d: Load PDU %s, want %s", i, p.Dir, loadDir)
			}
			if int(h.UDPPayload) != p.Len {
				t.Errorf("pdu %d: udpPayload %d, datagram %d bytes", i, h.UDPPayload, p.Len)
			}
			if !sizes[uint32(h.UDPPayload)] && (h.UDPPayload < MinPayloadIPv4 || uint32(h.UDPPayload) > maxRandom) {
				t.Errorf("pdu %d: size %d is in no row of the table", i, h.UDPPayload)
			}
			if h.SeqNo != uint32(p.LoadIndex)+1 {
				t.Errorf("pdu %d: lpduSeqNo %d at flow index %d (the captures have no loss)", i, h.SeqNo, p.LoadIndex)
			}
			if p.TOS != e.DSCPECN {
				t.Errorf("pdu %d: TOS %#x, want %#x", i, p.TOS, e.DSCPECN)
			}
			if h.LpduTimeNsec >= 1e9 || h.SpduTimeNsec >= 1e9 {
				t.Errorf("pdu %d: nanoseconds out of range", i)
			}
			if h.TestAction != ActionTest {
				stopped = true
			}
		case "feed":
			nStatus++
			var s StatusPDU
			if err := s.Decode(p.Bytes, false); err != nil {
				t.Fatalf("pdu %d: %v", i, err)
			}
			n := s.Encode(buf[:], false)
			// 9.0.0 writes bytes 0..187 and leaves 188..203 stale
			// (see the package doc); we write zeros there.
			if n != StatusLen || !bytes.Equal(buf[:188], p.Bytes[:188]) {
				t.Fatalf("pdu %d: re-encoded Status PDU differs\n got %x\nwant %x", i, buf[:188], p.Bytes[:188])
			}
			if !bytes.Equal(buf[188:StatusLen], make([]byte, 16)) {
				t.Errorf("pdu %d: our encoder left bytes 188..203 non-zero", i)
			}
			if p.Dir != statusDir {
				t.Errorf("pdu %d: Status PDU %s, want %s", i, p.Dir, statusDir)
			}
			if want := lastStatus[p.Dir] + 1; s.SeqNo != want {
				t.Errorf("pdu %d: spduSeqNo %d, want %d", i, s.SeqNo, want)
			}
			lastStatus[p.Dir] = s.SeqNo
			if p.Dir == "c2s" && s.Rate != (SendingRate{}) {
				t.Errorf("pdu %d: client Status PDU carries a rate", i)
			}
			if p.Dir == "s2c" && !inTable(table, s.Rate) {
				t.Errorf("pdu %d: server Status PDU rate %+v is no row of the table", i, s.Rate)
			}
			if s.AuthMode != b2u8(e.Keyed) {
				t.Errorf("pdu %d: authMode %d at 163", i, s.AuthMode)
			}
			if e.CEThresh == 0 && (s.TiRxCECount != 0 || s.SisSavCECount != 0 || s.ECNFlags != 0) {
				t.Errorf("pdu %d: ECN fields set without a CE threshold", i)
			}
			if s.SubIntSeqNo == 0 && s.SubInt != (SubIntervalStats{}) {
				t.Errorf("pdu %d: Sub-Interval stats before the first Sub-Interval closed", i)
			}
			if s.SubIntSeqNo > 0 && (s.SubInt.DeltaTime == 0 || s.SubInt.AccumTime == 0) {
				t.Errorf("pdu %d: Sub-Interval %d without duration", i, s.SubIntSeqNo)
			}
			if p.TOS != e.DSCPECN {
				t.Errorf("pdu %d: TOS %#x, want %#x", i, p.TOS, e.DSCPECN)
			}
		}
	}
	if e.Client && nLoad > 0 && (nStatus == 0 || !stopped) {
		t.Errorf("a test with %d Load PDUs, %d Status PDUs, stop seen %v", nLoad, nStatus, stopped)
	}
}

func inTable(table []SendingRate, r SendingRate) bool {
	for _, row := range table {
		if row == r {
			return true
		}
	}
	return false
}

func b2u8(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}
