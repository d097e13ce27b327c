package control

import (
	"errors"
	"fmt"
	"net/netip"
	"syscall"
	"testing"

	"github.com/udpstp/udpstp/internal/testkit/memnet"
)

func TestParsePortRange(t *testing.T) {
	for in, want := range map[string]PortRange{
		"32768-60999":    {32768, 60999},
		"32768\t60999\n": {32768, 60999},
		"40000 40000":    {40000, 40000},
	} {
		if got, err := ParsePortRange(in); err != nil || got != want {
			t.Errorf("ParsePortRange(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0-10", "10-9", "1-65536", "a-b", "1-2-3", "5"} {
		if r, err := ParsePortRange(in); err == nil {
			t.Errorf("ParsePortRange(%q) = %v, want an error", in, r)
		}
	}
	if b := (PortRange{32768, 60999}).Bits(); b < 14.78 || b > 14.79 {
		t.Errorf("bits of the default range: %.3f", b)
	}
}

// TestRandomPortCoversRange: every port of a small range is drawn, none
// outside it (a bias to one end, or an off-by-one, would show).
func TestRandomPortCoversRange(t *testing.T) {
	r := PortRange{Lo: 50000, Hi: 50009}
	seen := map[uint16]int{}
	for range 2000 {
		p := randomPort(r)
		if p < r.Lo || p > r.Hi {
			t.Fatalf("port %d outside %v", p, r)
		}
		seen[p]++
	}
	for p := r.Lo; p <= r.Hi; p++ {
		if seen[p] < 100 { // 200 expected; 100 is 7 standard deviations off
			t.Errorf("port %d drawn %d times in 2000 over 10 ports", p, seen[p])
		}
	}
}

// TestListenRandomRetries: a port in use is drawn again; after
// maxPortTries the error says so; another error ends at once.
func TestListenRandomRetries(t *testing.T) {
	n := &memnet.Net{}
	tries := 0
	inUse := fmt.Errorf("bind: %w", syscall.EADDRINUSE)
	s, err := listenRandom(func(port uint16) (Socket, error) {
		tries++
		if tries < 3 {
			return nil, inUse
		}
		return n.Listen(netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), port), 0)
	}, PortRange{Lo: 40000, Hi: 40100})
	if err != nil || tries != 3 || s.LocalAddr().Port() < 40000 || s.LocalAddr().Port() > 40100 {
		t.Errorf("after 2 ports in use: %v, %d tries, %v", err, tries, s)
	}
	tries = 0
	if _, err := listenRandom(func(uint16) (Socket, error) { tries++; return nil, inUse }, PortRange{1, 2}); !errors.Is(err, syscall.EADDRINUSE) || tries != maxPortTries {
		t.Errorf("every port in use: %v after %d tries", err, tries)
	}
	tries = 0
	other := errors.New("no sockets")
	if _, err := listenRandom(func(uint16) (Socket, error) { tries++; return nil, other }, PortRange{1, 2}); !errors.Is(err, other) || tries != 1 {
		t.Errorf("another error: %v after %d tries", err, tries)
	}
}
