package listenaddr

import "testing"

// TestNetwork: an IPv4 address listens on IPv4 only (0.0.0.0 too, which
// Go's "tcp" would put on a dual-stack socket), an IPv6 address on IPv6
// only, [::] on both.
func TestNetwork(t *testing.T) {
	for addr, want := range map[string]string{
		"0.0.0.0:24602": "tcp4", "192.0.2.1:24602": "tcp4", "[2001:db8::1]:24602": "tcp6", "[::1]:24602": "tcp6",
		"[::]:24602": "tcp", "localhost:24602": "tcp",
	} {
		if got := Network(addr); got != want {
			t.Errorf("%s: %s, want %s", addr, got, want)
		}
	}
}
