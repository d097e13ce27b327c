package client_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/udpstp/udpstp/client"
	"github.com/udpstp/udpstp/control"
	"github.com/udpstp/udpstp/discover"
	"github.com/udpstp/udpstp/internal/enginenet"
)

// hostileZone is a resolver whose _udpst._udp.hostile.test lists n
// targets, each at 127.0.0.1 on port: a hostile DNS zone.
type hostileZone struct {
	n    int
	port uint16
}

func (z hostileZone) LookupSRV(_ context.Context, _, _, name string) (string, []*net.SRV, error) {
	var recs []*net.SRV
	for i := range z.n {
		recs = append(recs, &net.SRV{Target: fmt.Sprintf("t%d.hostile.test.", i), Port: z.port, Priority: 1, Weight: 1})
	}
	return name, recs, nil
}

func (z hostileZone) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
}

// A `srv:` zone of 300 targets, each a server that refuses at once as a
// busy one does (code 10, capacity exceeded: the client moves on): one
// run sends at most discover.MaxCandidates Setups, counted at the real UDP
// socket that refuses them (before the cap: 300 in a fraction of a
// second).
func TestFailoverHostileZoneSetups(t *testing.T) {
	pc, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	var setups atomic.Int64
	go func() {
		b := make([]byte, 2048)
		for {
			n, from, err := pc.ReadFromUDPAddrPort(b)
			if err != nil {
				return
			}
			var req control.SetupPDU
			if n != control.SetupLen || req.Decode(b[:n]) != nil {
				continue
			}
			setups.Add(1)
			resp := append([]byte(nil), b[:n]...)
			resp[8], resp[9] = control.SetupCmdResponse, control.SetupCapExceeded
			resp[n-2], resp[n-1] = 0, 0 // no checksum
			pc.WriteToUDPAddrPort(resp, from)
		}
	}()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	network, closeNet := enginenet.NewClient(enginenet.Options{Log: log})
	defer closeNet()
	cfg := control.DefaultClientConfig()
	cfg.Servers = []control.ServerAddr{{Host: "srv:hostile.test", Port: control.DefaultControlPort}}
	cfg.TestIntTime = 5
	cfg.Format = "json"
	ctx, cancel := context.WithTimeout(context.Background(), 2*client.FailoverBudget+30*time.Second)
	defer cancel()
	status := client.Run(ctx, &cfg, client.Options{Network: network, Out: io.Discard, Stderr: io.Discard,
		Resolver: hostileZone{n: 300, port: uint16(pc.LocalAddr().(*net.UDPAddr).Port)}})
	if status == 0 {
		t.Fatal("a test completed against servers that all refuse")
	}
	if n := setups.Load(); n == 0 || n > discover.MaxCandidates {
		t.Errorf("%d Setups for one run of a 300-target zone, want 1 to %d", n, discover.MaxCandidates)
	}
}
