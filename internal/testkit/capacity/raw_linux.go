package capacity

import (
	"fmt"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/udpstp/udpstp/internal/testkit/netlab"
	"golang.org/x/sys/unix"
)

// The honest limit of a lab path: a minimal sender and receiver written
// with raw system calls and nothing of the engine. The sender blasts
// prebuilt datagrams with sendmmsg (64 per call), or with UDP GSO (as many
// segments per message as fit 65,507 bytes and 64 segments, 8 messages per
// call); the receiver reads with recvmmsg, 64 per call, header-only
// (MSG_TRUNC: the length is the datagram's, the copy is 64 bytes), as the
// engine and OB-UDPST do.

// RawResult is what a raw run measured.
type RawResult struct {
	TxPkts, RxPkts int64
	Payload        int
	Elapsed        time.Duration
}

// RxMbps is the received rate at the IP layer.
func (r RawResult) RxMbps() float64 {
	return float64(r.RxPkts) * float64(r.Payload+28) * 8 / r.Elapsed.Seconds() / 1e6
}

// TxMbps is the rate the kernel accepted from the sender.
func (r RawResult) TxMbps() float64 {
	return float64(r.TxPkts) * float64(r.Payload+28) * 8 / r.Elapsed.Seconds() / 1e6
}

// rawSocket opens a blocking UDP socket bound to addr in namespace ns.
func rawSocket(lab *netlab.Lab, ns string, addr netip.Addr) (int, int, error) {
	fd := -1
	port := 0
	err := lab.Do(ns, func() error {
		var err error
		fd, err = unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.IPPROTO_UDP)
		if err != nil {
			return err
		}
		for _, o := range []int{unix.SO_SNDBUFFORCE, unix.SO_RCVBUFFORCE} {
			_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, o, 8<<20)
		}
		if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: addr.As4()}); err != nil {
			return err
		}
		sa, err := unix.Getsockname(fd)
		if err != nil {
			return err
		}
		port = sa.(*unix.SockaddrInet4).Port
		return nil
	})
	if err != nil && fd >= 0 {
		unix.Close(fd)
	}
	return fd, port, err
}

// RawThroughput blasts payload-byte datagrams from the server namespace to
// the client namespace (or back, upstream) for d and counts what arrives.
func RawThroughput(lab *netlab.Lab, payload int, gso, upstream bool, d time.Duration) (RawResult, error) {
	txNS, txAddr, rxNS, rxAddr := lab.ServerNS, lab.ServerAddr, lab.ClientNS, lab.ClientAddr
	if upstream {
		txNS, txAddr, rxNS, rxAddr = rxNS, rxAddr, txNS, txAddr
	}
	rx, rxPort, err := rawSocket(lab, rxNS, rxAddr)
	if err != nil {
		return RawResult{}, fmt.Errorf("receiver: %w", err)
	}
	defer unix.Close(rx)
	tx, _, err := rawSocket(lab, txNS, txAddr)
	if err != nil {
		return RawResult{}, fmt.Errorf("sender: %w", err)
	}
	defer unix.Close(tx)
	if err := unix.Connect(tx, &unix.SockaddrInet4{Addr: rxAddr.As4(), Port: rxPort}); err != nil {
		return RawResult{}, err
	}
	tv := unix.NsecToTimeval(int64(100 * time.Millisecond))
	_ = unix.SetsockoptTimeval(rx, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)

	var stop atomic.Bool
	var got, sent atomic.Int64
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // receiver
		defer wg.Done()
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		got.Store(rawReceive(rx, &stop))
	}()
	start := time.Now()
	go func() { // sender
		defer wg.Done()
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		send, per := rawSender(tx, payload, gso)
		var c int64
		for time.Since(start) < d {
			k := send()
			c += int64(k) * int64(per)
		}
		sent.Store(c)
	}()
	time.Sleep(d)
	el := time.Since(start)
	time.Sleep(50 * time.Millisecond) // what is in flight still counts
	stop.Store(true)
	wg.Wait()
	return RawResult{TxPkts: sent.Load(), RxPkts: got.Load(), Payload: payload, Elapsed: el}, nil
}

// rawReceive reads fd (blocking, with a receive timeout so that it sees
// stop) until stop is set, 64 datagrams per recvmmsg, header-only, and
// returns how many it read.
func rawReceive(fd int, stop *atomic.Bool) int64 {
	const n = 64
	var bufs [n][64]byte
	var iovs [n]unix.Iovec
	var msgs [n]unix.Mmsghdr
	for i := range msgs {
		iovs[i].Base = &bufs[i][0]
		iovs[i].SetLen(len(bufs[i]))
		msgs[i].Hdr.Iov = &iovs[i]
		msgs[i].Hdr.SetIovlen(1)
	}
	var c int64
	for !stop.Load() {
		r, _, e := unix.Syscall6(unix.SYS_RECVMMSG, uintptr(fd), uintptr(unsafe.Pointer(&msgs[0])), n,
			unix.MSG_TRUNC|unix.MSG_WAITFORONE, 0, 0)
		if e == 0 {
			c += int64(r)
		}
	}
	return c
}

// rawSender returns a function that sends one batch and reports how many
// messages the kernel took, and the datagrams per message.
func rawSender(fd, payload int, gso bool) (func() int, int) {
	per, nmsg := 1, 64
	if gso {
		per, nmsg = min(64, 65507/payload), 8
	}
	buf := make([]byte, per*payload)
	for i := 0; i < per; i++ {
		buf[i*payload] = 0xBE // not a Load PDU: no one parses it
	}
	iov := unix.Iovec{Base: &buf[0]}
	iov.SetLen(len(buf))
	msgs := make([]unix.Mmsghdr, nmsg)
	ctl := make([]byte, unix.CmsgSpace(2))
	if gso {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&ctl[0]))
		h.Level, h.Type = unix.IPPROTO_UDP, unix.UDP_SEGMENT
		h.SetLen(unix.CmsgLen(2))
		*(*uint16)(unsafe.Pointer(&ctl[unix.CmsgLen(0)])) = uint16(payload)
	}
	for i := range msgs {
		msgs[i].Hdr.Iov = &iov
		msgs[i].Hdr.SetIovlen(1)
		if gso {
			msgs[i].Hdr.Control = &ctl[0]
			msgs[i].Hdr.SetControllen(len(ctl))
		}
	}
	return func() int {
		r, _, e := unix.Syscall6(unix.SYS_SENDMMSG, uintptr(fd), uintptr(unsafe.Pointer(&msgs[0])), uintptr(len(msgs)), 0, 0, 0)
		if e != 0 {
			return 0
		}
		return int(r)
	}, per
}
