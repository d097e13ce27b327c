// Package sim is an executor with virtual time: it drives two Data Phase
// cores, a client and a server, over a scripted link (delay, a bottleneck
// rate with a finite queue, loss, reordering) and scripted executor stalls
// and send refusals, with no socket and no real clock. The algorithms and
// the contract every executor must honour are tested here, deterministically
// and far faster than real time.
package sim

import (
	"sort"
	"time"

	"github.com/udpstp/udpstp/clock"
	"github.com/udpstp/udpstp/dataphase"
)

// Core is what the simulator drives: the executors' contract.
type Core = dataphase.Core

// Link is one direction of the simulated path.
type Link struct {
	Delay time.Duration // one-way propagation delay
	// RateBps, when non-zero, is a bottleneck: datagrams are serialised at
	// this rate (bits per second of IP packet: UDP payload + Overhead) behind
	// a queue of QueueBytes; a datagram that does not fit is dropped.
	RateBps    float64
	QueueBytes int
	Overhead   int // bytes added to the UDP payload for the rate (28: IPv4)
	// Drop, when set, is asked for every datagram (numbered from 0 per
	// direction) and drops it when it returns true.
	Drop func(i int) bool
	// Swap, when set, delays datagram i until after datagram i+1.
	Swap func(i int) bool
	// TOS is the traffic class the datagrams arrive with.
	TOS    uint8
	HasTOS bool
}

// Endpoint is one end's executor behaviour.
type Endpoint struct {
	Core Core
	// Stalls are windows of virtual time (relative to the start) in which
	// this executor gets no turn, as a descheduled thread would.
	Stalls [][2]time.Duration
	// Accept, when set, is how many datagrams of a plan of n the "kernel"
	// accepts at virtual time t (partial sends, backpressure).
	Accept func(t time.Duration, n int) int
	// OnEvent receives the core's events.
	OnEvent func(t time.Duration, ev dataphase.Event)
	// Turns counts the turns this executor had.
	Turns int

	sendBuf dataphase.SendBuffer
	recv    dataphase.RecvBatch
	inbox   []packet
}

type packet struct {
	at   clock.Time // arrival
	data [dataphase.RecvSlotLen]byte
	n    int // bytes kept
	len  int // real length
	tos  uint8
	has  bool
}

// Sim runs one simulation.
type Sim struct {
	Client, Server *Endpoint
	Up, Down       Link // Up: client to server
	// WallOffset makes the two ends' wall clocks differ (ns, server minus
	// client), as unsynchronised hosts do.
	WallOffset int64

	now      clock.Time
	upFree   clock.Time
	downFree clock.Time
	upN      int
	downN    int
	upQueue  []queued
	downQ    []queued
}

type queued struct {
	done  clock.Time
	bytes int
}

// Start is the virtual activation instant.
const Start clock.Time = 1_000_000_000

// WallBase is the wall clock at Start (2026-11-30, like the captures).
const WallBase int64 = 1796009000 * 1e9

// Now returns the current virtual Test Time Base instant.
func (s *Sim) Now() clock.Time { return s.now }

// pair returns the clock pair of one end at the current instant.
func (s *Sim) pair(server bool) clock.Pair {
	w := WallBase + int64(s.now-Start)
	if server {
		w += s.WallOffset
	}
	return clock.Pair{Mono: s.now, Wall: w}
}

// Run advances virtual time until both cores are done or limit passes. It
// returns the virtual time elapsed.
func (s *Sim) Run(limit time.Duration) time.Duration {
	if s.now == 0 {
		s.now = Start
	}
	end := Start + clock.Time(limit)
	for s.now <= end {
		if s.Client.Core.Done() && s.Server.Core.Done() {
			break
		}
		s.turn(s.Client, false)
		s.turn(s.Server, true)
		next := s.next()
		if next <= s.now {
			next = s.now + 1
		}
		s.now = next
	}
	return time.Duration(s.now - Start)
}

func (s *Sim) stalled(e *Endpoint) (bool, clock.Time) {
	rel := time.Duration(s.now - Start)
	for _, w := range e.Stalls {
		if rel >= w[0] && rel < w[1] {
			return true, Start + clock.Time(w[1])
		}
	}
	return false, 0
}

// next is the earliest instant anything happens.
func (s *Sim) next() clock.Time {
	n := clock.Never
	for _, e := range []*Endpoint{s.Client, s.Server} {
		if e.Core.Done() {
			continue
		}
		if st, until := s.stalled(e); st {
			n = min(n, until)
			continue
		}
		n = min(n, e.Core.Deadline())
		if len(e.inbox) > 0 {
			n = min(n, e.inbox[0].at)
		}
	}
	return n
}

// turn gives one executor a turn if it is due: sends first, then reads, as
// the real executors do.
func (s *Sim) turn(e *Endpoint, server bool) {
	if e.Core.Done() {
		return
	}
	if st, _ := s.stalled(e); st {
		return
	}
	arrived := len(e.inbox) > 0 && e.inbox[0].at <= s.now
	if e.Core.Deadline() > s.now && !arrived {
		return
	}
	e.Turns++
	pair := s.pair(server)
	for i := 0; i < 4*dataphase.MaxPlan && e.Core.Poll(pair, &e.sendBuf); i++ {
		n := e.sendBuf.N
		if e.Accept != nil {
			n = max(0, min(n, e.Accept(time.Duration(s.now-Start), n)))
		}
		s.transmit(&e.sendBuf, n, server)
		e.Core.Sent(n)
		if n < e.sendBuf.N {
			break
		}
	}
	s.deliver(e, pair)
	s.events(e)
	// Deliver what arrived while we were sending too.
	if len(e.inbox) > 0 && e.inbox[0].at <= s.now && !e.Core.Done() {
		s.deliver(e, pair)
		s.events(e)
	}
}

func (s *Sim) events(e *Endpoint) {
	for _, ev := range e.Core.Events() {
		if e.OnEvent != nil {
			e.OnEvent(time.Duration(s.now-Start), ev)
		}
	}
}

func (s *Sim) deliver(e *Endpoint, pair clock.Pair) {
	b := &e.recv
	b.N = 0
	b.Pair = pair
	i := 0
	for i < len(e.inbox) && e.inbox[i].at <= s.now && b.N < dataphase.MaxRecv {
		p := &e.inbox[i]
		copy(b.Buf(b.N), p.data[:p.n])
		b.Dgrams[b.N] = dataphase.InDatagram{Len: p.len, Time: p.at, TOS: p.tos, HasTOS: p.has}
		b.N++
		i++
	}
	e.inbox = e.inbox[i:]
	if b.N > 0 {
		e.Core.Receive(b)
	}
}

// transmit puts the first n datagrams of b on the link away from this end.
func (s *Sim) transmit(b *dataphase.SendBuffer, n int, server bool) {
	l, free, cnt, to := &s.Up, &s.upFree, &s.upN, s.Server
	q := &s.upQueue
	if server {
		l, free, cnt, to = &s.Down, &s.downFree, &s.downN, s.Client
		q = &s.downQ
	}
	for i := 0; i < n; i++ {
		d := b.Dgrams[i]
		idx := *cnt
		*cnt++
		if l.Drop != nil && l.Drop(idx) {
			continue
		}
		depart := s.now
		if l.RateBps > 0 {
			size := int(d.Len) + l.Overhead
			// Forget what has left the queue by now; drop what it
			// cannot hold.
			for len(*q) > 0 && (*q)[0].done <= s.now {
				*q = (*q)[1:]
			}
			backlog := 0
			for _, x := range *q {
				backlog += x.bytes
			}
			if l.QueueBytes > 0 && backlog+size > l.QueueBytes {
				continue
			}
			start := max(*free, s.now)
			*free = start + clock.Time(float64(size*8)/l.RateBps*1e9)
			depart = *free
			*q = append(*q, queued{done: *free, bytes: size})
		}
		p := packet{at: depart + clock.Time(l.Delay), len: int(d.Len), tos: l.TOS, has: l.HasTOS}
		p.n = copy(p.data[:], b.Slot(i))
		if l.Swap != nil && l.Swap(idx) {
			p.at += 1 // lands after the next one if that follows closely
			p.at += clock.Time(50 * time.Microsecond)
		}
		to.inbox = insert(to.inbox, p)
	}
}

// insert keeps an inbox ordered by arrival, stable for equal times.
func insert(in []packet, p packet) []packet {
	i := sort.Search(len(in), func(i int) bool { return in[i].at > p.at })
	in = append(in, packet{})
	copy(in[i+1:], in[i:])
	in[i] = p
	return in
}
