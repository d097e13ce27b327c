package client

import (
	"bytes"
	"context"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/udpstp/udpstp/control"
	"github.com/udpstp/udpstp/dataphase"
	"github.com/udpstp/udpstp/internal/testkit/memnet"
)

// memNetwork is the in-memory network as a control.Network.
type memNetwork struct{ *memnet.Net }

var _ control.Network = memNetwork{}

func (n memNetwork) ListenUDP(laddr netip.AddrPort, o control.SocketOptions) (control.Socket, error) {
	s, err := n.Listen(laddr, o.Family)
	if err != nil {
		return nil, err // not a typed nil in the interface
	}
	return s, nil
}

func (n memNetwork) RunDataPhase(_ control.Socket, core *dataphase.Conn, onEvent func(dataphase.Event)) control.DataPhase {
	return n.Run(core, onEvent)
}

// untilStopped is a Data Phase that reports nothing and runs until it is
// stopped (a server's, so that its Admission slot stays taken; a client's
// that an interrupt or a failed minimum must end).
func untilStopped(d *memnet.DataPhase) {
	<-d.Stopped()
	d.Emit(dataphase.Event{Kind: dataphase.EvEnd, End: dataphase.EndLocalStop})
}

// complete is a client's Data Phase that completes its 5 Sub-Intervals at
// 100 Mbps (10,000 datagrams of 1,222 bytes a second, minus 1 % loss) and
// ends with the stop handshake.
func complete(d *memnet.DataPhase) {
	for i := range 5 {
		d.Emit(dataphase.Event{Kind: dataphase.EvSubInterval, SubInt: dataphase.SubIntervalResult{
			Seq: uint32(i + 1),
			Stats: dataphase.SubIntervalStats{RxDatagrams: 9900, RxBytes: 9900 * 1222, DeltaTime: 1_000_000,
				SeqErrLoss: 100, DelayVarMin: 1, DelayVarMax: 3, DelayVarSum: 20, DelayVarCnt: 10,
				RTTVarMin: 1, RTTVarMax: 2, AccumTime: uint32(1000 * (i + 1))},
			RTTMinimum: 1, ClockDeltaSet: true,
		}})
	}
	d.Emit(dataphase.Event{Kind: dataphase.EvEnd, End: dataphase.EndStopped})
}

// after is script once gate is closed: Data Phases that report only
// after every setup of the run was decided, as a real test's first
// Sub-Interval comes long after its setups.
func after(gate <-chan struct{}, script func(*memnet.DataPhase)) func(*memnet.DataPhase) {
	return func(d *memnet.DataPhase) {
		select {
		case <-gate:
			script(d)
		case <-d.Stopped():
			d.Emit(dataphase.Event{Kind: dataphase.EvEnd, End: dataphase.EndLocalStop})
		}
	}
}

// decided returns an observer that closes the gate it returns once n
// setups were decided: connected, or failed (an error, or the warning of a
// timeout; an ALERT line, code -1, decides nothing).
func decided(n int) (func(Event, context.CancelFunc), <-chan struct{}) {
	gate := make(chan struct{})
	seen := 0
	return func(e Event, _ context.CancelFunc) {
		failed := (e.Kind == EventError || e.Kind == EventWarning && e.Code > 0) && e.Conn >= 0
		if e.Kind == EventConnected || failed {
			if seen++; seen == n {
				close(gate)
			}
		}
	}, gate
}

// startServer runs a server bound at addr on w until the test ends; its
// Data Phases run until it stops them.
func startServer(t *testing.T, w *memnet.Wire, addr string, port uint16, edit func(*control.ServerConfig)) *control.Server {
	t.Helper()
	cfg := control.DefaultServerConfig()
	cfg.BindAddrs = []string{addr}
	if edit != nil {
		edit(&cfg)
	}
	n := memNetwork{&memnet.Net{Wire: w, NextPort: port, Script: untilStopped}}
	s, err := control.NewServer(cfg, n, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(memnet.Start(s.Serve))
	return s
}

// outcome is what a run reported.
type outcome struct {
	status int
	events []Event
	doc    map[string]any // the JSON report
	out    string
}

func (o *outcome) count(k EventKind) int {
	n := 0
	for _, e := range o.events {
		if e.Kind == k {
			n++
		}
	}
	return n
}

func (o *outcome) texts(k EventKind) []string {
	var s []string
	for _, e := range o.events {
		if e.Kind == k {
			s = append(s, e.Text)
		}
	}
	return s
}

// testConfig is a 5 s downstream test to the servers at 127.0.0.x, JSON
// report.
func testConfig(servers ...string) *control.ClientConfig {
	cfg := control.DefaultClientConfig()
	cfg.TestIntTime = 5
	cfg.Format = "json"
	for _, s := range servers {
		cfg.Servers = append(cfg.Servers, control.ServerAddr{Host: s, Port: control.DefaultControlPort})
	}
	return &cfg
}

// runOn runs cfg (one test) with a client network on w whose Data
// Phases play script (testPlan); observe, if set, sees each event too
// (with the cancel of the run's context).
func runOn(t *testing.T, w *memnet.Wire, cfg *control.ClientConfig, script func(*memnet.DataPhase), observe func(Event, context.CancelFunc)) *outcome {
	t.Helper()
	o := testPlan(t, w, cfg, Plan{}, script, observe)
	if got := int(o.doc["ErrorStatus"].(float64)); got != o.status {
		t.Errorf("report's ErrorStatus %d, Run returned %d", got, o.status)
	}
	if o.count(EventEnd) != 1 {
		t.Errorf("%d EventEnd: %+v", o.count(EventEnd), o.events)
	}
	return o
}

// checkOrder: a Test Connection's events come after its EventConnected
// and before its EventConnEnded, and each is connected and ends once.
func checkOrder(t *testing.T, events []Event) {
	t.Helper()
	state := map[int]int{} // 1 connected, 2 ended
	for _, e := range events {
		switch e.Kind {
		case EventConnected:
			if state[e.Conn] != 0 {
				t.Errorf("connection %d connected twice", e.Conn)
			}
			if e.Activated == nil {
				t.Errorf("connection %d: EventConnected without its ClientConn", e.Conn)
			}
			state[e.Conn] = 1
		case EventSubInterval:
			if state[e.Conn] != 1 {
				t.Errorf("connection %d: a Sub-Interval outside its Data Phase", e.Conn)
			}
		case EventConnEnded:
			if state[e.Conn] != 1 {
				t.Errorf("connection %d ended while not running", e.Conn)
			}
			state[e.Conn] = 2
		}
	}
}

func summary(t *testing.T, doc map[string]any) map[string]any {
	t.Helper()
	out, _ := doc["Output"].(map[string]any)
	s, _ := out["Summary"].(map[string]any)
	return s
}

// TestRunOneServer: a single Test Connection runs its test to the end:
// connected, five Sub-Intervals, a normal end, ErrorStatus 0 and a report
// with results, also in the result file.
func TestRunOneServer(t *testing.T) {
	w := memnet.NewWire()
	srv := startServer(t, w, "127.0.0.1", 40000, nil)
	cfg := testConfig("127.0.0.1")
	cfg.OutputFile = filepath.Join(t.TempDir(), "result.json")
	o := runOn(t, w, cfg, complete, nil)
	if o.status != 0 || o.count(EventConnected) != 1 || o.count(EventSubInterval) != 5 || o.count(EventConnEnded) != 1 {
		t.Fatalf("status %d, events %+v\n%s", o.status, o.events, o.out)
	}
	if s := summary(t, o.doc); s == nil || s["IPLayerCapacitySummary"].(float64) <= 0 {
		t.Errorf("no Summary in the report:\n%s", o.out)
	}
	for _, e := range o.events {
		if e.Kind == EventConnEnded && e.End != dataphase.EndStopped {
			t.Errorf("ended %v", e.End)
		}
		if e.Kind == EventConnected && (e.Server != cfg.Servers[0] || e.Activated.Server.Port() != control.DefaultControlPort) {
			t.Errorf("connected to %+v (%v)", e.Server, e.Activated.Server)
		}
	}
	file, err := os.ReadFile(cfg.OutputFile)
	if err != nil || !bytes.Contains(file, []byte(`"IPLayerCapacitySummary"`)) {
		t.Errorf("result file: %v\n%s", err, file)
	}
	if n := srv.Snapshot().Counts[control.CountSetupAccepted]; n != 1 {
		t.Errorf("the server accepted %d Setup Requests", n)
	}
}

// refusing is a server that refuses every Setup Request at once (its
// jumbo option differs from the client's): a Test Connection that fails
// for sure, whatever the order the setups race in.
func refusing(c *control.ServerConfig) { c.NoJumbo = true }

// TestRunConnectionsMinimumMet: -C 2-4 over a server that accepts and one
// that refuses: the two Test Connections to the first run, the two
// refusals are reported, and with the minimum met the test completes (the
// normal stops make it a success, as in OB-UDPST).
func TestRunConnectionsMinimumMet(t *testing.T) {
	w := memnet.NewWire()
	startServer(t, w, "127.0.0.1", 40000, nil)
	startServer(t, w, "127.0.0.2", 41000, refusing)
	cfg := testConfig("127.0.0.1", "127.0.0.2")
	cfg.ConnMin, cfg.ConnMax = 2, 4
	observe, gate := decided(4)
	o := runOn(t, w, cfg, after(gate, complete), observe)
	if o.count(EventConnected) != 2 || o.count(EventConnEnded) != 2 || o.count(EventSubInterval) != 10 {
		t.Fatalf("events %+v", o.events)
	}
	refusal := "ERROR: " + control.SetupCodeText(control.SetupJumboMismatch) + " 127.0.0.2:24601"
	if errs := o.texts(EventError); len(errs) != 2 || errs[0] != refusal || errs[1] != refusal {
		t.Errorf("errors %q, want the two refusals", errs)
	}
	for _, e := range o.events {
		if e.Kind == EventConnected && e.Server.Host != "127.0.0.1" {
			t.Errorf("connection %d connected to %+v", e.Conn, e.Server)
		}
	}
	if o.status != 0 || summary(t, o.doc) == nil {
		t.Errorf("status %d, report:\n%s", o.status, o.out)
	}
	in, _ := o.doc["Input"].(map[string]any)
	if in["NumberOfConnections"] != 4.0 || in["MinNumOfConnections"] != 2.0 {
		t.Errorf("report's connections %v-%v, want 2-4", in["MinNumOfConnections"], in["NumberOfConnections"])
	}
}

// TestRunConnectionsMinimumRefused: -C 3-4 over a server that accepts and
// one that refuses: with the two refusals fewer than the minimum are left,
// and the run ends without results, keeping the refusals' ErrorStatus
// (OB-UDPST sets 200 only over success or a warning). A Test Connection
// activated by then is stopped by the run; one activated later is closed
// without starting.
func TestRunConnectionsMinimumRefused(t *testing.T) {
	w := memnet.NewWire()
	srv := startServer(t, w, "127.0.0.1", 40000, nil)
	startServer(t, w, "127.0.0.2", 41000, refusing)
	cfg := testConfig("127.0.0.1", "127.0.0.2")
	cfg.ConnMin, cfg.ConnMax = 3, 4
	o := runOn(t, w, cfg, untilStopped, nil)
	if want := 100 + int(control.SetupJumboMismatch); o.status != want {
		t.Errorf("status %d, want %d", o.status, want)
	}
	var minErr []string
	refusals := 0
	for _, e := range o.events {
		switch {
		case e.Kind == EventError && e.Conn == -1:
			minErr = append(minErr, e.Text)
		case e.Kind == EventError:
			refusals++
		case e.Kind == EventConnEnded && e.End != dataphase.EndLocalStop:
			t.Errorf("connection %d ended %v, want stopped by the run", e.Conn, e.End)
		}
	}
	if len(minErr) != 1 || minErr[0] != "ERROR: Minimum required connections (3) unavailable" || refusals != 2 {
		t.Errorf("minimum errors %q, %d refusals; events %+v", minErr, refusals, o.events)
	}
	if c, e := o.count(EventConnected), o.count(EventConnEnded); c > 2 || c != e {
		t.Errorf("%d connected, %d ended", c, e)
	}
	if n := srv.Snapshot().Counts[control.CountSetupAccepted]; n != 2 {
		t.Errorf("the accepting server accepted %d", n)
	}
	if summary(t, o.doc) != nil {
		t.Errorf("results despite the failed minimum:\n%s", o.out)
	}
}

// TestRunSeveralServers: -C 1-4 over two servers: the Test Connections go
// round robin, two to each, and the report lists both hosts.
func TestRunSeveralServers(t *testing.T) {
	w := memnet.NewWire()
	a := startServer(t, w, "127.0.0.1", 40000, nil)
	b := startServer(t, w, "127.0.0.2", 41000, nil)
	cfg := testConfig("127.0.0.1", "127.0.0.2")
	cfg.ConnMin, cfg.ConnMax = 1, 4
	o := runOn(t, w, cfg, complete, nil)
	if o.status != 0 || o.count(EventConnected) != 4 {
		t.Fatalf("status %d, events %+v", o.status, o.events)
	}
	for _, e := range o.events {
		if e.Kind == EventConnected {
			if want := cfg.Servers[e.Conn%2]; e.Server != want || e.Activated.Server.Addr().String() != want.Host {
				t.Errorf("connection %d went to %+v (%v), want %+v", e.Conn, e.Server, e.Activated.Server, want)
			}
		}
	}
	for i, s := range []*control.Server{a, b} {
		if n := s.Snapshot().Counts[control.CountSetupAccepted]; n != 2 {
			t.Errorf("server %d accepted %d", i, n)
		}
	}
	in, _ := o.doc["Input"].(map[string]any)
	if hosts, _ := in["HostList"].([]any); len(hosts) != 2 {
		t.Errorf("hosts %v", in["HostList"])
	}
}

// TestRunSetupFailure: a setup the server refuses (the jumbo option
// differs) and one that cannot open a socket end the run with their
// ErrorStatus and message, no Test Connection, and (the only one having
// failed) OB-UDPST's minimum error after it.
func TestRunSetupFailure(t *testing.T) {
	w := memnet.NewWire()
	startServer(t, w, "127.0.0.1", 40000, refusing)
	o := runOn(t, w, testConfig("127.0.0.1"), complete, nil)
	refusal := "ERROR: " + control.SetupCodeText(control.SetupJumboMismatch) + " 127.0.0.1:24601"
	minimum := "ERROR: Minimum required connections (1) unavailable"
	errs := o.texts(EventError)
	if want := 100 + int(control.SetupJumboMismatch); o.status != want || o.count(EventConnected) != 0 ||
		len(errs) != 2 || errs[0] != refusal || errs[1] != minimum {
		t.Errorf("refused: status %d (want %d), errors %q", o.status, want, errs)
	}
	if m, m2 := o.doc["ErrorMessage"], o.doc["ErrorMessage2"]; m != minimum || m2 != refusal {
		t.Errorf("report's messages %q, %q", m, m2)
	}

	// No socket for the Test Connection.
	var out bytes.Buffer
	var events []Event
	status := Run(context.Background(), testConfig("127.0.0.1"), Options{
		Network: memNetwork{&memnet.Net{FailOpen: true}}, Out: &out, Stderr: &out,
		Observe: func(e Event) { events = append(events, e) },
	})
	if status != 75 || len(events) != 3 || events[0].Kind != EventError || events[0].Code != 75 ||
		events[0].Text != "ERROR: "+memnet.ErrNoSockets.Error() || events[1].Text != minimum {
		t.Errorf("no socket: status %d, events %+v\n%s", status, events, out.String())
	}
}

// TestRunInterrupt: an interrupt (ctx cancelled) once both Test
// Connections run stops them; the run ends with ErrorStatus 255 and "Test
// interrupted", and the result file is still written.
func TestRunInterrupt(t *testing.T) {
	w := memnet.NewWire()
	startServer(t, w, "127.0.0.1", 40000, nil)
	cfg := testConfig("127.0.0.1")
	cfg.ConnMin, cfg.ConnMax = 2, 2
	cfg.OutputFile = filepath.Join(t.TempDir(), "result.json")
	connected := 0
	o := runOn(t, w, cfg, untilStopped, func(e Event, cancel context.CancelFunc) {
		if e.Kind == EventConnected {
			if connected++; connected == 2 {
				cancel()
			}
		}
	})
	if o.status != 255 || o.count(EventConnEnded) != 2 {
		t.Fatalf("status %d, events %+v", o.status, o.events)
	}
	errs := o.texts(EventError)
	if len(errs) != 1 || errs[0] != "ERROR: Test interrupted" {
		t.Errorf("errors %q", errs)
	}
	file, err := os.ReadFile(cfg.OutputFile)
	if err != nil || !bytes.Contains(file, []byte("Test interrupted")) {
		t.Errorf("result file after the interrupt: %v\n%s", err, file)
	}
}
