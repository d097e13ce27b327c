package e2e

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"
)

// A downstream test over a link narrower than its datagrams, where the
// path loses fragments, fills the client's reassembly memory with
// datagrams that lost one, after which the kernel drops every fragment:
// the client says so (NOTE after the Maximum, ReassemblyFailures in the
// extension). The same test over a link that fragments nothing says
// nothing. The client's namespace drops one in ten fragments after the
// first (as a bottleneck drops single fragments) and has 256 kB of
// reassembly memory rather than 4 MB, so that a second of it fills the
// memory on any machine.
func TestReassemblyFailuresReported(t *testing.T) {
	for _, c := range []struct {
		name string
		mtu  int
		want bool
	}{
		{"fragmented", 1400, true},
		{"unfragmented", 1500, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := dataLab(t)
			inNS(t, l, l.RouterNS, "", "ip", "link", "set", "dev", "veth-rc", "mtu", fmt.Sprint(c.mtu))
			// In the client's prerouting: the router fragments after its
			// own hooks, and the client reassembles after this one.
			inNS(t, l, l.ClientNS, `table ip lose_fragments {
	chain prerouting {
		type filter hook prerouting priority raw; policy accept;
		ip frag-off & 0x1fff != 0 numgen random mod 10 == 0 drop
	}
}
`, "nft", "-f", "-")
			// The low mark first: the kernel refuses a high one below it.
			inNS(t, l, l.ClientNS, "", "sysctl", "-q", "-w", "net.ipv4.ipfrag_low_thresh=196608", "net.ipv4.ipfrag_high_thresh=262144")
			srv := hostileServer(t, l, udpstpBin, "-T")
			cl := startHostileClient(t, l, udpstpBin, 5, "-d", "-T", "-I", "40", "--extensions")
			r := cl.wait(t, 40*time.Second)
			var doc struct {
				Udpstp *struct{ ReassemblyFailures int64 } `json:"udpstp"`
			}
			if err := json.Unmarshal([]byte(cl.output()), &doc); err != nil {
				t.Fatalf("client's JSON: %v\n%.500s\n%s", err, cl.output(), cl.errors())
			}
			var n int64
			if doc.Udpstp != nil {
				n = doc.Udpstp.ReassemblyFailures
			}
			counters, err := l.Counters(l.ClientNS)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("MTU %d: ErrorStatus %d, ReassemblyFailures %d; the namespace's Ip:ReasmFails %d, ReasmOKs %d",
				c.mtu, r.ErrorStatus, n, counters["Ip:ReasmFails"], counters["Ip:ReasmOKs"])
			if c.want && n == 0 {
				t.Errorf("no reassembly failures reported over MTU %d:\nclient:\n%s\nserver:\n%s", c.mtu, cl.errors(), srv.log())
			}
			if !c.want && n != 0 {
				t.Errorf("%d reassembly failures reported where nothing was fragmented", n)
			}
		})
	}
}
