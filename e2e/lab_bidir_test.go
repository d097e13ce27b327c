package e2e

// The lab's bidirectional cases: our client's --bidirectional test over
// tbf 200 Mbit/s down and 50 Mbit/s up, against our server and OB-UDPST's
// (UDPST_BIN). Every run must complete with both halves whole
// (checkBidir); the figures' accuracy (each direction's loaded maximum
// against its shape, the latency under load against the idle baseline)
// measures the machine as much as the code and is checked in the lab
// only (netlab.LabOnly, `make lab`), which also allows a second run.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/udpstp/udpstp/internal/testkit/netlab"
)

// bidirLabCase is one lab and what its bidirectional result must show.
type bidirLabCase struct {
	name     string
	cfg      netlab.Config
	args     []string // client options besides --bidirectional, -t, -p, -f
	labOnly  bool     // the case runs in the lab only (a functional run is the first case's)
	evaluate func(r bidirResult, problem func(string, ...any))
}

const (
	bidirLabSecs = 10 // 2 idle Sub-Intervals, 8 loaded
	bidirLabIdle = 2
)

func bidirLabCases() []bidirLabCase {
	const M = 1e6
	shaped := func(latency time.Duration) netlab.Config {
		return netlab.Config{Down: netlab.Shape{RateBps: 200 * M, Latency: latency}, Up: netlab.Shape{RateBps: 50 * M, Latency: latency}}
	}
	// The loaded maximum at L2 (tbf meters Ethernet frames without FCS,
	// see lab_test.go) within 2 % of each direction's rate.
	capacity := func(r bidirResult, problem func(string, ...any)) {
		for _, h := range []struct {
			dir  string
			half bidirHalf
			want float64
		}{{"Upstream", r.Upstream, 50}, {"Downstream", r.Downstream, 200}} {
			if len(h.half.Output.ModalResult) == 0 {
				continue // checkBidir said so
			}
			got := h.half.Output.ModalResult[0].MaxETHCapacityNoFCS
			if e := 100 * (got - h.want) / h.want; e > 2 || e < -2 {
				problem("%s loaded maximum at L2 %.2f Mbit/s: %+.2f %% from the tbf rate %.0f, tolerance 2 %%", h.dir, got, e, h.want)
			}
		}
	}
	// A queue that fills: each direction's RTT and one-way delay
	// variation under load rise well above the idle baseline (each search
	// holds its one-way delay between the 30 and 90 ms thresholds, or the
	// queue's limit; the RTT crosses both queues).
	rises := func(r bidirResult, problem func(string, ...any)) {
		for dir, u := range map[string]underLoad{"Upstream": r.Udpstp.Bidirectional.Upstream, "Downstream": r.Udpstp.Bidirectional.Downstream} {
			if u.RTTAvgIncrease < 0.010 || u.Loaded.RTTMax < 0.030 || u.PDVAvgIncrease < 0.010 {
				problem("%s: RTT variation idle %.0f ms avg, loaded %.0f avg / %.0f max (%+.0f), one-way %+.0f: the full queue does not show",
					dir, 1000*u.Idle.RTTAvg, 1000*u.Loaded.RTTAvg, 1000*u.Loaded.RTTMax, 1000*u.RTTAvgIncrease, 1000*u.PDVAvgIncrease)
			}
		}
	}
	// A queue that never fills (a fixed rate below both shapes): the RTT
	// variation under load stays near the idle baseline.
	stays := func(r bidirResult, problem func(string, ...any)) {
		for dir, u := range map[string]underLoad{"Upstream": r.Udpstp.Bidirectional.Upstream, "Downstream": r.Udpstp.Bidirectional.Downstream} {
			if u.RTTAvgIncrease > 0.003 || u.PDVAvgIncrease > 0.003 {
				problem("%s: RTT variation idle %.0f ms avg, loaded %.0f avg / %.0f max (%+.0f), one-way %+.0f, at a rate the queue absorbs",
					dir, 1000*u.Idle.RTTAvg, 1000*u.Loaded.RTTAvg, 1000*u.Loaded.RTTMax, 1000*u.RTTAvgIncrease, 1000*u.PDVAvgIncrease)
			}
		}
	}
	return []bidirLabCase{
		{name: "tbf-200M-down-50M-up", cfg: shaped(0), evaluate: capacity},
		// The same shapes 50 ms of round trip apart, through the impairment
		// lab's relay (25 ms each way).
		{name: "tbf-200M-down-50M-up-rtt50", cfg: withRTT(shaped(0), 50*time.Millisecond), labOnly: true, evaluate: capacity},
		{name: "deep-queue-search", cfg: shaped(200 * time.Millisecond), labOnly: true, evaluate: rises},
		// Row 40 is 40 Mbit/s of L3, below 50 up and 200 down.
		{name: "deep-queue-fixed-40", cfg: shaped(200 * time.Millisecond), args: []string{"-I", "40"}, labOnly: true, evaluate: stays},
	}
}

// withRTT adds a relay delay of rtt, half each way, to c.
func withRTT(c netlab.Config, rtt time.Duration) netlab.Config {
	c.Down.Relay.Delay, c.Up.Relay.Delay = rtt/2, rtt/2
	return c
}

// TestLabBidirectional runs every case with our client against our server
// and OB-UDPST's (with UDPST_BIN). The first case runs in the normal
// suite too, for the functional checks.
func TestLabBidirectional(t *testing.T) {
	if err := netlab.Available(); err != nil {
		t.Skip(err)
	}
	if testing.Short() {
		t.Skip("network lab: real 10 s tests (skipped with -short)")
	}
	takeAllSlots(t)
	ours := labImpl{name: "udpstp", bin: udpstpBin, ours: true}
	servers := []labImpl{ours}
	if b := optionalUdpstBin(t); b != "" {
		servers = append(servers, labImpl{name: "OB-UDPST", bin: b})
	}
	lab := os.Getenv(netlab.EnvLab) == "1"
	var rows []string
	for _, c := range bidirLabCases() {
		t.Run(c.name, func(t *testing.T) {
			if c.labOnly {
				netlab.LabOnly(t)
			}
			for _, srv := range servers {
				t.Run(srv.name+"-server", func(t *testing.T) {
					var problems []string
					var r bidirResult
					for attempt := 1; ; attempt++ {
						r, problems = runBidirLab(t, c, srv, ours)
						if len(problems) == 0 || !lab || attempt == 2 {
							break
						}
						t.Logf("running the case again: %s", strings.Join(problems, "; "))
					}
					ul := r.Udpstp.Bidirectional
					rows = append(rows, fmt.Sprintf("| %s | %s | up %.2f, down %.2f | up %.0f -> %.0f, down %.0f -> %.0f | %s |", c.name, srv.name,
						loadedL2(r.Upstream), loadedL2(r.Downstream), 1000*ul.Upstream.Idle.RTTAvg, 1000*ul.Upstream.Loaded.RTTAvg,
						1000*ul.Downstream.Idle.RTTAvg, 1000*ul.Downstream.Loaded.RTTAvg, strings.Join(problems, "; ")))
					t.Run("accuracy", func(t *testing.T) {
						netlab.LabOnly(t)
						for _, p := range problems {
							t.Error(p)
						}
					})
				})
			}
		})
	}
	t.Logf("bidirectional lab\n| case | server | loaded max L2 Mbit/s | RTTVar avg ms, idle -> loaded | problems |\n|---|---|---|---|---|\n%s",
		strings.Join(rows, "\n"))
}

func loadedL2(h bidirHalf) float64 {
	if len(h.Output.ModalResult) == 0 {
		return 0
	}
	return h.Output.ModalResult[0].MaxETHCapacityNoFCS
}

// runBidirLab runs case c: srv's server in a fresh lab, our client's
// bidirectional test; it fails t on a run that is not whole and returns
// the case's accuracy problems.
func runBidirLab(t *testing.T, c bidirLabCase, srv, client labImpl) (bidirResult, []string) {
	if err := netlab.AvailableFor(c.cfg); err != nil {
		t.Skip(err)
	}
	l := netlab.New(t, c.cfg)
	labServer(t, l, srv, "-j")
	file := filepath.Join(t.TempDir(), "bidir.json")
	args := append([]string{"--bidirectional", "-j", "--output", file}, c.args...)
	if out := labClient(t, l, client, bidirLabSecs, args...); out.ErrorStatus != 0 {
		t.Fatalf("the client failed: ErrorStatus %d %s", out.ErrorStatus, out.ErrorMessage)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var r bidirResult
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	code := max(r.Upstream.ErrorStatus, r.Downstream.ErrorStatus)
	checkBidir(t, r, code, string(b), bidirLabSecs, bidirLabIdle, 1, true)
	if code != 0 {
		t.Logf("ended with a warning: upstream %d %q, downstream %d %q", r.Upstream.ErrorStatus, r.Upstream.ErrorMessage, r.Downstream.ErrorStatus, r.Downstream.ErrorMessage)
	}
	var problems []string
	c.evaluate(r, func(format string, a ...any) { problems = append(problems, fmt.Sprintf(format, a...)) })
	down, _ := l.QdiscStats(netlab.Down)
	up, _ := l.QdiscStats(netlab.Up)
	ul := r.Udpstp.Bidirectional
	t.Logf("loaded max L2 up %.2f down %.2f Mbit/s; RTTVar avg/max idle->loaded up %.0f/%.0f -> %.0f/%.0f ms, down %.0f/%.0f -> %.0f/%.0f ms; "+
		"OWDVar avg up %.0f -> %.0f, down %.0f -> %.0f ms; qdisc down %+v up %+v",
		loadedL2(r.Upstream), loadedL2(r.Downstream),
		1000*ul.Upstream.Idle.RTTAvg, 1000*ul.Upstream.Idle.RTTMax, 1000*ul.Upstream.Loaded.RTTAvg, 1000*ul.Upstream.Loaded.RTTMax,
		1000*ul.Downstream.Idle.RTTAvg, 1000*ul.Downstream.Idle.RTTMax, 1000*ul.Downstream.Loaded.RTTAvg, 1000*ul.Downstream.Loaded.RTTMax,
		1000*ul.Upstream.Idle.PDVAvg, 1000*ul.Upstream.Loaded.PDVAvg, 1000*ul.Downstream.Idle.PDVAvg, 1000*ul.Downstream.Loaded.PDVAvg, down, up)
	return r, problems
}
