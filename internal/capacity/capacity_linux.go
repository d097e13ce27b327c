package capacity

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/udpstp/udpstp/clock"
	"github.com/udpstp/udpstp/control"
	"github.com/udpstp/udpstp/dataphase"
	"github.com/udpstp/udpstp/engine"
	"github.com/udpstp/udpstp/internal/netlab"
	"golang.org/x/sys/unix"
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

	Window        time.Duration // the steady window CPU was measured over
	ServerCPU     float64       // CPUs busy
	ServerWakeups float64       // per second
	ServerRunq    float64       // time the server waited runnable for a CPU, per second
	OtherCPU      float64       // CPUs busy with neither the server nor the generator
	GenCPU        float64
	GenSkipped    int64 // the generator's own Skipped Bursts (upstream)
	RcvbufErrsGen int64 // receive buffer overflows in the client namespace
	RcvbufErrsSrv int64 // and in the server namespace
	Notes         []string

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

// PinSelf confines every thread of this process, and so every thread it
// starts later, to cpus.
func PinSelf(cpus ...int) error {
	var set unix.CPUSet
	for _, c := range cpus {
		set.Set(c)
	}
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return err
	}
	for _, e := range ents {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if err := unix.SchedSetaffinity(tid, &set); err != nil && err != unix.ESRCH {
			return fmt.Errorf("sched_setaffinity(%d): %w", tid, err)
		}
	}
	return nil
}

// machineBusy returns the time all CPUs were busy since boot (/proc/stat,
// in the kernel's ticks, so coarse).
func machineBusy() time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	var busy int64
	for i, v := range f[1:] {
		if i == 3 || i == 4 { // idle, iowait
			continue
		}
		n, _ := strconv.ParseInt(v, 10, 64)
		busy += n
	}
	return time.Duration(busy) * time.Second / 100 // USER_HZ
}

// procSched returns, summed over every thread of process pid (self for
// 0), the time on a CPU, the time spent waiting runnable for one, and the
// voluntary context switches (each one a sleep, so a wake-up follows it).
func procSched(pid int) (cpu, runq time.Duration, wakeups int64) {
	dir := "/proc/self/task"
	if pid > 0 {
		dir = fmt.Sprintf("/proc/%d/task", pid)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		c, q, w := taskSched(filepath.Join(dir, e.Name()))
		cpu, runq, wakeups = cpu+c, runq+q, wakeups+w
	}
	return cpu, runq, wakeups
}

// taskSched reads one thread's /proc task directory: its schedstat (time
// on a CPU, time waiting for one) and its voluntary context switches.
func taskSched(dir string) (cpu, runq time.Duration, wakeups int64) {
	if b, err := os.ReadFile(filepath.Join(dir, "schedstat")); err == nil {
		var run, wait int64
		fmt.Sscan(string(b), &run, &wait)
		cpu, runq = time.Duration(run), time.Duration(wait)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "status")); err == nil {
		wakeups = parseVoluntary(string(b))
	}
	return cpu, runq, wakeups
}

// parseVoluntary returns voluntary_ctxt_switches from a task's status file.
func parseVoluntary(status string) int64 {
	for _, line := range strings.Split(status, "\n") {
		if v, ok := strings.CutPrefix(line, "voluntary_ctxt_switches:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

// rcvbufErrors reads Udp RcvbufErrors of namespace ns.
func rcvbufErrors(lab *netlab.Lab, ns string) int64 {
	var n int64
	_ = lab.Do(ns, func() error {
		b, err := os.ReadFile("/proc/thread-self/net/snmp")
		if err != nil {
			return err
		}
		var head []string
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Fields(line)
			if len(f) == 0 || f[0] != "Udp:" {
				continue
			}
			if head == nil {
				head = f
				continue
			}
			for i, h := range head {
				if h == "RcvbufErrors" && i < len(f) {
					n, _ = strconv.ParseInt(f[i], 10, 64)
				}
			}
		}
		return nil
	})
	return n
}

// serverProc is a running server.
type serverProc struct {
	cmd     *exec.Cmd
	logf    string
	metrics string // udpstp's metrics endpoint, host:port in the server namespace; "" for OB-UDPST
	done    chan struct{}
}

func startServer(lab *netlab.Lab, s Server, port, cpu int, dir string, extra ...string) (*serverProc, error) {
	addr := lab.ServerAddr.String()
	args := extra
	var metricsAddr string
	switch s.Kind {
	case Udpstp:
		// No per-source Setup rate limit: every connection of the
		// generator comes from one address at once. The metrics endpoint
		// (a TCP port of the control port's number) carries the Load
		// Sender's Skipped Bursts by direction.
		metricsAddr = net.JoinHostPort(addr, strconv.Itoa(port))
		args = append([]string{"server", "-p", strconv.Itoa(port), "--setup-rate", "0", "--metrics-listen", metricsAddr},
			append(args, addr)...)
	case OBUDPST:
		args = append([]string{"-p", strconv.Itoa(port)}, append(args, addr)...)
	}
	logf := filepath.Join(dir, fmt.Sprintf("server-%d.log", port))
	f, err := os.Create(logf)
	if err != nil {
		return nil, err
	}
	cmd := lab.Command(lab.ServerNS, s.Bin, args...)
	if cpu >= 0 {
		cmd = lab.Command(lab.ServerNS, "taskset", append([]string{"-c", strconv.Itoa(cpu), s.Bin}, args...)...)
	}
	cmd.Env = append(os.Environ(), s.Env...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", s.Name, err)
	}
	p := &serverProc{cmd: cmd, logf: logf, metrics: metricsAddr, done: make(chan struct{})}
	go func() { cmd.Wait(); f.Close(); close(p.done) }()
	// Ready when its control port is bound in the server namespace.
	end := time.Now().Add(5 * time.Second)
	for {
		select {
		case <-p.done:
			b, _ := os.ReadFile(logf)
			return nil, fmt.Errorf("%s exited at start: %s", s.Name, lastLines(b, 5))
		default:
		}
		if portBound(lab, port) {
			return p, nil
		}
		if time.Now().After(end) {
			p.stop()
			return nil, fmt.Errorf("%s: control port %d not bound after 5 s", s.Name, port)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// portBound reports whether a UDP socket is bound to port in the server
// namespace.
func portBound(lab *netlab.Lab, port int) bool {
	found := false
	_ = lab.Do(lab.ServerNS, func() error {
		want := fmt.Sprintf(":%04X ", port)
		for _, f := range []string{"/proc/thread-self/net/udp", "/proc/thread-self/net/udp6"} {
			b, _ := os.ReadFile(f)
			if bytes.Contains(b, []byte(want)) {
				found = true
			}
		}
		return nil
	})
	return found
}

func (p *serverProc) pid() int { return p.cmd.Process.Pid }

// stop interrupts the server and waits for it (kills it after 5 s).
func (p *serverProc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], " | ")
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
// then hands the batch to the client's core.
type lagCore struct {
	*dataphase.Conn
	id  uint16
	arr []clock.Time // by sequence number; 0: not received
}

func (l *lagCore) Receive(b *dataphase.RecvBatch) {
	for i := 0; i < b.N; i++ {
		d := b.Data(i)
		if len(d) < 8 || binary.BigEndian.Uint16(d) != l.id {
			continue
		}
		if s := binary.BigEndian.Uint32(d[4:]); int64(s) < int64(len(l.arr)) && l.arr[s] == 0 {
			l.arr[s] = b.Dgrams[i].Time
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
	sc0, sq0, sw0 := procSched(srv.pid())
	gc0, _, _ := procSched(0)
	mb0 := machineBusy()
	t0 := time.Now()
	time.Sleep(time.Until(to))
	sc1, sq1, sw1 := procSched(srv.pid())
	gc1, _, _ := procSched(0)
	mb1 := machineBusy()
	r.Window = time.Since(t0)
	sec := r.Window.Seconds()
	r.ServerCPU = (sc1 - sc0).Seconds() / sec
	r.ServerRunq = (sq1 - sq0).Seconds() / sec
	r.ServerWakeups = float64(sw1-sw0) / sec
	r.GenCPU = (gc1 - gc0).Seconds() / sec
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
	m := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		i := strings.LastIndexByte(line, ' ')
		if i < 0 || strings.HasPrefix(line, "#") {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			m[line[:i]] = v
		}
	}
	return m, sc.Err()
}

// Table formats results as a Markdown table.
func Table(rs []*Result) string {
	var b strings.Builder
	b.WriteString("| server | direction | N | delivered % of plan | Skipped Bursts | send lag p50 / p99 (µs) | server CPU | server wake-ups/s | generator CPU | other load (CPU) | notes |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, r := range rs {
		dir := "down"
		if r.Upstream {
			dir = "up"
		}
		sk := "n/a"
		if r.SkippedBursts >= 0 {
			sk = strconv.FormatInt(r.SkippedBursts, 10)
		}
		notes := slices.Clone(r.Notes)
		if r.RcvbufErrsGen > 0 {
			notes = append(notes, fmt.Sprintf("generator buffer overflows %d", r.RcvbufErrsGen))
		}
		if r.RcvbufErrsSrv > 0 {
			notes = append(notes, fmt.Sprintf("server buffer overflows %d", r.RcvbufErrsSrv))
		}
		if r.Upstream && r.GenSkipped > 0 {
			notes = append(notes, "generator skipped Bursts")
		}
		if r.ServerRunq > 0.05 {
			notes = append(notes, fmt.Sprintf("server waited for its CPU %.0f ms/s", 1000*r.ServerRunq))
		}
		lag, gen := fmt.Sprintf("%d / %d", r.LagP50.Microseconds(), r.LagP99.Microseconds()), fmt.Sprintf("%.2f", r.GenCPU)
		if r.Floor {
			lag, gen = "n/a", "n/a"
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %.2f | %s | %s | %.3f | %.0f | %s | %.2f | %s |\n",
			r.Server, dir, r.N, r.Share(), sk, lag,
			r.ServerCPU, r.ServerWakeups, gen, r.OtherCPU, strings.Join(notes, "; "))
	}
	return b.String()
}

// ClientMax runs one test of a client binary (udpstp or OB-UDPST) against
// a server of the same kind in the lab and returns its maximum IP-layer
// capacity in Mbit/s.
func ClientMax(ctx context.Context, lab *netlab.Lab, s Server, port int, upstream bool, seconds int, tmp string) (float64, error) {
	var mtuArgs []string
	if lab.Config().MTU <= netlab.DefaultMTU {
		// Datagrams for a 1500-byte MTU and no jumbo sizes, on both ends
		// (they must agree): both implementations otherwise use 9 KB
		// datagrams above 1 Gbit/s, which a 1500-byte path fragments
		// (and OB-UDPST then refuses GSO and ends the test; with -T alone
		// it still does).
		mtuArgs = []string{"-j", "-T"}
	}
	srv, err := startServer(lab, s, port, -1, tmp, mtuArgs...)
	if err != nil {
		return 0, err
	}
	defer srv.stop()
	dir := "-d"
	if upstream {
		dir = "-u"
	}
	args := append(mtuArgs, dir, "-f", "json", "-t", strconv.Itoa(seconds), "-p", strconv.Itoa(port), lab.ServerAddr.String())
	if s.Kind == Udpstp {
		args = append([]string{"client"}, args...)
	}
	cmd := lab.Command(lab.ClientNS, s.Bin, args...)
	cmd.Env = append(os.Environ(), s.Env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		msg := lastLines(errb.Bytes(), 3)
		if i := bytes.Index(out.Bytes(), []byte(`"ErrorMessage"`)); i >= 0 {
			msg += " " + string(out.Bytes()[i:min(len(out.Bytes()), i+160)])
		}
		return 0, fmt.Errorf("%s client: %v: %s", s.Name, err, msg)
	}
	return parseMax(out.Bytes())
}

// parseMax reads Output.AtMax.MaxIPLayerCapacity of OB-UDPST's JSON.
func parseMax(b []byte) (float64, error) {
	// A small scan keeps this free of the report package's model.
	const key = `"MaxIPLayerCapacity":`
	i := bytes.Index(b, []byte(key))
	if i < 0 {
		return 0, errors.New("no MaxIPLayerCapacity in the JSON result")
	}
	v := bytes.TrimLeft(b[i+len(key):], " \t\n")
	j := bytes.IndexAny(v, ",}\n")
	if j < 0 {
		return 0, errors.New("bad JSON result")
	}
	return strconv.ParseFloat(string(bytes.TrimSpace(v[:j])), 64)
}

// median is the median of v (the mean of the middle two for an even
// count); it sorts v.
func median(v []float64) float64 {
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// Median folds repeated runs of one server, direction and N into one
// result: the median of each figure, and every run's delivered share in a
// note so that a bimodal spread shows.
func Median(rs []*Result) *Result {
	if len(rs) == 1 {
		return rs[0]
	}
	m := *rs[0]
	med := func(f func(*Result) float64) float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = f(r)
		}
		return median(v)
	}
	m.Planned, m.Delivered = 100, med(func(r *Result) float64 { return r.Share() })
	m.SkippedBursts = int64(med(func(r *Result) float64 { return float64(r.SkippedBursts) }))
	m.GenSkipped = int64(med(func(r *Result) float64 { return float64(r.GenSkipped) }))
	m.LagP50 = time.Duration(med(func(r *Result) float64 { return float64(r.LagP50) }))
	m.LagP99 = time.Duration(med(func(r *Result) float64 { return float64(r.LagP99) }))
	m.ServerCPU = med(func(r *Result) float64 { return r.ServerCPU })
	m.ServerWakeups = med(func(r *Result) float64 { return r.ServerWakeups })
	m.ServerRunq = med(func(r *Result) float64 { return r.ServerRunq })
	m.OtherCPU = med(func(r *Result) float64 { return r.OtherCPU })
	m.GenCPU = med(func(r *Result) float64 { return r.GenCPU })
	m.RcvbufErrsGen = int64(med(func(r *Result) float64 { return float64(r.RcvbufErrsGen) }))
	m.RcvbufErrsSrv = int64(med(func(r *Result) float64 { return float64(r.RcvbufErrsSrv) }))
	shares := make([]string, len(rs))
	m.Notes = nil
	for i, r := range rs {
		shares[i] = fmt.Sprintf("%.2f", r.Share())
		for _, n := range r.Notes {
			if !slices.Contains(m.Notes, n) {
				m.Notes = append(m.Notes, n)
			}
		}
	}
	m.Notes = append([]string{fmt.Sprintf("median of %d runs (delivered %s)", len(rs), strings.Join(shares, ", "))}, m.Notes...)
	return &m
}
