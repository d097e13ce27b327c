//go:build !portable

package engine

import (
	"net"
	"net/netip"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestSocketFromFD: a bound UDP socket opened elsewhere (as systemd's
// socket activation passes one) becomes a working, non-blocking Socket;
// anything else is refused and closed.
func TestSocketFromFD(t *testing.T) {
	pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	f, err := pc.File() // a duplicate, in blocking mode
	pc.Close()
	if err != nil {
		t.Fatal(err)
	}
	s, err := SocketFromFile(f)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if fl, err := unix.FcntlInt(uintptr(s.Fd()), unix.F_GETFL, 0); err != nil || fl&unix.O_NONBLOCK == 0 {
		t.Errorf("descriptor flags %#x (%v): not non-blocking", fl, err)
	}
	peer, err := OpenUDP(netip.MustParseAddrPort("127.0.0.1:0"), SocketOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	if err := peer.SendTo([]byte("setup"), s.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	n, from, err := s.RecvFrom(buf, time.Now().Add(2*time.Second))
	if err != nil || string(buf[:n]) != "setup" || from != peer.LocalAddr() {
		t.Fatalf("RecvFrom: %q from %v, %v", buf[:n], from, err)
	}
	if err := s.SendTo([]byte("answer"), from); err != nil {
		t.Fatal(err)
	}
	if n, _, err := peer.RecvFrom(buf, time.Now().Add(2*time.Second)); err != nil || string(buf[:n]) != "answer" {
		t.Fatalf("answer: %q, %v", buf[:n], err)
	}

	tcp, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := SocketFromFD(tcp); err == nil {
		t.Error("a TCP socket was taken")
	}
	unbound, _ := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0)
	if _, err := SocketFromFD(unbound); err == nil {
		t.Error("an unbound socket was taken")
	}
}
