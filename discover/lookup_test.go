package discover

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"strings"
	"testing"
)

// fakeResolver answers from maps: the ordering and fallback logic's
// tests. The lab tests (e2e/srv_lab_test.go) ask a real dnsmasq.
type fakeResolver struct {
	srv   map[string][]*net.SRV // by the full SRV name
	addrs map[string][]netip.Addr
	asked []string
}

func (f *fakeResolver) LookupSRV(_ context.Context, service, proto, name string) (string, []*net.SRV, error) {
	full := name
	if service != "" {
		full = "_" + service + "._" + proto + "." + name
	}
	f.asked = append(f.asked, "SRV "+full)
	if recs, ok := f.srv[full]; ok {
		return full, recs, nil
	}
	return "", nil, &net.DNSError{Err: "no such host", Name: full, IsNotFound: true}
}

func (f *fakeResolver) LookupNetIP(_ context.Context, network, host string) ([]netip.Addr, error) {
	f.asked = append(f.asked, network+" "+host)
	var out []netip.Addr
	for _, a := range f.addrs[host] {
		if network == "ip" || (network == "ip4") == a.Is4() {
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return out, nil
}

var (
	addrA  = netip.MustParseAddr("198.18.0.10")
	addrA6 = netip.MustParseAddr("2001:2::10")
	addrB  = netip.MustParseAddr("198.18.0.11")
)

func TestLookupSRV(t *testing.T) {
	f := &fakeResolver{
		srv: map[string][]*net.SRV{"_udpst._udp.example.test": {
			{Target: "b.example.test.", Port: 2000, Priority: 20},
			{Target: "a.example.test.", Port: 1000, Priority: 10},
			{Target: "gone.example.test.", Port: 3000, Priority: 15},
		}},
		addrs: map[string][]netip.Addr{"a.example.test": {addrA, addrA6}, "b.example.test": {addrB}},
	}
	got, err := Lookup(context.Background(), f, "srv:example.test", 24601, "ip", rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	want := []Candidate{{"a.example.test", addrA, 1000, 10}, {"a.example.test", addrA6, 1000, 10}, {"b.example.test", addrB, 2000, 20}}
	if len(got) != len(want) {
		t.Fatalf("candidates %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("candidate %d: %v, want %v", i, got[i], want[i])
		}
	}
	if s := got[0].String(); s != "a.example.test (198.18.0.10:1000)" {
		t.Errorf("String: %q", s)
	}
	// IPv4 only: the IPv6 address is not a candidate.
	got, err = Lookup(context.Background(), f, "srv:example.test", 24601, "ip4", rand.New(rand.NewPCG(1, 1)))
	if err != nil || len(got) != 2 {
		t.Errorf("ip4: %v, %v", got, err)
	}
	// A full SRV name is asked as it is.
	f.srv["_other._udp.example.test"] = f.srv["_udpst._udp.example.test"]
	if _, err := Lookup(context.Background(), f, "srv:_other._udp.example.test", 24601, "ip", rand.New(rand.NewPCG(1, 1))); err != nil {
		t.Errorf("full SRV name: %v", err)
	}
}

func TestLookupFallbackToAddresses(t *testing.T) {
	f := &fakeResolver{addrs: map[string][]netip.Addr{"many.example.test": {addrA, addrB}}}
	got, err := Lookup(context.Background(), f, "srv:many.example.test", 25000, "ip", rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != (Candidate{"many.example.test", addrA, 25000, 0}) || got[1].Addr != addrB {
		t.Errorf("candidates %v", got)
	}
}

func TestLookupErrors(t *testing.T) {
	f := &fakeResolver{
		srv: map[string][]*net.SRV{
			"_udpst._udp.none.example.test": {{Target: ".", Priority: 0}},
			"_udpst._udp.dead.example.test": {{Target: "nowhere.example.test.", Port: 1}},
		},
	}
	for host, want := range map[string]string{
		"srv:none.example.test":    "not offered",
		"srv:dead.example.test":    "no target has an address (nowhere.example.test",
		"srv:missing.example.test": "no SRV records at _udpst._udp.missing.example.test, and missing.example.test has no address",
		"srv:":                     "no name",
	} {
		_, err := Lookup(context.Background(), f, host, 24601, "ip", rand.New(rand.NewPCG(1, 1)))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", host, err, want)
		}
	}
	_, err := Lookup(context.Background(), f, "srv:none.example.test", 24601, "ip", rand.New(rand.NewPCG(1, 1)))
	if !errors.Is(err, ErrNoService) {
		t.Errorf("target \".\": %v is not ErrNoService", err)
	}
	if !Is("srv:x") || Is("x") || Is("SRV") {
		t.Error("Is")
	}
}

// A hostile zone (or a mistaken one) with 300 SRV targets, or a name with
// 300 addresses among them unspecified ones, yields at most MaxCandidates
// candidates, none unspecified or multicast, and the targets past the cap
// are not even looked up.
func TestLookupHostileZone(t *testing.T) {
	f := &fakeResolver{srv: map[string][]*net.SRV{}, addrs: map[string][]netip.Addr{}}
	var recs []*net.SRV
	var many []netip.Addr
	for i := range 300 {
		name := fmt.Sprintf("t%d.hostile.test", i)
		recs = append(recs, &net.SRV{Target: name + ".", Port: uint16(20000 + i), Priority: uint16(i % 3)})
		a := netip.AddrFrom4([4]byte{198, 18, byte(i / 250), byte(1 + i%250)})
		f.addrs[name] = []netip.Addr{netip.IPv4Unspecified(), netip.MustParseAddr("::"), netip.MustParseAddr("224.0.0.1"), a}
		many = append(many, netip.IPv4Unspecified(), a)
	}
	f.srv["_udpst._udp.hostile.test"] = recs
	f.addrs["flat.hostile.test"] = many
	for _, host := range []string{"srv:hostile.test", "srv:flat.hostile.test"} {
		f.asked = nil
		got, err := Lookup(context.Background(), f, host, 24601, "ip", rand.New(rand.NewPCG(1, 1)))
		if err != nil {
			t.Fatalf("%s: %v", host, err)
		}
		if len(got) == 0 || len(got) > MaxCandidates {
			t.Errorf("%s: %d candidates, want 1 to %d", host, len(got), MaxCandidates)
		}
		for _, c := range got {
			if c.Addr.IsUnspecified() || c.Addr.IsMulticast() {
				t.Errorf("%s: candidate %v", host, c)
			}
		}
		if len(f.asked) > MaxCandidates+2 {
			t.Errorf("%s: %d lookups for at most %d candidates", host, len(f.asked), MaxCandidates)
		}
	}
	// Only unspecified addresses: no candidate, an error that says so.
	f.addrs["zero.hostile.test"] = []netip.Addr{netip.IPv4Unspecified(), netip.MustParseAddr("::")}
	if got, err := Lookup(context.Background(), f, "srv:zero.hostile.test", 24601, "ip", rand.New(rand.NewPCG(1, 1))); err == nil {
		t.Errorf("only unspecified addresses: %v", got)
	}
	if got, err := Lookup(context.Background(), f, "srv:0.0.0.0", 24601, "ip", rand.New(rand.NewPCG(1, 1))); err == nil {
		t.Errorf("srv:0.0.0.0: %v", got)
	}
}
