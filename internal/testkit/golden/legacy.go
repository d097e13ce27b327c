package golden

import (
	"path/filepath"
	"testing"
)

// LegacyScenarios lists the captures of OB-UDPST releases before protocol
// 11 (testdata/obudpst/legacy, README.md there), sorted by name. They are
// apart from Scenarios' so the protocol 11/20 tests never read them.
func LegacyScenarios(t testing.TB) []Scenario {
	t.Helper()
	dir := filepath.Join(Require(t), "legacy")
	out := readScenarios(t, dir, true)
	if len(out) == 0 {
		t.Fatalf("no legacy captures in %s", dir)
	}
	return out
}

// ProtocolVersion is the protocol version of a capture's first Setup
// Request (bytes 2..3), or 0 if it has none.
func ProtocolVersion(pdus []PDU) uint16 {
	for _, p := range pdus {
		if p.ID == "ace1" && p.Dir == "c2s" && len(p.Bytes) >= 4 {
			return uint16(p.Bytes[2])<<8 | uint16(p.Bytes[3])
		}
	}
	return 0
}
