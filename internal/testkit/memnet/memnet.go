// Package memnet is an in-memory network for tests of the Control Phase and
// of a client's run: the Sockets of one Wire reach each other as on a
// loopback interface (a connected socket takes datagrams from its peer
// only), every socket records what it sent, and a Net's Data Phases do what
// the test scripts instead of moving load.
//
// memnet imports neither control nor the engine, so that control's own
// tests can use it: its Socket has the method set of control.Socket, and a
// two-method adapter over Net (Listen, Run) makes a control.Network.
package memnet

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"os"
	"sync"
	"time"

	"github.com/udpstp/udpstp/dataphase"
)

// Datagram is one datagram a Socket sent (its destination) or holds (its
// source).
type Datagram struct {
	B    []byte
	Addr netip.AddrPort
}

// Socket is an in-memory UDP socket: what Deliver queues comes out of
// RecvFrom; what it sends is recorded and, on a Wire, delivered.
type Socket struct {
	mu     sync.Mutex
	local  netip.AddrPort
	in     []Datagram
	sent   []Datagram
	peer   netip.AddrPort
	tos    uint8
	recvOn bool
	closed bool
	wake   chan struct{}
	wire   *Wire
}

// NewSocket returns a socket bound to local on no Wire: what it sends is
// only recorded.
func NewSocket(local netip.AddrPort) *Socket {
	return &Socket{local: local, wake: make(chan struct{}, 1)}
}

// Deliver queues a datagram from from, as if it had arrived.
func (s *Socket) Deliver(b []byte, from netip.AddrPort) {
	s.mu.Lock()
	s.in = append(s.in, Datagram{append([]byte(nil), b...), from})
	s.mu.Unlock()
	s.signal()
}

func (s *Socket) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// SendTo records b and, on a Wire, delivers it to the socket bound at to.
func (s *Socket) SendTo(b []byte, to netip.AddrPort) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return net.ErrClosed
	}
	s.sent = append(s.sent, Datagram{append([]byte(nil), b...), to})
	w, from := s.wire, s.local
	s.mu.Unlock()
	if w != nil {
		w.Send(b, from, to)
	}
	return nil
}

// Send sends b to the connected peer.
func (s *Socket) Send(b []byte) error {
	s.mu.Lock()
	p := s.peer
	s.mu.Unlock()
	return s.SendTo(b, p)
}

// RecvFrom waits for a datagram until deadline (zero: without limit);
// Close ends the wait with net.ErrClosed.
func (s *Socket) RecvFrom(b []byte, deadline time.Time) (int, netip.AddrPort, error) {
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return 0, netip.AddrPort{}, net.ErrClosed
		}
		if len(s.in) > 0 {
			d := s.in[0]
			s.in = s.in[1:]
			s.mu.Unlock()
			return copy(b, d.B), d.Addr, nil
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
		t := time.NewTimer(wait)
		select {
		case <-s.wake:
		case <-t.C:
		}
		t.Stop()
	}
}

// Connect fixes the peer: on a Wire, datagrams from anyone else are dropped.
func (s *Socket) Connect(peer netip.AddrPort) error {
	s.mu.Lock()
	s.peer = peer
	s.mu.Unlock()
	return nil
}

// SetTOS records the DSCP/ECN byte asked for.
func (s *Socket) SetTOS(tos uint8, _ bool) error {
	s.mu.Lock()
	s.tos = tos
	s.mu.Unlock()
	return nil
}

// EnableRecvTOS records that the received TOS byte was asked for.
func (s *Socket) EnableRecvTOS(bool) error {
	s.mu.Lock()
	s.recvOn = true
	s.mu.Unlock()
	return nil
}

// LocalAddr is the address the socket is bound to.
func (s *Socket) LocalAddr() netip.AddrPort { return s.local }

// Close ends a RecvFrom in progress and every later one; it is idempotent.
func (s *Socket) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.signal()
	return nil
}

// Sent returns a copy of what the socket sent so far.
func (s *Socket) Sent() []Datagram {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Datagram(nil), s.sent...)
}

// TOS returns the DSCP/ECN byte last set.
func (s *Socket) TOS() uint8 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tos
}

// Closed reports whether Close was called.
func (s *Socket) Closed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// Wire joins the sockets of one or more Nets.
type Wire struct {
	mu    sync.Mutex
	bound map[netip.AddrPort]*Socket
	tap   func(b []byte, from, to netip.AddrPort) bool
}

// NewWire returns a Wire without sockets.
func NewWire() *Wire { return &Wire{bound: map[netip.AddrPort]*Socket{}} }

// SetTap makes f see every datagram before it is delivered; f returns
// false to drop it. nil removes the tap.
func (w *Wire) SetTap(f func(b []byte, from, to netip.AddrPort) bool) {
	w.mu.Lock()
	w.tap = f
	w.mu.Unlock()
}

// Send delivers b from from to the socket bound at to, if there is one
// and it takes datagrams from from (the tap permitting).
func (w *Wire) Send(b []byte, from, to netip.AddrPort) {
	w.mu.Lock()
	dst := w.bound[to]
	tap := w.tap
	w.mu.Unlock()
	if dst == nil || (tap != nil && !tap(b, from, to)) {
		return
	}
	dst.mu.Lock()
	peer := dst.peer
	dst.mu.Unlock()
	if peer.IsValid() && peer != from {
		return
	}
	dst.Deliver(b, from)
}

// Socket returns the socket bound at a, or nil.
func (w *Wire) Socket(a netip.AddrPort) *Socket {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.bound[a]
}

func (w *Wire) bind(s *Socket) {
	w.mu.Lock()
	w.bound[s.local] = s
	w.mu.Unlock()
}

// Net hands out Sockets on consecutive ports (on its Wire, if any) and
// runs Data Phases. Set its fields before its first use.
type Net struct {
	Wire *Wire
	// NextPort is the port of the previous socket bound to port 0: the
	// next one gets NextPort+1 (from 40001 when 0).
	NextPort uint16
	// FailOpen makes Listen fail, as a system out of sockets does.
	FailOpen bool
	// Events are what each Data Phase reports before it ends, at once,
	// when Script is nil.
	Events []dataphase.Event
	// Script, when set, plays each Data Phase on a goroutine of its own:
	// it emits the events it wants, may wait for Stop, and returns when
	// the Data Phase is over (its last event should be an EvEnd).
	Script func(d *DataPhase)

	mu      sync.Mutex
	sockets []*Socket
	started []*dataphase.Conn
}

// ErrNoSockets is Listen's error with FailOpen.
var ErrNoSockets = errors.New("memnet: no sockets left")

// Listen binds a new socket at laddr: port 0 takes the next port, and a
// wildcard address is loopback (::1 for FamilyV6, else 127.0.0.1).
func (n *Net) Listen(laddr netip.AddrPort, fam dataphase.Family) (*Socket, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.FailOpen {
		return nil, ErrNoSockets
	}
	if laddr.Port() == 0 {
		if n.NextPort == 0 {
			n.NextPort = 40000
		}
		n.NextPort++
		laddr = netip.AddrPortFrom(laddr.Addr(), n.NextPort)
	}
	if laddr.Addr().IsUnspecified() {
		a := netip.MustParseAddr("127.0.0.1")
		if laddr.Addr().Is6() && fam == dataphase.FamilyV6 {
			a = netip.IPv6Loopback()
		}
		laddr = netip.AddrPortFrom(a, laddr.Port())
	}
	s := NewSocket(laddr)
	if n.Wire != nil {
		s.wire = n.Wire
		n.Wire.bind(s)
	}
	n.sockets = append(n.sockets, s)
	return s, nil
}

// Sockets returns the sockets bound so far, in order.
func (n *Net) Sockets() []*Socket {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]*Socket(nil), n.sockets...)
}

// Started returns the cores of the Data Phases run so far, in order.
func (n *Net) Started() []*dataphase.Conn {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]*dataphase.Conn(nil), n.started...)
}

// Run starts a Data Phase of core: Script plays it, or Events are reported
// and it ends at once.
func (n *Net) Run(core *dataphase.Conn, onEvent func(dataphase.Event)) *DataPhase {
	n.mu.Lock()
	n.started = append(n.started, core)
	script, events := n.Script, n.Events
	n.mu.Unlock()
	d := &DataPhase{Core: core, emit: onEvent, stop: make(chan struct{}), done: make(chan struct{})}
	if script == nil {
		for _, ev := range events {
			onEvent(ev)
		}
		close(d.done)
		return d
	}
	go func() {
		defer close(d.done)
		script(d)
	}()
	return d
}

// DataPhase is a Data Phase a Net runs.
type DataPhase struct {
	Core *dataphase.Conn // what the Control Phase built for it
	emit func(dataphase.Event)
	once sync.Once
	stop chan struct{}
	done chan struct{}
}

// Stop asks the Data Phase to end: Stopped is closed. Safe from any
// goroutine, idempotent.
func (d *DataPhase) Stop() { d.once.Do(func() { close(d.stop) }) }

// Stopped is closed once Stop was called.
func (d *DataPhase) Stopped() <-chan struct{} { return d.stop }

// Done is closed after the script returned.
func (d *DataPhase) Done() <-chan struct{} { return d.done }

// Emit reports ev as the Data Phase's executor would.
func (d *DataPhase) Emit(ev dataphase.Event) { d.emit(ev) }

// Start runs serve (a server's Serve) on a goroutine of its own and
// returns what stops it: cancel serve's context and wait until it has
// returned (for a test's Cleanup).
func Start(serve func(context.Context) error) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		serve(ctx)
	}()
	return func() { cancel(); <-done }
}
