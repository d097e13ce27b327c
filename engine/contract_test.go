package engine

// The contract suite: the same tests run against every executor, the
// simulator (virtual time), the Engine Thread per Test Connection and the
// pool, with one Test Connection per pool and, on Linux, with 32 on one
// Engine Thread (real sockets on loopback). What they check is the
// executor's side of the Data Phase interface: every plan gets its send and
// its Sent count, nothing is sent before it is due, datagrams arrive in
// order with receive times on the Test Time Base, partial sends stay
// deferred, and a stalled executor skips Bursts within the catch-up budget
// instead of flooding afterwards. Timing precision is measured in
// benchmarks, not asserted here. `go test -tags portable` runs it on the
// portable socket and executor (socket_other.go, wait_other.go) on Linux.

import (
	"encoding/binary"
	"sync"
	"testing"
	"time"

	"github.com/udpstp/udpstp/clock"
	"github.com/udpstp/udpstp/dataphase"
	"github.com/udpstp/udpstp/engine/sim"
)

// executor runs a client core and a server core against each other.
type executor interface {
	name() string
	// start returns the activation instant the cores are built with.
	start() clock.Pair
	// run drives both cores until both are done or limit passes. stall,
	// when non-zero, keeps the server's executor from running for
	// stall[1] from stall[0] after the start. accept, when set, scripts
	// how many datagrams of a server plan are accepted.
	run(t *testing.T, client, server Core, o runOpts) (cEv, sEv []dataphase.Event)
}

type runOpts struct {
	limit  time.Duration
	stall  [2]time.Duration
	accept func(n int) int
}

// simExecutor is the virtual-time executor.
type simExecutor struct{}

func (simExecutor) name() string { return "simulator" }

func (simExecutor) start() clock.Pair { return clock.Pair{Mono: sim.Start, Wall: sim.WallBase} }

func (simExecutor) run(t *testing.T, client, server Core, o runOpts) (cEv, sEv []dataphase.Event) {
	s := &sim.Sim{
		Client: &sim.Endpoint{Core: client, OnEvent: func(_ time.Duration, e dataphase.Event) { cEv = append(cEv, e) }},
		Server: &sim.Endpoint{Core: server, OnEvent: func(_ time.Duration, e dataphase.Event) { sEv = append(sEv, e) }},
		Up:     sim.Link{Delay: 100 * time.Microsecond},
		Down:   sim.Link{Delay: 100 * time.Microsecond},
	}
	if o.stall[1] > 0 {
		s.Server.Stalls = [][2]time.Duration{{o.stall[0], o.stall[0] + o.stall[1]}}
	}
	if o.accept != nil {
		s.Server.Accept = func(_ time.Duration, n int) int { return o.accept(n) }
	}
	s.Run(o.limit)
	return cEv, sEv
}

// threadExecutor is one Engine Thread per Test Connection over loopback.
type threadExecutor struct{}

func (threadExecutor) name() string { return "engine-thread" }

func (threadExecutor) start() clock.Pair { return clock.Now() }

func (threadExecutor) run(t *testing.T, client, server Core, o runOpts) (cEv, sEv []dataphase.Event) {
	return runOnLoopback(t, client, server, o, func(sock *Socket, core Core, onEvent func(dataphase.Event), _ bool) testConn {
		return RunConn(sock, core, onEvent, nil)
	})
}

// runOnLoopback is run for the executors over real sockets: a socket pair
// on loopback, the server's stall as o asks, the client's core and then the
// server's started by start and driven until both are done or o.limit
// passes, when both are stopped.
func runOnLoopback(t *testing.T, client, server Core, o runOpts,
	start func(sock *Socket, core Core, onEvent func(dataphase.Event), server bool) testConn) (cEv, sEv []dataphase.Event) {
	// Partial sends: loopback never refuses one, so the server socket's
	// send call takes only what o.accept allows and refuses the rest with
	// EAGAIN, as a full send buffer does; without GSO, so that a message
	// is a datagram.
	a, b := openPair(t, "127.0.0.1:0", SocketOptions{SockBuf: 4 << 20, NoGSO: o.accept != nil})
	if o.accept != nil {
		acceptPartly(t, b, o.accept)
	}
	if o.stall[1] > 0 {
		server = &stallCore{Core: server, at: clock.Mono().Add(o.stall[0]), d: o.stall[1]}
	}
	var mu sync.Mutex
	rec := func(dst *[]dataphase.Event) func(dataphase.Event) {
		return func(e dataphase.Event) { mu.Lock(); *dst = append(*dst, e); mu.Unlock() }
	}
	cc := start(a, client, rec(&cEv), false)
	sc := start(b, server, rec(&sEv), true)
	limit := time.After(o.limit)
	for _, c := range []testConn{cc, sc} {
		select {
		case <-c.Done():
		case <-limit:
			cc.Stop()
			sc.Stop()
			<-cc.Done()
			<-sc.Done()
		}
	}
	mu.Lock()
	defer mu.Unlock()
	return cEv, sEv
}

// stallCore blocks its Engine Thread once, as a descheduled thread would be.
type stallCore struct {
	Core
	at   clock.Time
	d    time.Duration
	done bool
}

func (s *stallCore) Poll(now clock.Pair, b *dataphase.SendBuffer) bool {
	if !s.done && now.Mono >= s.at {
		s.done = true
		time.Sleep(s.d)
	}
	return s.Core.Poll(now, b)
}

// executors: the pool's shared executor (32 on one Engine Thread) is
// Linux's only (sharedPoolExecutors): the portable Pool runs each Test
// Connection on its own Engine Thread.
var executors = append([]executor{simExecutor{}, threadExecutor{}, poolExecutor{}}, sharedPoolExecutors...)

// coreParams are a short test's parameters (a core accepts any duration;
// only the Control Phase insists on OB-UDPST's 5 s minimum).
func coreParams(upstream, server bool, test time.Duration) dataphase.Params {
	p := dataphase.Params{
		Server: server, Upstream: upstream,
		TestIntTime: test, TrialInt: 50 * time.Millisecond, SubIntPeriod: 500 * time.Millisecond,
		LowThresh: 30, UpperThresh: 90, SeqErrThresh: 10, SlowAdjThresh: 3, HighSpeedDelta: 10,
		IgnoreOooDup: true, SRIndexConf: dataphase.AutoRateIndex, Seed: 7,
	}
	table := dataphase.BuildRateTable(dataphase.TableOptions{})
	if server {
		p.Table, p.PoliceOverRate = table, true
		p.PeerBytesIn, p.PeerBytesOut = 104, 104 // a Test Activation Request and Response
	} else {
		p.InitialRate = table[0]
	}
	return p
}

func endOf(evs []dataphase.Event) dataphase.EndReason {
	for _, e := range evs {
		if e.Kind == dataphase.EvEnd {
			return e.End
		}
	}
	return 0
}

func subsOf(evs []dataphase.Event) []dataphase.SubIntervalResult {
	var out []dataphase.SubIntervalResult
	for _, e := range evs {
		if e.Kind == dataphase.EvSubInterval {
			out = append(out, e.SubInt)
		}
	}
	return out
}

// TestContractComplete: a whole short test each way completes with the
// stop handshake on both ends and every Sub-Interval, without sequence
// errors on a clean path.
//
// The rate is a fixed row 20 (20 Mbit/s): the contract does not depend on
// the rate, and at a searched rate a receiver that a busy machine starves
// overflows its socket buffer, which is loss no executor causes (4 MB hold
// 1.6 s at row 20). Each Sub-Interval closes at the first Status PDU after
// its period, so a receiver whose Status PDUs a busy machine makes late
// drifts, and its last Sub-Interval can fall past the stop: the simulator
// must report all four, a real executor three or four.
func TestContractComplete(t *testing.T) {
	for _, x := range executors {
		for _, up := range []bool{false, true} {
			name := x.name() + "/downstream"
			if up {
				name = x.name() + "/upstream"
			}
			t.Run(name, func(t *testing.T) {
				st := x.start()
				cp, sp := coreParams(up, false, 2*time.Second), coreParams(up, true, 2*time.Second)
				cp.SRIndexConf, sp.SRIndexConf = 20, 20
				client := dataphase.NewConn(cp, st)
				server := dataphase.NewConn(sp, st)
				cEv, sEv := x.run(t, client, server, runOpts{limit: 8 * time.Second})
				if c, s := endOf(cEv), endOf(sEv); c != dataphase.EndStopped || s != dataphase.EndStopped {
					t.Fatalf("ends: client %v server %v", c, s)
				}
				subs := subsOf(cEv)
				_, simulated := x.(simExecutor)
				if len(subs) > 4 || len(subs) < 3 || simulated && len(subs) != 4 {
					t.Fatalf("%d Sub-Intervals, want 4", len(subs))
				}
				for _, r := range subs {
					if r.Stats.SeqErrLoss+r.Stats.SeqErrOoo+r.Stats.SeqErrDup != 0 || r.Stats.RxDatagrams == 0 {
						t.Errorf("Sub-Interval %d: %+v", r.Seq, r.Stats)
					}
				}
			})
		}
	}
}

// probe is a core that sends n datagrams, one every interval, each carrying
// its sequence number and its due time, and checks what it receives: order,
// and receive times on the Test Time Base between the send and the batch's
// clock pair. It ends once it has sent n and received want, or at until, a
// backstop far beyond what a busy machine needs.
type probe struct {
	t        *testing.T
	n        int
	want     int
	interval clock.Time
	next     clock.Time
	sentSeq  int
	early    int
	plans    int
	sentCnt  int
	gotSeq   uint32
	got      int
	disorder int
	domain   int
	wallOff  int
	done     bool
	until    clock.Time
	events   []dataphase.Event
	real     bool
}

func (p *probe) Poll(now clock.Pair, b *dataphase.SendBuffer) bool {
	b.N = 0
	if p.done {
		return false
	}
	if now.Mono >= p.until || p.complete() {
		p.done = true
		p.events = append(p.events, dataphase.Event{Kind: dataphase.EvEnd, End: dataphase.EndStopped})
		return false
	}
	// The core sends nothing before it is due by the clock it is given; a
	// clock ahead of the real one would make it. The turn's clock runs on
	// from its pair at the wall clock's rate, so the wall clock is the
	// reference (it is what time.Now reads).
	if p.real && now.Wall > time.Now().UnixNano()+int64(50*time.Microsecond) {
		p.early++
	}
	if p.sentSeq >= p.n || now.Mono < p.next {
		return false
	}
	b.Dgrams[0] = dataphase.OutDatagram{HdrLen: 24, Len: 100}
	s := b.Slot(0)
	binary.BigEndian.PutUint32(s[0:], 0xC0DE)
	binary.BigEndian.PutUint32(s[4:], uint32(p.sentSeq+1))
	binary.BigEndian.PutUint64(s[8:], uint64(now.Mono))
	binary.BigEndian.PutUint64(s[16:], uint64(p.next))
	b.N = 1
	p.plans++
	p.next += p.interval
	return true
}

func (p *probe) Sent(n int) {
	p.sentCnt += n
	p.sentSeq += n
}

func (p *probe) Receive(b *dataphase.RecvBatch) {
	if p.real {
		// On the wall clock, not the raw one (decades apart); how long
		// ago is the scheduler's.
		if d := time.Now().UnixNano() - b.Pair.Wall; d < 0 || d > int64(time.Minute) {
			p.wallOff++
		}
	}
	for i := 0; i < b.N; i++ {
		d := b.Data(i)
		if len(d) < 24 || binary.BigEndian.Uint32(d) != 0xC0DE {
			continue
		}
		seq := binary.BigEndian.Uint32(d[4:])
		sentAt := clock.Time(binary.BigEndian.Uint64(d[8:]))
		if seq != p.gotSeq+1 {
			p.disorder++
		}
		p.gotSeq = seq
		p.got++
		// Kernel receive times are CLOCK_REALTIME converted through the
		// batch's clock pair: off by the pair's width and by how far the
		// two clocks ran apart since the datagram arrived (receiveSlack).
		tm := b.Dgrams[i].Time
		if slack := receiveSlack(b.Pair.Mono - tm); tm < sentAt-slack || tm > b.Pair.Mono+slack {
			p.domain++
			p.t.Logf("datagram %d: received %v after its send time, %v before the batch pair", seq, tm.Sub(sentAt), b.Pair.Mono.Sub(tm))
		}
	}
}

// complete reports whether the probe sent and received all it was to.
func (p *probe) complete() bool { return p.sentSeq >= p.n && p.got >= p.want }

func (p *probe) Deadline() clock.Time {
	if p.done {
		return clock.Never
	}
	if p.complete() {
		return 0
	}
	if p.sentSeq < p.n {
		return min(p.next, p.until)
	}
	return p.until
}

func (p *probe) Stop()      { p.until = 0 }
func (p *probe) Fail(error) { p.done = true }
func (p *probe) Done() bool { return p.done }
func (p *probe) Events() []dataphase.Event {
	e := p.events
	p.events = nil
	return e
}

// TestContractSpacingOrderingDomain: 200 datagrams due every millisecond
// are all sent, none before it is due (no executor's clock runs ahead of
// the real one), all received in order, with receive times between their
// send time and the receiving batch's clock pair. The probes end when all
// is sent and received; a busy machine only makes that later.
func TestContractSpacingOrderingDomain(t *testing.T) {
	for _, x := range executors {
		t.Run(x.name(), func(t *testing.T) {
			st := x.start()
			_, simulated := x.(simExecutor)
			real := !simulated
			backstop := st.Mono + clock.Time(8*time.Second)
			tx := &probe{t: t, n: 200, interval: clock.Time(time.Millisecond), next: st.Mono + clock.Time(5*time.Millisecond),
				until: backstop, real: real}
			rx := &probe{t: t, want: 200, until: backstop, real: real}
			x.run(t, rx, tx, runOpts{limit: 10 * time.Second})
			if tx.sentCnt != 200 || tx.plans != 200 {
				t.Errorf("sent %d datagrams in %d plans, want 200", tx.sentCnt, tx.plans)
			}
			if tx.early+rx.early != 0 {
				t.Errorf("%d polls with a clock ahead of the wall clock", tx.early+rx.early)
			}
			if rx.got != 200 || rx.disorder != 0 {
				t.Errorf("received %d, %d out of order", rx.got, rx.disorder)
			}
			if rx.domain != 0 || rx.wallOff != 0 {
				t.Errorf("%d receive times outside [send, batch pair]; %d batch pairs off the wall clock", rx.domain, rx.wallOff)
			}
		})
	}
}

// TestContractPartialSends: when the kernel takes only part of a plan the
// executor reports exactly that, and the core defers the rest with its
// sequence numbers: the receiver counts no loss.
func TestContractPartialSends(t *testing.T) {
	for _, x := range executors {
		t.Run(x.name(), func(t *testing.T) {
			st := x.start()
			client := dataphase.NewConn(coreParams(false, false, 2*time.Second), st)
			server := dataphase.NewConn(coreParams(false, true, 2*time.Second), st)
			k, cut := 0, 0
			cEv, _ := x.run(t, client, server, runOpts{limit: 8 * time.Second, accept: func(n int) int {
				k++
				if k%5 == 0 {
					cut++
					return n / 3
				}
				return n
			}})
			if endOf(cEv) != dataphase.EndStopped {
				t.Fatalf("client end %v", endOf(cEv))
			}
			if cut == 0 {
				t.Fatal("no plan was cut short")
			}
			for _, r := range subsOf(cEv) {
				if r.Stats.SeqErrLoss != 0 {
					t.Errorf("Sub-Interval %d counts %d lost to local backpressure", r.Seq, r.Stats.SeqErrLoss)
				}
			}
		})
	}
}

// TestContractCatchUpUnderStall: the server's executor is stalled for
// 30 ms in the middle of a downstream test at a fixed row 100 (transmitter
// 1 alone, one datagram every 100 us). Bursts more than the 1 ms catch-up
// budget late are skipped and counted, never sent in a flood: no plan
// exceeds one deferred Burst plus one new one.
//
// The row is fixed so that what the stall owes does not depend on how far
// a search ramped, which a busy machine decides: 30 ms owe 300 Bursts, of
// which all but about the budget's 10 are skipped. The simulator stalls
// only there, so its count is exact; a real thread on a shared machine is
// also late elsewhere and skips more, so only the stall's own share is
// its floor.
func TestContractCatchUpUnderStall(t *testing.T) {
	const (
		row   = 100
		stall = 30 * time.Millisecond
		owed  = int(stall / (100 * time.Microsecond)) // row 100's transmitter 1
	)
	for _, x := range executors {
		t.Run(x.name(), func(t *testing.T) {
			st := x.start()
			cp, sp := coreParams(false, false, 3*time.Second), coreParams(false, true, 3*time.Second)
			cp.SRIndexConf, sp.SRIndexConf = row, row
			client := dataphase.NewConn(cp, st)
			server := dataphase.NewConn(sp, st)
			spy := &maxPlanCore{Core: server}
			_, sEv := x.run(t, client, spy, runOpts{limit: 10 * time.Second, stall: [2]time.Duration{1500 * time.Millisecond, stall}})
			var skipped int
			for _, r := range subsOf(sEv) {
				skipped += int(r.SkippedBursts)
			}
			t.Logf("skipped %d Bursts; a 30 ms stall owes %d", skipped, owed)
			if skipped < owed-50 || (x.name() == "simulator" && skipped > owed) {
				t.Errorf("skipped %d Bursts over a %v stall that owes %d", skipped, stall, owed)
			}
			if spy.max > dataphase.MaxPlan {
				t.Errorf("a plan of %d datagrams", spy.max)
			}
		})
	}
}

type maxPlanCore struct {
	Core
	max int
}

func (m *maxPlanCore) Poll(now clock.Pair, b *dataphase.SendBuffer) bool {
	ok := m.Core.Poll(now, b)
	m.max = max(m.max, b.N)
	return ok
}
