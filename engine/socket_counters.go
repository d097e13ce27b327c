package engine

import "github.com/udpstp/udpstp/dataphase"

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
	// CountConnRefused counts ECONNREFUSED: an ICMP port unreachable for
	// an earlier datagram, reported on a later send or receive of the
	// connected socket.
	CountConnRefused
	CountSocketErrors // pending socket errors cleared after POLLERR
	CountGSORefusals  // GSO messages the kernel refused (the first one turns GSO off for good)

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
	CountSocketErrors:     {Name: "socket_errors", Help: "Pending socket errors cleared after POLLERR"},
	CountGSORefusals:      {Name: "gso_refusals", Help: "UDP GSO messages the kernel refused"},
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

// SocketStats are a Socket's counters and whether it uses UDP GSO.
type SocketStats struct {
	Counts SocketCounts
	GSO    bool // GSO is in use: the probe succeeded, NoGSO was not set, no send was refused
}
