//go:build !portable

package engine

import "golang.org/x/sys/unix"

// Errno classes of the Data Phase send path. The kernel references are to
// net/ipv4/udp.c (udp_send_skb, udp_sendmsg) and net/core/sock.c.

// isBackpressure reports a send the kernel could not take now, where the
// datagrams did not leave and may be tried again later:
//
//   - EAGAIN (== EWOULDBLOCK): the socket's send buffer is full
//     (sock_alloc_send_pskb on a non-blocking socket);
//   - ENOBUFS: the qdisc or device queue dropped the packet
//     (NET_XMIT_DROP), or an allocation failed;
//   - EPERM: a local netfilter rule dropped it (tailscale treats it as
//     packet loss for the same reason; golang/go#63322 also reports a
//     spurious EPERM on the first sendmsg of a new socket).
func isBackpressure(e unix.Errno) bool {
	return e == unix.EAGAIN || e == unix.ENOBUFS || e == unix.EPERM
}

// pathClassOf says which path counter error e is counted in, or
// noPathError. These are
// what a connected UDP socket reports for its peer on a later send or
// receive (sk_err, set by __udp4_lib_err / __udp6_lib_err from an ICMP
// error, icmp_err_convert and icmpv6_err_convert), and what a send returns
// when the local route to the peer fails (ip_route_output_flow). Each is
// one event on the path, not a broken socket: the send that reports a
// pending one did not go out and the error is cleared, so the Data Phase
// counts it and goes on; a peer that is really gone is the watchdog's.
//
// EMSGSIZE is here too (ICMP fragmentation needed, ICMPv6 packet too
// big: the kernel lowered the path MTU), but on a GSO send it may also be
// the kernel refusing the message (gso.go); sendBatch tells the two apart.
// EPERM is not: a local firewall drop is backpressure (isBackpressure).
func pathClassOf(e unix.Errno) SocketCounter {
	switch e {
	case unix.ECONNREFUSED:
		return CountConnRefused // ICMP port unreachable
	case unix.EHOSTUNREACH, unix.EHOSTDOWN, unix.ENONET:
		// Host unreachable, host unknown or isolated, host or
		// administratively prohibited (ICMP codes 1, 7, 8, 10, 13..15;
		// the soft ones only with IP_RECVERR), a local unreachable route.
		return CountHostUnreachable
	case unix.ENETUNREACH:
		return CountNetUnreachable // network unreachable, unknown or prohibited; no local route
	case unix.EACCES:
		// ICMPv6 administratively prohibited, failed policy or reject
		// route; a local prohibit route.
		return CountProhibited
	case unix.EMSGSIZE:
		return CountMessageTooBig
	case unix.EPROTO, unix.ENOPROTOOPT, unix.EOPNOTSUPP:
		// ICMP parameter problem, protocol unreachable, source route
		// failed.
		return CountOtherPathErrors
	}
	return noPathError
}

// sendErrKindOf classifies an errno of a Data Phase send for sendPolicy.
func sendErrKindOf(e unix.Errno) sendErrKind {
	switch {
	case e == unix.EINTR:
		return sendErrInterrupted
	case isBackpressure(e):
		return sendErrBackpressure
	case e == unix.EMSGSIZE:
		return sendErrTooBig
	case pathClassOf(e) != noPathError:
		return sendErrPath
	case e == unix.EIO:
		return sendErrIO
	case e == unix.EINVAL:
		return sendErrInval
	}
	return sendErrOther
}

// isPathError reports whether err is an errno pathClassOf counts.
func isPathError(err error) bool {
	e, ok := err.(unix.Errno)
	return ok && pathClassOf(e) != noPathError
}

// noPathError is what pathClassOf returns for an errno that is no path
// error.
const noPathError = NumSocketCounters

// countPath counts one path error in counter k (noPathError: none).
func (st *socketStats) countPath(k SocketCounter) {
	if k < NumSocketCounters {
		st[k].Add(1)
	}
}
