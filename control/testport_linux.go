package control

import "os"

// DefaultTestPorts is the kernel's ephemeral port range
// (net.ipv4.ip_local_port_range, which IPv6 shares), where a server's
// firewall already expects test ports; FallbackTestPorts if it cannot be
// read.
func DefaultTestPorts() PortRange {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return FallbackTestPorts
	}
	r, err := ParsePortRange(string(b))
	if err != nil {
		return FallbackTestPorts
	}
	return r
}
