package e2e

// The network lab end to end (the network lab layer of DEVELOPERS.md's
// tests): our server and client as real processes in the namespaces of
// internal/testkit/netlab, measured against ground truth the lab sets exactly (a
// tbf rate, an nftables loss ratio), and, with UDPST_BIN set, OB-UDPST
// 9.0.0 on both ends of the same lab for the side-by-side errors of
// docs/accuracy.md.
//
// # The layer compared with a tbf rate
//
// tbf meters qdisc_pkt_len(skb), which on a veth (no size table) is the
// skb's length at the router's qdisc: the IP packet plus its 14-byte
// Ethernet header, without FCS, preamble or inter-frame gap. That is
// exactly OB-UDPST's "L2/Eth" figure, MaxETHCapacityNoFCS: UDP payload +
// 8 + 20 (IPv4) + 14 per frame. The other figures miss by a per-packet
// constant: L3 (MaxIPLayerCapacity) under-states what tbf lets through by
// 14 bytes per packet (1.1 % at the default 1250-byte IP packets, 17.5 %
// at the smallest, 80 bytes), and L1 (with FCS) over-states it by 4 (0.3 %
// at 1250 bytes). Only the L2 figure can land within a fraction of a
// percent of the configured rate whatever the datagram sizes, so that is
// the one checked. A datagram
// larger than the MTU crosses tbf as several frames, each with its own IP
// and Ethernet header; our L2 counts them (dataphase/frag.go), OB-UDPST's
// never needs to (its GSO build stops the test: dataphase's package doc).
//
// # Where it runs
//
// The lab's checks are timing-bound: a shape's rate is met only by a
// machine fast enough to fill it. So they run in `make lab` (also in CI,
// after `make test`), not in `make test`: every test here is named
// TestLab* and gated by netlab.LabOnly. Each case is allowed one retry;
// its tolerance comes from the shape (the tbf rate, the loss ratio),
// never from the machine, and the unshaped rows, which measure the
// machine alone, report their figures and are judged only on completing.
//
// # Cost
//
// Every case is a real test of 5 to 10 s, run one after the other (the
// 2-core machine is shared, and a lab run measures it as much as the
// shape), so the lab takes two and a half to three minutes, and about
// four and a half with UDPST_BIN. The 1 Gbit cases run 10 s: the search needs 5 s to ramp to
// row 1000, and at that rate on this lab the Load Sender itself is paced
// by tbf (see docs/accuracy.md), so a Sub-Interval in which the machine
// was busy elsewhere falls short; five at the top leave room for that.

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/udpstp/udpstp/internal/testkit/netlab"
)

// labPort is the server's control port inside the lab: the namespaces are
// fresh, so any port is free.
const labPort = 25000

// labResult is the part of the client JSON the lab reads.
type labResult struct {
	ErrorStatus   int
	ErrorMessage  string
	ErrorMessage2 string
	Output        struct {
		IncrementalResult []struct {
			IPLayerCapacity  float64
			DeliveredPercent float64
			LossCount        uint32
			RTTMax           float64
		}
		Summary struct {
			DeliveredPercent float64
			LossCount        uint32
			ReorderedCount   uint32
			ReplicatedCount  uint32
		}
		AtMax struct {
			MaxIPLayerCapacity  float64
			MaxETHCapacityNoFCS float64
		}
		Status string
	}
}

// labImpl is the implementation run on both ends of the lab.
type labImpl struct {
	name string
	bin  string
	ours bool // udpstp: `server`/`client` subcommands, a start-up log line
}

// labServer starts impl's server in the lab's server namespace and waits
// until it listens; it is interrupted when the test ends (and Close kills
// whatever is left in the namespaces).
func labServer(t *testing.T, l *netlab.Lab, impl labImpl, extra ...string) {
	t.Helper()
	args := append(append([]string{"-p", fmt.Sprint(labPort)}, extra...), l.ServerAddr.String())
	if impl.ours {
		args = append([]string{"server"}, args...)
	}
	startServerProc(t, l.Command(l.ServerNS, impl.bin, args...), impl.ours).stopAtCleanup(t, impl.name)
}

// labClient runs impl's client in the client namespace to completion
// (labRun) and reads its JSON result. A run that printed no JSON has
// ErrorStatus -1 and the output in ErrorMessage.
func labClient(t *testing.T, l *netlab.Lab, impl labImpl, secs int, args ...string) labResult {
	t.Helper()
	stdout, stderr, _ := labRun(t, l, impl, secs, append([]string{"-f", "json"}, args...)...)
	var r labResult
	if jerr := json.Unmarshal([]byte(stdout), &r); jerr != nil {
		r.ErrorStatus = -1
		r.ErrorMessage = fmt.Sprintf("no JSON result (%v): %.300s %.300s", jerr, stdout, stderr)
	}
	return r
}

// labRun runs impl's client in the client namespace to completion (killed,
// and the test failed, 25 s after the end of its secs-long test) and
// returns its standard output and error and its exit status.
func labRun(t *testing.T, l *netlab.Lab, impl labImpl, secs int, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	a := append([]string{"-t", fmt.Sprint(secs), "-p", fmt.Sprint(labPort)}, args...)
	a = append(a, l.ServerAddr.String())
	if impl.ours {
		a = append([]string{"client"}, a...)
	}
	r := runCmd(l.Command(l.ClientNS, impl.bin, a...), time.Duration(secs+25)*time.Second)
	if r.err != nil {
		if r.code == -1 && !strings.Contains(r.err.Error(), "killed") {
			t.Fatalf("%s %v: %v", impl.bin, a, r.err)
		}
		t.Errorf("%s client still running 25 s after the end of a %d s test: killed", impl.name, secs)
	}
	return r.stdout, r.stderr, r.code
}

// labImpls starts a lab test: it skips without UDPSTP_LAB=1, where no lab can run or with
// -short, takes every end-to-end slot (the lab measures the machine too)
// and returns the implementations to run, udpstp and, with UDPST_BIN,
// OB-UDPST.
func labImpls(t *testing.T) []labImpl {
	t.Helper()
	netlab.LabOnly(t)
	if err := netlab.Available(); err != nil {
		t.Skip(err)
	}
	if testing.Short() {
		t.Skip("network lab: real tests of 5-10 s (skipped with -short)")
	}
	takeAllSlots(t)
	impls := []labImpl{{name: "udpstp", bin: udpstpBin, ours: true}}
	if b := optionalUdpstBin(t); b != "" {
		impls = append(impls, labImpl{name: "OB-UDPST", bin: b})
	} else {
		t.Log("UDPST_BIN is not set: the lab runs udpstp only (see DEVELOPERS.md)")
	}
	return impls
}

// labKind says what a case measures and how its error is expressed.
type labKind int

const (
	// kindCapacity: the L2 maximum against the tbf rate, error in %.
	kindCapacity labKind = iota
	// kindDelay: as kindCapacity, and the result must show the search
	// backing off on delay alone (see checkDelay).
	kindDelay
	// kindLoss: the Summary's delivered share against 100 - loss, error
	// in percentage points; loss counted as loss.
	kindLoss
	// kindUnshaped: no shape, so nothing but the machine bounds the
	// result: the test must complete; its maximum (L3) is reported.
	kindUnshaped
)

// labCase is one lab configuration and what its result must show.
type labCase struct {
	name  string
	cfg   netlab.Config
	dir   netlab.Direction // of the load
	secs  int
	both  []string // options both ends need (-j)
	args  []string // client options besides -d/-u, -t, -p, -f
	kind  labKind
	want  float64 // capacity and delay: the tbf rate in Mbit/s; loss: delivered %; unshaped: unused
	tol   float64 // capacity and delay: %; loss: points
	about string  // the lab, for the table
}

// labOutcome is one implementation's run of a case.
type labOutcome struct {
	done     bool    // ErrorStatus 0 with results
	value    float64 // the error (capacity, delay, loss) or the maximum (unshaped)
	failed   string  // why it did not complete
	problems []string
	retried  bool // the first run failed; this is the second
}

func (o labOutcome) text(k labKind) string {
	var v string
	switch {
	case !o.done:
		v = "fails: " + o.failed
	case k == kindCapacity || k == kindDelay:
		v = fmt.Sprintf("%+.2f %%", o.value)
	case k == kindLoss:
		v = fmt.Sprintf("%+.2f pt", o.value)
	default:
		v = fmt.Sprintf("%.0f Mbit/s", o.value)
	}
	if o.retried {
		v += " (2nd run)"
	}
	return v
}

// labCases are the cases, in the order they run.
func labCases() []labCase {
	const M = 1e6
	shaped := func(dir netlab.Direction, rate float64, mtu int) netlab.Config {
		s := netlab.Shape{RateBps: int64(rate)}
		if dir == netlab.Down {
			return netlab.Config{MTU: mtu, Down: s}
		}
		return netlab.Config{MTU: mtu, Up: s}
	}
	var cs []labCase
	// Accuracy at MTU 1500. Jumbo sizes off on both ends (-j), so that
	// OB-UDPST runs the same search; our default options are checked
	// below ("1G-default").
	for _, rate := range []float64{50 * M, 200 * M, 1000 * M} {
		secs := 5
		if rate >= 1000*M {
			secs = 10
		}
		for _, dir := range []netlab.Direction{netlab.Down, netlab.Up} {
			cs = append(cs, labCase{
				name: fmt.Sprintf("tbf-%vM-%v", rate/M, dir), cfg: shaped(dir, rate, 1500), dir: dir, secs: secs,
				both: []string{"-j"}, kind: kindCapacity, want: rate / M, tol: 2,
				about: fmt.Sprintf("tbf %v Mbit/s %v, MTU 1500, -j", rate/M, dir),
			})
		}
	}
	// 1 % random loss of Load PDUs at a fixed 100 Mbit/s, unshaped.
	for _, dir := range []netlab.Direction{netlab.Down, netlab.Up} {
		cfg := netlab.Config{}
		if dir == netlab.Down {
			cfg.Down.LossPct = 1
		} else {
			cfg.Up.LossPct = 1
		}
		cs = append(cs, labCase{
			name: fmt.Sprintf("loss-1pct-%v", dir), cfg: cfg, dir: dir, secs: 5,
			args: []string{"-I", "100"}, kind: kindLoss, want: 99, tol: 0.5,
			about: fmt.Sprintf("1 %% loss %v, unshaped, fixed row 100", dir),
		})
	}
	// An asymmetric link: 1000 Mbit/s down, 100 Mbit/s up.
	asym := netlab.Config{Down: netlab.Shape{RateBps: 1000 * M}, Up: netlab.Shape{RateBps: 100 * M}}
	cs = append(cs,
		labCase{name: "asym-down", cfg: asym, dir: netlab.Down, secs: 10, both: []string{"-j"}, kind: kindCapacity, want: 1000, tol: 2,
			about: "tbf 1000 down / 100 up, measuring down, -j"},
		labCase{name: "asym-up", cfg: asym, dir: netlab.Up, secs: 5, both: []string{"-j"}, kind: kindCapacity, want: 100, tol: 2,
			about: "tbf 1000 down / 100 up, measuring up, -j"},
	)
	// A queue that builds delay: 100 Mbit/s with room for 500 ms.
	deep := netlab.Config{Down: netlab.Shape{RateBps: 100 * M, Latency: 500 * time.Millisecond}}
	cs = append(cs, labCase{name: "delay-100M-down", cfg: deep, dir: netlab.Down, secs: 5, kind: kindDelay, want: 100, tol: 2,
		about: "tbf 100 Mbit/s down, 500 ms queue"})
	// Never stall: unshaped, default options (jumbo sizes on), 10 s. How
	// fast is the machine's business (multi-gigabit maxima vary by a third
	// between runs of either implementation on a shared machine): the
	// figure is reported, completing is what is judged.
	for _, mtu := range []int{1500, 9000} {
		for _, dir := range []netlab.Direction{netlab.Down, netlab.Up} {
			cs = append(cs, labCase{
				name: fmt.Sprintf("unshaped-mtu%d-%v", mtu, dir), cfg: netlab.Config{MTU: mtu}, dir: dir, secs: 10,
				kind: kindUnshaped, about: fmt.Sprintf("unshaped, MTU %d, defaults", mtu),
			})
		}
	}
	// One test over four Test Connections sharing a shaped link: the
	// aggregate maximum is the link's capacity (the multi-connection
	// issue). Each connection searches on its own, as OB-UDPST's do.
	for _, dir := range []netlab.Direction{netlab.Down, netlab.Up} {
		cs = append(cs, labCase{
			name: fmt.Sprintf("multi-C4-200M-%v", dir), cfg: shaped(dir, 200*M, 1500), dir: dir, secs: 5,
			both: []string{"-j"}, args: []string{"-C", "4"}, kind: kindCapacity, want: 200, tol: 2,
			about: fmt.Sprintf("tbf 200 Mbit/s %v, MTU 1500, -j, -C 4", dir),
		})
	}
	// 1 Gbit/s at MTU 1500 with default options: the search reaches the
	// jumbo rows, whose datagrams are fragmented.
	for _, dir := range []netlab.Direction{netlab.Down, netlab.Up} {
		cs = append(cs, labCase{
			name: fmt.Sprintf("tbf-1000M-%v-default", dir), cfg: shaped(dir, 1000*M, 1500), dir: dir, secs: 10,
			kind: kindCapacity, want: 1000, tol: 2, about: fmt.Sprintf("tbf 1000 Mbit/s %v, MTU 1500, defaults", dir),
		})
	}
	return cs
}

// TestLab runs every case with our client and server, and with OB-UDPST's
// on both ends when UDPST_BIN is set, and logs the table of errors side by
// side. Ours must meet every tolerance; where OB-UDPST completes, ours must
// be no worse than its error plus the lab's run-to-run noise (worse).
func TestLab(t *testing.T) {
	impls := labImpls(t)
	start := time.Now()
	var rows []string
	for _, c := range labCases() {
		t.Run(c.name, func(t *testing.T) {
			// A lab this machine cannot build (no nft for a loss case)
			// skips the case, saying what is missing.
			if err := netlab.AvailableFor(c.cfg); err != nil {
				t.Skip(err)
			}
			out := make([]labOutcome, len(impls))
			for i, impl := range impls {
				// A second run when the first missed (ours) or completed
				// out of tolerance (either): the 2-core machine is shared,
				// and a neighbour's burst of work shows as skipped Bursts
				// or receive-buffer drops that no shape explains (see
				// rxDrops in the log). OB-UDPST's expected failures are
				// not repeated.
				for attempt := 1; ; attempt++ {
					t.Run(impl.name, func(t *testing.T) {
						// What a run that stops early (t.Fatal, t.Skip) leaves.
						out[i] = labOutcome{failed: "the run stopped before a result: see its log"}
						out[i] = runLabCase(t, c, impl)
						out[i].retried = attempt > 1
						t.Logf("%s: %s %s", impl.name, out[i].text(c.kind), strings.Join(out[i].problems, "; "))
					})
					again := len(out[i].problems) > 0 || (impl.ours && !out[i].done)
					if !again || attempt == 2 {
						break
					}
					t.Logf("%s: running the case again", impl.name)
				}
			}
			ours := out[0]
			if !ours.done {
				t.Errorf("udpstp did not complete: %s", ours.failed)
			}
			for _, p := range ours.problems {
				t.Error(p)
			}
			ob := "-"
			if len(out) > 1 {
				ob = out[1].text(c.kind)
				if msg := worse(c, ours, out[1]); msg != "" {
					t.Errorf("udpstp worse than OB-UDPST: %s", msg)
				}
			}
			rows = append(rows, fmt.Sprintf("| %s | %s | %s | %s | %s |", c.name, c.about, tolerance(c), ours.text(c.kind), ob))
		})
	}
	t.Logf("lab: %d cases in %v\n| case | lab | tolerance | udpstp | OB-UDPST 9.0.0 |\n|---|---|---|---|---|\n%s",
		len(rows), time.Since(start).Round(time.Second), strings.Join(rows, "\n"))
}

func tolerance(c labCase) string {
	switch c.kind {
	case kindCapacity, kindDelay:
		return fmt.Sprintf("L2 max within %.0f %% of %.0f Mbit/s", c.tol, c.want)
	case kindLoss:
		return fmt.Sprintf("delivered within %.1f pt of %.0f %%", c.tol, c.want)
	}
	return "completes (maximum reported)"
}

// worse says how ours did worse than OB-UDPST's run of the same case, or
// "". An error counts as worse when it exceeds OB-UDPST's by more than the
// spread of repeated runs of one implementation in this lab: half a
// percent for a capacity, a fifth of a point for a delivered share. An
// unshaped case measures the machine, whose multi-gigabit maxima vary by
// a third between runs of either implementation: there ours is worse only
// if it does not complete where OB-UDPST's run did.
func worse(c labCase, ours, ob labOutcome) string {
	if !ob.done {
		return ""
	}
	if !ours.done {
		return fmt.Sprintf("OB-UDPST completes (%s), udpstp %s", ob.text(c.kind), ours.failed)
	}
	switch c.kind {
	case kindCapacity, kindDelay:
		if math.Abs(ours.value) > math.Abs(ob.value)+0.5 {
			return fmt.Sprintf("error %+.2f %%, OB-UDPST %+.2f %%", ours.value, ob.value)
		}
	case kindLoss:
		if math.Abs(ours.value) > math.Abs(ob.value)+0.2 {
			return fmt.Sprintf("error %+.2f pt, OB-UDPST %+.2f pt", ours.value, ob.value)
		}
	}
	return ""
}

// runLabCase runs case c with impl on both ends of a fresh lab and
// evaluates the result.
func runLabCase(t *testing.T, c labCase, impl labImpl) labOutcome {
	l := netlab.New(t, c.cfg)
	labServer(t, l, impl, c.both...)
	dirFlag := "-d"
	if c.dir == netlab.Up {
		dirFlag = "-u"
	}
	args := append(append([]string{dirFlag}, c.both...), c.args...)
	r := labClient(t, l, impl, c.secs, args...)
	var o labOutcome
	if r.ErrorStatus != 0 || r.Output.Status != "Complete" {
		o.failed = fmt.Sprintf("ErrorStatus %d: %s", r.ErrorStatus, strings.TrimSpace(r.ErrorMessage2+" "+r.ErrorMessage))
		return o
	}
	o.done = true
	qs, qerr := l.QdiscStats(c.dir)
	drops, _ := l.LinkDrops()
	lost, _, _ := l.LossDropped(c.dir)
	rxNS := l.ClientNS
	if c.dir == netlab.Up {
		rxNS = l.ServerNS
	}
	var subs []string
	var rttMax float64
	for _, s := range r.Output.IncrementalResult {
		subs = append(subs, fmt.Sprintf("%.1f", s.IPLayerCapacity))
		rttMax = max(rttMax, s.RTTMax)
	}
	t.Logf("max L3 %.2f L2 %.2f Mbit/s, delivered %.2f %%, loss %d, OoO %d, RTTVar max %.0f ms; Sub-Intervals %s; qdisc %+v (%v); link drops %d; lab dropped %d; receiver's drops %s",
		r.Output.AtMax.MaxIPLayerCapacity, r.Output.AtMax.MaxETHCapacityNoFCS, r.Output.Summary.DeliveredPercent,
		r.Output.Summary.LossCount, r.Output.Summary.ReorderedCount, 1000*rttMax, strings.Join(subs, " "), qs, qerr, drops, lost, rxDrops(l, rxNS))
	problem := func(format string, a ...any) { o.problems = append(o.problems, fmt.Sprintf(format, a...)) }
	switch c.kind {
	case kindCapacity, kindDelay:
		o.value = 100 * (r.Output.AtMax.MaxETHCapacityNoFCS - c.want) / c.want
		if math.Abs(o.value) > c.tol {
			problem("maximum at L2 %.2f Mbit/s: %+.2f %% from the tbf rate %.0f, tolerance %.0f %%", r.Output.AtMax.MaxETHCapacityNoFCS, o.value, c.want, c.tol)
		}
		if c.kind == kindDelay {
			checkDelay(r, rttMax, qs, c, problem)
		}
	case kindLoss:
		o.value = r.Output.Summary.DeliveredPercent - c.want
		if math.Abs(o.value) > c.tol {
			problem("delivered %.2f %%, want %.1f ± %.1f", r.Output.Summary.DeliveredPercent, c.want, c.tol)
		}
		// Loss is counted as loss: no reordering or duplication appears,
		// and no more is counted than nftables dropped. (Less is: Load
		// PDUs before the first Status PDU and in the last half second
		// before the server's stop fall in no Sub-Interval, about a tenth
		// of a 5 s test's.)
		sum := r.Output.Summary
		if sum.ReorderedCount != 0 || sum.ReplicatedCount != 0 {
			problem("random loss reported as %d out-of-order and %d duplicates", sum.ReorderedCount, sum.ReplicatedCount)
		}
		if sum.LossCount == 0 || int64(sum.LossCount) > lost {
			problem("loss count %d, the lab dropped %d Load PDUs", sum.LossCount, lost)
		}
	case kindUnshaped:
		o.value = r.Output.AtMax.MaxIPLayerCapacity
	}
	return o
}

// checkDelay: with a tbf queue deep enough that it never overflows before
// the delay thresholds act, the search overshoots the rate, the queue
// builds, the RTT variation crosses the upper threshold (90 ms), and the
// algorithm backs off on that alone: the result shows RTT variation above
// 90 ms, no loss at all, and a queue that stopped growing before tbf's
// limit (nothing dropped). OB-UDPST behaves the same in this lab.
// rttMax is the largest RTT variation of r's Sub-Intervals, in seconds.
func checkDelay(r labResult, rttMax float64, qs netlab.QdiscStats, c labCase, problem func(string, ...any)) {
	if rttMax < 0.090 {
		problem("RTT variation peaked at %.0f ms: the queue never crossed the 90 ms threshold", 1000*rttMax)
	}
	if lim := c.cfg.Down.Latency.Seconds(); rttMax >= lim {
		problem("RTT variation reached %.0f ms, the queue's limit", 1000*rttMax)
	}
	if r.Output.Summary.LossCount != 0 || qs.Drops != 0 {
		problem("%d datagrams lost, %d dropped by tbf: the search backed off on loss, not on delay", r.Output.Summary.LossCount, qs.Drops)
	}
}

// rxDrops returns the receive-side drop counters of namespace ns that are
// not zero (socket buffer overruns, failed reassemblies), for the log: a
// loss that neither tbf nor nftables explains was the machine's.
func rxDrops(l *netlab.Lab, ns string) string {
	out, err := l.Command(ns, "cat", "/proc/net/snmp").Output()
	if err != nil {
		return err.Error()
	}
	want := map[string]bool{"Ip:ReasmFails": true, "Ip:ReasmTimeout": true, "Ip:InDiscards": true,
		"Udp:InErrors": true, "Udp:RcvbufErrors": true}
	var found []string
	lines := strings.Split(string(out), "\n")
	for i := 0; i+1 < len(lines); i += 2 {
		names, values := strings.Fields(lines[i]), strings.Fields(lines[i+1])
		if len(names) != len(values) || len(names) == 0 {
			continue
		}
		for j := 1; j < len(names); j++ {
			if k := names[0] + names[j]; want[k] && values[j] != "0" {
				found = append(found, k+"="+values[j])
			}
		}
	}
	if len(found) == 0 {
		return "none"
	}
	return strings.Join(found, " ")
}
