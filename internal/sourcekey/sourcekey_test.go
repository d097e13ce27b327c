package sourcekey

import (
	"net/netip"
	"testing"
)

// TestOf: an IPv6 address's /64 is one source, an IPv4 address (mapped
// or not) its own, a zone no escape.
func TestOf(t *testing.T) {
	for in, want := range map[string]string{
		"198.18.0.1":           "198.18.0.1",
		"::ffff:198.18.0.1":    "198.18.0.1",
		"2001:db8:1:2:3:4:5:6": "2001:db8:1:2::",
		"2001:db8:1:2:ffff::1": "2001:db8:1:2::",
		"2001:db8:1:3::1":      "2001:db8:1:3::",
		"fe80::1%eth0":         "fe80::",
		"fe80::2%eth1":         "fe80::",
	} {
		if got := Of(netip.MustParseAddr(in)); got != netip.MustParseAddr(want) {
			t.Errorf("Of(%s) = %s, want %s", in, got, want)
		}
	}
}
