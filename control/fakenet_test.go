package control

import (
	"context"
	"errors"
	"log/slog"
	"net/netip"
	"os"
	"sync"
	"testing"
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
	wire   *fakeWire
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
	s.sent = append(s.sent, fakeDgram{append([]byte(nil), b...), to})
	w, from := s.wire, s.local
	s.mu.Unlock()
	if w != nil {
		w.send(b, from, to)
	}
	return nil
}

func (s *fakeSocket) Send(b []byte) error {
	s.mu.Lock()
	p := s.peer
	s.mu.Unlock()
	return s.SendTo(b, p)
}

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
		if deadline.IsZero() {
			<-s.wake
			continue
		}
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

func (s *fakeSocket) Connect(peer netip.AddrPort) error {
	s.mu.Lock()
	s.peer = peer
	s.mu.Unlock()
	return nil
}
func (s *fakeSocket) SetTOS(tos uint8, _ bool) error { s.tos = tos; return nil }
func (s *fakeSocket) EnableRecvTOS(bool) error       { s.recvOn = true; return nil }
func (s *fakeSocket) LocalAddr() netip.AddrPort      { return s.local }
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
// With a wire, what one of its sockets sends reaches the socket bound at
// the destination, as on a loopback interface (connected sockets take
// datagrams from their peer only).
type fakeNet struct {
	mu       sync.Mutex
	next     uint16
	sockets  []*fakeSocket
	started  []*dataphase.Conn
	failOpen bool
	wire     *fakeWire
	// events are what every Data Phase it runs reports before it ends.
	events []dataphase.Event
}

// fakeWire joins the sockets of one or more fakeNets.
type fakeWire struct {
	mu    sync.Mutex
	bound map[netip.AddrPort]*fakeSocket
	// tap, when set, sees every datagram and may drop it (return false).
	tap func(b []byte, from, to netip.AddrPort) bool
}

func newFakeWire() *fakeWire { return &fakeWire{bound: map[netip.AddrPort]*fakeSocket{}} }

func (w *fakeWire) send(b []byte, from, to netip.AddrPort) {
	w.mu.Lock()
	dst := w.bound[to]
	tap := w.tap
	w.mu.Unlock()
	if dst == nil || (tap != nil && !tap(b, from, to)) {
		return
	}
	dst.mu.Lock()
	connected := dst.peer.IsValid()
	peer := dst.peer
	dst.mu.Unlock()
	if connected && peer != from {
		return
	}
	dst.deliver(b, from)
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
	if laddr.Addr().IsUnspecified() {
		// A wildcard bind answers on loopback here.
		a := netip.MustParseAddr("127.0.0.1")
		if laddr.Addr().Is6() && o.Family == dataphase.FamilyV6 {
			a = netip.IPv6Loopback()
		}
		laddr = netip.AddrPortFrom(a, laddr.Port())
	}
	s := newFakeSocket(laddr)
	s.wire = n.wire
	if n.wire != nil {
		n.wire.mu.Lock()
		n.wire.bound[laddr] = s
		n.wire.mu.Unlock()
	}
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
	for _, ev := range n.events {
		onEvent(ev)
	}
	close(d.done)
	return d
}

// inMemory starts a server with options o on a fake wire and returns it
// with a client network on the same wire; the server stops with the test.
func inMemory(t *testing.T, cfg ServerConfig, o ServerOptions) (*Server, *fakeNet, *fakeWire) {
	t.Helper()
	w := newFakeWire()
	cfg.BindAddrs = []string{"127.0.0.1"}
	s, err := NewServerWith(cfg, &fakeNet{wire: w}, slog.New(slog.DiscardHandler), o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Serve(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return s, &fakeNet{wire: w, next: 50000}, w
}
