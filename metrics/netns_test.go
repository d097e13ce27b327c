package metrics

import (
	"testing"

	"github.com/udpstp/udpstp/internal/netstat"
)

// TestUDPErrorsOf: the kernel's two layouts, header and value lines for
// IPv4, name and value lines for IPv6; another protocol's line with the
// same field names (UdpLite) is not taken; text without the counters gives
// none.
func TestUDPErrorsOf(t *testing.T) {
	v4 := udpErrorsOf(`Ip: Forwarding DefaultTTL
Ip: 1 64
Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors IgnoredMulti MemErrors
Udp: 93562928 357033 540971 26251987 540970 3 0 0 0
UdpLite: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors IgnoredMulti MemErrors
UdpLite: 0 0 0 0 7 7 0 0 0
`, netstat.UDPRcvbufErrors, netstat.UDPSndbufErrors)
	if v4 != (udpBufferErrors{Rcvbuf: 540970, Sndbuf: 3, OK: true}) {
		t.Errorf("IPv4: %+v", v4)
	}
	v6 := udpErrorsOf("Udp6InDatagrams                 \t6215797\nUdp6RcvbufErrors                \t42055\nUdp6SndbufErrors                \t2\nUdpLite6RcvbufErrors 9\n",
		netstat.UDP6RcvbufErrors, netstat.UDP6SndbufErrors)
	if v6 != (udpBufferErrors{Rcvbuf: 42055, Sndbuf: 2, OK: true}) {
		t.Errorf("IPv6: %+v", v6)
	}
	for _, text := range []string{"Ip: a\nIp: 1\n", "Udp: RcvbufErrors\n"} {
		if e := udpErrorsOf(text, netstat.UDPRcvbufErrors, netstat.UDPSndbufErrors); e.OK {
			t.Errorf("%q: %+v", text, e)
		}
	}
}
