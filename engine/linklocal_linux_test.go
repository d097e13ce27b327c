package engine

import (
	"fmt"
	"net/netip"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/udpstp/udpstp/dataphase"
	"github.com/udpstp/udpstp/internal/testkit/await"
	"golang.org/x/sys/unix"
)

// TestLinkLocalPeer runs a connected pair over a link-local address, in a
// network namespace of its own where the loopback carries fe80::1, and a
// third socket that forges datagrams to one of them. Every read returns
// the peer with its zone (the interface), so the Data Phase's batches and
// the control phase's reads get the peer's datagrams, given its zone as
// an index or as a name, and never the forger's: on Linux the kernel's
// connect filters, off it (-tags portable) peerFilter, fed by reads that
// once dropped the zone and so dropped every datagram of the peer.
func TestLinkLocalPeer(t *testing.T) {
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs ip(8):", err)
	}
	zones := []string{"1", "lo"}
	var socks [][3]*Socket // by zone: two peers and a forger
	done := make(chan struct{})
	var skip, err error
	go func() {
		defer close(done)
		// The thread enters a namespace of its own and is never
		// unlocked, so the runtime discards it when the goroutine ends.
		runtime.LockOSThread()
		if e := unix.Unshare(unix.CLONE_NEWNET); e != nil {
			skip = fmt.Errorf("needs a network namespace of its own (root): %w", e)
			return
		}
		// ip(8) is forked from this thread, so it works in its namespace.
		for _, args := range [][]string{
			{"link", "set", "lo", "up"},
			// nodad: usable at once, not tentative until DAD ends.
			{"addr", "add", "fe80::1/64", "dev", "lo", "nodad"},
		} {
			if out, e := exec.Command("ip", args...).CombinedOutput(); e != nil {
				err = fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), e, out)
				return
			}
		}
		// A socket is made in the namespace of the thread that makes it,
		// and stays there.
		for _, z := range zones {
			var ss [3]*Socket
			for i := range ss {
				ss[i], err = OpenUDP(linkLocal(z), SocketOptions{Family: dataphase.FamilyV6})
				if err != nil {
					return
				}
				t.Cleanup(func() { ss[i].Close() })
			}
			socks = append(socks, ss)
		}
	}()
	<-done
	if skip != nil {
		t.Skip(skip)
	}
	if err != nil {
		t.Fatal(err)
	}
	for i, z := range zones {
		t.Run("zone "+z, func(t *testing.T) { linkLocalPair(t, linkLocal(z), socks[i]) })
	}
}

// linkLocal is fe80::1 on the interface zone names, port 0.
func linkLocal(zone string) netip.AddrPort {
	return netip.AddrPortFrom(netip.MustParseAddr("fe80::1").WithZone(zone), 0)
}

func linkLocalPair(t *testing.T, bind netip.AddrPort, socks [3]*Socket) {
	a, b, forger := socks[0], socks[1], socks[2]
	at := func(s *Socket) netip.AddrPort { return netip.AddrPortFrom(bind.Addr(), s.LocalAddr().Port()) }
	// The namespace's loopback may not pass IPv6 yet right after it came
	// up: wait until a datagram does (Connect discards any extra).
	buf := make([]byte, 16)
	for end := time.Now().Add(await.Deadline); ; {
		if err := b.SendTo([]byte("probe"), at(a)); err != nil {
			t.Fatal(err)
		}
		if _, _, err := a.RecvFrom(buf, time.Now().Add(50*time.Millisecond)); err == nil {
			break
		} else if time.Now().After(end) {
			t.Fatalf("no datagram over %v within %v: %v", bind.Addr(), await.Deadline, err)
		}
	}
	mustConnect(t, a, at(b))
	mustConnect(t, b, at(a))

	// The Data Phase: a batch each way, forged datagrams among them.
	const n = 5
	for _, dir := range []struct{ from, to *Socket }{{a, b}, {b, a}} {
		var sb dataphase.SendBuffer
		var rb dataphase.RecvBatch
		fillPlan(&sb, 7, 0, lens(n, 100)...)
		if err := forger.SendTo(make([]byte, 100), at(dir.to)); err != nil {
			t.Fatal(err)
		}
		if sent, err := dir.from.SendBatch(&sb); sent != n || err != nil {
			t.Fatalf("sent %d of %d: %v", sent, n, err)
		}
		if err := forger.SendTo(make([]byte, 100), at(dir.to)); err != nil {
			t.Fatal(err)
		}
		got := recvAll(t, dir.to, &rb, n, func(rb *dataphase.RecvBatch) {
			for i := range rb.N {
				checkHdr(t, rb.Buf(i), 7, rb.Dgrams[i].Len)
			}
		})
		if got != n {
			t.Fatalf("%v -> %v: received %d of %d datagrams (sender %+v, receiver %+v)", dir.from.LocalAddr(), dir.to.LocalAddr(), got, n, dir.from.Stats(), dir.to.Stats())
		}
	}

	// The control phase's read: the forger's datagram is passed over.
	if err := forger.SendTo([]byte("forged"), at(a)); err != nil {
		t.Fatal(err)
	}
	if err := b.Send([]byte("peer")); err != nil {
		t.Fatal(err)
	}
	k, from, err := a.RecvFrom(buf, time.Now().Add(await.Deadline))
	if err != nil {
		t.Fatal(err)
	}
	if string(buf[:k]) != "peer" || from.Port() != b.LocalAddr().Port() || from.Addr().Zone() == "" {
		t.Fatalf("read %q from %v, want %q from %v with its zone", buf[:k], from, "peer", at(b))
	}
}
