package control

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/udpstp/udpstp/dataphase"
	"github.com/udpstp/udpstp/internal/testkit/await"
	"github.com/udpstp/udpstp/internal/testkit/memnet"
)

// TestDrain: a draining server refuses a new Setup with code 13 (counted
// as a drain refusal), lets the running Test Connection go on, and closes
// Drained only once that has ended; an idle server is drained at once.
func TestDrain(t *testing.T) {
	w := memnet.NewWire()
	finish := make(chan struct{})
	running := make(chan struct{}, 1)
	script := func(d *memnet.DataPhase) {
		running <- struct{}{}
		select {
		case <-finish:
			d.Emit(dataphase.Event{Kind: dataphase.EvEnd, End: dataphase.EndStopped})
		case <-d.Stopped():
			d.Emit(dataphase.Event{Kind: dataphase.EvEnd, End: dataphase.EndLocalStop})
		}
	}
	cfg := DefaultServerConfig()
	cfg.BindAddrs = []string{"127.0.0.1"}
	s, err := NewServer(cfg, fakeNet{&memnet.Net{Wire: w, Script: script}}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(memnet.Start(s.Serve))
	cn := fakeNet{&memnet.Net{Wire: w, NextPort: 50000}}
	srv := ServerAddr{Host: "127.0.0.1", Port: cfg.Port}
	activate := func(id uint16) error {
		c := testClientConfig()
		cc, err := Activate(context.Background(), cn, &c, srv, 0, id, func(string) {})
		if err == nil {
			t.Cleanup(func() { cc.Sock.Close() })
		}
		return err
	}

	if err := activate(1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-running:
	case <-time.After(await.Deadline):
		t.Fatal("the Data Phase did not start")
	}
	s.Drain()
	if !s.Draining() {
		t.Error("Draining is false after Drain")
	}
	var se *SetupError
	if err := activate(2); !errors.As(err, &se) || se.Status != 100+int(SetupDraining) {
		t.Fatalf("a Setup while draining: %v, want ErrorStatus %d", err, 100+int(SetupDraining))
	}
	if n := s.Snapshot(); n.Counts[CountSetupDraining] != 1 || n.Rejected[SetupDraining] != 1 {
		t.Errorf("drain refusals %d, code 13 refusals %d; want 1, 1", n.Counts[CountSetupDraining], n.Rejected[SetupDraining])
	}
	select {
	case <-s.Drained():
		t.Fatal("Drained while a Test Connection runs")
	default:
	}
	close(finish)
	select {
	case <-s.Drained():
	case <-time.After(await.Deadline):
		t.Fatal("not Drained after the last Test Connection ended")
	}

	idle, err := NewServer(cfg, fakeNet{&memnet.Net{Wire: memnet.NewWire()}}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer idle.closeControl()
	idle.Drain()
	select {
	case <-idle.Drained():
	default:
		t.Error("an idle server is not Drained at once")
	}
}
