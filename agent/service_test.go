//go:build linux && !small && !mips && !mipsle

package agent

// Serve in-process: the process's side (SIGHUP, NOTIFY_SOCKET) comes in
// through ServeConfig, so the service runs here twice in one process:
// a real test against a control server on loopback, a reload through
// the passed-in channel, a stop.

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/udpstp/udpstp/control"
	"github.com/udpstp/udpstp/internal/enginenet"
	"github.com/udpstp/udpstp/internal/sdnotify"
	"github.com/udpstp/udpstp/internal/testkit/await"
	"github.com/udpstp/udpstp/internal/testkit/loopserver"
	"github.com/udpstp/udpstp/store"
)

// notifyMessages listens on a NOTIFY_SOCKET of the test's and returns its
// path and the messages so far.
func notifyMessages(t *testing.T) (string, func() []string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "sdn") // sun_path holds 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	var mu sync.Mutex
	var msgs []string
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			first, _, _ := strings.Cut(string(buf[:n]), "\n")
			mu.Lock()
			msgs = append(msgs, first)
			mu.Unlock()
		}
	}()
	return path, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), msgs...)
	}
}

// startControlServer runs a real control server on loopback, on the
// engine's executor, until the test ends, and returns its port.
func startControlServer(t *testing.T) int { return int(loopserver.Start(t).Addr.Port()) }

// TestServeInProcess runs the agent's service twice in this process:
// each time it says READY=1, runs a real test ("run now") against a
// control server on loopback and stores its result, reloads its file
// when ServeConfig.Reload asks (RELOADING=1 then READY=1, the new test in
// force), and stops when its context ends (STOPPING=1, Serve returns
// nil).
func TestServeInProcess(t *testing.T) {
	for run := 1; run <= 2; run++ {
		t.Run(fmt.Sprint("run", run), testServeInProcess)
	}
}

func testServeInProcess(t *testing.T) {
	port := startControlServer(t)
	dir := t.TempDir()
	conf := filepath.Join(dir, "agent.toml")
	test := func(name string) string {
		return fmt.Sprintf("[[test]]\nname = %q\nservers = [\"127.0.0.1:%d\"]\ndirection = \"up\"\nevery = \"24h\"\noptions = { test-time = %d }\n",
			name, port, control.MinTestIntTime)
	}
	if err := os.WriteFile(conf, []byte(test("first")), 0o600); err != nil {
		t.Fatal(err)
	}
	notifyPath, notified := notifyMessages(t)
	logw := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logw, nil))
	reload := make(chan struct{}, 1)
	ready := make(chan net.Addr, 1)
	agents := make(chan *Agent, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() {
		served <- Serve(ctx, ServeConfig{
			ConfigPath: conf, HTTP: "127.0.0.1:0", Store: "sqlite:" + filepath.Join(dir, "results.db"),
			Load: LoadOptions{Parse: fakeParse},
			Options: Options{Identity: "probe-1", Log: log, Version: "test",
				Network: func() (control.Network, func()) { return enginenet.NewClient(enginenet.Options{Log: log}) }},
			Page: func(a *Agent, _ store.Store, _ *slog.Logger) http.Handler {
				agents <- a
				return http.NotFoundHandler()
			},
			Ready:   func(a net.Addr) { ready <- a },
			Reload:  reload,
			Systemd: sdnotify.Env{Socket: notifyPath},
		})
	}()
	var a *Agent
	select {
	case a = <-agents:
	case err := <-served:
		t.Fatalf("Serve returned before it served: %v\n%s", err, logw)
	case <-time.After(await.Deadline):
		t.Fatalf("the agent did not start within %v\n%s", await.Deadline, logw)
	}
	addr := <-ready
	await.True(t, "READY=1", func() bool { m := notified(); return len(m) > 0 && m[0] == "READY=1" })

	// A real test, run now, stored.
	if err := a.RunNow("first"); err != nil {
		t.Fatal(err)
	}
	await.True(t, "the result stored", func() bool { return strings.Contains(logw.String(), "result stored") })
	if line := lineHolding(logw.String(), "result stored"); !strings.Contains(line, "test=first") || !strings.Contains(line, "status=ok") {
		t.Errorf("stored %q, want test first, status ok\n%s", line, logw)
	}
	resp, err := http.Get("http://" + addr.String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body := new(bytes.Buffer)
	body.ReadFrom(resp.Body)
	resp.Body.Close()
	if !strings.Contains(body.String(), `udpstp_agent_tests_total{`) {
		t.Errorf("/metrics counts no test:\n%s", body)
	}

	// The reload, as a SIGHUP to the command would ask for it.
	if err := os.WriteFile(conf, []byte(test("second")), 0o600); err != nil {
		t.Fatal(err)
	}
	reload <- struct{}{}
	await.True(t, "RELOADING=1 then READY=1", func() bool {
		m := notified()
		return len(m) >= 3 && strings.HasPrefix(m[1], "RELOADING=1") && m[2] == "READY=1"
	})
	if got := a.Tests(); len(got) != 1 || got[0] != "second" {
		t.Errorf("tests after the reload: %q, want [second]", got)
	}

	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("Serve after its context ended: %v\n%s", err, logw)
		}
	case <-time.After(await.Deadline):
		t.Fatalf("Serve did not return within %v of its context's end", await.Deadline)
	}
	await.True(t, "STOPPING=1, the last message", func() bool { m := notified(); return m[len(m)-1] == "STOPPING=1" })
}

// lineHolding is the first line of s that holds sub.
func lineHolding(s, sub string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			return l
		}
	}
	return ""
}

// TestServeIPv4Only: --http 0.0.0.0:PORT listens on IPv4 alone (it also
// took IPv6's any); [::]:PORT stays dual.
func TestServeIPv4Only(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	addrs := make(chan net.Addr, 1)
	served := make(chan error, 1)
	go func() {
		served <- Serve(ctx, ServeConfig{HTTP: "0.0.0.0:0", Store: "sqlite:" + filepath.Join(dir, "results.db"),
			Load:    LoadOptions{Parse: fakeParse},
			Options: Options{Identity: "p", Log: slog.New(slog.DiscardHandler)},
			Ready:   func(a net.Addr) { addrs <- a }})
	}()
	var addr net.Addr
	select {
	case addr = <-addrs:
	case err := <-served:
		t.Fatal(err)
	}
	defer func() { cancel(); <-served }()
	port := addr.(*net.TCPAddr).Port
	if c, err := net.Dial("tcp4", fmt.Sprintf("127.0.0.1:%d", port)); err != nil {
		t.Errorf("IPv4: %v", err)
	} else {
		c.Close()
	}
	if c, err := net.Dial("tcp6", fmt.Sprintf("[::1]:%d", port)); err == nil {
		c.Close()
		t.Errorf("--http 0.0.0.0 listens on IPv6 too (%s)", addr)
	}
}
