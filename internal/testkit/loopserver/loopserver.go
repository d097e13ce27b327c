// Package loopserver runs, for in-process tests of the client and the
// agent, real control servers on loopback on the engine's executor, and
// relays that put one farther away: the round trips a failover search
// measures (client/rttselect.go).
package loopserver

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/udpstp/udpstp/control"
	"github.com/udpstp/udpstp/internal/enginenet"
)

// Server is a control server Start runs, and its control address.
type Server struct {
	*control.Server
	Addr netip.AddrPort
}

// Start runs a control server on 127.0.0.1 with the default
// configuration until the test ends. It has answered one Setup before
// Start returns: a server's first opens its engine, which on a busy
// machine takes longer than a relay's delay would add. (That Setup is
// left unactivated: the server releases it at its Setup timer, and counts
// it as an activation timeout.)
func Start(t testing.TB) Server {
	t.Helper()
	cfg := control.DefaultServerConfig()
	cfg.BindAddrs = []string{"127.0.0.1"}
	cfg.Port = 0
	log := slog.New(slog.DiscardHandler)
	srv, err := control.NewServer(cfg, enginenet.NewServer(enginenet.Options{Log: log}), log)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); srv.Serve(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	ap := srv.Addrs()[0]
	ccfg := control.DefaultClientConfig()
	network, closeNet := enginenet.NewClient(enginenet.Options{Log: log})
	defer closeNet()
	p, err := control.Setup(ctx, network, &ccfg, control.ServerAddr{Host: ap.Addr().String(), Port: int(ap.Port())}, 0, 1, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
	return Server{srv, ap}
}

// Relay forwards what clients send to listen (an IPv4 address and port,
// 0 for any) on to upstream, and upstream's answers back after delay: a
// server farther away. Only the control port is relayed: a client sends
// its Test Activation to the relay's address and the test port the Setup
// Response names, which is the server's where the relay listens on the
// server's address, and nothing where it does not. It runs until the
// test ends and returns the address it listens on.
func Relay(t testing.TB, listen string, upstream netip.AddrPort, delay time.Duration) netip.AddrPort {
	t.Helper()
	pc, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.MustParseAddrPort(listen)))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	peers := map[netip.AddrPort]*net.UDPConn{}
	t.Cleanup(func() {
		pc.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range peers {
			c.Close()
		}
	})
	go func() {
		b := make([]byte, 65536)
		for {
			n, from, err := pc.ReadFromUDPAddrPort(b)
			if err != nil {
				return
			}
			mu.Lock()
			up := peers[from]
			if up == nil {
				if up, err = net.DialUDP("udp4", nil, net.UDPAddrFromAddrPort(upstream)); err != nil {
					mu.Unlock()
					continue
				}
				peers[from] = up
				go back(pc, up, from, delay)
			}
			mu.Unlock()
			up.Write(b[:n])
		}
	}()
	return netip.MustParseAddrPort(pc.LocalAddr().String())
}

// back sends what upstream answers on up to the client at to, from pc,
// each datagram delay later.
func back(pc, up *net.UDPConn, to netip.AddrPort, delay time.Duration) {
	b := make([]byte, 65536)
	for {
		n, err := up.Read(b)
		if err != nil {
			return
		}
		out := bytes.Clone(b[:n])
		time.AfterFunc(delay, func() { pc.WriteToUDPAddrPort(out, to) })
	}
}
