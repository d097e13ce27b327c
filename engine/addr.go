package engine

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"

	"github.com/udpstp/udpstp/dataphase"
)

// A dual-stack socket (AF_INET6 with IPV6_V6ONLY=0) talks to IPv4 peers
// through IPv4-mapped IPv6 addresses (::ffff:a.b.c.d, RFC 4291 2.5.5.2).
// Callers of this package only ever see plain IPv4 addresses for IPv4 peers:
// addresses going into an AF_INET6 socket are mapped, addresses coming out
// are unmapped.

// IsIPv4Peer reports whether a is an IPv4 peer: a plain IPv4 address, or an
// IPv4-mapped IPv6 address. Its datagrams travel in IPv4 packets, which
// decides the header overhead, the GSO size limit and IP_TOS vs IPV6_TCLASS.
func IsIPv4Peer(a netip.AddrPort) bool {
	return a.Addr().Is4() || a.Addr().Is4In6()
}

// unmapAddrPort returns a with an IPv4-mapped address turned into plain
// IPv4, as callers expect to see it.
func unmapAddrPort(a netip.AddrPort) netip.AddrPort {
	if a.Addr().Is4In6() {
		return netip.AddrPortFrom(a.Addr().Unmap(), a.Port())
	}
	return a
}

// addrForSocket converts a peer address for a socket of the given family:
// on an AF_INET6 socket a plain IPv4 address is mapped; on an AF_INET
// socket an IPv4-mapped address is unmapped and an IPv6 address refused.
func addrForSocket(a netip.AddrPort, v6sock bool) (netip.AddrPort, error) {
	ip := a.Addr()
	if !ip.IsValid() {
		return netip.AddrPort{}, fmt.Errorf("invalid address %v", a)
	}
	if v6sock {
		if ip.Is4() {
			return netip.AddrPortFrom(netip.AddrFrom16(ip.As16()), a.Port()), nil
		}
		return a, nil
	}
	if ip.Is4In6() {
		return netip.AddrPortFrom(ip.Unmap(), a.Port()), nil
	}
	if !ip.Is4() {
		return netip.AddrPort{}, fmt.Errorf("IPv6 address %v on an IPv4 socket", a)
	}
	return a, nil
}

// bindPlan is what OpenUDP binds: the socket family, IPV6_V6ONLY, and the
// address in the family's form.
type bindPlan struct {
	v6     bool
	v6only bool
	addr   netip.AddrPort
}

// planBind chooses the socket family for laddr and o:
//
//   - FamilyV4: AF_INET; laddr must be IPv4 (plain or mapped) or unset
//     (0.0.0.0).
//   - FamilyV6: AF_INET6 with IPV6_V6ONLY=1; laddr must not be plain IPv4;
//     unset means [::].
//   - FamilyAny: AF_INET for a plain IPv4 laddr; otherwise AF_INET6 with
//     IPV6_V6ONLY=o.V6Only, so an unset or unspecified laddr binds [::]
//     dual-stack.
func planBind(laddr netip.AddrPort, o SocketOptions) (bindPlan, error) {
	ip := laddr.Addr()
	port := laddr.Port()
	switch o.Family {
	case dataphase.FamilyV4:
		switch {
		case !ip.IsValid():
			ip = netip.IPv4Unspecified()
		case ip.Is4In6():
			ip = ip.Unmap()
		case !ip.Is4():
			return bindPlan{}, fmt.Errorf("IPv4 socket: local address %v is IPv6", laddr)
		}
		return bindPlan{addr: netip.AddrPortFrom(ip, port)}, nil
	case dataphase.FamilyV6:
		switch {
		case !ip.IsValid():
			ip = netip.IPv6Unspecified()
		case ip.Is4():
			return bindPlan{}, fmt.Errorf("IPv6 socket: local address %v is IPv4", laddr)
		}
		return bindPlan{v6: true, v6only: true, addr: netip.AddrPortFrom(ip, port)}, nil
	case 0:
		switch {
		case !ip.IsValid():
			ip = netip.IPv6Unspecified()
		case ip.Is4():
			return bindPlan{addr: laddr}, nil
		}
		return bindPlan{v6: true, v6only: o.V6Only, addr: netip.AddrPortFrom(ip, port)}, nil
	}
	return bindPlan{}, fmt.Errorf("socket family %d: want 4, 6 or 0", o.Family)
}

// addrPort6 makes the address of a kernel's struct sockaddr_in6: an
// IPv4-mapped address unmapped, and a scope id kept as the zone, in
// decimal, as sockaddrOf reads it back (a link-local peer is known by
// address and interface). Every read that returns a sockaddr_in6 goes
// through it.
func addrPort6(a [16]byte, port int, scope uint32) netip.AddrPort {
	ip := netip.AddrFrom16(a)
	if ip.Is4In6() {
		return netip.AddrPortFrom(ip.Unmap(), uint16(port))
	}
	if scope != 0 {
		ip = ip.WithZone(strconv.FormatUint(uint64(scope), 10))
	}
	return netip.AddrPortFrom(ip, uint16(port))
}

// peerFilter is the emulated connect of a socket that cannot connect
// (socket_other.go, whose every read checks it): it accepts only the
// datagrams of the peer. A scoped (link-local) peer's zone is compared as
// the interface it names, since a read reports it as the interface's name
// (net.UDPConn) or its index (a raw recvfrom: addrPort6), and Connect's
// caller may have given either.
type peerFilter struct {
	peer  netip.AddrPort // unmapped, without its zone; invalid: accept all
	zones [2]string      // the peer's zone as index and as name; "" for none
}

// newPeerFilter makes the filter for peer, resolving its zone once.
func newPeerFilter(peer netip.AddrPort) peerFilter {
	peer = unmapAddrPort(peer)
	ip := peer.Addr()
	f := peerFilter{peer: netip.AddrPortFrom(ip.WithZone(""), peer.Port())}
	if z := ip.Zone(); z != "" {
		f.zones = [2]string{z, z}
		if i, err := strconv.Atoi(z); err == nil {
			if ifi, err := net.InterfaceByIndex(i); err == nil {
				f.zones[1] = ifi.Name
			}
		} else if ifi, err := net.InterfaceByName(z); err == nil {
			f.zones[0] = strconv.Itoa(ifi.Index)
		}
	}
	return f
}

// accepts reports whether a datagram from from passes the filter. It
// allocates nothing.
func (f *peerFilter) accepts(from netip.AddrPort) bool {
	if !f.peer.IsValid() {
		return true
	}
	from = unmapAddrPort(from)
	ip := from.Addr()
	if from.Port() != f.peer.Port() || ip.WithZone("") != f.peer.Addr() {
		return false
	}
	z := ip.Zone()
	return z == f.zones[0] || z == f.zones[1]
}
