package engine

import (
	"bytes"
	"runtime"
	"testing"

	"github.com/udpstp/udpstp/clock"
	"github.com/udpstp/udpstp/dataphase"
)

func TestSendRecvBatch(t *testing.T) {
	plans := map[string][]int{
		// A Burst with its add-on, then a second run of another size.
		"burst":  lens(10, 1222, 300, 100, 100, 100),
		"full":   lens(44, 1472, 44),
		"jumbo":  lens(9, 8972, 500),
		"tiny":   lens(5, 20, 10, 0),
		"maxing": lens(dataphase.MaxPlan, 1222),
	}
	type net struct {
		name   string
		addr   string
		o      SocketOptions
		needV6 bool
	}
	nets := []net{
		{"IPv4", "127.0.0.1:0", SocketOptions{}, false},
		{"IPv6", "[::1]:0", SocketOptions{Family: 6}, true},
	}
	for _, n := range nets {
		for _, gso := range []bool{true, false} {
			for _, random := range []bool{false, true} {
				name := n.name + "/gso=" + map[bool]string{true: "on", false: "off"}[gso] + "/random=" + map[bool]string{true: "yes", false: "no"}[random]
				t.Run(name, func(t *testing.T) {
					if n.needV6 && !hasIPv6(t) {
						t.Skip("no IPv6 loopback")
					}
					o := n.o
					o.NoGSO = !gso
					o.SockBuf = 4 << 20
					a, b := openPair(t, n.addr, o)
					if gso && runtime.GOOS == "linux" && !a.GSOEnabled() {
						t.Log("GSO probe failed on this kernel")
					}
					for pname, pl := range plans {
						sendAndCheck(t, a, b, pl, random, pname)
					}
					st := a.Stats()
					t.Logf("sender stats %+v (path MTU %d)", st, a.PathMTU())
					if runtime.GOOS == "linux" && gso && a.GSOEnabled() && st.Counts[CountGSOMessages] == 0 {
						t.Fatal("GSO on, yet no GSO message sent")
					}
					if !gso && st.Counts[CountGSOMessages] != 0 {
						t.Fatal("GSO off, yet GSO messages sent")
					}
				})
			}
		}
	}
}

// sendAndCheck sends one plan from a to b and checks what arrives.
func sendAndCheck(t *testing.T, a, b *Socket, pl []int, random bool, what string) {
	t.Helper()
	var sb dataphase.SendBuffer
	var rb dataphase.RecvBatch
	fillPlan(&sb, 0xa5, 1000, pl...)
	sb.RandomFill = random
	before := clock.Now()
	sent, err := a.SendBatch(&sb)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if sent != len(pl) {
		t.Fatalf("%s: sent %d of %d (stats %+v)", what, sent, len(pl), a.Stats())
	}
	seen := make(map[uint32]bool)
	var fillers [][]byte
	got := recvAll(t, b, &rb, len(pl), func(rb *dataphase.RecvBatch) {
		for i := 0; i < rb.N; i++ {
			d := rb.Dgrams[i]
			p := rb.Data(i)
			if d.Len > 0 && len(p) != min(d.Len, dataphase.RecvSlotLen) {
				t.Fatalf("%s: kept %d bytes of %d", what, len(p), d.Len)
			}
			if d.Len == 0 {
				continue
			}
			seq := checkHdr(t, p, 0xa5, d.Len) - 1000
			if int(seq) >= len(pl) || seen[seq] || pl[seq] != d.Len {
				t.Fatalf("%s: datagram seq %d len %d unexpected", what, seq, d.Len)
			}
			seen[seq] = true
			fill := p[min(testHdrLen, len(p)):]
			if !random && !allZero(fill) {
				t.Fatalf("%s: zero filler has %x", what, fill)
			}
			if random && len(fill) >= 16 {
				if allZero(fill[:8]) {
					t.Fatalf("%s: random filler starts with zeros", what)
				}
				fillers = append(fillers, bytes.Clone(fill))
			}
			if slack := receiveSlack(rb.Pair.Mono - d.Time); d.Time < before.Mono-slack || d.Time > rb.Pair.Mono+slack {
				t.Fatalf("%s: receive time %d outside [%d, %d]", what, d.Time, before.Mono, rb.Pair.Mono)
			}
		}
	})
	if got != len(pl) {
		t.Fatalf("%s: received %d of %d", what, got, len(pl))
	}
	// Random fillers differ between datagrams.
	for i := 1; i < len(fillers); i++ {
		if bytes.Equal(fillers[i], fillers[i-1]) {
			t.Fatalf("%s: two datagrams with the same random filler", what)
		}
	}
}

func allZero(p []byte) bool {
	for _, c := range p {
		if c != 0 {
			return false
		}
	}
	return true
}
