package e2e

// End to end and interop tests of --bidirectional and --repeat: real
// processes on loopback, our client against our server and, with
// UDPST_BIN, against OB-UDPST's. They check that the runs complete and
// their documents are whole and consistent; the accuracy of the figures is
// the lab's (lab_bidir_test.go).

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// bidirHalf is the part of a bidirectional half (OB-UDPST's document)
// the tests read.
type bidirHalf struct {
	ErrorStatus  int
	ErrorMessage string
	Input        struct {
		Role                            string
		NumberOfConnections             int
		NumberOfHosts                   int
		NumberFirstModeSuppSubIntervals int
	}
	Output struct {
		IncrementalResult []struct{ IPLayerCapacity float64 }
		AtMax             struct{ MaxIPLayerCapacity float64 }
		ModalResult       []struct {
			MaxIPLayerCapacity  float64
			MaxETHCapacityNoFCS float64
		}
		Status string
	}
}

// underLoad is one direction of the document's latency under load.
type underLoad struct {
	Complete                      int
	Idle, Loaded                  phaseFigures
	RTTAvgIncrease                float64
	PDVAvgIncrease                float64
	OtherDirectionLoadedIntervals int
}

type phaseFigures struct {
	FirstInterval, LastInterval int
	IPLayerCapacitySummary      float64
	MaxIPLayerCapacity          float64
	RTTAvg, RTTMax              float64
	PDVAvg, PDVMax              float64
}

// bidirResult is a --bidirectional document.
type bidirResult struct {
	Upstream, Downstream bidirHalf
	Udpstp               struct {
		Bidirectional struct {
			IdleSubIntervals     int
			Upstream, Downstream underLoad
		}
	} `json:"udpstp"`
}

// checkBidir asserts a complete bidirectional test of subs Sub-Intervals,
// idle of them the baseline, over conns Test Connections per direction:
// each half complete in its role, its second mode loaded, and the
// latency under load measured in both directions over the same phases.
// With warnings, a half may end with a warning (1-49) and its results: on
// a congested link the Status PDUs of one direction queue behind the
// other's load, and some are lost (OB-UDPST's warning 3).
func checkBidir(t *testing.T, r bidirResult, code int, out string, subs, idle, conns int, warnings bool) {
	t.Helper()
	worst := 0
	if warnings {
		worst = 49
	}
	if code > worst {
		t.Fatalf("exit status %d\n%.3000s", code, out)
	}
	ul := r.Udpstp.Bidirectional
	if ul.IdleSubIntervals != idle {
		t.Errorf("idle baseline of %d Sub-Intervals, want %d", ul.IdleSubIntervals, idle)
	}
	for _, h := range []struct {
		dir, role string
		half      bidirHalf
		ul        underLoad
	}{{"Upstream", "Sender", r.Upstream, ul.Upstream}, {"Downstream", "Receiver", r.Downstream, ul.Downstream}} {
		x := h.half
		if x.ErrorStatus > worst || x.ErrorStatus == 0 && x.Output.Status != "Complete" || x.Input.Role != h.role {
			t.Errorf("%s: ErrorStatus %d %q, %s, role %s", h.dir, x.ErrorStatus, x.ErrorMessage, x.Output.Status, x.Input.Role)
		}
		if x.Input.NumberFirstModeSuppSubIntervals != idle || x.Input.NumberOfConnections != conns {
			t.Errorf("%s: suppression %d, %d connections", h.dir, x.Input.NumberFirstModeSuppSubIntervals, x.Input.NumberOfConnections)
		}
		if n := len(x.Output.IncrementalResult); n != subs {
			t.Errorf("%s: %d Sub-Intervals, want %d", h.dir, n, subs)
		}
		if len(x.Output.ModalResult) != 1 {
			t.Errorf("%s: %d loaded maxima", h.dir, len(x.Output.ModalResult))
			continue
		}
		loaded, idleMax := x.Output.ModalResult[0].MaxIPLayerCapacity, x.Output.AtMax.MaxIPLayerCapacity
		// Row 0 is about 0.1 Mbit/s per connection; the search leaves
		// it in the first loaded Sub-Interval.
		if idleMax > 0.5*float64(conns) || loaded < 10*idleMax || loaded < 1 {
			t.Errorf("%s: idle maximum %.2f, loaded %.2f Mbit/s", h.dir, idleMax, loaded)
		}
		u := h.ul
		if u.Complete != 1 || u.Idle.FirstInterval != 1 || u.Idle.LastInterval != idle || u.Loaded.FirstInterval != idle+1 ||
			u.Loaded.LastInterval != subs || u.OtherDirectionLoadedIntervals != subs-idle || u.Loaded.MaxIPLayerCapacity != loaded {
			t.Errorf("%s latency under load: %+v", h.dir, u)
		}
		for _, d := range []float64{u.Idle.RTTAvg, u.Idle.RTTMax, u.Loaded.RTTAvg, u.Loaded.RTTMax, u.Idle.PDVAvg, u.Loaded.PDVAvg} {
			if d < 0 || d > 3 {
				t.Errorf("%s: a delay variation of %v s", h.dir, d)
			}
		}
	}
}

// runBidirProc runs our client with a bidirectional command line and
// reads its document.
func runBidirProc(t *testing.T, args ...string) (bidirResult, int, string) {
	t.Helper()
	out, code, err := runClientProc(udpstpBin, append([]string{"client", "-f", "json"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	var r bidirResult
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("exit %d, output is not JSON: %v\n%s", code, err, out)
	}
	return r, code, string(out)
}

// TestBidirectional: our client's bidirectional test against our server
// and OB-UDPST's (with UDPST_BIN), with -u -d and --bidirectional, with a
// key, and with -C 2 over two servers (two connections each way).
func TestBidirectional(t *testing.T) {
	type server struct {
		name string
		bin  string
	}
	servers := []server{{"udpstp", udpstpBin}}
	if b := optionalUdpstBin(t); b != "" {
		servers = append(servers, server{"OB-UDPST", b})
	}
	for _, srv := range servers {
		for _, c := range []struct {
			name    string
			servers int
			key     string
			args    []string
			conns   int
		}{
			{"one-server", 1, "", []string{"--bidirectional"}, 1},
			{"auth-ud", 1, "bidir-e2e-key", []string{"-u", "-d"}, 1},
			{"C2-two-servers", 2, "", []string{"--bidirectional", "-C", "2"}, 2},
		} {
			t.Run(srv.name+"/"+c.name, func(t *testing.T) {
				e2e(t)
				var hosts []string
				for range c.servers {
					port := freePort(t, "127.0.0.1")
					args := []string{"-p", fmt.Sprint(port)}
					if c.key != "" {
						args = append(args, "-a", c.key)
					}
					if srv.bin == udpstpBin {
						args = append([]string{"server"}, args...)
					}
					spawnServer(t, srv.bin, append(args, "127.0.0.1")...)
					hosts = append(hosts, fmt.Sprintf("127.0.0.1:%d", port))
				}
				args := append([]string{"-t", "5"}, c.args...)
				if c.key != "" {
					args = append(args, "-a", c.key)
				}
				r, code, out := runBidirProc(t, append(args, hosts...)...)
				checkBidir(t, r, code, out, 5, 2, c.conns, false)
				if r.Upstream.Input.NumberOfHosts != c.servers || r.Downstream.Input.NumberOfHosts != c.servers {
					t.Errorf("hosts %d and %d, want %d", r.Upstream.Input.NumberOfHosts, r.Downstream.Input.NumberOfHosts, c.servers)
				}
			})
		}
	}
}

// TestBidirectionalText: the text report labels each half's lines and
// ends with the latency under load.
func TestBidirectionalText(t *testing.T) {
	e2e(t)
	port := freePort(t, "127.0.0.1")
	spawnServer(t, udpstpBin, "server", "-p", fmt.Sprint(port), "127.0.0.1")
	out, code, err := runClientProc(udpstpBin, "client", "-ud", "-t", "5", "-p", fmt.Sprint(port), "127.0.0.1")
	if err != nil || code != 0 {
		t.Fatalf("exit %d %v\n%s", code, err, out)
	}
	for _, want := range []string{"\n[Up]   Upstream Max[3-5] Mbps(L3/IP): ", "\n[Down] Downstream Sum[1-2] ",
		"\n[Down] Sub-Interval[5](sec): ", "\nUpstream Latency Under Load RTTVar(ms): Idle[1-2] ", "\nDownstream Latency Under Load "} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// repeatResult is a --repeat document.
type repeatResult struct {
	Runs      []testResult
	Aggregate struct {
		RunsRequested, Runs, RunsCompleted, RunsFailed, ErrorStatus int
		RunStatus                                                   []struct {
			Run, ErrorStatus, Completed int
			ErrorMessage                string
		}
		Downstream struct {
			Runs               int
			MaxIPLayerCapacity struct{ Median, Min, Max, Spread float64 }
		}
	}
}

// checkRepeatMedian: the aggregate's median maximum is the median of the
// maxima of the completed runs' documents (the mean of the middle two of
// an even count), to the 2 decimals OB-UDPST prints.
func checkRepeatMedian(t *testing.T, r repeatResult) {
	t.Helper()
	var maxima []float64
	for _, run := range r.Runs {
		if run.ErrorStatus == 0 {
			maxima = append(maxima, run.Output.AtMax.MaxIPLayerCapacity)
		}
	}
	if len(maxima) == 0 {
		t.Fatal("no completed run")
	}
	slices.Sort(maxima)
	n := len(maxima)
	want := maxima[n/2]
	if n%2 == 0 {
		want = (maxima[n/2-1] + maxima[n/2]) / 2
	}
	m := r.Aggregate.Downstream.MaxIPLayerCapacity
	if d := m.Median - want; d > 0.005 || d < -0.005 || m.Min != maxima[0] || m.Max != maxima[n-1] || r.Aggregate.Downstream.Runs != n {
		t.Errorf("aggregate maximum %+v over %d runs, the documents' maxima %v (median %.3f)", m, r.Aggregate.Downstream.Runs, maxima, want)
	}
}

// TestRepeat: three tests in a row against our server: three complete
// documents and an aggregate whose median is the median of their maxima.
func TestRepeat(t *testing.T) {
	e2e(t)
	port := freePort(t, "127.0.0.1")
	spawnServer(t, udpstpBin, "server", "-p", fmt.Sprint(port), "127.0.0.1")
	file := filepath.Join(t.TempDir(), "repeat.json")
	out, code, err := runClientProc(udpstpBin, "client", "-d", "-t", "5", "--repeat", "3", "--output", file, "-p", fmt.Sprint(port), "127.0.0.1")
	if err != nil || code != 0 {
		t.Fatalf("exit %d %v\n%s", code, err, out)
	}
	if !strings.Contains(string(out), "Repeat: 3 of 3 runs, 3 completed, 0 failed") {
		t.Errorf("no table:\n%s", out)
	}
	checkRepeatComplete(t, file, 3)
}

// checkRepeatComplete: the --repeat document in file has n runs, every one
// complete with 5 Sub-Intervals, and their aggregate.
func checkRepeatComplete(t *testing.T, file string, n int) {
	t.Helper()
	r := readRepeat(t, file)
	if len(r.Runs) != n || r.Aggregate.RunsCompleted != n || r.Aggregate.RunsFailed != 0 || r.Aggregate.ErrorStatus != 0 {
		t.Fatalf("%d runs, aggregate %+v", len(r.Runs), r.Aggregate)
	}
	for i, run := range r.Runs {
		checkComplete(t, run, run.ErrorStatus, fmt.Sprintf("run %d", i+1), 5)
	}
	checkRepeatMedian(t, r)
}

func readRepeat(t *testing.T, file string) repeatResult {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var r repeatResult
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("%s: %v\n%.2000s", file, err, b)
	}
	return r
}

// TestInteropRepeat: --repeat 3 against OB-UDPST's server, downstream,
// authenticated: three complete documents and an aggregate whose median
// is the median of the three maxima. Then again with the server killed
// once the first run has ended and started again once the second has
// failed: the second run is in the document as failed, the aggregate is
// over the other two, and the exit status is non-zero.
func TestInteropRepeat(t *testing.T) {
	ob := udpstBin(t)
	if testing.Short() {
		t.Skip("interop runs real 5 s tests (skipped with -short)")
	}
	takeAllSlots(t)
	const key = "repeat-interop-key"
	port := freePort(t, "127.0.0.1")
	serverArgs := []string{"-p", fmt.Sprint(port), "-a", key, "127.0.0.1"}
	clientArgs := func(file string) []string {
		return []string{"client", "-d", "-t", "5", "-a", key, "--repeat", "3", "--pause", "3s", "--output", file,
			"-p", fmt.Sprint(port), "127.0.0.1"}
	}

	t.Run("three", func(t *testing.T) {
		spawnServer(t, ob, serverArgs...)
		file := filepath.Join(t.TempDir(), "repeat.json")
		out, code, err := runClientProc(udpstpBin, clientArgs(file)...)
		if err != nil || code != 0 {
			t.Fatalf("exit %d %v\n%s", code, err, out)
		}
		checkRepeatComplete(t, file, 3)
	})

	t.Run("second-fails", func(t *testing.T) {
		first := startServerProc(t, exec.Command(ob, serverArgs...), false) // udpst says nothing when it listens
		file := filepath.Join(t.TempDir(), "repeat.json")
		c := start(t, exec.Command(udpstpBin, clientArgs(file)...), procOpts{name: "udpstp client"})
		// Run 1 is over; the 3 s pause follows.
		c.waitOutput(t, "Downstream Maximum ", 90*time.Second)
		first.kill()
		killed := true
		// Run 2 has failed; the server is back for run 3, which must not
		// have started before run 2 reported its failure.
		failed := c.waitOutput(t, "ERROR: Minimum required connections", 90*time.Second)
		if run3 := strings.Index(c.output(), "Run 3 of 3"); run3 >= 0 && run3 < strings.Index(c.output(), failed) {
			t.Fatalf("run 3 started before run 2 reported its failure:\n%s", c.output())
		}
		spawnServer(t, ob, serverArgs...)
		code := c.exit(t, 90*time.Second)
		out := c.output()
		if code == 0 || !killed {
			t.Fatalf("exit status %d (server killed: %v)\n%s", code, killed, out)
		}
		r := readRepeat(t, file)
		if len(r.Runs) != 3 || r.Aggregate.RunsCompleted != 2 || r.Aggregate.RunsFailed != 1 || r.Aggregate.ErrorStatus != code {
			t.Fatalf("%d runs, aggregate %+v, exit %d\n%s", len(r.Runs), r.Aggregate, code, out)
		}
		if s := r.Aggregate.RunStatus[1]; s.Completed != 0 || s.ErrorStatus < 50 || r.Runs[1].ErrorStatus != s.ErrorStatus || s.ErrorMessage == "" {
			t.Errorf("the second run: %+v, its document's ErrorStatus %d", s, r.Runs[1].ErrorStatus)
		}
		checkComplete(t, r.Runs[0], r.Runs[0].ErrorStatus, "run 1", 5)
		checkComplete(t, r.Runs[2], r.Runs[2].ErrorStatus, "run 3", 5)
		checkRepeatMedian(t, r)
		if !strings.Contains(out, "Repeat: 3 of 3 runs, 2 completed, 1 failed") || !strings.Contains(out, "Run 2 failed, ErrorStatus ") {
			t.Errorf("the table does not show the failure:\n%s", out)
		}
		t.Logf("exit %d; run 2: %s", code, r.Aggregate.RunStatus[1].ErrorMessage)
	})
}

// TestRepeatBidirectional: two bidirectional tests in a row against
// OB-UDPST's server (ours without UDPST_BIN): each run is a complete
// pair, and the aggregate has both directions over both runs.
func TestRepeatBidirectional(t *testing.T) {
	e2e(t)
	bin, args := udpstpBin, []string{"server"}
	if b := optionalUdpstBin(t); b != "" {
		bin, args = b, nil
	}
	port := freePort(t, "127.0.0.1")
	spawnServer(t, bin, append(args, "-p", fmt.Sprint(port), "127.0.0.1")...)
	file := filepath.Join(t.TempDir(), "repeat.json")
	out, code, err := runClientProc(udpstpBin, "client", "--bidirectional", "-t", "5", "--repeat", "2", "-f", "json", "--output", file, "-p", fmt.Sprint(port), "127.0.0.1")
	if err != nil || code != 0 {
		t.Fatalf("exit %d %v\n%.3000s", code, err, out)
	}
	var r struct {
		Runs      []bidirResult
		Aggregate map[string]any
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Runs) != 2 {
		t.Fatalf("%d runs", len(r.Runs))
	}
	for _, run := range r.Runs {
		checkBidir(t, run, 0, string(out), 5, 2, 1, false)
	}
	for _, dir := range []string{"Upstream", "Downstream"} {
		d, _ := r.Aggregate[dir].(map[string]any)
		if d["Runs"] != 2.0 || d["MaxIPLayerCapacity"] == nil || d["IdleRTTAvg"] == nil {
			t.Errorf("%s aggregate %v", dir, d)
		}
	}
}
