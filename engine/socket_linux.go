//go:build !portable

package engine

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/udpstp/udpstp/dataphase"
	"golang.org/x/sys/unix"
)

// sysSocket is the Linux part of a Socket: the raw descriptor and the
// message arrays of the batch calls, allocated once with the Socket.
type sysSocket struct {
	// mu is held shared around every use of fd, including the executor's
	// wait, and exclusively by Close while it closes fd, so a descriptor
	// number is never used after it was closed (and maybe reused).
	mu sync.RWMutex
	fd int
	// cancelFd is an eventfd that Close makes readable before it takes mu,
	// so that an executor wait blocked in ppoll or epoll returns and lets
	// go of mu (the rwcancel pattern of wireguard-go, with an eventfd
	// instead of a pipe). It is made when an executor takes the socket
	// (leaveNetpoller), -1 before: a server's test socket awaiting its Test
	// Activation costs one descriptor, not two (docs/security.md). It is
	// written with both mu and waitMu held.
	cancelFd int

	// waitMu guards waitFile, fd itself in the Go runtime's netpoller
	// (os.NewFile, no duplicate): the control phase waits on it
	// (RecvFrom), so a socket awaiting its Test Activation parks a
	// goroutine, never an OS thread (a blocking ppoll would hold one each:
	// 262 threads under a Setup flood). It is made at the first wait and
	// owns fd while it exists: when an executor takes the socket, fd moves
	// to a duplicate and waitFile is closed, so the runtime does not wake
	// for every datagram of the Data Phase.
	waitMu   sync.Mutex
	waitFile *os.File

	peer4 bool         // the connected peer is IPv4 (perhaps IPv4-mapped)
	mtu   atomic.Int32 // path MTU to the peer (IP_MTU / IPV6_MTU); 0 unknown

	// Tests only: gsoMaxBytes, when set, replaces the kernel's limit on a
	// GSO message's total payload, to provoke a refusal; sendFn, when set,
	// replaces the sendmmsg system call, to play errnos loopback never
	// returns (EAGAIN: loopback_xmit orphans the skb at once).
	gsoMaxBytes int
	sendFn      func(fd int, msgs []unix.Mmsghdr) (int, unix.Errno)

	// lastBackpressure is the errno that ended the last SendBatch early, 0
	// if none; the executor waits for POLLOUT only after EAGAIN.
	lastBackpressure unix.Errno

	// sendmmsg: one message per run of planGSO, at most two iovecs (the
	// slot and the filler) per datagram, one UDP_SEGMENT control message
	// per GSO run.
	msgs    [dataphase.MaxPlan]unix.Mmsghdr
	iovs    [2 * dataphase.MaxPlan]unix.Iovec
	segCtl  [dataphase.MaxPlan][segCtlWords]uint64
	runs    [dataphase.MaxPlan]gsoRun
	runBase int // datagram index of runs[0].start
	fill    randomFiller

	// recvmmsg: one message and one iovec per datagram into the RecvBatch's
	// buffers, control buffers for the timestamp and the TOS.
	rmsgs  [dataphase.MaxRecv]unix.Mmsghdr
	riovs  [dataphase.MaxRecv]unix.Iovec
	rctl   [dataphase.MaxRecv][rctlWords]uint64
	rbatch *dataphase.RecvBatch // the batch the iovecs point into
	rready int                  // messages set up for rbatch

	// UDP GRO reads (gro_linux.go): what a batch could not take of the
	// messages read, and the message buffers of a RecvBatch called
	// outside an executor (an executor brings its own).
	rest   groRest
	ownGRO groScratch
}

const (
	// segCtlWords holds one UDP_SEGMENT control message: CmsgSpace(2) is
	// 24 bytes on 64-bit Linux, 16 on 32-bit. uint64 words keep it aligned.
	segCtlWords = 4
	// rctlWords holds the receive control messages: SCM_TIMESTAMPNS
	// (CmsgSpace(16) = 32 on 64-bit) and one of IP_TOS (CmsgSpace(1) = 24)
	// or IPV6_TCLASS (CmsgSpace(4) = 24): 56 bytes, rounded up.
	rctlWords = 8
)

// controlSendWait bounds how long a control-phase send waits for room in a
// full send buffer before it reports EAGAIN.
const controlSendWait = time.Second

// controlRefusedWait is how long a control-phase send waits after ENOBUFS
// before it tries again.
const controlRefusedWait = time.Millisecond

func (s *Socket) open(p bindPlan, o SocketOptions) error {
	x := &s.sys
	x.fd, x.cancelFd = -1, -1
	domain := unix.AF_INET
	if p.v6 {
		domain = unix.AF_INET6
	}
	fd, err := unix.Socket(domain, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, unix.IPPROTO_UDP)
	if err == unix.EAFNOSUPPORT && p.v6 && o.Family == 0 && p.addr.Addr().IsUnspecified() {
		// No IPv6 in this kernel or namespace: the dual-stack wildcard
		// becomes the IPv4 wildcard.
		p = bindPlan{addr: netip.AddrPortFrom(netip.IPv4Unspecified(), p.addr.Port())}
		domain = unix.AF_INET
		fd, err = unix.Socket(domain, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, unix.IPPROTO_UDP)
	}
	if err != nil {
		return fmt.Errorf("socket for %v: %w", p.addr, os.NewSyscallError("socket", err))
	}
	s.v6 = p.v6
	x.fd = fd
	fail := func(what string, err error) error {
		unix.Close(fd)
		x.fd = -1
		return fmt.Errorf("%s %v: %w", what, p.addr, err)
	}
	if p.v6 {
		v := 0
		if p.v6only {
			v = 1
		}
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, v); err != nil {
			return fail("IPV6_V6ONLY on", os.NewSyscallError("setsockopt", err))
		}
	}
	if o.SockBuf > 0 {
		// FORCE goes past net.core.[rw]mem_max with CAP_NET_ADMIN; without
		// it the plain option caps the request at the maximum. Either
		// failing only costs speed, and Granted tells the caller.
		if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, o.SockBuf) != nil {
			_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, o.SockBuf)
		}
		if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, o.SockBuf) != nil {
			_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, o.SockBuf)
		}
	}
	// Software receive timestamps, struct timespec on CLOCK_REALTIME, as
	// SCM_TIMESTAMPNS control messages.
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1); err != nil {
		return fail("SO_TIMESTAMPNS on", os.NewSyscallError("setsockopt", err))
	}
	if err := unix.Bind(fd, sockaddrOf(p.addr, p.v6)); err != nil {
		return fail("bind", err)
	}
	if sa, err := unix.Getsockname(fd); err == nil {
		s.laddr = addrPortOf(sa)
	} else {
		s.laddr = p.addr
	}
	s.adopt(fd, o)
	return nil
}

// adopt finishes a Socket on fd, an open and bound UDP socket with receive
// timestamps on, for OpenUDP and SocketFromFD alike: the buffer sizes
// granted, the GSO probe (unless o.NoGSO), UDP GRO (if o.GRO), the close
// filler. The close signal is made later, by the executor that takes it.
func (s *Socket) adopt(fd int, o SocketOptions) {
	x := &s.sys
	s.granted[0], _ = unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF)
	s.granted[1], _ = unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF)
	// getsockopt(UDP_SEGMENT) succeeds on kernels that know UDP GSO
	// (4.18+). It says nothing of the egress device: EIO at send time
	// does, and turns GSO off.
	if _, err := unix.GetsockoptInt(fd, unix.IPPROTO_UDP, unix.UDP_SEGMENT); err == nil && !o.NoGSO {
		s.gso.Store(true)
	}
	s.enableGRO(fd, o)
	x.fd, x.cancelFd = fd, -1
	x.fill.init(uint64(time.Now().UnixNano()) ^ uint64(fd)<<32)
}

// withFd runs use on the socket's descriptor with mu held shared, so that
// Close cannot close the descriptor (and the number be reused) meanwhile;
// once the socket is closed it returns net.ErrClosed without running use.
// Every use of fd outside open, Close and leaveNetpoller goes through it;
// use must not keep fd past its return.
func (x *sysSocket) withFd(use func(fd int) error) error {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.fd < 0 {
		return net.ErrClosed
	}
	return use(x.fd)
}

// handle is Fd's.
func (x *sysSocket) handle() int {
	fd := -1
	_ = x.withFd(func(f int) error { fd = f; return nil })
	return fd
}

// pastDeadline ends a netpoller wait at once.
var pastDeadline = time.Unix(1, 0)

func (x *sysSocket) close() error {
	// Wake the waits that hold mu shared: an executor's (cancelFd), a
	// RecvFrom's in the netpoller (a deadline in the past; closed is set
	// already, so no new wait starts, see netpollerFile).
	x.waitMu.Lock()
	if x.cancelFd >= 0 {
		one := [8]byte{1}
		_, _ = unix.Write(x.cancelFd, one[:])
	}
	if x.waitFile != nil {
		_ = x.waitFile.SetReadDeadline(pastDeadline)
	}
	x.waitMu.Unlock()
	x.mu.Lock()
	defer x.mu.Unlock()
	x.waitMu.Lock()
	var err error
	if x.waitFile != nil {
		err = x.waitFile.Close() // it owns fd
		x.waitFile = nil
	} else {
		err = unix.Close(x.fd)
	}
	if x.cancelFd >= 0 {
		unix.Close(x.cancelFd)
	}
	x.fd, x.cancelFd = -1, -1
	x.waitMu.Unlock()
	if err != nil {
		return os.NewSyscallError("close", err)
	}
	return nil
}

// connect connects the descriptor to a, the peer in the socket's family
// form (Connect checked it), discards what was queued before, and reads
// the source address the kernel chose and the path MTU.
func (s *Socket) connect(peer, a netip.AddrPort) error {
	x := &s.sys
	return x.withFd(func(fd int) error {
		if err := unix.Connect(fd, sockaddrOf(a, s.v6)); err != nil {
			return fmt.Errorf("connect %v to %v: %w", s.laddr, peer, os.NewSyscallError("connect", err))
		}
		x.peer4 = IsIPv4Peer(peer)
		s.stats[CountPreConnect].Add(uint64(discardQueued(fd)))
		// Connecting picks the source address for the peer; report that
		// one (a client's JSON names it) rather than the wildcard it was
		// bound to.
		if sa, err := unix.Getsockname(fd); err == nil {
			s.laddr = addrPortOf(sa)
		}
		s.sys.refreshMTU()
		return nil
	})
}

// maxPreConnect bounds how many waiting datagrams Connect discards: a
// receive buffer holds a few thousand at most, and a flood that keeps
// refilling it must not hold Connect.
const maxPreConnect = 1 << 14

// discardQueued drops what was waiting on the socket before Connect set
// the kernel's source filter (udp4_lib_lookup matches a connected socket
// only for its peer's address and port; what was queued before stays
// queued): a Setup's test port takes datagrams from anyone until its Test
// Activation arrives, and a forged Status or Load PDU queued then would
// otherwise reach the Data Phase as the peer's. It returns how many it
// dropped. The caller holds mu shared.
func discardQueued(fd int) int {
	var buf [1]byte
	return drain(maxPreConnect, func() error {
		_, _, err := unix.Recvfrom(fd, buf[:], unix.MSG_DONTWAIT|unix.MSG_TRUNC)
		return err
	})
}

// drain runs read until it fails (EINTR aside: EAGAIN when the queue is
// empty; another error is for whoever reads next to see) or limit reads
// succeeded, and returns how many did.
func drain(limit int, read func() error) int {
	n := 0
	for n < limit {
		switch err := read(); err {
		case nil:
			n++
		case unix.EINTR:
		default:
			return n
		}
	}
	return n
}

// refreshMTU reads the path MTU of the connected socket. IP_MTU works on an
// AF_INET6 socket with an IPv4-mapped peer too (the socket's cached route
// is then an IPv4 one). Unknown, it stays at the last value; 0 means GSO
// only up to a 1500-byte MTU (see mtuPayload).
func (x *sysSocket) refreshMTU() {
	level, opt := unix.IPPROTO_IPV6, unix.IPV6_MTU
	if x.peer4 {
		level, opt = unix.IPPROTO_IP, unix.IP_MTU
	}
	if v, err := unix.GetsockoptInt(x.fd, level, opt); err == nil && v > 0 {
		x.mtu.Store(int32(v))
	}
}

// mtuPayload is the largest UDP payload that fits the path MTU unfragmented.
func (x *sysSocket) mtuPayload() int {
	_, overhead := gsoLimits(x.peer4)
	mtu := int(x.mtu.Load())
	if mtu == 0 {
		mtu = 1500 // unknown: Ethernet's, so GSO never asks for fragments
	}
	return mtu - overhead
}

// pathMTU is PathMTU's.
func (x *sysSocket) pathMTU() int { return int(x.mtu.Load()) }

// The traffic class options, for the shared choice of SetTOS and
// EnableRecvTOS (socket.go). On an AF_INET6 socket, IPv4 packets to a
// mapped peer take their TOS from the IPv4 socket state that IP_TOS sets
// (udpv6_setsockopt passes SOL_IP options to ip_setsockopt), and report
// it through ip_cmsg_recv if IP_RECVTOS is on; IPV6_TCLASS and
// IPV6_RECVTCLASS only concern IPv6 packets. TestTOSDualStack checks this.
var (
	tosSend = tosOptions{v4: unix.IP_TOS, name4: "IP_TOS", v6: unix.IPV6_TCLASS, name6: "IPV6_TCLASS"}
	tosRecv = tosOptions{v4: unix.IP_RECVTOS, name4: "IP_RECVTOS", v6: unix.IPV6_RECVTCLASS, name6: "IPV6_RECVTCLASS"}
)

const (
	sysIPProtoIP   = unix.IPPROTO_IP
	sysIPProtoIPv6 = unix.IPPROTO_IPV6
)

// setsockoptInt sets an integer socket option.
func (x *sysSocket) setsockoptInt(level, opt, v int) error {
	return x.withFd(func(fd int) error { return unix.SetsockoptInt(fd, level, opt, v) })
}

// setRecvErr is SetRecvErr's, on a socket of the family v6 says.
func (x *sysSocket) setRecvErr(on, v6 bool) error {
	v := 0
	if on {
		v = 1
	}
	return x.withFd(func(fd int) error {
		// IPv4 datagrams of an AF_INET6 socket (to a mapped peer) report
		// through the IPv4 state, which IP_RECVERR sets on it too.
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_RECVERR, v); err != nil {
			return os.NewSyscallError("setsockopt IP_RECVERR", err)
		}
		if v6 {
			if err := unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_RECVERR, v); err != nil {
				return os.NewSyscallError("setsockopt IPV6_RECVERR", err)
			}
		}
		return nil
	})
}

// clearError clears what keeps POLLERR raised, after a wait reported it,
// so the executor never spins on it: the socket's error queue, drained
// when something put entries there (IP_RECVERR, which the engine does not
// set, queues every ICMP error there as well as setting sk_err; its
// entries are counted in CountSocketErrors only, since the send or
// receive that reports the same error counts its kind), then the pending
// error (sk_err), read and counted by its kind. A pending error read here
// is one the next send or receive will not report.
func (s *Socket) clearError() {
	_ = s.sys.withFd(func(fd int) error {
		s.stats[CountSocketErrors].Add(uint64(drainErrQueue(fd)))
		s.takePending()
		return nil
	})
}

// takePending reads and so clears the pending error, counting it by its
// kind. The caller holds mu shared.
func (s *Socket) takePending() {
	v, err := unix.GetsockoptInt(s.sys.fd, unix.SOL_SOCKET, unix.SO_ERROR)
	if err != nil || v == 0 {
		return
	}
	s.stats[CountSocketErrors].Add(1)
	k := pathClassOf(unix.Errno(v))
	s.stats.countPath(k)
	if k == CountMessageTooBig {
		s.sys.refreshMTU()
	}
}

// maxErrQueue bounds one drain of the error queue; what is left raises
// POLLERR again and is drained at the next wait.
const maxErrQueue = 64

// drainErrQueue reads the socket's error queue until it is empty (at most
// maxErrQueue entries). It is on the error path only (after POLLERR), so
// the small allocations of unix.Recvmsg do not matter. It returns how many
// entries it read. The caller holds mu shared.
func drainErrQueue(fd int) int {
	var data [64]byte
	var oob [256]byte
	return drain(maxErrQueue, func() error {
		_, _, _, _, err := unix.Recvmsg(fd, data[:], oob[:], unix.MSG_ERRQUEUE|unix.MSG_DONTWAIT)
		return err
	})
}

// lastSendWouldBlock reports whether the last SendBatch stopped on a full
// send buffer (EAGAIN), which POLLOUT ends, rather than on ENOBUFS or EPERM,
// which only time ends.
func (x *sysSocket) lastSendWouldBlock() bool { return x.lastBackpressure == unix.EAGAIN }

// lastSendBackpressure reports whether the last SendBatch stopped on
// backpressure.
func (x *sysSocket) lastSendBackpressure() bool { return x.lastBackpressure != 0 }
