//go:build linux

package server

// Serve in-process: the process's side (signals, the environment) comes
// in through Config, so the service runs here twice in one process, on
// loopback, with a real client test, a key reload and a drain, and ends
// clean.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/udpstp/udpstp/client"
	"github.com/udpstp/udpstp/control"
	"github.com/udpstp/udpstp/internal/enginenet"
	"github.com/udpstp/udpstp/internal/sdnotify"
	"github.com/udpstp/udpstp/internal/testkit/await"
)

// lockedBuffer is a log that the test reads while the server writes it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// notifySocket is a NOTIFY_SOCKET of the test's: the messages sent to it.
type notifySocket struct {
	path string
	mu   sync.Mutex
	msgs []string
}

func listenNotifySocket(t *testing.T) *notifySocket {
	t.Helper()
	// A short path: sun_path holds 108 bytes.
	dir, err := os.MkdirTemp("", "sdn")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	n := &notifySocket{path: filepath.Join(dir, "notify")}
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: n.path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	go func() {
		buf := make([]byte, 4096)
		for {
			k, err := conn.Read(buf)
			if err != nil {
				return
			}
			n.mu.Lock()
			n.msgs = append(n.msgs, string(buf[:k]))
			n.mu.Unlock()
		}
	}()
	return n
}

// states are the messages so far without STATUS= and WATCHDOG=1, the
// first line of each.
func (n *notifySocket) states() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []string
	for _, m := range n.msgs {
		first, _, _ := strings.Cut(m, "\n")
		if !strings.HasPrefix(first, "STATUS=") && first != "WATCHDOG=1" {
			out = append(out, first)
		}
	}
	return out
}

func (n *notifySocket) has(prefix string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, m := range n.msgs {
		if strings.HasPrefix(m, prefix) {
			return true
		}
	}
	return false
}

// TestServeInProcess runs the service twice in this process: each time it
// says READY=1, serves a real upstream test of the client package with a
// key, reloads its key file when Config.Reload asks (RELOADING=1 then
// READY=1; the new key admitted, the old refused), drains when
// Config.Drain closes (STOPPING=1, the running test completes with status
// 0) and returns nil by itself.
func TestServeInProcess(t *testing.T) {
	for run := 1; run <= 2; run++ {
		t.Run(fmt.Sprint("run", run), testServeInProcess)
	}
}

func testServeInProcess(t *testing.T) {
	keys := filepath.Join(t.TempDir(), "keys")
	if err := os.WriteFile(keys, []byte("1,old-key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := control.DefaultServerConfig()
	cfg.BindAddrs = []string{"127.0.0.1"}
	cfg.Port = 0
	k, err := ReadKeys("", keys)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Keys = k
	so := DefaultOptions()
	so.KeyFile = keys

	ns := listenNotifySocket(t)
	log := &lockedBuffer{}
	drain := make(chan struct{})
	reload := make(chan struct{}, 1)
	ready := make(chan []netip.AddrPort, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() {
		served <- Serve(ctx, &cfg, Config{
			Service: so, Drain: drain, Reload: reload, Stderr: log,
			Systemd: sdnotify.Env{Socket: ns.path},
			Ready:   func(a []netip.AddrPort) { ready <- a },
		})
	}()
	var port int
	select {
	case addrs := <-ready:
		if len(addrs) != 1 {
			t.Fatalf("listening on %v, want 127.0.0.1 only", addrs)
		}
		port = int(addrs[0].Port())
	case err := <-served:
		t.Fatalf("Serve returned before it was ready: %v\n%s", err, log)
	case <-time.After(await.Deadline):
		t.Fatalf("the server was not ready within %v\n%s", await.Deadline, log)
	}
	await.True(t, "READY=1 first", func() bool { s := ns.states(); return len(s) > 0 && s[0] == "READY=1" })

	// A real test, with the key in the file.
	ccfg := control.DefaultClientConfig()
	ccfg.Servers = []control.ServerAddr{{Host: "127.0.0.1", Port: port}}
	ccfg.Upstream = true
	ccfg.TestIntTime = control.MinTestIntTime
	ccfg.Key, ccfg.KeyID = []byte("old-key"), 1
	ccfg.Format = "json"
	clientNet, closeNet := enginenet.NewClient(enginenet.Options{})
	defer closeNet()
	var out bytes.Buffer
	status := make(chan int, 1)
	go func() {
		status <- client.Run(context.Background(), &ccfg, client.Options{Network: clientNet, Out: &out, Stderr: io.Discard})
	}()
	await.True(t, "the test started", func() bool { return strings.Contains(log.String(), "test started") })

	// The reload, as a SIGHUP to the command would ask for it.
	if err := os.WriteFile(keys, []byte("2,new-key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	reload <- struct{}{}
	await.True(t, "the key file reloaded", func() bool { return strings.Contains(log.String(), "key file reloaded") })
	await.True(t, "RELOADING=1 then READY=1", func() bool {
		s := ns.states()
		return len(s) >= 3 && s[1] == "RELOADING=1" && s[2] == "READY=1"
	})
	if err := activate(port, "new-key", 2); err != nil {
		t.Errorf("the new key was refused after the reload: %v", err)
	}
	var se *control.SetupError
	if err := activate(port, "old-key", 1); err == nil || !asSetupErr(err, &se) || se.Status != 107 {
		t.Errorf("the removed key after the reload: %v, want ErrorStatus 107", err)
	}

	// The drain, as the command's first SIGTERM asks for it: the running
	// test ends normally and Serve returns by itself.
	close(drain)
	if st := <-status; st != 0 {
		t.Errorf("the test across the reload and the drain: status %d\n%s", st, out.String())
	}
	if !bytes.Contains(out.Bytes(), []byte(`"IPLayerCapacitySummary"`)) {
		t.Errorf("no summary in the client's result:\n%s", out.String())
	}
	if err := <-served; err != nil {
		t.Errorf("Serve after the drain: %v\n%s", err, log)
	}
	await.True(t, "STOPPING=1", func() bool { return ns.has("STOPPING=1") })
	for _, line := range []string{"draining: no new tests", "drained: no test left", "udpstp server stopped"} {
		if !strings.Contains(log.String(), line) {
			t.Errorf("the log lacks %q:\n%s", line, log)
		}
	}
}

// activate runs one Control Phase against the server at port with a key,
// then drops the Test Connection (the server ends it after its watchdog).
func activate(port int, key string, id uint8) error {
	cfg := control.DefaultClientConfig()
	cfg.TestIntTime = control.MinTestIntTime
	cfg.Key, cfg.KeyID = []byte(key), id
	ctx, cancel := context.WithTimeout(context.Background(), await.Deadline)
	defer cancel()
	n, closeNet := enginenet.NewClient(enginenet.Options{Log: slog.New(slog.DiscardHandler)})
	defer closeNet()
	cc, err := control.Activate(ctx, n, &cfg, control.ServerAddr{Host: "127.0.0.1", Port: port}, 0, uint16(id)+100, func(string) {})
	if err != nil {
		return err
	}
	cc.Sock.Close()
	return nil
}

func asSetupErr(err error, se **control.SetupError) bool {
	e, ok := err.(*control.SetupError)
	*se = e
	return ok
}
