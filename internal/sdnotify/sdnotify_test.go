//go:build linux

package sdnotify

import (
	"context"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestNotifierSends: each message is one datagram on the socket passed
// in, STOPPING=1 goes once, and RELOADING=1 carries the monotonic time;
// without a socket nothing is sent and nothing fails.
func TestNotifierSends(t *testing.T) {
	dir, err := os.MkdirTemp("", "sdn") // sun_path holds 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	n := New(path, slog.New(slog.DiscardHandler))
	n.Ready()
	n.Reloading()
	n.Reloaded()
	n.Send("STATUS=x")
	n.Stop()
	n.Stop()
	if !n.Stopped() {
		t.Error("Stopped is false after Stop")
	}
	want := []string{"READY=1", "RELOADING=1\nMONOTONIC_USEC=", "READY=1", "STATUS=x", "STOPPING=1"}
	buf := make([]byte, 512)
	for _, w := range want {
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		k, err := conn.Read(buf)
		if err != nil {
			t.Fatalf("waiting for %q: %v", w, err)
		}
		if got := string(buf[:k]); !strings.HasPrefix(got, w) {
			t.Errorf("got %q, want %q", got, w)
		}
	}
	// The second Stop sent nothing: the socket is empty (every datagram
	// above was already queued when Stop returned).
	conn.SetReadDeadline(time.Now())
	if k, err := conn.Read(buf); err == nil {
		t.Errorf("a message more: %q", buf[:k])
	}

	off := New("", slog.New(slog.DiscardHandler))
	if off.On() {
		t.Error("a Notifier without a socket is on")
	}
	off.Ready()
	off.Stop()
}

// TestRunReloads: each request runs the reload, on the loop's goroutine,
// until the context ends.
func TestRunReloads(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	reqs := make(chan struct{})
	var runs atomic.Int32
	done := make(chan struct{})
	go func() { RunReloads(ctx, reqs, func() { runs.Add(1) }); close(done) }()
	reqs <- struct{}{}
	reqs <- struct{}{}
	reqs <- struct{}{} // each taken, so each runs before the loop looks at ctx again
	cancel()
	<-done
	if n := runs.Load(); n != 3 {
		t.Errorf("%d reloads for 3 requests", n)
	}
}
