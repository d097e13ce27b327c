//go:build !portable

package engine

import (
	"net"
	"net/netip"
	"testing"
	"time"
)

// TestPktInfoAnswersFromTheAddressAskedOn: a wildcard socket learns the
// address a datagram was sent to and answers from it. A client connected
// to 127.0.0.2 takes only what comes from 127.0.0.2; without PKTINFO the
// kernel answers a wildcard socket's send from 127.0.0.1.
func TestPktInfoAnswersFromTheAddressAskedOn(t *testing.T) {
	for _, wild := range []string{"0.0.0.0:0", "[::]:0"} {
		t.Run(wild, func(t *testing.T) {
			srv := mustOpen(t, netip.MustParseAddrPort(wild), SocketOptions{})
			if err := srv.EnablePktInfo(); err != nil {
				t.Fatal(err)
			}
			to := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.2"), srv.LocalAddr().Port())
			c, err := net.DialUDP("udp4", nil, net.UDPAddrFromAddrPort(to))
			if err != nil {
				t.Skipf("no 127.0.0.2 here: %v", err)
			}
			defer c.Close()
			if _, err := c.Write([]byte("ping")); err != nil {
				t.Fatal(err)
			}
			b := make([]byte, 64)
			n, from, dst, err := srv.RecvFromTo(b, time.Now().Add(10*time.Second))
			if err != nil || string(b[:n]) != "ping" {
				t.Fatalf("RecvFromTo: %q, %v", b[:n], err)
			}
			if dst != to.Addr() {
				t.Fatalf("destination %v, want %v", dst, to.Addr())
			}
			if err := srv.SendToFrom([]byte("pong"), from, dst); err != nil {
				t.Fatal(err)
			}
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			n, err = c.Read(b)
			if err != nil || string(b[:n]) != "pong" {
				t.Fatalf("the connected client got %q, %v: the answer did not come from %v", b[:n], err, to.Addr())
			}
		})
	}
}
