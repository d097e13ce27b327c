package agent

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
	"unicode/utf8"

	"github.com/udpstp/udpstp/control"
)

// resolveHTTP checks the [probe] targets and rate bound and the [http]
// section (docs/agent.md) into cfg.
func (c *configChecker) resolveHTTP(f *fileConfig, cfg *Config) error {
	if n := len(f.Probe.Targets); n > MaxProbeTargets {
		return c.errorAt("probe.targets", "%d targets: at most %d", n, MaxProbeTargets)
	}
	for i, t := range f.Probe.Targets {
		if err := c.checkTarget(t); err != nil {
			return c.errorAt("probe.targets", "target %d, %q: %v", i+1, t, err)
		}
		cfg.ProbeTargets = append(cfg.ProbeTargets, t)
	}
	if r := f.Probe.MaxRateMbps; r < 0 || r > control.MaxClientBandwidth {
		return c.errorAt("probe.max_rate_mbps", "%d: want 1 to %d Mbit/s, or 0 for no bound", r, control.MaxClientBandwidth)
	}
	cfg.ProbeMaxRateMbps = f.Probe.MaxRateMbps
	h := &cfg.HTTP
	for i, name := range f.HTTP.Hosts {
		n := normalHost(name)
		if n == "" || len(n) > 253 || strings.ContainsAny(name, "/@ \t") || strings.Contains(n, ":") {
			return c.errorAt("http.hosts", "host %d, %q: want a DNS name (agent.example.net)", i+1, name)
		}
		h.Hosts = append(h.Hosts, n)
	}
	if m := f.HTTP.MaxConnections; m < 0 || m > 10000 {
		return c.errorAt("http.max_connections", "%d: want 1 to 10000", m)
	} else if m > 0 {
		h.MaxConnections = m
	}
	if m := f.HTTP.StreamsPerClient; m < 0 || m > 32 {
		return c.errorAt("http.streams_per_client", "%d: want 1 to 32", m)
	} else if m > 0 {
		h.StreamsPerClient = m
	}
	if d := f.HTTP.IdleTimeout.D(); d > 0 {
		h.IdleTimeout = d
	}
	if d := f.HTTP.ReadHeaderTimeout.D(); d > 0 {
		h.ReadHeaderTimeout = d
	}
	return nil
}

// checkTarget says why t cannot be a /probe target, or nil: too long, not
// a server the client's parser takes, or an address that is no server's
// (unspecified, 0.0.0.0 and :: reach the local host; multicast).
func (c *configChecker) checkTarget(t string) error {
	if len(t) > MaxTargetLen || !utf8.ValidString(t) {
		return fmt.Errorf("want at most %d bytes of UTF-8", MaxTargetLen)
	}
	cc, _, err := c.o.Parse([]string{"--downstream", "--", t})
	if err != nil {
		return err
	}
	for _, s := range cc.Servers {
		if err := badServer(s.Host); err != nil {
			return err
		}
	}
	return nil
}

// badServer refuses a literal address no server has.
func badServer(host string) error {
	a, err := netip.ParseAddr(strings.Trim(host, "[]"))
	if err != nil {
		return nil // a name or srv:NAME: its addresses are discover's to check
	}
	if a.IsUnspecified() || a.IsMulticast() || a.Unmap().IsUnspecified() {
		return fmt.Errorf("%s is not a server's address", a)
	}
	return nil
}

// normalHost is a Host header's or a configured name's host part, lower
// case, without its port, brackets or trailing dot.
func normalHost(h string) string {
	if host, _, err := net.SplitHostPort(h); err == nil {
		h = host
	}
	h = strings.TrimSuffix(strings.Trim(h, "[]"), ".")
	return strings.ToLower(h)
}
