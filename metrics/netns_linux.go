package metrics

import (
	"os"

	"github.com/udpstp/udpstp/internal/netstat"
)

// UDPNetns reports the kernel's UDP buffer errors of the process's
// network namespace (netns.go). /proc/self/net stays readable under the
// unit's ProcSubset=pid, which hides /proc/net.
func UDPNetns() Source {
	return udpNetnsSource(func() (v4, v6 udpBufferErrors) {
		if b, err := os.ReadFile("/proc/self/net/snmp"); err == nil {
			v4 = udpErrorsOf(string(b), netstat.UDPRcvbufErrors, netstat.UDPSndbufErrors)
		}
		if b, err := os.ReadFile("/proc/self/net/snmp6"); err == nil {
			v6 = udpErrorsOf(string(b), netstat.UDP6RcvbufErrors, netstat.UDP6SndbufErrors)
		}
		return v4, v6
	})
}
