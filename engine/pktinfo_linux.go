//go:build !portable

package engine

import (
	"net/netip"
	"os"
	"strconv"
	"time"

	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
	"golang.org/x/sys/unix"
)

// Destination addresses of control datagrams (IP_PKTINFO, IPV6_PKTINFO).
// A control socket bound to a wildcard address learns which of the
// server's addresses a Setup Request was sent to, answers from it and
// binds the Test Connection's socket there: a multi-homed server then
// answers from the address it was asked on, which a client that takes
// answers only from where it sent (ours) requires. This is the control
// phase, a few datagrams per test, so golang.org/x/net builds and parses
// the control messages; the Data Phase has its own mmsghdr arrays
// (batch_linux.go), which x/net's batch calls would allocate for.

// pktInfoSpace holds the control messages of a control datagram: an
// IP_PKTINFO or IPV6_PKTINFO, and the SCM_TIMESTAMPNS that every socket
// of ours asks for.
var pktInfoSpace = unix.CmsgSpace(16) + max(unix.CmsgSpace(unix.SizeofInet4Pktinfo), unix.CmsgSpace(unix.SizeofInet6Pktinfo))

// EnablePktInfo asks for the destination address of each datagram
// RecvFromTo reads: IP_PKTINFO (IPv4, also on an AF_INET6 socket that
// takes IPv4) and, on an AF_INET6 socket, IPV6_RECVPKTINFO.
func (s *Socket) EnablePktInfo() error {
	return s.sys.withFd(func(fd int) error {
		err4 := unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_PKTINFO, 1)
		if !s.v6 {
			return os.NewSyscallError("setsockopt IP_PKTINFO", err4)
		}
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_RECVPKTINFO, 1); err != nil {
			return os.NewSyscallError("setsockopt IPV6_RECVPKTINFO", err)
		}
		return nil // IP_PKTINFO fails on an IPv6-only socket, which needs none
	})
}

// RecvFromTo is RecvFrom that also returns the address the datagram was
// sent to, when EnablePktInfo is on (else an invalid Addr).
func (s *Socket) RecvFromTo(b []byte, deadline time.Time) (int, netip.AddrPort, netip.Addr, error) {
	oob := make([]byte, pktInfoSpace)
	var (
		n, oobn int
		sa      unix.Sockaddr
	)
	err := s.controlRead(deadline, func(fd int) (err error) {
		n, oobn, _, sa, err = unix.Recvmsg(fd, b, oob, 0)
		return err
	})
	if err != nil {
		return 0, netip.AddrPort{}, netip.Addr{}, err
	}
	return n, addrPortOf(sa), pktInfoDst(oob[:oobn]), nil
}

// pktInfoDst reads the destination address of a received datagram's
// control messages, invalid if there is none.
func pktInfoDst(oob []byte) netip.Addr {
	if len(oob) == 0 {
		return netip.Addr{}
	}
	var cm4 ipv4.ControlMessage
	if cm4.Parse(oob) == nil && cm4.Dst != nil {
		if a, ok := netip.AddrFromSlice(cm4.Dst); ok {
			return a.Unmap()
		}
	}
	var cm6 ipv6.ControlMessage
	if cm6.Parse(oob) == nil && cm6.Dst != nil {
		if a, ok := netip.AddrFromSlice(cm6.Dst); ok {
			a = a.Unmap()
			if a.Is6() && a.IsLinkLocalUnicast() && cm6.IfIndex > 0 {
				a = a.WithZone(strconv.Itoa(cm6.IfIndex))
			}
			return a
		}
	}
	return netip.Addr{}
}

// SendToFrom sends one datagram to to from the local address from (an
// invalid from: the kernel picks it, as SendTo).
func (s *Socket) SendToFrom(b []byte, to netip.AddrPort, from netip.Addr) error {
	if !from.IsValid() || from.IsUnspecified() {
		return s.SendTo(b, to)
	}
	a, err := addrForSocket(to, s.v6)
	if err != nil {
		return err
	}
	var oob []byte
	if from = from.Unmap(); from.Is4() {
		oob = (&ipv4.ControlMessage{Src: from.AsSlice()}).Marshal()
	} else {
		oob = (&ipv6.ControlMessage{Src: from.AsSlice()}).Marshal()
	}
	sa := sockaddrOf(a, s.v6)
	return s.sys.withFd(func(fd int) error {
		return s.sendRetry(func() error {
			_, err := unix.SendmsgN(fd, b, oob, sa, 0)
			return err
		})
	})
}
