package capacity

import (
	"errors"
	"fmt"
	"os"

	"github.com/udpstp/udpstp/internal/uring"
	"golang.org/x/sys/unix"
)

// sendRing hands the kernel one datagram for each of N sockets in a single
// system call: IORING_OP_SEND entries of one io_uring (internal/uring). It
// is the floor's second form (SendFloor with ring set), the question being
// whether batching the sends of many sockets in one call costs less than a
// sendmmsg per socket.
type sendRing struct{ r *uring.Ring }

// errRingUnavailable is uring.ErrUnavailable: the kernel would not set up
// a ring.
var errRingUnavailable = uring.ErrUnavailable

// newSendRing sets up a ring of at least entries submissions. Only the
// thread that calls it may submit (the floor's thread is locked for its
// whole life).
func newSendRing(entries uint32) (*sendRing, error) {
	r, err := uring.New(entries, uring.Options{SingleIssuer: true})
	if err != nil {
		return nil, err
	}
	return &sendRing{r}, nil
}

// sendEach gives buf to every socket of fds (at most the ring's entries)
// in one io_uring_enter and reaps the completions. It returns how many
// datagrams the kernel took and the first error a completion reported.
// MSG_DONTWAIT makes a full socket complete with EAGAIN rather than wait
// for room, so no send outlives the call and buf may be reused at once.
func (s *sendRing) sendEach(fds []int, buf []byte) (sent int, err error) {
	if len(fds) > s.r.Space() {
		return 0, fmt.Errorf("io_uring send: %d sockets for %d entries", len(fds), s.r.Space())
	}
	for _, fd := range fds {
		s.r.PrepSend(fd, buf, unix.MSG_DONTWAIT, 0)
	}
	if _, err := s.r.Submit(); err != nil {
		// What was not taken stays queued and would be sent by the next
		// call, out of its turn: the floor has failed.
		return 0, err
	}
	sent, err = s.reap()
	if k := s.r.Inflight(); k > 0 { // not expected: a send that completed later
		if e := s.r.Wait(k); e != nil {
			return sent, e
		}
		more, err2 := s.reap()
		sent += more
		err = errors.Join(err, err2)
	}
	return sent, err
}

// reap takes every posted completion.
func (s *sendRing) reap() (sent int, err error) {
	for {
		_, res, ok := s.r.Next()
		if !ok {
			return sent, err
		}
		if res >= 0 {
			sent++
		} else if err == nil {
			err = os.NewSyscallError("io_uring send", unix.Errno(-res))
		}
	}
}

func (s *sendRing) close() { _ = s.r.Close() }
