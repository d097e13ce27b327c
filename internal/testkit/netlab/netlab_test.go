//go:build linux

package netlab

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// ourNamespaces returns the namespaces this process created and has not
// deleted.
func ourNamespaces(t *testing.T) []string {
	t.Helper()
	names, err := listNS()
	if err != nil {
		t.Fatal(err)
	}
	prefix := fmt.Sprintf("%s%d-", nsPrefix, os.Getpid())
	var ours []string
	for _, n := range names {
		if strings.HasPrefix(n, prefix) {
			ours = append(ours, n)
		}
	}
	return ours
}

// ipNetnsList returns what `ip netns list` prints.
func ipNetnsList(t *testing.T) string {
	t.Helper()
	out, err := exec.Command(probeOnce().tools.ip, "netns", "list").CombinedOutput()
	if err != nil {
		t.Fatalf("ip netns list: %v: %s", err, out)
	}
	return string(out)
}

func TestBuildAndClose(t *testing.T) {
	skipUnlessAvailable(t, Config{})
	l, err := Build(Config{})
	if err != nil {
		t.Fatal(err)
	}
	list := ipNetnsList(t)
	for _, ns := range []string{l.ClientNS, l.ServerNS} {
		if !strings.Contains(list, ns) {
			l.Close()
			t.Fatalf("namespace %s missing from `ip netns list`:\n%s", ns, list)
		}
	}
	// The veth ends were created inside the namespaces, never here.
	if out, err := exec.Command(probeOnce().tools.ip, "link", "show", "dev", clientDev).CombinedOutput(); err == nil {
		t.Errorf("%s exists in the initial namespace:\n%s", clientDev, out)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := l.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	list = ipNetnsList(t)
	for _, ns := range []string{l.ClientNS, l.ServerNS} {
		if strings.Contains(list, ns) {
			t.Errorf("namespace %s still listed after Close:\n%s", ns, list)
		}
	}
	if err := l.Shape(Down, Shape{RateBps: 1e6}); err == nil {
		t.Error("Shape on a closed lab succeeded")
	}
}

func TestBuildCleansUpWhenAStepFails(t *testing.T) {
	skipUnlessAvailable(t, Config{})
	if before := ourNamespaces(t); len(before) > 0 {
		t.Fatalf("namespaces left by earlier tests: %v", before)
	}
	for _, step := range []string{"veth", "sysctl", "addresses", "up", "routes", "shape"} {
		injected := errors.New("injected failure")
		l, err := buildLab(Config{Down: Shape{RateBps: 10e6}}, func(s string) error {
			if s == step {
				return injected
			}
			return nil
		})
		if !errors.Is(err, injected) || l != nil {
			t.Fatalf("step %s: Build = %v, %v; want the injected error", step, l, err)
		}
		if left := ourNamespaces(t); len(left) > 0 {
			t.Fatalf("step %s: namespaces left behind: %v", step, left)
		}
	}
	if _, err := Build(Config{MTU: 1234}); err == nil {
		t.Error("Build accepted MTU 1234")
	}
}

func TestConnectivity(t *testing.T) {
	l := New(t, Config{})
	for _, addr := range []netip.Addr{l.ServerAddr, l.ClientAddr, l.ServerAddr6, l.ClientAddr6} {
		if !addr.IsValid() {
			continue
		}
		want := netip.MustParsePrefix("198.18.0.0/15")
		if addr.Is6() {
			want = netip.MustParsePrefix("2001:2::/48")
		}
		if !want.Contains(addr) {
			t.Errorf("address %v outside %v", addr, want)
		}
	}
	pairs := [][2]netip.Addr{{l.ClientAddr, l.ServerAddr}}
	if l.ServerAddr6.IsValid() {
		pairs = append(pairs, [2]netip.Addr{l.ClientAddr6, l.ServerAddr6})
	} else {
		t.Log("no IPv6 in this kernel: IPv4 only")
	}
	for _, p := range pairs {
		t.Run(p[1].String(), func(t *testing.T) {
			srv := listen(t, l, l.ServerNS, p[1])
			cli := listen(t, l, l.ClientNS, p[0])
			echoed := make(chan error, 1)
			go func() {
				buf := make([]byte, 100)
				srv.SetReadDeadline(time.Now().Add(5 * time.Second))
				n, from, err := srv.ReadFromUDPAddrPort(buf)
				if err == nil {
					_, err = srv.WriteToUDPAddrPort(buf[:n], from)
				}
				echoed <- err
			}()
			if _, err := cli.WriteToUDPAddrPort([]byte("ping"), srv.LocalAddr().(*net.UDPAddr).AddrPort()); err != nil {
				t.Fatal(err)
			}
			cli.SetReadDeadline(time.Now().Add(5 * time.Second))
			buf := make([]byte, 100)
			n, from, err := cli.ReadFromUDPAddrPort(buf)
			if err != nil {
				t.Fatalf("no echo: %v", err)
			}
			if err := <-echoed; err != nil {
				t.Fatalf("server: %v", err)
			}
			if string(buf[:n]) != "ping" || from.Addr() != p[1] {
				t.Errorf("got %q from %v, want \"ping\" from %v", buf[:n], from, p[1])
			}
		})
	}
	// Command runs inside the namespace: the client end has its address.
	out, err := l.Command(l.ClientNS, "ip", "-o", "addr", "show", "dev", l.ClientDev).CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte(l.ClientAddr.String()+"/30")) {
		t.Errorf("ip addr in %s: %v\n%s", l.ClientNS, err, out)
	}
	if err := l.Command("udpstp-elsewhere", "true").Run(); err == nil {
		t.Error("Command ran in a namespace that is not the lab's")
	}
	if err := l.Do("", func() error { return nil }); err == nil {
		t.Error("Do accepted an empty namespace")
	}
}

// linkMTU reads the MTU of dev in ns.
func linkMTU(t *testing.T, l *Lab, ns, dev string) int {
	t.Helper()
	out, err := l.Command(ns, "ip", "-d", "-j", "link", "show", "dev", dev).Output()
	if err != nil {
		t.Fatalf("ip link show %s in %s: %v", dev, ns, err)
	}
	var links []struct {
		MTU        int `json:"mtu"`
		GSOMaxSegs int `json:"gso_max_segs"`
	}
	if err := json.Unmarshal(out, &links); err != nil || len(links) != 1 {
		t.Fatalf("ip -j link show: %v: %s", err, out)
	}
	if links[0].GSOMaxSegs != 1 {
		t.Errorf("%s in %s: gso_max_segs %d, want 1", dev, ns, links[0].GSOMaxSegs)
	}
	return links[0].MTU
}

func TestJumboMTU(t *testing.T) {
	const rate = 100e6
	l := New(t, Config{MTU: JumboMTU, Down: Shape{RateBps: rate}})
	for _, e := range l.linkEnds() {
		if mtu := linkMTU(t, l, e.ns, e.dev); mtu != JumboMTU {
			t.Errorf("%s in %s: MTU %d, want %d", e.dev, e.ns, mtu, JumboMTU)
		}
	}
	if got, want := l.Config().Down.Burst, DefaultBurst(rate, JumboMTU); got != want || want < JumboMTU+EthHeader {
		t.Errorf("burst %d, want %d (at least one jumbo frame)", got, want)
	}
	// A full jumbo datagram crosses the shaped direction in one frame.
	srv := listen(t, l, l.ServerNS, l.ServerAddr)
	cli := listen(t, l, l.ClientNS, l.ClientAddr)
	if err := sockopt(srv, func(fd int) error {
		// Fail rather than fragment if the path were smaller.
		return unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_MTU_DISCOVER, unix.IP_PMTUDISC_DO)
	}); err != nil {
		t.Fatal(err)
	}
	size := JumboMTU - 28
	got, sent := exchange(t, blast{id: statusID, size: size, rateBps: 10e6, count: 5, dur: 2 * time.Second}, srv, cli)
	if sent != 5 || len(got) != 5 || got[0].size != size {
		t.Fatalf("sent %d, received %d datagrams (%v), want 5 of %d bytes", sent, len(got), got, size)
	}
	st, err := l.QdiscStats(Down)
	if err != nil {
		t.Fatal(err)
	}
	if st.Kind != "tbf" || st.Drops != 0 || st.Bytes < int64(5*(size+udpIPv4Overhead)) {
		t.Errorf("tbf stats %+v: want 5 unfragmented frames of %d bytes, no drops", st, size+udpIPv4Overhead)
	}
}

func TestParallelLabsDoNotCollide(t *testing.T) {
	skipUnlessAvailable(t, Config{})
	const n = 3
	labs := make([]*Lab, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { labs[i], errs[i] = Build(Config{Up: Shape{RateBps: int64(i+1) * 10e6}}) })
	}
	wg.Wait()
	for _, l := range labs {
		if l != nil {
			t.Cleanup(func() { l.Close() })
		}
	}
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range labs {
		names = append(names, l.ClientNS, l.ServerNS)
	}
	slices.Sort(names)
	if len(slices.Compact(names)) != 2*n {
		t.Fatalf("namespace names collide: %v", names)
	}
	for i, l := range labs {
		srv := listen(t, l, l.ServerNS, l.ServerAddr)
		cli := listen(t, l, l.ClientNS, l.ClientAddr)
		got, _ := exchange(t, blast{id: statusID, size: 100, rateBps: 1e6, count: 3, dur: time.Second}, cli, srv)
		if len(got) != 3 {
			t.Errorf("lab %d (%v): %d of 3 datagrams arrived", i, l, len(got))
		}
		if s := l.Config().Up.RateBps; s != int64(i+1)*10e6 {
			t.Errorf("lab %d: Up rate %d", i, s)
		}
	}
	for _, l := range labs {
		if err := l.Close(); err != nil {
			t.Error(err)
		}
	}
	if left := ourNamespaces(t); len(left) > 0 {
		t.Errorf("namespaces left behind: %v", left)
	}
}

func TestSweep(t *testing.T) {
	skipUnlessAvailable(t, Config{})
	ip := probeOnce().tools.ip
	// A pid that surely exited: a child we waited for.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	deadPid := dead.Process.Pid
	if pidAlive(deadPid) {
		t.Skipf("pid %d was reused at once", deadPid)
	}
	stale := nsName(deadPid, 0xabc, roleClient)
	mine := nsName(os.Getpid(), 0xabc, roleClient)
	other := nsName(1, 0xabc, roleServer) // pid 1 is alive
	foreign := "udpstp-not-ours"
	for _, ns := range []string{stale, mine, other, foreign} {
		if out, err := exec.Command(ip, "netns", "add", ns).CombinedOutput(); err != nil {
			t.Fatalf("ip netns add %s: %v: %s", ns, err, out)
		}
		t.Cleanup(func() { exec.Command(ip, "netns", "delete", ns).Run() })
	}
	// An orphan left running in the stale namespace must die with it.
	orphan := exec.Command(ip, "netns", "exec", stale, "sleep", "30")
	if err := orphan.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { orphan.Wait(); close(exited) }()
	deadline := time.Now().Add(5 * time.Second)
	for { // ip netns exec has exec'd sleep once the pid is in the namespace
		out, _ := exec.Command(ip, "netns", "pids", stale).Output()
		if strings.TrimSpace(string(out)) != "" || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := Sweep(); err != nil {
		t.Fatal(err)
	}
	list := ipNetnsList(t)
	if strings.Contains(list, stale) {
		t.Errorf("Sweep kept %s of dead pid %d", stale, deadPid)
	}
	for _, ns := range []string{mine, other, foreign} {
		if !strings.Contains(list, ns) {
			t.Errorf("Sweep deleted %s", ns)
		}
	}
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		orphan.Process.Kill()
		t.Error("the process in the stale namespace survived Sweep")
	}
}

func TestCloseKillsProcessesInside(t *testing.T) {
	skipUnlessAvailable(t, Config{})
	l, err := Build(Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	cmd := l.Command(l.ServerNS, "sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	deadline := time.Now().Add(5 * time.Second)
	for {
		pids, _ := exec.Command(l.tools.ip, "netns", "pids", l.ServerNS).Output()
		if len(bytes.TrimSpace(pids)) > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		cmd.Process.Kill()
		t.Error("a process in the lab survived Close")
	}
}

// helperEnv selects a helper mode when the test binary runs itself.
const helperEnv = "UDPSTP_NETLAB_HELPER"

// TestInterruptTearsDown runs this test binary as a child that builds a
// lab and waits, interrupts it, and checks that the child died of the
// interrupt and left no namespace behind.
func TestInterruptTearsDown(t *testing.T) {
	if os.Getenv(helperEnv) == "interrupt" {
		l, err := Build(Config{Down: Shape{RateBps: 10e6}})
		if err != nil {
			fmt.Println("ERR", err)
			os.Exit(3)
		}
		fmt.Println("LAB", l.ClientNS, l.RouterNS, l.ServerNS)
		time.Sleep(20 * time.Second)
		os.Exit(4) // not interrupted: the parent fails on this status
	}
	skipUnlessAvailable(t, Config{})
	cmd := exec.Command(os.Args[0], "-test.run=^TestInterruptTearsDown$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"=interrupt")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(out)
		for s.Scan() {
			if strings.HasPrefix(s.Text(), "LAB ") || strings.HasPrefix(s.Text(), "ERR ") {
				lines <- s.Text()
				break
			}
		}
		close(lines)
		io.Copy(io.Discard, out)
	}()
	var names []string
	select {
	case line := <-lines:
		if !strings.HasPrefix(line, "LAB ") {
			t.Fatalf("child: %q", line)
		}
		names = strings.Fields(line)[1:]
	case <-time.After(10 * time.Second):
		t.Fatal("child built no lab within 10 s")
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case err = <-waited:
	case <-time.After(10 * time.Second):
		t.Fatal("child still running 10 s after SIGINT")
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("child exited with %v, want death by SIGINT", err)
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGINT {
		t.Errorf("child: %v, want death by SIGINT", err)
	}
	list := ipNetnsList(t)
	for _, ns := range names {
		if strings.Contains(list, ns) {
			t.Errorf("namespace %s left after SIGINT", ns)
			exec.Command(probeOnce().tools.ip, "netns", "delete", ns).Run()
		}
	}
}
