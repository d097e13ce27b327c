//go:build !small

package server

import (
	"net"
	"strconv"
	"testing"
	"time"
)

// TestMetricsWildcardIPv4Only: an endpoint bound to 0.0.0.0 answers on
// 127.0.0.1 and not on ::1; one bound to [::] answers on both.
func TestMetricsWildcardIPv4Only(t *testing.T) {
	probe, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		t.Skip("no IPv6 loopback here: ", err)
	}
	probe.Close()
	reaches := func(host string, port int) bool {
		c, err := net.DialTimeout("tcp", net.JoinHostPort(host, strconv.Itoa(port)), 2*time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil
	}
	for _, c := range []struct {
		host     string
		v4, v6   bool
		describe string
	}{{"0.0.0.0", true, false, "IPv4 only"}, {"::", true, true, "both"}} {
		m, err := listenMetrics(net.JoinHostPort(c.host, "0"), optionNames(nil).opt)
		if err != nil {
			t.Fatal(err)
		}
		port := m.ln.Addr().(*net.TCPAddr).Port
		if v4, v6 := reaches("127.0.0.1", port), reaches("::1", port); v4 != c.v4 || v6 != c.v6 {
			t.Errorf("%s: reached on IPv4 %v, IPv6 %v; want %s", c.host, v4, v6, c.describe)
		}
		m.close()
	}
}
