package capacity

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/udpstp/udpstp/clock"
	"github.com/udpstp/udpstp/control"
	"github.com/udpstp/udpstp/dataphase"
	"github.com/udpstp/udpstp/engine"
	"github.com/udpstp/udpstp/internal/testkit/netlab"
)

// Kind says which implementation a server binary is.
type Kind int

const (
	// Udpstp is `udpstp server`.
	Udpstp Kind = iota
	// OBUDPST is OB-UDPST's `udpst` as a server.
	OBUDPST
)

// Server is a server binary under test.
type Server struct {
	Name string   // for the table
	Bin  string   // path
	Kind Kind     //
	Env  []string // added to its environment (udpstp's experimental settings)
}

// setupsInFlight is how many of its connections the generator sets up at
// once: a client's most (OB-UDPST's -C maximum).
const setupsInFlight = 24

// startSpread: each generator connection starts at a random moment within
// it, so that the N schedules' phases spread over the 1 ms period as
// independent clients' do.
const startSpread = 20 * time.Millisecond

// CheckConfig is one run of the capacity check.
type CheckConfig struct {
	Lab       *netlab.Lab
	Server    Server
	N         int  // Test Connections
	Upstream  bool // else downstream
	Seconds   int  // each test's duration (-t)
	Row       int  // the fixed sending rate row (-I); 4 if 0
	ServerCPU int  // the CPU the server is pinned to
	Port      int  // the server's control port
	// GenGroup is the generator's grouping window (engine.PoolOptions):
	// upstream, where the generator sends, it lets one CPU send for more
	// Test Connections.
	GenGroup time.Duration
}

// Result is what one run measured.
type Result struct {
	Server   string
	Upstream bool
	N        int

	Activated int // Test Connections that reached their Data Phase
	Ended     int // of those, how many ended with the stop handshake
	SetupErrs []string

	Planned, Delivered float64 // Load PDUs over the Sub-Intervals counted
	SkippedBursts      int64   // the Load Sender's; -1: not known
	Lag                []time.Duration
	LagP50, LagP99     time.Duration
	LagSamples         int
	// AgeP50 and AgeP99 are the Load PDUs' stamp to arrival (downstream;
	// 0: not known): the receive time less the send time the server wrote
	// in the PDU, both on the one kernel's CLOCK_REALTIME.
	AgeP50, AgeP99 time.Duration

	Window        time.Duration // the steady window CPU was measured over
	ServerCPU     float64       // CPUs busy
	ServerWakeups float64       // per second
	// BusiestCPU and BusiestWakeups are the server's busiest thread's
	// (an Engine Thread's, or OB-UDPST's one thread's) share of the
	// above: the floor's figures are those of its one sending thread, so
	// these are what compares with it thread for thread; the rest is the
	// runtime's other threads (Go's sysmon and scheduler hand-offs).
	BusiestCPU, BusiestWakeups float64
	// SyscallsPerPacket is the server's system calls over the UDP
	// datagrams of its namespace, over the window; -1: not known
	// (syscalls_linux.go).
	SyscallsPerPacket float64
	ServerRunq        float64 // time the server waited runnable for a CPU, per second
	OtherCPU          float64 // CPUs busy with neither the server nor the generator
	GenCPU            float64
	GenSkipped        int64 // the generator's own Skipped Bursts (upstream)
	RcvbufErrsGen     int64 // receive buffer overflows in the client namespace
	RcvbufErrsSrv     int64 // and in the server namespace
	Notes             []string

	// Floor marks the sending floor's row (SendFloor): no protocol, so
	// no Skipped Bursts, send lag or generator figures.
	Floor bool
}

// Share returns the delivered share of the plan in percent.
func (r *Result) Share() float64 {
	if r.Planned == 0 {
		return 0
	}
	return 100 * r.Delivered / r.Planned
}

// labNet opens the generator's sockets in the lab's client namespace.
type labNet struct {
	lab *netlab.Lab
}

var _ control.Network = (*labNet)(nil)

func (n *labNet) ListenUDP(laddr netip.AddrPort, o control.SocketOptions) (control.Socket, error) {
	var s *engine.Socket
	err := n.lab.Do(n.lab.ClientNS, func() error {
		var err error
		s, err = engine.OpenUDP(laddr, engine.SocketOptions{Family: o.Family, V6Only: o.V6Only, SockBuf: o.SockBuf})
		return err
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

func (n *labNet) RunDataPhase(control.Socket, *dataphase.Conn, func(dataphase.Event)) control.DataPhase {
	panic("capacity: the generator runs its Data Phases itself")
}

// lagCore records the kernel receive time of each datagram of one kind
// (Load PDUs downstream, Status PDUs upstream) by its sequence number,
// then hands the batch to the client's core. Downstream it also records
// each Load PDU's age: its receive time less the send time in it.
type lagCore struct {
	*dataphase.Conn
	id  uint16
	arr []clock.Time // by sequence number; 0: not received
	age []int64      // by sequence number, ns; nil upstream
}

func (l *lagCore) Receive(b *dataphase.RecvBatch) {
	for i := 0; i < b.N; i++ {
		d := b.Data(i)
		if len(d) < 8 || binary.BigEndian.Uint16(d) != l.id {
			continue
		}
		if s := binary.BigEndian.Uint32(d[4:]); int64(s) < int64(len(l.arr)) && l.arr[s] == 0 {
			l.arr[s] = b.Dgrams[i].Time
			if l.age != nil && len(d) >= 28 {
				// lpduTime (dataphase.LoadHeader), and the receive
				// time on the wall clock by the pair it was taken with.
				sent := int64(binary.BigEndian.Uint32(d[20:]))*1e9 + int64(binary.BigEndian.Uint32(d[24:]))
				l.age[s] = b.Pair.WallAt(b.Dgrams[i].Time) - sent
			}
		}
	}
	l.Conn.Receive(b)
}

// lags computes the send lag of every received datagram (see the package
// doc): arrival minus the schedule, less the least of that over the next
// window sequence numbers.
func lags(arr []clock.Time, period time.Duration, window int) []time.Duration {
	d := make([]int64, len(arr))
	ok := make([]bool, len(arr))
	for s, a := range arr {
		if a != 0 {
			d[s] = int64(a) - int64(s)*int64(period)
			ok[s] = true
		}
	}
	var out []time.Duration
	for s := range arr {
		if !ok[s] {
			continue
		}
		m := d[s]
		for j := s + 1; j < len(arr) && j <= s+window; j++ {
			if ok[j] && d[j] < m {
				m = d[j]
			}
		}
		out = append(out, time.Duration(d[s]-m))
	}
	return out
}

// gapLags is the send lag of a timer that reschedules from when it fired
// (the Status PDUs of both servers): how much longer than the period each
// gap between consecutive datagrams was.
func gapLags(arr []clock.Time, period time.Duration) []time.Duration {
	var out []time.Duration
	for s := 1; s < len(arr); s++ {
		if arr[s] != 0 && arr[s-1] != 0 {
			out = append(out, max(0, time.Duration(arr[s]-arr[s-1])-period))
		}
	}
	return out
}

func percentile(s []time.Duration, p float64) time.Duration {
	if len(s) == 0 {
		return 0
	}
	return s[min(len(s)-1, int(p*float64(len(s))))]
}

// genConn is one Test Connection of the generator.
type genConn struct {
	mu   sync.Mutex
	subs []dataphase.SubIntervalResult
	end  dataphase.EndReason
	lag  *lagCore
	pc   *engine.PoolConn
	sock control.Socket
	at   time.Time // when its Data Phase started
}

// Run runs one capacity check.
func Run(ctx context.Context, cfg CheckConfig, tmp string) (*Result, error) {
	if cfg.Row == 0 {
		cfg.Row = 4
	}
	lab := cfg.Lab
	r := &Result{Server: cfg.Server.Name, Upstream: cfg.Upstream, N: cfg.N, SkippedBursts: -1}
	genErrs0, srvErrs0 := rcvbufErrors(lab, lab.ClientNS), rcvbufErrors(lab, lab.ServerNS)
	srv, err := startServer(lab, cfg.Server, cfg.Port, cfg.ServerCPU, tmp)
	if err != nil {
		return nil, err
	}
	defer srv.stop()

	pool := engine.NewPool(engine.PoolOptions{Threads: 1, Group: cfg.GenGroup})
	defer pool.Close()
	ccfg := control.DefaultClientConfig()
	ccfg.Servers = []control.ServerAddr{{Host: lab.ServerAddr.String(), Port: cfg.Port}}
	ccfg.Upstream = cfg.Upstream
	ccfg.SRIndex = uint16(cfg.Row)
	ccfg.TestIntTime = cfg.Seconds
	net := &labNet{lab: lab}
	conns := make([]*genConn, cfg.N)
	var wg sync.WaitGroup
	var mu sync.Mutex
	lagID, lagLen := uint16(dataphase.LoadPDUID), cfg.Seconds*1000+2000
	if cfg.Upstream {
		lagID, lagLen = dataphase.StatusPDUID, cfg.Seconds*20+100
	}
	// The generator stands for many clients at one address; it sets up
	// at most setupsInFlight connections at once, as clients of OB-UDPST's
	// maximum (-C 24) do one after another, so that the server's bound on
	// one source's connections awaiting activation
	// (control.MaxPendingPerSource) is not what the check measures.
	inFlight := make(chan struct{}, setupsInFlight)
	for i := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &genConn{}
			// Real clients arrive at random moments, so their schedules'
			// phases spread over the period; N set up at once would all
			// fall due together, which a server serves in one wake-up a
			// period. A random start within startSpread spreads them.
			time.Sleep(rand.N(startSpread))
			inFlight <- struct{}{}
			cc, err := control.Activate(ctx, net, &ccfg, ccfg.Servers[0], 0, uint16(1+rand.IntN(65535)), nil)
			<-inFlight
			if err != nil {
				mu.Lock()
				r.SetupErrs = append(r.SetupErrs, err.Error())
				mu.Unlock()
				return
			}
			core := dataphase.NewConn(cc.Params, cc.Activated)
			c.lag = &lagCore{Conn: core, id: lagID, arr: make([]clock.Time, lagLen)}
			if !cfg.Upstream {
				c.lag.age = make([]int64, lagLen)
			}
			c.sock = cc.Sock
			c.at = time.Now()
			c.pc = pool.Run(cc.Sock.(*engine.Socket), c.lag, func(ev dataphase.Event) {
				switch ev.Kind {
				case dataphase.EvSubInterval:
					c.mu.Lock()
					c.subs = append(c.subs, ev.SubInt)
					c.mu.Unlock()
				case dataphase.EvEnd:
					c.mu.Lock()
					c.end = ev.End
					c.mu.Unlock()
				}
			})
			conns[i] = c
		}()
	}
	wg.Wait()
	var first, last time.Time
	for _, c := range conns {
		if c == nil {
			continue
		}
		r.Activated++
		if first.IsZero() || c.at.Before(first) {
			first = c.at
		}
		if c.at.After(last) {
			last = c.at
		}
	}
	if r.Activated == 0 {
		return r, fmt.Errorf("no Test Connection started: %v", firstErrs(r.SetupErrs))
	}

	// The steady window.
	from := last.Add(time.Second)
	to := first.Add(time.Duration(cfg.Seconds)*time.Second - time.Second)
	if to.Sub(from) < time.Second {
		r.Notes = append(r.Notes, fmt.Sprintf("connections started %v apart: short window", last.Sub(first).Round(time.Millisecond)))
		from, to = last, first.Add(time.Duration(cfg.Seconds)*time.Second)
	}
	time.Sleep(time.Until(from))
	sys := countSyscalls(srv.pid())
	pk0 := udpPackets(lab, lab.ServerNS)
	th0 := threadSched(srv.pid())
	gen0 := total(threadSched(0))
	mb0 := machineBusy()
	t0 := time.Now()
	time.Sleep(time.Until(to))
	th1 := threadSched(srv.pid())
	pk1 := udpPackets(lab, lab.ServerNS)
	r.SyscallsPerPacket = perPacket(sys.stop(time.Since(t0)), pk1-pk0)
	gen1 := total(threadSched(0))
	mb1 := machineBusy()
	r.Window = time.Since(t0)
	sec := r.Window.Seconds()
	s0, s1, top := total(th0), total(th1), busiest(th0, th1)
	r.ServerCPU = (s1.cpu - s0.cpu).Seconds() / sec
	r.ServerRunq = (s1.runq - s0.runq).Seconds() / sec
	r.ServerWakeups = float64(s1.wakeups-s0.wakeups) / sec
	r.BusiestCPU, r.BusiestWakeups = top.cpu.Seconds()/sec, float64(top.wakeups)/sec
	r.GenCPU = (gen1.cpu - gen0.cpu).Seconds() / sec
	r.OtherCPU = max(0, (mb1-mb0).Seconds()/sec-r.ServerCPU-r.GenCPU)

	// The ends.
	limit := time.After(time.Duration(cfg.Seconds+10) * time.Second)
	for _, c := range conns {
		if c == nil {
			continue
		}
		select {
		case <-c.pc.Done():
		case <-limit:
			c.pc.Stop()
			<-c.pc.Done()
		}
		c.sock.Close()
	}
	r.RcvbufErrsGen = rcvbufErrors(lab, lab.ClientNS) - genErrs0
	r.RcvbufErrsSrv = rcvbufErrors(lab, lab.ServerNS) - srvErrs0
	if cfg.Server.Kind == Udpstp {
		r.SkippedBursts = serverSkipped(lab, srv.metrics, !cfg.Upstream)
	}
	srv.stop()

	// Delivered, skipped, lag.
	period, window := time.Millisecond, 100
	if cfg.Upstream {
		period = time.Duration(ccfg.TrialInt) * time.Millisecond
	}
	for _, c := range conns {
		if c == nil {
			continue
		}
		c.mu.Lock()
		if c.end == dataphase.EndStopped {
			r.Ended++
		}
		for _, s := range c.subs {
			if s.Seq < 2 || int(s.Seq) >= cfg.Seconds {
				continue
			}
			r.Planned += float64(s.Stats.DeltaTime) / 1000
			r.Delivered += float64(s.Stats.RxDatagrams)
			r.GenSkipped += int64(s.SkippedBursts)
		}
		c.mu.Unlock()
		if cfg.Upstream {
			r.Lag = append(r.Lag, gapLags(c.lag.arr, period)...)
		} else {
			r.Lag = append(r.Lag, lags(c.lag.arr, period, window)...)
		}
	}
	var ages []time.Duration
	for _, c := range conns {
		if c == nil {
			continue
		}
		for s, a := range c.lag.age {
			if c.lag.arr[s] != 0 {
				ages = append(ages, time.Duration(a))
			}
		}
	}
	slices.Sort(ages)
	r.AgeP50, r.AgeP99 = percentile(ages, 0.5), percentile(ages, 0.99)
	slices.Sort(r.Lag)
	r.LagSamples = len(r.Lag)
	r.LagP50, r.LagP99 = percentile(r.Lag, 0.5), percentile(r.Lag, 0.99)
	r.Lag = nil
	if cfg.Upstream {
		r.SkippedBursts = r.GenSkipped
	}
	if len(r.SetupErrs) > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("%d setups failed: %s", len(r.SetupErrs), firstErrs(r.SetupErrs)))
	}
	if r.Ended < r.Activated {
		r.Notes = append(r.Notes, fmt.Sprintf("%d of %d did not end with the stop handshake", r.Activated-r.Ended, r.Activated))
	}
	return r, nil
}

func firstErrs(errs []string) string {
	if len(errs) == 0 {
		return ""
	}
	return errs[0]
}

// serverSkipped reads the Skipped Bursts of udpstp's Test Connections of
// one direction (downstream: where it is the Load Sender) from its metrics
// endpoint, udpstp_skipped_bursts_total by direction, once no Test
// Connection runs (each counts its last Sub-Interval as it ends); -1 if
// it cannot be read.
func serverSkipped(lab *netlab.Lab, addr string, sender bool) int64 {
	dir := "upstream"
	if sender {
		dir = "downstream"
	}
	end := time.Now().Add(10 * time.Second)
	for {
		m, err := scrape(lab, addr)
		if err != nil {
			return -1
		}
		skipped, ok := m[`udpstp_skipped_bursts_total{direction="`+dir+`"}`]
		if !ok {
			return -1
		}
		running := m[`udpstp_running_connections{direction="downstream"}`] + m[`udpstp_running_connections{direction="upstream"}`]
		if running == 0 || time.Now().After(end) {
			return int64(skipped)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// scrape reads udpstp's metrics endpoint at addr in the server namespace:
// each series (name{labels}) and its value. The connection is dialled from
// that namespace and the request written on it by hand (http.Client would
// dial on another thread, outside it).
func scrape(lab *netlab.Lab, addr string) (map[string]float64, error) {
	var conn net.Conn
	err := lab.Do(lab.ServerNS, func() (err error) {
		conn, err = net.DialTimeout("tcp", addr, 5*time.Second)
		return err
	})
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(conn, "GET /metrics HTTP/1.1\r\nHost: %s\r\nAccept: text/plain\r\nConnection: close\r\n\r\n", addr)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("metrics: %s", resp.Status)
	}
	return seriesOf(resp.Body)
}

// seriesOf reads the text exposition format with Prometheus's own parser
// into each counter's and gauge's series, as name{label="value",...}
// with the labels sorted by name (as the format writes them).
func seriesOf(r io.Reader) (map[string]float64, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	m := map[string]float64{}
	for name, mf := range mfs {
		for _, s := range mf.GetMetric() {
			ls := make([]string, 0, len(s.GetLabel()))
			for _, l := range s.GetLabel() {
				ls = append(ls, l.GetName()+"="+strconv.Quote(l.GetValue()))
			}
			slices.Sort(ls)
			key := name
			if len(ls) > 0 {
				key += "{" + strings.Join(ls, ",") + "}"
			}
			switch {
			case s.Counter != nil:
				m[key] = s.GetCounter().GetValue()
			case s.Gauge != nil:
				m[key] = s.GetGauge().GetValue()
			case s.Untyped != nil:
				m[key] = s.GetUntyped().GetValue()
			}
		}
	}
	return m, nil
}
