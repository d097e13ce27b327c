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

// isGSORefusal reports an error on a UDP GSO message that means GSO cannot
// be used as asked (see gso.go for when the kernel returns each): EIO (no
// TX checksum offload on the egress device, an xfrm route), EINVAL (too
// many segments, UDP checksums off, a segment above the PMTU on older
// kernels), EMSGSIZE (a segment above the PMTU on newer kernels, or a
// message too long). wireguard-go, quic-go and tailscale fall back on EIO
// only; quinn also on EINVAL; EMSGSIZE left unhandled made Felix's sends
// stall for good, so every one of them falls back here.
func isGSORefusal(e unix.Errno) bool {
	return e == unix.EIO || e == unix.EINVAL || e == unix.EMSGSIZE
}
