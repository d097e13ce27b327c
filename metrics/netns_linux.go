package metrics

import "os"

// UDPNetns reports the kernel's UDP buffer errors of the process's
// network namespace (netns.go). /proc/self/net stays readable under the
// unit's ProcSubset=pid, which hides /proc/net.
func UDPNetns() Source {
	return udpNetnsSource(func() (v4, v6 udpBufferErrors) {
		if f, err := os.Open("/proc/self/net/snmp"); err == nil {
			v4 = parseSNMP(f)
			f.Close()
		}
		if f, err := os.Open("/proc/self/net/snmp6"); err == nil {
			v6 = parseSNMP6(f)
			f.Close()
		}
		return v4, v6
	})
}
