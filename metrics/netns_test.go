package metrics

import (
	"testing"

	"github.com/udpstp/udpstp/internal/netstat"
)

// TestNetnsErrors: the kernel's two layouts, header and value lines for
// IPv4, name and value lines for IPv6; another protocol's line with the
// same field names (UdpLite) is not taken; text without the counters gives
// none. Reassembly: the failures less the timeouts.
func TestNetnsErrors(t *testing.T) {
	v4 := errorsOf(t, `Ip: Forwarding DefaultTTL ReasmTimeout ReasmReqds ReasmOKs ReasmFails
Ip: 1 64 30 306659 69381 164935
Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors IgnoredMulti MemErrors
Udp: 93562928 357033 540971 26251987 540970 3 0 0 0
UdpLite: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors IgnoredMulti MemErrors
UdpLite: 0 0 0 0 7 7 0 0 0
`, false)
	if v4 != (udpBufferErrors{Rcvbuf: 540970, Sndbuf: 3, OK: true, Reasm: 164905, ReasmOK: true}) {
		t.Errorf("IPv4: %+v", v4)
	}
	v6 := errorsOf(t, "Ip6ReasmTimeout 2\nIp6ReasmFails 9\nUdp6InDatagrams                 \t6215797\nUdp6RcvbufErrors                \t42055\nUdp6SndbufErrors                \t2\nUdpLite6RcvbufErrors 9\n", true)
	if v6 != (udpBufferErrors{Rcvbuf: 42055, Sndbuf: 2, OK: true, Reasm: 7, ReasmOK: true}) {
		t.Errorf("IPv6: %+v", v6)
	}
	for _, text := range []string{"Ip: a\nIp: 1\n", "Udp: RcvbufErrors\n"} {
		if e := errorsOf(t, text, false); e.OK || e.ReasmOK {
			t.Errorf("%q: %+v", text, e)
		}
	}
}

// errorsOf is netnsErrors of family v6 in the counters text holds; text
// the parser refuses has none.
func errorsOf(t *testing.T, text string, v6 bool) udpBufferErrors {
	t.Helper()
	c, err := netstat.Parse(text)
	if err != nil {
		return udpBufferErrors{}
	}
	return netnsErrors(c, v6)
}
