package uring

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Ring is one io_uring: a submission queue the caller fills with Prep*
// and hands over with Submit, and the completion queue it reads with
// Next. It is not safe for concurrent use.
type Ring struct {
	fd      int
	rings   []byte // the SQ and CQ rings (IORING_FEAT_SINGLE_MMAP)
	sqeMem  []byte
	sqTail  *uint32
	sqMask  uint32
	sqArray []uint32
	sqes    []sqe
	cqHead  *uint32
	cqTail  *uint32
	cqMask  uint32
	cqes    []cqe
	queued  uint32 // prepared since the last Submit
	// inflight counts submitted sends not yet reaped by Next.
	inflight int
	head     uint32 // the CQ head as Next advanced it, stored by Next
}

// params is struct io_uring_params.
type params struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFd uint32
	resv                                                                   [3]uint32
	sqOff                                                                  offsets
	cqOff                                                                  offsets
}

// offsets is struct io_sqring_offsets and io_cqring_offsets alike: for
// the SQ, field 4 is flags, 5 dropped, 6 array; for the CQ, 4 is overflow,
// 5 cqes, 6 flags.
type offsets struct {
	head, tail, ringMask, ringEntries, f4, f5, f6, resv1 uint32
	userAddr                                             uint64
}

// sqe is struct io_uring_sqe (64 bytes) as a send uses it.
type sqe struct {
	opcode, flags uint8
	ioprio        uint16
	fd            int32
	off, addr     uint64
	len, msgFlags uint32
	userData      uint64
	bufIndex      uint16
	personality   uint16
	spliceFdIn    int32
	addr3, pad2   uint64
}

// cqe is struct io_uring_cqe (16 bytes).
type cqe struct {
	userData uint64
	res      int32
	flags    uint32
}

const (
	opSendmsg      = 9          // IORING_OP_SENDMSG
	opSend         = 26         // IORING_OP_SEND
	sqeIOLink      = 1 << 2     // IOSQE_IO_LINK
	offSQEs        = 0x10000000 // IORING_OFF_SQES
	setupCoop      = 1 << 8     // IORING_SETUP_COOP_TASKRUN
	setupSingle    = 1 << 12    // IORING_SETUP_SINGLE_ISSUER
	featSingleMmap = 1 << 0     // IORING_FEAT_SINGLE_MMAP
	enterGetEvents = 1 << 0     // IORING_ENTER_GETEVENTS
)

// ErrUnavailable wraps why the kernel would not set up a ring: not built
// in, turned off (kernel.io_uring_disabled) or refused by seccomp.
var ErrUnavailable = errors.New("io_uring unavailable")

// Options configure New.
type Options struct {
	// SingleIssuer tells the kernel that only the thread that sets the
	// ring up submits (IORING_SETUP_SINGLE_ISSUER): true only for a
	// goroutine locked to its thread for the ring's whole life.
	SingleIssuer bool
}

// New sets up a ring of at least entries submissions (the kernel rounds
// up to a power of two; its completion queue is twice that).
func New(entries uint32, o Options) (*Ring, error) {
	var p params
	p.flags = setupCoop
	if o.SingleIssuer {
		p.flags |= setupSingle
	}
	fd, _, e := unix.Syscall(unix.SYS_IO_URING_SETUP, uintptr(entries), uintptr(unsafe.Pointer(&p)), 0)
	if e != 0 {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, os.NewSyscallError("io_uring_setup", e))
	}
	r := &Ring{fd: int(fd)}
	if p.features&featSingleMmap == 0 {
		r.Close()
		return nil, fmt.Errorf("%w: the kernel lacks IORING_FEAT_SINGLE_MMAP", ErrUnavailable)
	}
	size := max(p.sqOff.f6+p.sqEntries*4, p.cqOff.f5+p.cqEntries*uint32(unsafe.Sizeof(cqe{})))
	var err error
	if r.rings, err = unix.Mmap(r.fd, 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE); err != nil {
		r.Close()
		return nil, fmt.Errorf("mmap io_uring rings: %w", err)
	}
	if r.sqeMem, err = unix.Mmap(r.fd, offSQEs, int(p.sqEntries)*int(unsafe.Sizeof(sqe{})), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE); err != nil {
		r.Close()
		return nil, fmt.Errorf("mmap io_uring SQEs: %w", err)
	}
	base := unsafe.Pointer(&r.rings[0])
	at := func(o uint32) *uint32 { return (*uint32)(unsafe.Add(base, o)) }
	r.sqTail, r.sqMask = at(p.sqOff.tail), *at(p.sqOff.ringMask)
	r.sqArray = unsafe.Slice(at(p.sqOff.f6), p.sqEntries)
	r.sqes = unsafe.Slice((*sqe)(unsafe.Pointer(&r.sqeMem[0])), p.sqEntries)
	r.cqHead, r.cqTail, r.cqMask = at(p.cqOff.head), at(p.cqOff.tail), *at(p.cqOff.ringMask)
	r.cqes = unsafe.Slice((*cqe)(unsafe.Add(base, p.cqOff.f5)), p.cqEntries)
	r.head = *r.cqHead
	return r, nil
}

// Space is how many more sends may be prepared before Submit. The
// completion queue, twice the submission queue, cannot overflow as long
// as each Submit's completions are reaped before the next.
func (r *Ring) Space() int { return len(r.sqes) - int(r.queued) }

// prep fills the next free entry; the caller checked Space.
func (r *Ring) prep(x sqe) {
	idx := (*r.sqTail + r.queued) & r.sqMask // only this ring's user writes the tail
	r.sqes[idx] = x
	r.sqArray[idx] = idx
	r.queued++
}

// PrepSend queues a send of buf on the socket fd (IORING_OP_SEND) with
// the send(2) flags given; user comes back with its completion.
func (r *Ring) PrepSend(fd int, buf []byte, flags uint32, user uint64) {
	r.prep(sqe{opcode: opSend, fd: int32(fd), addr: uint64(uintptr(unsafe.Pointer(&buf[0]))),
		len: uint32(len(buf)), msgFlags: flags, userData: user})
}

// PrepSendmsg queues a sendmsg of msg on the socket fd
// (IORING_OP_SENDMSG). With link set, the next send prepared runs only
// after this one succeeded: if this one fails, that one (and what it links
// to) completes with ECANCELED, so the messages of one socket leave in
// order and none after a refusal. msg and what it points to must stay put
// until the completion is reaped.
func (r *Ring) PrepSendmsg(fd int, msg *unix.Msghdr, flags uint32, user uint64, link bool) {
	x := sqe{opcode: opSendmsg, fd: int32(fd), addr: uint64(uintptr(unsafe.Pointer(msg))), len: 1,
		msgFlags: flags, userData: user}
	if link {
		x.flags = sqeIOLink
	}
	r.prep(x)
}

// Submit hands the prepared sends to the kernel in one io_uring_enter and
// returns how many it took. A send the kernel did not take stays queued
// and would go out with the next Submit: the caller must treat fewer than
// it prepared as a failure of the ring.
func (r *Ring) Submit() (int, error) {
	k := r.queued
	if k == 0 {
		return 0, nil
	}
	atomic.StoreUint32(r.sqTail, *r.sqTail+k)
	r.queued = 0
	for {
		n, _, e := unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), uintptr(k), 0, 0, 0, 0)
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return 0, os.NewSyscallError("io_uring_enter", e)
		}
		r.inflight += int(n)
		if n < uintptr(k) {
			return int(n), fmt.Errorf("io_uring_enter took %d of %d sends", n, k)
		}
		return int(n), nil
	}
}

// Inflight is how many submitted sends have not been reaped.
func (r *Ring) Inflight() int { return r.inflight }

// Next returns the next completion, ok false when none is posted; the
// slot is given back to the kernel at once.
func (r *Ring) Next() (user uint64, res int32, ok bool) {
	if r.head == atomic.LoadUint32(r.cqTail) {
		return 0, 0, false
	}
	c := r.cqes[r.head&r.cqMask]
	r.head++
	atomic.StoreUint32(r.cqHead, r.head)
	r.inflight--
	return c.userData, c.res, true
}

// Wait blocks until at least n completions are posted.
func (r *Ring) Wait(n int) error {
	for {
		_, _, e := unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), 0, uintptr(n), enterGetEvents, 0, 0)
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return os.NewSyscallError("io_uring_enter", e)
		}
		return nil
	}
}

// Close releases the ring.
func (r *Ring) Close() error {
	if r.sqeMem != nil {
		_ = unix.Munmap(r.sqeMem)
	}
	if r.rings != nil {
		_ = unix.Munmap(r.rings)
	}
	return unix.Close(r.fd)
}
