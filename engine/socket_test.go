package engine

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/udpstp/udpstp/dataphase"
	"github.com/udpstp/udpstp/internal/testkit/await"
)

func TestRoundTrip(t *testing.T) {
	cases := []struct {
		name         string
		server       string
		so           SocketOptions
		client       string
		wantFromIPv4 bool
	}{
		{"IPv4", "127.0.0.1:0", SocketOptions{}, "127.0.0.1:0", true},
		{"IPv6", "[::1]:0", SocketOptions{Family: 6}, "[::1]:0", false},
		// A dual-stack [::] server hears an IPv4 client as an IPv4-mapped
		// address; the caller must see plain IPv4.
		{"dual-stack server, IPv4 client", "", SocketOptions{}, "127.0.0.1:0", true},
		{"dual-stack server, IPv6 client", "", SocketOptions{}, "[::1]:0", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if strings.Contains(tc.name, "IPv6") && !hasIPv6(t) {
				t.Skip("no IPv6 loopback")
			}
			var sa netip.AddrPort
			if tc.server != "" {
				sa = netip.MustParseAddrPort(tc.server)
			}
			srv := mustOpen(t, sa, tc.so)
			cli := mustOpen(t, netip.MustParseAddrPort(tc.client), SocketOptions{})
			to := loopbackOf(srv)
			if IsIPv4Peer(cli.LocalAddr()) {
				to = netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), srv.LocalAddr().Port())
			}
			if err := cli.SendTo([]byte("setup"), to); err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 100)
			n, from, err := srv.RecvFrom(buf, time.Now().Add(await.Deadline))
			if err != nil {
				t.Fatal(err)
			}
			if string(buf[:n]) != "setup" {
				t.Fatalf("got %q", buf[:n])
			}
			if from != cli.LocalAddr() {
				t.Fatalf("from %v, want %v", from, cli.LocalAddr())
			}
			if from.Addr().Is4() != tc.wantFromIPv4 || from.Addr().Is4In6() {
				t.Fatalf("from %v: want plain IPv4 %v", from, tc.wantFromIPv4)
			}
			// Reply connected, as a Test Connection does.
			mustConnect(t, srv, from)
			if srv.Peer() != from {
				t.Fatalf("peer %v", srv.Peer())
			}
			if err := srv.Send([]byte("response")); err != nil {
				t.Fatal(err)
			}
			n, from2, err := cli.RecvFrom(buf, time.Now().Add(await.Deadline))
			if err != nil {
				t.Fatal(err)
			}
			if string(buf[:n]) != "response" || from2.Port() != srv.LocalAddr().Port() {
				t.Fatalf("got %q from %v", buf[:n], from2)
			}
		})
	}
}

func TestRecvFromDeadline(t *testing.T) {
	s := mustOpen(t, netip.MustParseAddrPort("127.0.0.1:0"), SocketOptions{})
	start := time.Now()
	_, _, err := s.RecvFrom(make([]byte, 10), start.Add(50*time.Millisecond))
	el := time.Since(start)
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("err %v, want deadline exceeded", err)
	}
	if el < 50*time.Millisecond || el > await.Deadline {
		t.Fatalf("returned after %v", el)
	}
	// A deadline already passed returns at once.
	_, _, err = s.RecvFrom(make([]byte, 10), time.Now().Add(-time.Second))
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("err %v", err)
	}
}

func TestCloseUnblocksRecvFrom(t *testing.T) {
	s, err := OpenUDP(netip.MustParseAddrPort("127.0.0.1:0"), SocketOptions{})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, _, err := s.RecvFrom(make([]byte, 10), time.Time{})
		done <- err
	}()
	// Let it block first. Not a synchronisation the test depends on: a
	// RecvFrom that starts after Close returns net.ErrClosed all the same.
	time.Sleep(50 * time.Millisecond)
	start := time.Now()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, net.ErrClosed) {
			t.Fatalf("err %v, want net.ErrClosed", err)
		}
		t.Logf("RecvFrom returned %v after Close", time.Since(start))
	case <-time.After(await.Deadline):
		t.Fatalf("RecvFrom still blocked %v after Close", await.Deadline)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if s.Fd() != -1 {
		t.Fatalf("Fd after Close = %d", s.Fd())
	}
	if err := s.SendTo([]byte("x"), netip.MustParseAddrPort("127.0.0.1:9")); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("SendTo after Close: %v", err)
	}
}

func TestBindError(t *testing.T) {
	a := mustOpen(t, netip.MustParseAddrPort("127.0.0.1:0"), SocketOptions{})
	_, err := OpenUDP(a.LocalAddr(), SocketOptions{})
	if err == nil {
		t.Fatal("second bind succeeded")
	}
	want := "bind " + a.LocalAddr().String() + ": "
	if !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("error %q, want %q...address already in use", err, want)
	}
}

func TestGranted(t *testing.T) {
	s := mustOpen(t, netip.MustParseAddrPort("127.0.0.1:0"), SocketOptions{SockBuf: 1 << 20})
	snd, rcv := s.Granted()
	t.Logf("SockBuf 1 MiB: granted SO_SNDBUF %d, SO_RCVBUF %d", snd, rcv)
	if snd <= 0 || rcv <= 0 {
		t.Fatalf("granted %d, %d", snd, rcv)
	}
}

func TestNotConnected(t *testing.T) {
	s := mustOpen(t, netip.MustParseAddrPort("127.0.0.1:0"), SocketOptions{})
	if err := s.Send([]byte("x")); !errors.Is(err, ErrNotConnected) {
		t.Fatalf("Send: %v", err)
	}
	if err := s.Connect(netip.MustParseAddrPort("[::1]:9")); err == nil {
		t.Fatal("IPv6 peer on an IPv4 socket accepted")
	}
}

// TestSocketCounterTable: every SocketCounter has a unique name and help.
func TestSocketCounterTable(t *testing.T) {
	if err := dataphase.CheckCounterInfo(socketCounterInfo[:]); err != nil {
		t.Error(err)
	}
}
