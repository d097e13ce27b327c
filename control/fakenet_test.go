package control

import (
	"errors"
	"net/netip"
	"os"
	"sync"
	"time"

	"github.com/udpstp/udpstp/dataphase"
)

// fakeSocket is an in-memory Socket: datagrams queued with deliver come out
// of RecvFrom; what is sent is recorded.
type fakeSocket struct {
	mu     sync.Mutex
	local  netip.AddrPort
	in     []fakeDgram
	sent   []fakeDgram
	peer   netip.AddrPort
	tos    uint8
	recvOn bool
	closed bool
	wake   chan struct{}
}

type fakeDgram struct {
	b    []byte
	addr netip.AddrPort
}

func newFakeSocket(local netip.AddrPort) *fakeSocket {
	return &fakeSocket{local: local, wake: make(chan struct{}, 1)}
}

func (s *fakeSocket) deliver(b []byte, from netip.AddrPort) {
	s.mu.Lock()
	s.in = append(s.in, fakeDgram{append([]byte(nil), b...), from})
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *fakeSocket) SendTo(b []byte, to netip.AddrPort) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent = append(s.sent, fakeDgram{append([]byte(nil), b...), to})
	return nil
}

func (s *fakeSocket) Send(b []byte) error { return s.SendTo(b, s.peer) }

func (s *fakeSocket) RecvFrom(b []byte, deadline time.Time) (int, netip.AddrPort, error) {
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return 0, netip.AddrPort{}, errors.New("closed")
		}
		if len(s.in) > 0 {
			d := s.in[0]
			s.in = s.in[1:]
			s.mu.Unlock()
			return copy(b, d.b), d.addr, nil
		}
		s.mu.Unlock()
		wait := time.Until(deadline)
		if wait <= 0 {
			return 0, netip.AddrPort{}, os.ErrDeadlineExceeded
		}
		select {
		case <-s.wake:
		case <-time.After(wait):
		}
	}
}

func (s *fakeSocket) Connect(peer netip.AddrPort) error { s.peer = peer; return nil }
func (s *fakeSocket) SetTOS(tos uint8, _ bool) error    { s.tos = tos; return nil }
func (s *fakeSocket) EnableRecvTOS(bool) error          { s.recvOn = true; return nil }
func (s *fakeSocket) LocalAddr() netip.AddrPort         { return s.local }
func (s *fakeSocket) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return nil
}

func (s *fakeSocket) sentCopy() []fakeDgram {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]fakeDgram(nil), s.sent...)
}

// fakeNet hands out fake sockets on consecutive ports and records them.
type fakeNet struct {
	mu       sync.Mutex
	next     uint16
	sockets  []*fakeSocket
	started  []*dataphase.Conn
	failOpen bool
}

func (n *fakeNet) ListenUDP(laddr netip.AddrPort, o SocketOptions) (Socket, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.failOpen {
		return nil, errors.New("no sockets left")
	}
	if laddr.Port() == 0 {
		if n.next == 0 {
			n.next = 40000
		}
		n.next++
		laddr = netip.AddrPortFrom(laddr.Addr(), n.next)
	}
	s := newFakeSocket(laddr)
	n.sockets = append(n.sockets, s)
	return s, nil
}

type fakeDP struct{ done chan struct{} }

func (d *fakeDP) Stop()                 {}
func (d *fakeDP) Done() <-chan struct{} { return d.done }

func (n *fakeNet) RunDataPhase(sock Socket, core *dataphase.Conn, onEvent func(dataphase.Event)) DataPhase {
	n.mu.Lock()
	n.started = append(n.started, core)
	n.mu.Unlock()
	d := &fakeDP{done: make(chan struct{})}
	close(d.done)
	return d
}
