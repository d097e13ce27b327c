package agent

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/udpstp/udpstp/client"
	"github.com/udpstp/udpstp/control"
	"github.com/udpstp/udpstp/store"
)

// Cross-traffic (docs/agent.md, "Cross-traffic"): a home probe shares its
// line with the household, and a test that ran while the line carried
// other traffic measured less than the line can carry. The agent reads
// the byte counters of the interface its route to the server uses (the
// counters -E reads, client.InterfaceBytes) before and after each test,
// takes away the test's own bytes (its mean IP-layer rate over its
// duration, plus crossOverhead for what the counters see beyond the IP
// layer), and keeps the rest as the result's CrossMbps; above the
// threshold it marks the result (CrossBusy).
const (
	DefaultCrossThresholdMbps = 10
	// crossOverhead is the share of the test's own IP-layer bytes its
	// interface counters add: link-layer headers (14 bytes of Ethernet
	// per datagram of at least 1000), the Status PDUs back and the
	// control messages. It is not counted as other traffic.
	crossOverhead = 0.03
	// maxRouteFile bounds what is read of /proc/net/route.
	maxRouteFile                   = 1 << 20
	minCrossWindow, maxCrossWindow = 100 * time.Millisecond, 10 * time.Second
	// A slot deferred while the line is busy waits DefaultDeferDelay
	// (1 s to 1 h) between its looks at the line, at most
	// DefaultMaxDeferrals times (1 to 10), then is missed.
	DefaultDeferDelay   = time.Minute
	DefaultMaxDeferrals = 3
	maxDeferrals        = 10
	// deferWindow is the look at the line before a slot when no window
	// is configured.
	deferWindow = time.Second
)

// CrossConfig is [crosstraffic].
type CrossConfig struct {
	Disabled      bool
	ThresholdMbps float64
	// Window, when not zero, also measures the line's traffic over that
	// long just before and just after each test (logged with the
	// result): what the household did around the test.
	Window time.Duration
	// DeferWhenBusy: a scheduled slot whose line is busy (over the window
	// just before it) waits DeferDelay and looks again, at most
	// MaxDeferrals times; still busy, it is stored as missed, saying so.
	DeferWhenBusy bool
	DeferDelay    time.Duration
	MaxDeferrals  int
}

type fileCross struct {
	Enabled       *bool    `toml:"enabled"`
	ThresholdMbps *float64 `toml:"threshold_mbps"`
	Window        Duration `toml:"window"`
	DeferWhenBusy bool     `toml:"defer_when_busy"`
	DeferDelay    Duration `toml:"defer_delay"`
	MaxDeferrals  int      `toml:"max_deferrals"`
}

func defaultCross() CrossConfig {
	return CrossConfig{ThresholdMbps: DefaultCrossThresholdMbps, DeferDelay: DefaultDeferDelay, MaxDeferrals: DefaultMaxDeferrals}
}

// resolveCross checks [crosstraffic] into cfg.
func (c *configChecker) resolveCross(f *fileCross, cfg *Config) error {
	cfg.CrossTraffic = defaultCross()
	if f.Enabled != nil {
		cfg.CrossTraffic.Disabled = !*f.Enabled
	}
	if f.ThresholdMbps != nil {
		v := *f.ThresholdMbps
		if !(v > 0 && v <= 1e6) {
			return c.errorAt("crosstraffic.threshold_mbps", "%v: want above 0 Mbit/s, at most 1000000", v)
		}
		cfg.CrossTraffic.ThresholdMbps = v
	}
	if w := f.Window.D(); w != 0 {
		if w < minCrossWindow || w > maxCrossWindow {
			return c.errorAt("crosstraffic.window", "%s: want %s to %s", w, minCrossWindow, maxCrossWindow)
		}
		cfg.CrossTraffic.Window = w
	}
	cfg.CrossTraffic.DeferWhenBusy = f.DeferWhenBusy
	if d := f.DeferDelay.D(); d != 0 {
		if d < time.Second || d > time.Hour {
			return c.errorAt("crosstraffic.defer_delay", "%s: want 1s to 1h", d)
		}
		cfg.CrossTraffic.DeferDelay = d
	}
	if n := f.MaxDeferrals; n != 0 {
		if n < 1 || n > maxDeferrals {
			return c.errorAt("crosstraffic.max_deferrals", "%d: want 1 to %d", n, maxDeferrals)
		}
		cfg.CrossTraffic.MaxDeferrals = n
	}
	return nil
}

// deferWhileBusy looks at t's line before a scheduled slot (with
// defer_when_busy): while its traffic is above the threshold it waits
// DeferDelay and looks again, at most MaxDeferrals times. It returns why
// the slot is missed ("" : run it). The agent's lock is held meanwhile:
// no other test starts on a busy line either.
func (a *Agent) deferWhileBusy(ctx context.Context, cfg *Config, t *Test) string {
	cc := cfg.CrossTraffic
	if !cc.DeferWhenBusy || cc.Disabled || len(t.Servers) == 0 {
		return ""
	}
	iface, err := routeInterface(t.Servers[0].Host)
	if err != nil {
		return ""
	}
	window := cc.Window
	if window == 0 {
		window = deferWindow
	}
	for n := 0; ; n++ {
		mbps, ok := a.crossWindow(ctx, iface, window)
		if !ok {
			return ""
		}
		if mbps <= cc.ThresholdMbps {
			a.crossPrior.Store(&crossReading{iface: iface, mbps: mbps, at: time.Now()})
			return ""
		}
		if n == cc.MaxDeferrals {
			return fmt.Sprintf("missed: the line was busy (%.1f Mbit/s of other traffic on %s, above %g) after %d deferral(s) of %s",
				mbps, iface, cc.ThresholdMbps, n, cc.DeferDelay)
		}
		a.o.Log.Info("slot deferred: the line is busy", "test", t.Name, "interface", iface, "mbps", round1(mbps), "deferral", n+1)
		tm := time.NewTimer(cc.DeferDelay)
		select {
		case <-ctx.Done():
			tm.Stop()
			return ""
		case <-tm.C:
		}
	}
}

// crossReading is a look at a line just before a test: deferWhileBusy's
// last, which the test takes as its window before (crossBefore) rather
// than look again.
type crossReading struct {
	iface string
	mbps  float64
	at    time.Time
}

// crossPriorFresh is how old a crossReading may be to stand for the
// window before a test: the slot's deferral check runs just before it.
const crossPriorFresh = 2 * time.Second

// crossMeter is one test's reading of its interface's counters.
type crossMeter struct {
	iface  string
	bytes  uint64 // received and sent, at the test's start
	at     time.Time
	before float64 // Mbit/s over the window before; -1: not measured
}

// crossBefore finds the interface towards srv and reads its counters
// (after a window's reading, when one is configured). nil: not measured
// (disabled, no such interface, no counters); the test runs anyway.
func (a *Agent) crossBefore(ctx context.Context, srv control.ServerAddr) *crossMeter {
	cc := a.cfg.Load().CrossTraffic
	if cc.Disabled {
		return nil
	}
	iface, err := routeInterface(srv.Host)
	if err != nil {
		a.o.Log.Debug("cross-traffic not measured", "server", hostPort(srv), "err", err)
		return nil
	}
	m := &crossMeter{iface: iface, before: -1}
	if p := a.crossPrior.Swap(nil); p != nil && p.iface == iface && time.Since(p.at) < crossPriorFresh {
		m.before = p.mbps
	} else if cc.Window > 0 {
		if mbps, ok := a.crossWindow(ctx, iface, cc.Window); ok {
			m.before = mbps
		}
	}
	if m.bytes, err = ifaceBytes(iface); err != nil {
		a.o.Log.Debug("cross-traffic not measured", "interface", iface, "err", err)
		return nil
	}
	m.at = time.Now()
	return m
}

// crossAfter sets r's CrossMbps and CrossBusy from m (nil: unmeasured).
func (a *Agent) crossAfter(ctx context.Context, m *crossMeter, r *store.Result) {
	if m == nil {
		return
	}
	end, err := ifaceBytes(m.iface)
	took := time.Since(m.at)
	if err != nil || end < m.bytes || took <= 0 {
		return // the counters went away or back (the interface was reset)
	}
	seen := float64(end-m.bytes) * 8 / 1e6 // Mbit
	own := ownMbit(r) * (1 + crossOverhead)
	cross := max(0, seen-own) / took.Seconds()
	cc := a.cfg.Load().CrossTraffic
	r.CrossMbps, r.CrossBusy = &cross, cross > cc.ThresholdMbps
	attrs := []any{"test", r.Test, "interface", m.iface, "during_mbps", round1(cross), "busy", r.CrossBusy}
	if m.before >= 0 {
		attrs = append(attrs, "before_mbps", round1(m.before))
	}
	if cc.Window > 0 {
		if after, ok := a.crossWindow(ctx, m.iface, cc.Window); ok {
			attrs = append(attrs, "after_mbps", round1(after))
		}
	}
	a.o.Log.Info("cross-traffic", attrs...)
}

func round1(v float64) float64 { return float64(int64(v*10+0.5)) / 10 }

// ownMbit is what the test itself carried, in Mbit: its mean IP-layer
// rate (each direction's, for a bidirectional test) over its duration.
func ownMbit(r *store.Result) float64 {
	secs := r.End.Sub(r.Start).Seconds()
	if secs <= 0 {
		return 0
	}
	if up, down, ok := store.Halves(r.Doc); ok {
		return (deref(up.SummaryMbps) + deref(down.SummaryMbps)) * secs
	}
	return deref(r.SummaryMbps) * secs
}

func deref(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}

// crossWindow is the interface's traffic over d, in Mbit/s; false when
// ctx ended first or the counters could not be read.
func (a *Agent) crossWindow(ctx context.Context, iface string, d time.Duration) (float64, bool) {
	b0, err := ifaceBytes(iface)
	if err != nil {
		return 0, false
	}
	t0 := time.Now()
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return 0, false
	case <-tm.C:
	}
	b1, err := ifaceBytes(iface)
	if err != nil || b1 < b0 {
		return 0, false
	}
	return float64(b1-b0) * 8 / 1e6 / time.Since(t0).Seconds(), true
}

func ifaceBytes(iface string) (uint64, error) {
	rx, tx, err := client.InterfaceBytes(iface)
	return rx + tx, err
}

// routeInterface names the interface the route to host leaves by: for an
// address, the one holding the source address the kernel picks for it (a
// connected UDP socket: no datagram is sent); for a name (which only the
// client resolves: the agent makes no lookup of its own), the interface of
// the IPv4 default route.
func routeInterface(host string) (string, error) {
	addr, err := netip.ParseAddr(strings.Trim(host, "[]"))
	if err != nil {
		return defaultRouteInterface()
	}
	c, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(netip.AddrPortFrom(addr.Unmap(), 9)))
	if err != nil {
		return "", fmt.Errorf("route to %s: %w", addr, err)
	}
	src := c.LocalAddr().(*net.UDPAddr).AddrPort().Addr().Unmap()
	c.Close()
	ifs, err := net.Interfaces()
	if err != nil {
		return "", fmt.Errorf("interfaces: %w", err)
	}
	for _, i := range ifs {
		as, err := i.Addrs()
		if err != nil {
			continue
		}
		for _, a := range as {
			if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr().Unmap() == src {
				return i.Name, nil
			}
		}
	}
	return "", fmt.Errorf("no interface holds %s, the source address towards %s", src, addr)
}

// defaultRouteInterface reads /proc/net/route for the default route's
// interface (destination 0, mask 0).
func defaultRouteInterface() (string, error) {
	f, err := os.Open("/proc/net/route")
	if err != nil {
		return "", fmt.Errorf("the default route: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(io.LimitReader(f, maxRouteFile))
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) >= 8 && fs[1] == "00000000" && fs[7] == "00000000" {
			if _, err := strconv.ParseUint(fs[1], 16, 32); err == nil {
				return fs[0], nil
			}
		}
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("the default route: %w", err)
	}
	return "", fmt.Errorf("no default route")
}

// crossBusy is the cross_traffic_busy gauge's figure: 1 or 0, nil when
// not measured.
func crossBusy(r *store.Result) *float64 {
	if r.CrossMbps == nil {
		return nil
	}
	v := 0.0
	if r.CrossBusy {
		v = 1
	}
	return &v
}
