package netlab

import "github.com/udpstp/udpstp/internal/netstat"

// Counters reads the IP, ICMP, UDP and IPv6 counters of namespace ns
// (/proc/net/snmp and /proc/net/snmp6, which show the namespace of the
// reader), keyed as "Udp:RcvbufErrors", "Icmp:OutDestUnreachs" (snmp's
// table and column) or "Icmp6OutPktTooBigs" (snmp6's name): what a
// test reads to tell a loss it set from one the machine made, or to see
// that the router answered a narrow link.
func (l *Lab) Counters(ns string) (netstat.Counters, error) {
	if err := l.checkNS(ns); err != nil {
		return nil, err
	}
	files := []string{"/proc/net/snmp"}
	if l.addrs.client6.IsValid() {
		files = append(files, "/proc/net/snmp6")
	}
	out, err := run(nil, l.tools.ip, append([]string{"netns", "exec", ns, "cat"}, files...)...)
	if err != nil {
		return nil, err
	}
	return netstat.Parse(string(out))
}
