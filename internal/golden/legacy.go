package golden

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"testing"
)

// LegacyScenarios lists the captures of OB-UDPST releases before protocol
// 11 (testdata/obudpst/legacy, README.md there), sorted by name. They are
// apart from Scenarios' so the protocol 11/20 tests never read them.
func LegacyScenarios(t testing.TB) []Scenario {
	t.Helper()
	dir := filepath.Join(Require(t), "legacy")
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("legacy captures: %v", err)
	}
	var out []Scenario
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		p := filepath.Join(dir, e.Name())
		b, err := os.ReadFile(filepath.Join(p, "meta.json"))
		if err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		s := Scenario{Name: e.Name(), Path: p}
		if err := json.Unmarshal(b, &s.Meta); err != nil {
			t.Fatalf("%s: meta.json: %v", e.Name(), err)
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		t.Fatalf("no legacy captures in %s", dir)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
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
