package capacity

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// sendRing is the least of io_uring the floor needs to hand the kernel one
// datagram for each of N sockets in a single system call: a submission
// queue of IORING_OP_SEND entries and the completion queue they post to.
// It is the floor's second form (SendFloor with ring set), the question
// being whether batching the sends of many sockets in one call costs less
// than a sendmmsg per socket. Layouts are those of linux/io_uring.h.
type sendRing struct {
	fd      int
	rings   []byte // the SQ and CQ rings (IORING_FEAT_SINGLE_MMAP)
	sqeMem  []byte
	sqTail  *uint32
	sqMask  uint32
	sqArray []uint32
	sqes    []ringSQE
	cqHead  *uint32
	cqTail  *uint32
	cqMask  uint32
	cqes    []ringCQE
	pending int // submitted, not yet reaped
}

// ringParams is struct io_uring_params.
type ringParams struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFd uint32
	resv                                                                   [3]uint32
	sqOff                                                                  ringOffsets
	cqOff                                                                  ringOffsets
}

// ringOffsets is struct io_sqring_offsets and io_cqring_offsets alike:
// for the SQ, field 4 is flags, 5 dropped, 6 array; for the CQ, 4 is
// overflow, 5 cqes, 6 flags.
type ringOffsets struct {
	head, tail, ringMask, ringEntries, f4, f5, f6, resv1 uint32
	userAddr                                             uint64
}

// ringSQE is struct io_uring_sqe (64 bytes) as a send uses it.
type ringSQE struct {
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

// ringCQE is struct io_uring_cqe (16 bytes).
type ringCQE struct {
	userData uint64
	res      int32
	flags    uint32
}

const (
	ringOpSend       = 26         // IORING_OP_SEND
	ringOffSQEs      = 0x10000000 // IORING_OFF_SQES
	ringSetupSingle  = 1 << 12    // IORING_SETUP_SINGLE_ISSUER
	ringSetupCoop    = 1 << 8     // IORING_SETUP_COOP_TASKRUN
	ringFeatSingle   = 1 << 0     // IORING_FEAT_SINGLE_MMAP
	ringEnterGetEvts = 1 << 0     // IORING_ENTER_GETEVENTS
)

// errRingUnavailable wraps why the kernel would not set up a ring: not
// built in, turned off (kernel.io_uring_disabled) or refused by seccomp.
var errRingUnavailable = errors.New("io_uring unavailable")

// newSendRing sets up a ring of at least entries submissions (the kernel
// rounds up to a power of two). Only the thread that calls it may submit
// (IORING_SETUP_SINGLE_ISSUER).
func newSendRing(entries uint32) (*sendRing, error) {
	var p ringParams
	p.flags = ringSetupSingle | ringSetupCoop
	fd, _, e := unix.Syscall(unix.SYS_IO_URING_SETUP, uintptr(entries), uintptr(unsafe.Pointer(&p)), 0)
	if e != 0 {
		return nil, fmt.Errorf("%w: %w", errRingUnavailable, os.NewSyscallError("io_uring_setup", e))
	}
	r := &sendRing{fd: int(fd)}
	if p.features&ringFeatSingle == 0 {
		r.close()
		return nil, fmt.Errorf("%w: the kernel lacks IORING_FEAT_SINGLE_MMAP", errRingUnavailable)
	}
	size := max(p.sqOff.f6+p.sqEntries*4, p.cqOff.f5+p.cqEntries*uint32(unsafe.Sizeof(ringCQE{})))
	var err error
	if r.rings, err = unix.Mmap(r.fd, 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE); err != nil {
		r.close()
		return nil, fmt.Errorf("mmap io_uring rings: %w", err)
	}
	if r.sqeMem, err = unix.Mmap(r.fd, ringOffSQEs, int(p.sqEntries)*int(unsafe.Sizeof(ringSQE{})), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE); err != nil {
		r.close()
		return nil, fmt.Errorf("mmap io_uring SQEs: %w", err)
	}
	base := unsafe.Pointer(&r.rings[0])
	at := func(o uint32) *uint32 { return (*uint32)(unsafe.Add(base, o)) }
	r.sqTail, r.sqMask = at(p.sqOff.tail), *at(p.sqOff.ringMask)
	r.sqArray = unsafe.Slice(at(p.sqOff.f6), p.sqEntries)
	r.sqes = unsafe.Slice((*ringSQE)(unsafe.Pointer(&r.sqeMem[0])), p.sqEntries)
	r.cqHead, r.cqTail, r.cqMask = at(p.cqOff.head), at(p.cqOff.tail), *at(p.cqOff.ringMask)
	r.cqes = unsafe.Slice((*ringCQE)(unsafe.Add(base, p.cqOff.f5)), p.cqEntries)
	return r, nil
}

// sendEach gives buf to every socket of fds (at most the ring's entries)
// in one io_uring_enter and reaps the completions. It returns how many
// datagrams the kernel took and the first error a completion reported.
// MSG_DONTWAIT makes a full socket complete with EAGAIN rather than wait
// for room, so no send outlives the call and buf may be reused at once.
func (r *sendRing) sendEach(fds []int, buf []byte) (sent int, err error) {
	if len(fds) > len(r.sqes) {
		return 0, fmt.Errorf("io_uring send: %d sockets for %d entries", len(fds), len(r.sqes))
	}
	tail := *r.sqTail // only this thread writes it
	for i, fd := range fds {
		idx := (tail + uint32(i)) & r.sqMask
		r.sqes[idx] = ringSQE{opcode: ringOpSend, fd: int32(fd), addr: uint64(uintptr(unsafe.Pointer(&buf[0]))),
			len: uint32(len(buf)), msgFlags: unix.MSG_DONTWAIT}
		r.sqArray[idx] = idx
	}
	atomic.StoreUint32(r.sqTail, tail+uint32(len(fds)))
	n, _, e := unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), uintptr(len(fds)), 0, 0, 0, 0)
	if e != 0 {
		return 0, os.NewSyscallError("io_uring_enter", e)
	}
	r.pending += int(n)
	if int(n) < len(fds) {
		// What was not taken stays queued and would be sent by the next
		// call, out of its turn: the floor has failed.
		return 0, fmt.Errorf("io_uring_enter took %d of %d sends", n, len(fds))
	}
	sent, err = r.reap()
	if r.pending > 0 { // not expected: a send that completed later
		if _, _, e := unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), 0, uintptr(r.pending), ringEnterGetEvts, 0, 0); e != 0 {
			return sent, os.NewSyscallError("io_uring_enter", e)
		}
		s, err2 := r.reap()
		sent += s
		err = errors.Join(err, err2)
	}
	return sent, err
}

// reap takes every posted completion.
func (r *sendRing) reap() (sent int, err error) {
	head := *r.cqHead
	for tail := atomic.LoadUint32(r.cqTail); head != tail; head++ {
		c := r.cqes[head&r.cqMask]
		r.pending--
		if c.res >= 0 {
			sent++
		} else if err == nil {
			err = os.NewSyscallError("io_uring send", unix.Errno(-c.res))
		}
	}
	atomic.StoreUint32(r.cqHead, head)
	return sent, err
}

func (r *sendRing) close() {
	if r.sqeMem != nil {
		_ = unix.Munmap(r.sqeMem)
	}
	if r.rings != nil {
		_ = unix.Munmap(r.rings)
	}
	_ = unix.Close(r.fd)
}
