package netlab

import (
	"fmt"
	"net/netip"
	"os"

	"golang.org/x/sys/unix"
)

// ForgeUDP sends one UDP datagram with payload from src to dst out of
// namespace ns, whatever src is: the socket is transparent (IP_TRANSPARENT,
// IPV6_TRANSPARENT), so it may bind an address that is not its
// namespace's, as an on-path attacker spoofs a peer. From RouterNS the
// datagram leaves towards dst without crossing the relay.
func (l *Lab) ForgeUDP(ns string, src, dst netip.AddrPort, payload []byte) error {
	if src.Addr().Is4() != dst.Addr().Is4() {
		return fmt.Errorf("netlab: forge from %v to %v: families differ", src, dst)
	}
	return l.Do(ns, func() error {
		fam, level, opt := unix.AF_INET6, unix.IPPROTO_IPV6, unix.IPV6_TRANSPARENT
		var from, to unix.Sockaddr = &unix.SockaddrInet6{Port: int(src.Port()), Addr: src.Addr().As16()},
			&unix.SockaddrInet6{Port: int(dst.Port()), Addr: dst.Addr().As16()}
		if src.Addr().Is4() {
			fam, level, opt = unix.AF_INET, unix.IPPROTO_IP, unix.IP_TRANSPARENT
			from = &unix.SockaddrInet4{Port: int(src.Port()), Addr: src.Addr().As4()}
			to = &unix.SockaddrInet4{Port: int(dst.Port()), Addr: dst.Addr().As4()}
		}
		fd, err := unix.Socket(fam, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return os.NewSyscallError("socket", err)
		}
		defer unix.Close(fd)
		if err := unix.SetsockoptInt(fd, level, opt, 1); err != nil {
			return os.NewSyscallError("setsockopt(transparent)", err)
		}
		if err := unix.Bind(fd, from); err != nil {
			return fmt.Errorf("netlab: forge: bind %v: %w", src, err)
		}
		if err := unix.Sendto(fd, payload, 0, to); err != nil {
			return fmt.Errorf("netlab: forge: send to %v: %w", dst, err)
		}
		return nil
	})
}
