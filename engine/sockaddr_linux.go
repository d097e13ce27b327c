//go:build !portable

package engine

import (
	"net"
	"net/netip"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// sockaddrOf converts an address already in the socket's family form.
func sockaddrOf(a netip.AddrPort, v6 bool) unix.Sockaddr {
	if !v6 {
		return &unix.SockaddrInet4{Port: int(a.Port()), Addr: a.Addr().As4()}
	}
	sa := &unix.SockaddrInet6{Port: int(a.Port()), Addr: a.Addr().As16()}
	if z := a.Addr().Zone(); z != "" {
		if id, err := strconv.ParseUint(z, 10, 32); err == nil {
			sa.ZoneId = uint32(id)
		} else if ifi, err := net.InterfaceByName(z); err == nil {
			sa.ZoneId = uint32(ifi.Index)
		}
	}
	return sa
}

// addrPortOf converts a kernel address, unmapping IPv4-mapped ones.
func addrPortOf(sa unix.Sockaddr) netip.AddrPort {
	switch sa := sa.(type) {
	case *unix.SockaddrInet4:
		return netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), uint16(sa.Port))
	case *unix.SockaddrInet6:
		return addrPort6(sa.Addr, sa.Port, sa.ZoneId)
	}
	return netip.AddrPort{}
}

// cmsgBytes returns the bytes of control buffer w.
func cmsgBytes(w []uint64) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), len(w)*8)
}
