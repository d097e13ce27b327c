package engine

import (
	"sync/atomic"

	"github.com/udpstp/udpstp/dataphase"
)

// SocketCounter names one of a Socket's counters. The executor's thread
// adds to them once per system call (never per datagram); any goroutine
// may read them with Stats. socketCounterInfo gives each its name and help
// text, for logs, the -G file's system figures and metrics.
type SocketCounter uint8

const (
	CountSendCalls     SocketCounter = iota // send system calls that accepted at least one datagram
	CountSentDatagrams                      // datagrams accepted by the kernel (SendBatch)
	CountGSOMessages                        // UDP GSO messages accepted (each several datagrams)
	CountRecvCalls                          // receive system calls that returned datagrams
	CountRecvDatagrams                      // datagrams read (RecvBatch)
	// CountBackpressure counts SendBatch calls cut short by EAGAIN,
	// ENOBUFS or EPERM (a local firewall drop), and CountRefusedDatagrams
	// the datagrams of those calls the kernel did not take: they are the
	// core's to defer or withhold.
	CountBackpressure
	CountRefusedDatagrams
	// The path counters: errors the kernel reported for the path to the
	// connected peer (ICMP errors, local route failures), by kind
	// (errors_linux.go maps each errno). A pending error is reported once,
	// on the next send or receive or as POLLERR, however many ICMP
	// messages set it meanwhile; none ends the Data Phase.
	//
	// CountConnRefused counts ECONNREFUSED: an ICMP port unreachable for
	// an earlier datagram, reported on a later send or receive of the
	// connected socket (the executor hands it to the core: a peer that
	// keeps refusing is gone).
	CountConnRefused
	CountHostUnreachable // EHOSTUNREACH, EHOSTDOWN, ENONET: host unreachable or prohibited
	CountNetUnreachable  // ENETUNREACH: network unreachable or prohibited, no route
	CountProhibited      // EACCES: ICMPv6 administratively prohibited, a prohibit route
	CountMessageTooBig   // EMSGSIZE: ICMP fragmentation needed, ICMPv6 packet too big
	CountOtherPathErrors // EPROTO, ENOPROTOOPT, EOPNOTSUPP: parameter problem and the rest
	// CountGivenUp counts datagrams that met a path error twice in one
	// send (the error kept coming back) and were given up: they were not
	// sent, and the Load Receiver sees them as lost, as the path lost them.
	CountGivenUp
	// CountPreConnect counts datagrams that were waiting on the socket
	// when it was connected and were discarded: they came from anyone,
	// before the kernel filtered by the peer's address.
	CountPreConnect
	// CountSocketErrors counts pending socket errors cleared after POLLERR
	// or before a retry (each also counted by its kind above) and error
	// queue entries drained (IP_RECVERR).
	CountSocketErrors
	CountGSORefusals // GSO messages the kernel refused (the first one turns GSO off for good)
	CountGROMessages // UDP GRO messages read, each of several datagrams (counted in CountRecvDatagrams)

	NumSocketCounters // the number of SocketCounters, not one
)

var socketCounterInfo = [NumSocketCounters]dataphase.CounterInfo{
	CountSendCalls:        {Name: "send_calls", Help: "Send system calls that accepted at least one datagram"},
	CountSentDatagrams:    {Name: "sent_datagrams", Help: "Datagrams the kernel accepted for sending"},
	CountGSOMessages:      {Name: "gso_messages", Help: "UDP GSO messages the kernel accepted, each of several datagrams"},
	CountRecvCalls:        {Name: "recv_calls", Help: "Receive system calls that returned datagrams"},
	CountRecvDatagrams:    {Name: "recv_datagrams", Help: "Datagrams read"},
	CountBackpressure:     {Name: "backpressure_events", Help: "Send calls cut short by EAGAIN, ENOBUFS or EPERM"},
	CountRefusedDatagrams: {Name: "refused_datagrams", Help: "Datagrams of those send calls that the kernel did not take"},
	CountConnRefused:      {Name: "connection_refused", Help: "ICMP port unreachable errors reported on the connected socket"},
	CountHostUnreachable:  {Name: "host_unreachable", Help: "Host unreachable or prohibited errors reported on the connected socket"},
	CountNetUnreachable:   {Name: "net_unreachable", Help: "Network unreachable or prohibited errors, or no route, on the connected socket"},
	CountProhibited:       {Name: "prohibited", Help: "Administratively prohibited errors (ICMPv6, a prohibit route) on the connected socket"},
	CountMessageTooBig:    {Name: "message_too_big", Help: "Fragmentation needed or packet too big errors reported on the connected socket"},
	CountOtherPathErrors:  {Name: "other_path_errors", Help: "Other ICMP errors (parameter problem, protocol unreachable) on the connected socket"},
	CountGivenUp:          {Name: "given_up_datagrams", Help: "Datagrams given up after meeting a path error twice in one send"},
	CountPreConnect:       {Name: "pre_connect_dropped", Help: "Datagrams from anyone waiting on the socket when it was connected, discarded"},
	CountSocketErrors:     {Name: "socket_errors", Help: "Pending socket errors cleared after POLLERR or before a retry, and error queue entries"},
	CountGSORefusals:      {Name: "gso_refusals", Help: "UDP GSO messages the kernel refused"},
	CountGROMessages:      {Name: "gro_messages", Help: "UDP GRO messages read, each of several datagrams"},
}

// Info returns the counter's name and help text.
func (c SocketCounter) Info() dataphase.CounterInfo { return socketCounterInfo[c] }

func (c SocketCounter) String() string { return socketCounterInfo[c].Name }

// SocketCounts are a Socket's counters by SocketCounter, read at one time
// (each atomically: consistent per counter, not across counters) or added
// up over sockets.
type SocketCounts [NumSocketCounters]uint64

// Add adds o to n.
func (n *SocketCounts) Add(o *SocketCounts) {
	for i, v := range o {
		n[i] += v
	}
}

// PathErrors is the number of path errors of every kind (CountGivenUp
// and CountPreConnect count datagrams, not errors, and are not in it).
func (n *SocketCounts) PathErrors() uint64 {
	var t uint64
	for c := CountConnRefused; c <= CountOtherPathErrors; c++ {
		t += n[c]
	}
	return t
}

// SocketStats are a Socket's counters and whether it uses UDP GSO and GRO.
type SocketStats struct {
	Counts SocketCounts
	GSO    bool // GSO is in use: the probe succeeded, NoGSO was not set, no send was refused
	GRO    bool // GRO is in use: SocketOptions.GRO was set and the kernel took UDP_GRO
}

// refusals is the running count of ECONNREFUSED, which the executor hands
// to the core.
func (s *Socket) refusals() uint64 { return s.stats[CountConnRefused].Load() }

// socketStats are a Socket's live counters.
type socketStats [NumSocketCounters]atomic.Uint64
