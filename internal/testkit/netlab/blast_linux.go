package netlab

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"os"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// blastSegments is how many datagrams one blast write carries (UDP GSO;
// 48 of BaselinePayload fit the 65507 bytes of one UDP datagram),
// as the engine's Load Sender writes a Burst.
const blastSegments = 48

// blastBursts sends BaselinePayload-byte datagrams from the client
// namespace to dst at rateBps (metered as tbf meters it) for dur, in
// Bursts every millisecond, as a Load Sender does, and returns how many
// the kernel accepted. It paces on a locked OS thread with absolute
// clock_nanosleep and timer slack 1 ns (Go timers cannot pace below about
// 1 ms); a Burst it wakes late for is sent late, in full. Writes block
// when the socket buffer is full, so the achieved rate, not a drop count,
// shows a sender the machine held back. Bounded by dur.
func (l *Lab) blastBursts(dst netip.AddrPort, rateBps int64, dur time.Duration) (int64, error) {
	fam := unix.AF_INET
	if dst.Addr().Is6() {
		fam = unix.AF_INET6
	}
	var fd int
	err := l.Do(l.ClientNS, func() error {
		var err error
		fd, err = unix.Socket(fam, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		return os.NewSyscallError("socket", err)
	})
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	var sa unix.Sockaddr
	if fam == unix.AF_INET {
		sa = &unix.SockaddrInet4{Port: int(dst.Port()), Addr: dst.Addr().As4()}
	} else {
		sa = &unix.SockaddrInet6{Port: int(dst.Port()), Addr: dst.Addr().As16()}
	}
	if err := unix.Connect(fd, sa); err != nil {
		return 0, fmt.Errorf("netlab: blast connect %v: %w", dst, err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, 4<<20); err != nil {
		return 0, os.NewSyscallError("SO_SNDBUFFORCE", err)
	}
	if err := unix.SetsockoptInt(fd, unix.IPPROTO_UDP, unix.UDP_SEGMENT, BaselinePayload); err != nil {
		return 0, os.NewSyscallError("UDP_SEGMENT", err)
	}
	buf := make([]byte, blastSegments*BaselinePayload)
	for i := 0; i < blastSegments; i++ {
		binary.BigEndian.PutUint16(buf[i*BaselinePayload:], loadPDUID)
	}

	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0); err != nil {
		return 0, os.NewSyscallError("prctl(PR_SET_TIMERSLACK)", err)
	}
	perMs := float64(rateBps) / 8 / baselineFrame / 1000 // datagrams per Burst
	var start unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &start); err != nil {
		return 0, os.NewSyscallError("clock_gettime", err)
	}
	t0 := start.Nano()
	var sent int64
	for k := int64(1); ; k++ {
		at := t0 + k*int64(time.Millisecond)
		if time.Duration(at-t0) > dur {
			return sent, nil
		}
		ts := unix.NsecToTimespec(at)
		for {
			err := unix.ClockNanosleep(unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME, &ts, nil)
			if err != unix.EINTR {
				break
			}
		}
		due := int64(float64(k) * perMs)
		for sent < due {
			n := min(due-sent, blastSegments)
			for {
				_, err := unix.Write(fd, buf[:n*BaselinePayload])
				if err == nil {
					break
				}
				if err != unix.EINTR && err != unix.ENOBUFS {
					return sent, os.NewSyscallError("blast write", err)
				}
			}
			sent += n
		}
	}
}
