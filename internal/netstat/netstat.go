// Package netstat parses the kernel's protocol counters of a network
// namespace: /proc/net/snmp (IP, ICMP, TCP, UDP: a line of names, then a
// line of values, each starting with the table's name, "Udp:") and
// /proc/net/snmp6 (one "Udp6RcvbufErrors 42" line per counter). The
// server's metrics (metrics/netns.go), the client's reassembly count
// (client/reassembly.go), the network lab (netlab.Counters) and the
// capacity benchmark read them through Parse, so the layout is known in
// one place; ReadSelf reads the process's own namespace.
package netstat

import (
	"fmt"
	"strconv"
	"strings"
)

// Counters are a namespace's counters keyed as snmp names them, table and
// column ("Udp:RcvbufErrors", "Icmp:OutDestUnreachs"), or as snmp6 does
// ("Udp6RcvbufErrors", "Icmp6OutPktTooBigs"). Values are signed: snmp has
// -1 for a limit that is not set (Tcp:MaxConn).
type Counters map[string]int64

// Keys of the counters the repository reads.
const (
	UDPInDatagrams   = "Udp:InDatagrams"  // IPv4: datagrams delivered to a socket
	UDPOutDatagrams  = "Udp:OutDatagrams" // IPv4: datagrams sent
	UDPRcvbufErrors  = "Udp:RcvbufErrors" // IPv4: a full receive buffer dropped a datagram
	UDPSndbufErrors  = "Udp:SndbufErrors" // IPv4: a full send buffer refused one
	UDP6RcvbufErrors = "Udp6RcvbufErrors" // IPv6: the same
	UDP6SndbufErrors = "Udp6SndbufErrors" // IPv6: the same

	// Reassembly: every failure, and the timed-out queues among them.
	IPReasmFails    = "Ip:ReasmFails"   // IPv4: a datagram's fragments dropped or its queue expired
	IPReasmTimeout  = "Ip:ReasmTimeout" // IPv4: queues expired (net.ipv4.ipfrag_time)
	IP6ReasmFails   = "Ip6ReasmFails"   // IPv6: the same
	IP6ReasmTimeout = "Ip6ReasmTimeout" // IPv6: the same
)

// Parse reads the text of /proc/net/snmp, /proc/net/snmp6, or both one
// after the other. A line it does not know the layout of, a value line
// that does not match its names, or a value that is not a number is an
// error: the kernel's files never have one, so the text is not theirs.
func Parse(text string) (Counters, error) {
	m := Counters{}
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		f := strings.Fields(lines[i])
		switch {
		case len(f) == 0:
		case strings.HasSuffix(f[0], ":"):
			if i+1 >= len(lines) {
				return nil, fmt.Errorf("netstat: %q has no line of values", lines[i])
			}
			v := strings.Fields(lines[i+1])
			if len(v) != len(f) || v[0] != f[0] {
				return nil, fmt.Errorf("netstat: %q does not match %q", lines[i+1], lines[i])
			}
			for j := 1; j < len(f); j++ {
				n, err := strconv.ParseInt(v[j], 10, 64)
				if err != nil {
					return nil, fmt.Errorf("netstat: %s%s: %w", f[0], f[j], err)
				}
				m[f[0]+f[j]] = n
			}
			i++
		case len(f) == 2:
			n, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("netstat: %s: %w", f[0], err)
			}
			m[f[0]] = n
		default:
			return nil, fmt.Errorf("netstat: unexpected line %q", lines[i])
		}
	}
	return m, nil
}

// ReassemblyDrops are the reassembly failures of IPv4 (or, with v6, of
// IPv6) that were not timeouts: fragments dropped because the namespace's
// reassembly memory (net.ipv4.ipfrag_high_thresh) was full, or datagrams
// that could not be put together. A queue that timed out counts in both
// ReasmFails and ReasmTimeout, so the difference only grows. ok says
// whether the family's counters were there.
func (c Counters) ReassemblyDrops(v6 bool) (n int64, ok bool) {
	fails, timeouts := IPReasmFails, IPReasmTimeout
	if v6 {
		fails, timeouts = IP6ReasmFails, IP6ReasmTimeout
	}
	f, ok := c[fails]
	return f - c[timeouts], ok
}
