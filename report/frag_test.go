package report

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// TestFragmentedMaximum: IP fragments (dataphase/frag.go) count in the L2,
// L1 and VLAN figures, each extra packet with its IP header and its link
// overhead, and never in L3, which keeps OB-UDPST's definition.
func TestFragmentedMaximum(t *testing.T) {
	for _, format := range []Format{FormatText, FormatJSON} {
		var out bytes.Buffer
		c := New(&out, Options{Format: format, Connections: 1, MinConnections: 1, Now: fixedClock(1796009000e9)})
		info := testInfo(2)
		info.ConnMax = 1
		c.Activate(info)
		small := sub(1000, 0, noDV, [2]uint32{nd, 0}, 0, 0, 1000, 0, nd, 1e9) // 1000 x 1222 bytes
		// 1000 datagrams of 8972 bytes on a 1500-byte MTU: 7 IPv4 packets
		// each, 6000 extra packets with 20 more header bytes each.
		big := sub(1000, 0, noDV, [2]uint32{nd, 0}, 0, 0, 2000, 0, nd, 2e9)
		big.Stats.RxBytes = 1000 * 8972
		big.ExtraPackets, big.ExtraIPBytes = 6000, 120000
		c.Add(0, small)
		c.Add(0, big)
		c.ConnEnded(true)
		if err := c.Finish(); err != nil {
			t.Fatal(err)
		}
		// L3 (1000 x 9000 bytes) 72 Mbps; L2 adds 7 x 14 per datagram and
		// 6 x 20: 9218 bytes, L1 7 x 18 + 120: 9246, VLAN 7 x 22 + 120: 9274.
		want := [4]float64{72, 73.744, 73.968, 74.192}
		if format == FormatText {
			line := "Downstream Maximum Mbps(L3/IP): 72.00, Mbps(L2/Eth): 73.74, Mbps(L1/Eth): 73.97, Mbps(L1/Eth+VLAN): 74.19"
			if !strings.Contains(out.String(), line+"\n") {
				t.Errorf("no line %q in\n%s", line, out.String())
			}
			continue
		}
		var doc struct {
			Output struct {
				AtMax struct {
					MaxIPLayerCapacity, MaxETHCapacityNoFCS, MaxETHCapacityWithFCS, MaxETHCapacityWithFCSVLAN float64
				}
			}
		}
		if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
			t.Fatalf("%v\n%s", err, out.String())
		}
		m := doc.Output.AtMax
		got := [4]float64{m.MaxIPLayerCapacity, m.MaxETHCapacityNoFCS, m.MaxETHCapacityWithFCS, m.MaxETHCapacityWithFCSVLAN}
		for i := range got {
			if math.Abs(got[i]-want[i]) > 0.005 {
				t.Errorf("JSON maximum %v, want %v", got, want)
				break
			}
		}
	}
}

// TestWireRateUnfragmented: without fragments the L2/L1 figures are
// OB-UDPST's to the last bit.
func TestWireRateUnfragmented(t *testing.T) {
	r := record{dgrams: 123457, bytes: 123457*1222 + 17, delta: 999877}
	for _, ipv6 := range []bool{false, true} {
		for _, c := range [][2]int{{linkL2, overheadL2}, {linkL1, overheadL1}, {linkL0, overheadL0}} {
			if a, b := r.wireRate(c[0], ipv6), r.rate(c[1], ipv6); a != b {
				t.Errorf("v6=%v link %d: %v, OB-UDPST's %v", ipv6, c[0], a, b)
			}
		}
	}
}
