package engine

import (
	"errors"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"
)

// The platform layer's shared rules hold on every socket: Linux's and the
// fallback's (run here with -tags portable, where TestTOSFamilyCheck and
// TestLinkLocalPeer failed before the checks were shared).

// TestTOSFamilyCheck: a traffic class for an IPv6 peer cannot be set on
// an IPv4 socket, which has no IPv6 level: both SetTOS and EnableRecvTOS
// refuse it, naming the option, rather than reaching the system (or, for
// EnableRecvTOS off Linux, doing nothing). Closed, both say so.
func TestTOSFamilyCheck(t *testing.T) {
	s := mustOpen(t, netip.MustParseAddrPort("127.0.0.1:0"), SocketOptions{})
	for _, c := range []struct {
		name string
		set  func(ipv4Peer bool) error
	}{
		{"IPV6_TCLASS", func(v4 bool) error { return s.SetTOS(0x20, v4) }},
		{"IPV6_RECVTCLASS", s.EnableRecvTOS},
	} {
		err := c.set(false)
		if err == nil || !strings.Contains(err.Error(), c.name+" on IPv4 socket") {
			t.Errorf("%s for an IPv6 peer on an IPv4 socket: %v, want %q", c.name, err, c.name+" on IPv4 socket")
		}
		if err := c.set(true); err != nil {
			t.Errorf("%s's IPv4 option: %v", c.name, err)
		}
	}
	s.Close()
	if err := s.SetTOS(0x20, true); !errors.Is(err, net.ErrClosed) {
		t.Errorf("SetTOS after Close: %v", err)
	}
	if err := s.EnableRecvTOS(true); !errors.Is(err, net.ErrClosed) {
		t.Errorf("EnableRecvTOS after Close: %v", err)
	}
}

// TestPeerFilter: the emulated connect accepts the peer's datagrams
// whichever form its zone comes in (a read gives the interface's index or
// its name) and nobody else's, a link-local address on another interface
// included.
func TestPeerFilter(t *testing.T) {
	lo, err := loopbackInterface()
	if err != nil {
		t.Skip(err)
	}
	idx, name := strconv.Itoa(lo.Index), lo.Name
	ll := func(zone string, port uint16) netip.AddrPort {
		return netip.AddrPortFrom(netip.MustParseAddr("fe80::1").WithZone(zone), port)
	}
	for _, peerZone := range []string{idx, name} {
		f := newPeerFilter(ll(peerZone, 9))
		for _, c := range []struct {
			from netip.AddrPort
			want bool
		}{
			{ll(idx, 9), true},
			{ll(name, 9), true},
			{addrPort6(netip.MustParseAddr("fe80::1").As16(), 9, uint32(lo.Index)), true},
			{ll(idx, 10), false},
			{ll("", 9), false},
			{ll(strconv.Itoa(lo.Index+1000), 9), false},
			{netip.MustParseAddrPort("[fe80::2]:9"), false},
		} {
			if got := f.accepts(c.from); got != c.want {
				t.Errorf("peer %v: accepts(%v) = %v, want %v", ll(peerZone, 9), c.from, got, c.want)
			}
		}
	}
	f := newPeerFilter(netip.MustParseAddrPort("[::ffff:127.0.0.1]:9"))
	if !f.accepts(netip.MustParseAddrPort("127.0.0.1:9")) || f.accepts(netip.MustParseAddrPort("127.0.0.2:9")) {
		t.Error("an IPv4-mapped peer is not its IPv4 address")
	}
	var none peerFilter
	if !none.accepts(netip.MustParseAddrPort("127.0.0.2:9")) {
		t.Error("unconnected: a datagram refused")
	}
}

func loopbackInterface() (*net.Interface, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil, err
	}
	for i := range ifs {
		if ifs[i].Flags&net.FlagLoopback != 0 {
			return &ifs[i], nil
		}
	}
	return nil, errors.New("no loopback interface")
}
