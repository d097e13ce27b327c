package netlab

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/udpstp/udpstp/dataphase"
)

// These tests need no root: they check the arithmetic and text the lab is
// built from.

func TestDefaultBurst(t *testing.T) {
	for _, c := range []struct {
		rate int64
		mtu  int
		want int
	}{
		{1e6, 1500, 4 * 1514},      // low rate: four frames
		{50e6, 1500, 6250},         // 1 ms above four frames
		{1e9, 1500, 125000},        // 1 ms
		{100e6, 9000, 4 * 9014},    // jumbo: four frames
		{10e9, 9000, 1250000},      // 1 ms
		{8e15, 1500, 1<<31 - 1},    // clamped
		{12345679, 1500, 4 * 1514}, // 1544 bytes per ms
	} {
		if got := DefaultBurst(c.rate, c.mtu); got != c.want {
			t.Errorf("DefaultBurst(%d, %d) = %d, want %d", c.rate, c.mtu, got, c.want)
		}
	}
}

func TestNormalize(t *testing.T) {
	c, err := Config{Down: Shape{RateBps: 50e6}, Up: Shape{LossPct: 1}}.normalize()
	if err != nil {
		t.Fatal(err)
	}
	want := Config{MTU: 1500, Down: Shape{RateBps: 50e6, Burst: 6250, Latency: 50 * time.Millisecond}, Up: Shape{LossPct: 1}}
	if c != want {
		t.Errorf("normalize = %+v, want %+v", c, want)
	}
	if !c.usesLoss() || (Config{}).usesLoss() {
		t.Error("usesLoss")
	}
	for _, bad := range []Config{
		{MTU: 1400},
		{Down: Shape{RateBps: -1}},
		{Down: Shape{RateBps: 7}},
		{Down: Shape{RateBps: 1e6, Burst: 1513}},
		{MTU: 9000, Up: Shape{RateBps: 1e6, Burst: 9013}},
		{Up: Shape{Burst: 10000}},
		{Up: Shape{Latency: time.Second}},
		{Up: Shape{RateBps: 1e6, Latency: -1}},
		{Up: Shape{LossPct: 100.5}},
		{Up: Shape{LossPct: -1}},
		{Up: Shape{LossPct: 1, LossScope: 7}},
	} {
		if _, err := bad.normalize(); err == nil {
			t.Errorf("normalize accepted %+v", bad)
		}
	}
}

func TestNames(t *testing.T) {
	n := nsName(4242, 0x3fff, roleRouter)
	if n != "udpstp-4242-3fff-r" {
		t.Errorf("nsName = %q", n)
	}
	if pid, ok := nsCreator(n); !ok || pid != 4242 {
		t.Errorf("nsCreator(%q) = %d, %v", n, pid, ok)
	}
	for _, other := range []string{"udpstp-x-1234-c", "udpstp-12-abc-c", "udpstp-12-abcd-q", "netns-12-abcd-c", "udpstp-12-abcd-c-x"} {
		if _, ok := nsCreator(other); ok {
			t.Errorf("nsCreator accepted %q", other)
		}
	}
}

func TestLabAddrs(t *testing.T) {
	v4 := netip.MustParsePrefix("198.18.0.0/15")
	v6 := netip.MustParsePrefix("2001:2::/48")
	for _, id := range []uint16{0, 1, 1<<idBits - 1} {
		a := labAddrs(id)
		all4 := []netip.Addr{a.client, a.routerC, a.routerS, a.server}
		all6 := []netip.Addr{a.client6, a.routerC6, a.routerS6, a.server6}
		for i := range all4 {
			if !v4.Contains(all4[i]) || !v6.Contains(all6[i]) {
				t.Errorf("id %d: %v %v outside %v, %v", id, all4[i], all6[i], v4, v6)
			}
		}
		if netip.PrefixFrom(a.client, prefix4).Masked() != netip.PrefixFrom(a.routerC, prefix4).Masked() ||
			netip.PrefixFrom(a.server, prefix4).Masked() != netip.PrefixFrom(a.routerS, prefix4).Masked() ||
			netip.PrefixFrom(a.client, prefix4).Masked() == netip.PrefixFrom(a.server, prefix4).Masked() {
			t.Errorf("id %d: links %v-%v and %v-%v are not two /30s", id, a.client, a.routerC, a.routerS, a.server)
		}
		if netip.PrefixFrom(a.client6, prefix6).Masked() == netip.PrefixFrom(a.server6, prefix6).Masked() {
			t.Errorf("id %d: IPv6 links share a /64", id)
		}
	}
	if a, b := labAddrs(0), labAddrs(1); a.client != netip.MustParseAddr("198.18.0.1") || b.client != netip.MustParseAddr("198.18.0.9") {
		t.Errorf("clients of ids 0 and 1: %v, %v; want blocks of 8", a.client, b.client)
	}
	if got := labAddrs(1<<idBits - 1).server; got != netip.MustParseAddr("198.19.255.254") {
		t.Errorf("last server address %v", got)
	}
}

func TestLossRuleset(t *testing.T) {
	if loadPDUID != dataphase.LoadPDUID {
		t.Fatalf("loadPDUID %#x, dataphase.LoadPDUID %#x", loadPDUID, dataphase.LoadPDUID)
	}
	r := lossRuleset(Shape{LossPct: 12.34})
	for _, want := range []string{"delete table inet udpstp_lab", "hook input", "@th,64,16 0xbeef", "numgen random mod 10000 < 1234", "counter name lost drop"} {
		if !strings.Contains(r, want) {
			t.Errorf("ruleset lacks %q:\n%s", want, r)
		}
	}
	if r := lossRuleset(Shape{LossPct: 100, LossScope: LossAllUDP}); strings.Contains(r, "numgen") || strings.Contains(r, "@th") {
		t.Errorf("100%% of all UDP:\n%s", r)
	}
	if r := lossRuleset(Shape{}); strings.Contains(r, "chain") {
		t.Errorf("no loss still installs a chain:\n%s", r)
	}
}

func TestRouterRulesets(t *testing.T) {
	if routerRuleset(Config{}) != "" || firewallRuleset(Config{}) != "" {
		t.Error("rules for a lab without NAT or firewall")
	}
	r := routerRuleset(Config{NAT: MasqueradeRandom, Relay: true})
	for _, want := range []string{"delete table inet udpstp_router", `oifname "veth-rs" masquerade random`, "notrack", "ct state new drop"} {
		if !strings.Contains(r, want) {
			t.Errorf("NAT ruleset lacks %q:\n%s", want, r)
		}
	}
	if r := routerRuleset(Config{NAT: Masquerade}); strings.Contains(r, "random") || strings.Contains(r, "notrack") {
		t.Errorf("plain masquerade without the relay:\n%s", r)
	}
	f := firewallRuleset(Config{FirewallPort: 24601})
	for _, want := range []string{"hook input", "ct state established,related accept", "udp dport 24601 accept", "counter name refused drop"} {
		if !strings.Contains(f, want) {
			t.Errorf("firewall ruleset lacks %q:\n%s", want, f)
		}
	}
}

func TestBaselineVerdict(t *testing.T) {
	ok := BaselineRow{RateBps: 100e6, Elapsed: time.Second, Sent: 9900, Got: 9900, Relay: RelayStats{Read: 9900}}
	for _, c := range []struct {
		r    BaselineRow
		want string
	}{
		{ok, "carried"},
		{BaselineRow{RateBps: 100e6, Elapsed: time.Second, Sent: 5000, Got: 5000, Relay: RelayStats{Read: 5000}}, "sender short"},
		{BaselineRow{RateBps: 100e6, Elapsed: time.Second, Sent: 9900, Got: 9800, Relay: RelayStats{Read: 9900, TunDropped: 100}}, "relay did not keep up"},
		{BaselineRow{RateBps: 100e6, Elapsed: time.Second, Sent: 9900, Got: 9900, Relay: RelayStats{Read: 9900, LateSlips: 100}}, "relay did not keep up"},
		{BaselineRow{RateBps: 100e6, Elapsed: time.Second, Sent: 9900, Got: 9890, Relay: RelayStats{Read: 9900}}, "lost outside the relay"},
		{BaselineRow{RateBps: 100e6, Elapsed: time.Second, Sent: 9900, Got: 9900, Relay: RelayStats{Read: 9900, LateSlips: 100}, Stall: 12 * time.Millisecond}, "the machine stalled 12ms"},
		// A stall does not excuse a clean row, nor a short one explain a miss.
		{BaselineRow{RateBps: 100e6, Elapsed: time.Second, Sent: 9900, Got: 9900, Relay: RelayStats{Read: 9900}, Stall: time.Second}, "carried"},
	} {
		if got := c.r.verdict(); !strings.Contains(got, c.want) || (c.want == "carried") != c.r.Clean() {
			t.Errorf("%+v: verdict %q (clean %v), want %q", c.r, got, c.r.Clean(), c.want)
		}
	}
	if short := (BaselineRow{Stall: RelaySlip - 2*stallPeriod}); short.MachineStalled() {
		t.Errorf("a stall of %v is taken for one that makes packets slip", short.Stall)
	}
	rows := []BaselineRow{ok, {RateBps: 200e6, Sent: 1}, ok}
	rows[2].RateBps = 50e6
	if got := HighestCarried(rows); got != 100e6 {
		t.Errorf("HighestCarried = %d, want 100e6", got)
	}
}
