//go:build linux

package e2e

// Finding a server (docs/fleet.md) against a real DNS server: dnsmasq
// in the lab's server namespace serves SRV records of _udpst._udp under
// names of .test, pointing at servers in that namespace; the client runs
// in the client namespace, whose resolver is that dnsmasq: `ip netns exec`
// bind-mounts /etc/netns/<namespace>/resolv.conf over /etc/resolv.conf.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/udpstp/udpstp/control"
	"github.com/udpstp/udpstp/internal/testkit/await"
	"github.com/udpstp/udpstp/internal/testkit/netlab"
)

// dnsmasqPath finds dnsmasq: on PATH or in /usr/sbin (Debian's
// dnsmasq-base). Without it the test skips, and fails under CI=true,
// where .ci/run installs it.
func dnsmasqPath(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"dnsmasq", "/usr/sbin/dnsmasq"} {
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("dnsmasq is missing (Debian package dnsmasq-base): the SRV tests need a real DNS server")
	}
	t.Skip("dnsmasq is missing (Debian package dnsmasq-base): the SRV tests need a real DNS server")
	return ""
}

// srvLab is a lab with servers behind SRV records.
type srvLab struct {
	l     *netlab.Lab
	ports map[string]int    // by host name: each server's control port
	addrs map[string]string // by host name: each server's address
	procs map[string]*proc
}

// srvRecord is one SRV record of _udpst._udp.<name>.test.
type srvRecord struct {
	name, target string // "" target: the record with target "."
	prio, weight int
}

// startSRVLab builds the lab of cfg, starts our servers (name -> extra
// options; in the server namespace, or in the client's at ClientAddr for
// the names inClient: on the client's own host, off the lab's path) and a
// port nothing listens on ("down"), and dnsmasq with the records.
func startSRVLab(t *testing.T, cfg netlab.Config, servers map[string][]string, records []srvRecord, inClient ...string) *srvLab {
	t.Helper()
	dnsmasq := dnsmasqPath(t)
	processTest(t) // its tests run at a fixed 50 Mbit/s
	s := &srvLab{l: netlab.New(t, cfg), ports: map[string]int{}, addrs: map[string]string{}, procs: map[string]*proc{}}
	addr := s.l.ServerAddr.String()
	next := 31000
	for name, extra := range servers {
		next++
		s.ports[name], s.addrs[name] = next, addr
		ns := s.l.ServerNS
		if slices.Contains(inClient, name) {
			ns, s.addrs[name] = s.l.ClientNS, s.l.ClientAddr.String()
		}
		args := append([]string{"server", "-p", fmt.Sprint(next)}, extra...)
		cmd := s.l.Command(ns, udpstpBin, append(args, s.addrs[name])...)
		p := startServerProc(t, cmd, true)
		p.stopAtCleanup(t, name)
		s.procs[name] = p
	}
	s.ports["down"], s.addrs["down"] = next+100, addr // nothing listens there

	dir := t.TempDir()
	args := []string{"--no-daemon", "--conf-file=/dev/null", "--port=53", "--listen-address=" + addr, "--bind-interfaces",
		"--no-resolv", "--no-hosts", "--local=/test/", "--user=root", "--pid-file=" + filepath.Join(dir, "pid"),
		"--log-queries", "--log-facility=-"}
	for name := range s.ports {
		args = append(args, fmt.Sprintf("--host-record=%s.test,%s", name, s.addrs[name]))
	}
	for _, r := range records {
		if r.target == "" {
			args = append(args, fmt.Sprintf("--srv-host=_udpst._udp.%s.test", r.name))
			continue
		}
		args = append(args, fmt.Sprintf("--srv-host=_udpst._udp.%s.test,%s.test,%d,%d,%d", r.name, r.target, s.ports[r.target], r.prio, r.weight))
	}
	dns := start(t, s.l.Command(s.l.ServerNS, dnsmasq, args...), procOpts{name: "dnsmasq", merge: true, readyUDP: 53})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("dnsmasq:\n%s", dns.log())
		}
	})

	// The client namespace's resolver: this dnsmasq.
	etc := filepath.Join("/etc/netns", s.l.ClientNS)
	if err := os.MkdirAll(etc, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(etc) })
	conf := fmt.Sprintf("nameserver %s\noptions timeout:2 attempts:2\n", addr)
	if err := os.WriteFile(filepath.Join(etc, "resolv.conf"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	return s
}

// srvResult is the part of a client's JSON these tests read.
type srvResult struct {
	ErrorStatus   int
	ErrorMessage  string
	ErrorMessage2 string
	Input         struct {
		Host, HostIPAddress string
		HostList            []struct {
			Host        string
			ControlPort int
		}
	}
	Output struct {
		IncrementalResult []struct{}
	}
}

// client runs our client in the client namespace, in JSON, against host
// (srv:...), and returns its result.
func (s *srvLab) client(t *testing.T, host string, extra ...string) (srvResult, string) {
	t.Helper()
	args := append([]string{"client", "-f", "json", "-d", "-t", "5", "-I", "50"}, extra...)
	out, err := runOutput(s.l.Command(s.l.ClientNS, udpstpBin, append(args, host)...))
	var r srvResult
	if jerr := json.Unmarshal(out, &r); jerr != nil {
		t.Fatalf("client %s: %v, output is not JSON: %v\n%s", host, err, jerr, out)
	}
	return r, string(out)
}

// checkUsed checks a test that completed on the server named want.
func (s *srvLab) checkUsed(t *testing.T, r srvResult, out, want string) {
	t.Helper()
	if r.ErrorStatus != 0 {
		t.Fatalf("ErrorStatus %d %q %q, want a complete test on %s\n%s", r.ErrorStatus, r.ErrorMessage, r.ErrorMessage2, want, out)
	}
	if r.Input.Host != want+".test" || r.Input.HostIPAddress != s.l.ServerAddr.String() ||
		len(r.Input.HostList) != 1 || r.Input.HostList[0].ControlPort != s.ports[want] {
		t.Errorf("the result names %+v, want %s.test (%s port %d)", r.Input, want, s.l.ServerAddr, s.ports[want])
	}
	checkSubIntervals(t, len(r.Output.IncrementalResult), 5)
}

// TestDnsmasqLabSRVFailover: the client takes srv:NAME, asks dnsmasq for
// the SRV records and uses the first candidate by priority that accepts:
// priority order both ways, a first candidate that is down (nothing
// listens: ICMP), silent (stopped: no answer within the Setup timer),
// busy (capacity exceeded, code 10) or draining (code 13), and every
// candidate failing (a clear error listing what was tried), and a record
// with target "." (no service).
func TestDnsmasqLabSRVFailover(t *testing.T) {
	s := startSRVLab(t, netlab.Config{},
		map[string][]string{"a": nil, "b": nil, "full": {"-B", "10"}, "silent": nil, "drain": nil},
		[]srvRecord{
			{name: "order", target: "a", prio: 10, weight: 5}, {name: "order", target: "b", prio: 20, weight: 5},
			{name: "reverse", target: "a", prio: 20, weight: 5}, {name: "reverse", target: "b", prio: 10, weight: 5},
			{name: "down", target: "down", prio: 10}, {name: "down", target: "b", prio: 20},
			{name: "silent", target: "silent", prio: 10}, {name: "silent", target: "b", prio: 20},
			{name: "busy", target: "full", prio: 10}, {name: "busy", target: "b", prio: 20},
			{name: "drain", target: "drain", prio: 10}, {name: "drain", target: "b", prio: 20},
			{name: "allfail", target: "down", prio: 10}, {name: "allfail", target: "full", prio: 20},
			{name: "none"},
		})

	t.Run("priority", func(t *testing.T) {
		r, out := s.client(t, "srv:order.test")
		s.checkUsed(t, r, out, "a")
		r, out = s.client(t, "srv:reverse.test")
		s.checkUsed(t, r, out, "b")
	})
	t.Run("first-down", func(t *testing.T) {
		r, out := s.client(t, "srv:down.test")
		s.checkUsed(t, r, out, "b")
		// -C 2: both Test Connections go to the server that accepted.
		r, out = s.client(t, "srv:down.test", "-C", "2")
		s.checkUsed(t, r, out, "b")
	})
	t.Run("first-silent", func(t *testing.T) {
		p := s.procs["silent"]
		if err := p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		defer p.cmd.Process.Signal(syscall.SIGCONT)
		r, out := s.client(t, "srv:silent.test")
		s.checkUsed(t, r, out, "b")
	})
	t.Run("first-busy", func(t *testing.T) {
		r, out := s.client(t, "srv:busy.test", "-B", "100")
		s.checkUsed(t, r, out, "b")
	})
	t.Run("first-draining", func(t *testing.T) {
		// A test runs on the server "drain", which then gets SIGTERM:
		// it drains, refusing new tests with code 13, and the client of
		// srv:drain.test moves to b. The running test completes.
		p := s.procs["drain"]
		running := make(chan srvResult, 1)
		runningOut := make(chan string, 1)
		go func() {
			out, _ := runOutput(s.l.Command(s.l.ClientNS, udpstpBin, "client", "-f", "json", "-d", "-t", "10", "-I", "50",
				"-p", fmt.Sprint(s.ports["drain"]), s.l.ServerAddr.String()))
			var r srvResult
			json.Unmarshal(out, &r)
			running <- r
			runningOut <- string(out)
		}()
		p.waitLog(t, "test started", await.Deadline)
		p.signal(t, syscall.SIGTERM)
		p.waitLog(t, "draining: no new tests", await.Deadline)
		r, out := s.client(t, "srv:drain.test")
		s.checkUsed(t, r, out, "b")
		first := <-running
		if first.ErrorStatus != 0 {
			t.Errorf("the test running on the draining server: ErrorStatus %d %q\n%s", first.ErrorStatus, first.ErrorMessage, <-runningOut)
		} else {
			checkSubIntervals(t, len(first.Output.IncrementalResult), 10)
		}
	})
	t.Run("all-fail", func(t *testing.T) {
		r, out := s.client(t, "srv:allfail.test", "-B", "100")
		msg := r.ErrorMessage + " " + r.ErrorMessage2
		want := []string{"No server of srv:allfail.test accepted the test",
			fmt.Sprintf("down.test (%s:%d)", s.l.ServerAddr, s.ports["down"]),
			fmt.Sprintf("full.test (%s:%d)", s.l.ServerAddr, s.ports["full"]),
			control.SetupCodeText(control.SetupCapExceeded)}
		for _, w := range want {
			if !strings.Contains(msg, w) {
				t.Errorf("error %q lacks %q\n%s", msg, w, out)
			}
		}
		if r.ErrorStatus != 100+int(control.SetupCapExceeded) {
			t.Errorf("ErrorStatus %d, want %d (the last candidate's refusal)", r.ErrorStatus, 100+int(control.SetupCapExceeded))
		}
	})
	t.Run("no-service", func(t *testing.T) {
		r, out := s.client(t, "srv:none.test")
		if r.ErrorStatus == 0 || !strings.Contains(r.ErrorMessage+r.ErrorMessage2, "not offered") {
			t.Errorf("target \".\": ErrorStatus %d %q\n%s", r.ErrorStatus, r.ErrorMessage, out)
		}
	})
	t.Run("text", func(t *testing.T) {
		// Text mode says which server was used and which failed first.
		out, err := runOutput(s.l.Command(s.l.ClientNS, udpstpBin, "client", "-d", "-t", "5", "-I", "50", "srv:down.test"))
		if err != nil {
			t.Fatalf("client: %v\n%s", err, out)
		}
		want := fmt.Sprintf("Server: b.test (%s:%d), from srv:down.test after down.test (%s:%d): ", s.l.ServerAddr, s.ports["b"], s.l.ServerAddr, s.ports["down"])
		if !strings.Contains(string(out), want) {
			t.Errorf("text report lacks %q:\n%s", want, out)
		}
	})
}
