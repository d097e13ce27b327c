package netstat

import (
	"os"
	"testing"
)

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestParseKernelFiles: /proc/net/snmp and /proc/net/snmp6 as a Linux 6.x
// kernel wrote them (testdata), alone and one after the other, as netlab
// reads them with one cat.
func TestParseKernelFiles(t *testing.T) {
	snmp, snmp6 := readFile(t, "testdata/snmp"), readFile(t, "testdata/snmp6")
	v4, err := Parse(snmp)
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]int64{
		UDPRcvbufErrors:        573155,
		UDPSndbufErrors:        0,
		"Udp:InDatagrams":      22831549,
		"Tcp:MaxConn":          -1, // signed: no limit
		"UdpLite:RcvbufErrors": 0,  // UdpLite's columns are its own
		"Icmp:OutDestUnreachs": 316,
		"IcmpMsg:InType3":      317,
		"Ip:DefaultTTL":        64,
	} {
		if got, ok := v4[k]; !ok || got != want {
			t.Errorf("snmp %s = %d (found %v), want %d", k, got, ok, want)
		}
	}
	v6, err := Parse(snmp6)
	if err != nil {
		t.Fatal(err)
	}
	if v6[UDP6RcvbufErrors] != 1325 || v6["Ip6InReceives"] != 95305 {
		t.Errorf("snmp6: %s %d, Ip6InReceives %d", UDP6RcvbufErrors, v6[UDP6RcvbufErrors], v6["Ip6InReceives"])
	}
	if _, ok := v6[UDP6SndbufErrors]; !ok {
		t.Errorf("snmp6: no %s", UDP6SndbufErrors)
	}
	both, err := Parse(snmp + snmp6)
	if err != nil {
		t.Fatal(err)
	}
	if len(both) != len(v4)+len(v6) || both[UDPRcvbufErrors] != 573155 || both[UDP6RcvbufErrors] != 1325 {
		t.Errorf("both files: %d counters, want %d + %d", len(both), len(v4), len(v6))
	}
}

// TestParseRejects: text that is not the kernel's is an error, not a
// partial table.
func TestParseRejects(t *testing.T) {
	for _, bad := range []string{
		"Ip: A B\n",        // no line of values
		"Ip: A B\nIp: 1\n", // a value missing
		"Ip: A\nUdp: 1\n",  // another table's values
		"Udp: A\nUdp: x\n", // not a number
		"Icmp6X y\n",       // snmp6 value not a number
		"a b c\n",          // neither layout
	} {
		if m, err := Parse(bad); err == nil {
			t.Errorf("parsed %q as %v", bad, m)
		}
	}
}
