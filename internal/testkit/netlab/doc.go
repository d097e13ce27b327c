// Package netlab builds the network lab of the test plan (the network lab
// layer of DEVELOPERS.md's tests): network namespaces joined by veth pairs,
// shaped with tc tbf, impaired with nftables random drops and with a
// userspace relay on TUN devices (delay, jitter, reordering, duplication,
// burst loss), translated by NAT, guarded by a stateful firewall and
// narrowed by a smaller MTU, so that a measurement can be checked against
// a rate, a loss and a path that are known exactly. It needs root on
// Linux, iproute2 (ip, tc), for loss, NAT and the firewall nftables
// (nft), and for the relay /dev/net/tun. netem is not used: these
// machines do not have it; the relay does what it would.
//
// Tests call New, which skips the test with the reason when the lab cannot
// run here and tears the lab down in t.Cleanup. Programs (`make bench`)
// call Build and must Close.
//
// # Topology
//
//	ClientNS                RouterNS                     ServerNS
//	veth-c .1 ---------- .2 veth-rc   veth-rs .5 ---------- .6 veth-s
//	  Down loss (input)     Down tbf (egress)
//	                        Up tbf (egress)               Up loss (input)
//	                          tun-up    tun-down    firewall (input)
//	                        (the relay, when on; NAT)
//
// The client and server namespaces are the endpoints; the router
// namespace forwards between them and holds both tbf qdiscs, each on its
// egress towards the receiver. The bottleneck is deliberately not on the
// sender's own veth: there, tbf's queue holds skbs still charged to the
// sending socket, so a fast sender is throttled by its send buffer and
// tbf never drops (measured: a blast at twice the shape arrived complete,
// 0 tbf drops). A router orphans the skbs it receives (ip_rcv), so the
// sender runs at its own pace and tbf queues and drops as a real
// bottleneck does.
//
// Addresses come only from the benchmarking ranges 198.18.0.0/15 (RFC 2544)
// and 2001:2::/48 (RFC 5180). A lab draws a random 14-bit id; its IPv4
// block is 198.18.0.0 + 8*id (client link /30: client .1, router .2;
// server link /30: router .5, server .6), its IPv6 links are
// 2001:2:0:2*id::/64 (client ::1, router ::2) and 2001:2:0:2*id+1::/64
// (router ::1, server ::2). The addresses exist only inside the lab's
// namespaces, so labs cannot collide even with equal ids; the id only
// keeps them apart in logs. The endpoints have routes to each other's
// link and no default route. IPv6 is set up when the kernel has it, with
// duplicate address detection off (usable at once). Every end has a
// permanent neighbour entry for its peer, so no ARP or neighbour discovery
// crosses a link. What still crosses the shaped links besides test traffic:
// a handful of IPv6 MLD reports (about 5 frames of 110 bytes) that the
// kernel sends in the first seconds after the links come up.
//
// # What tbf counts
//
// tbf meters qdisc_pkt_len(skb), which for a veth (no size table) is the
// skb length at the qdisc: the Ethernet frame without FCS, preamble or
// inter-frame gap, i.e. UDP payload + 8 + 20 (IPv4) or 40 (IPv6) + 14. A
// shape of RateBps therefore caps what OB-UDPST reports as
// MaxETHCapacityNoFCS, and that is the figure accuracy tests compare with.
// tc is given the rate in bits/s and stores whole bytes/s: a rate that is
// not a multiple of 8 is rounded down. QdiscStats reads tbf's counters,
// the ground truth of what the shape let through.
//
// # Offloads
//
// veth advertises software GSO, including UDP GSO (NETIF_F_GSO_UDP_L4), so
// a UDP_SEGMENT send (the engine uses it) would cross every veth and the
// router as one skb of up to 64 datagrams. tbf alone would cope:
// qdisc_pkt_len adds every segment's headers (qdisc_pkt_len_init) and tbf
// segments a super-packet larger than its burst (tbf_segment). But the
// receiving namespace's nftables would see, and drop, up to 64 datagrams as
// one packet (measured: 10 % loss on 32-segment sends lost 416 datagrams
// in 11 runs). Every veth end is therefore created with gso_max_segs 1:
// the kernel segments any multi-segment skb in software just before the
// device (netif_skb_features, validate_xmit_skb, after the qdisc), so every
// frame that crosses a veth is one datagram, as on a wire, and the router
// forwards and tbf meters single frames. ethtool is not needed:
// gso_max_segs is an ip-link attribute. GRO on the veths is off by default
// (veth uses NAPI/GRO only when asked), so nothing merges frames again.
// Checksum offload is left alone: it changes no length.
//
// # Burst and queue
//
// The default tbf burst is the larger of 1 ms at the rate and 4 full frames
// (MTU + 14). tbf drops a non-GSO frame bigger than its burst, so the burst
// must hold at least one frame; a few frames and 1 ms absorb the wake-up
// latency of tbf's hrtimer watchdog, which would otherwise be lost (tokens
// are capped at the burst) and make the delivered rate fall short of the
// shape. It is kept that small because any interval T can carry up to
// rate*T + burst: with 1 ms the excess is at most 2 % of a 50 ms trial
// interval and 0.1 % of a 1 s sub-interval. The queue bound is tbf's latency
// (default 50 ms at the rate, plus the burst). Measured on a 2-core VM with
// the default burst: within 0.2 % of the shape from 10 Mbit/s to 1 Gbit/s.
//
// # Loss
//
// Shape.LossPct drops each matching datagram independently with that
// probability (nftables `numgen random mod 10000 < pct*100`, so the
// resolution is 0.01 %). The rule sits on the input hook of the receiving
// namespace, i.e. after tbf: lost datagrams have used the shaped capacity,
// like loss on a link after the bottleneck, so with loss p the receiver
// can get at most rate*(1-p). The receiver's input hook is used because
// IPv4 fragments are reassembled before it, so one decision is made per
// datagram (a router's forward hook would decide per fragment). By
// default (LossLoadPDUs) only UDP datagrams whose payload starts with the
// Load PDU identifier 0xBEEF are dropped: control, Null and Status PDUs
// pass, so a test still starts and the measured loss ratio is the Load PDU
// loss ratio. LossAllUDP drops any UDP datagram in that direction instead.
// A named counter counts the drops (Lab.LossDropped).
//
// # Relay
//
// A Shape's Relay impairment (or Config.Relay, or a narrow link in the
// middle) puts a relay in the router's path. The router namespace gets two
// TUN devices, tun-up and tun-down, and policy routing by incoming
// interface: what arrives on veth-rc (from the client) for the lab's
// ranges is routed into tun-up, what arrives on veth-rs into tun-down,
// ahead of the local table (moved from preference 0 to 100, so that a
// reply to the NAT's address crosses the relay too). A relay thread per
// direction reads each packet, holds it and writes it back into the same
// device; the kernel receives it with iif tun-up (or tun-down), which no
// rule matches, so the main table forwards it on to its real destination,
// through the direction's tbf. Each packet crosses the relay exactly
// once; it crosses the router twice, so its TTL drops by two.
//
// Each direction's thread is a locked OS thread at real-time priority
// (SCHED_FIFO 1, where the kernel allows; RelayStats.RealTime says) with
// timer slack 1 ns, waiting in ppoll with a nanosecond timeout for the
// device or the next release time: packets leave within tens of µs of
// their time, not at Go timer granularity. Packets wait in a delay line of
// preallocated slots (32 MiB per direction) ordered by release time;
// nothing is allocated per packet. The TUN devices' queue is 10000
// packets (txqueuelen) so that the kernel holds a burst while the thread
// is writing. TUN offers no batched read or write (no recvmmsg on a
// character device); what it offers, GSO super-packets through a
// virtio-net header, would make one packet of many datagrams and so
// defeat per-datagram impairment, as it would nftables' loss (see
// Offloads): each packet is one read and one write.
//
// The impairment (Impairment) is per direction: a fixed delay, jitter that
// never reorders, reordering by holding a packet back (ReorderPct,
// ReorderBy), duplication and Gilbert-Elliott burst loss, the last three
// for the packets Scope selects (Load PDUs by default). Its decisions come
// from PCG streams seeded with Config.Seed and the direction: the same
// seed and the same traffic give the same fates, so a test can replay the
// model and know exactly which datagram was lost, duplicated or held.
// Impair (or Shape) changes it while the lab runs. RelayStats counts what
// the impairment did on purpose (Lost, Duplicated, Reordered) apart from
// what the relay dropped on its own (OwnDrops: its delay line full, the
// TUN queue full, errors) and how late it let packets go (LateSlips: 5 ms
// or more after their time); a run in which the relay did not keep up
// (RelayStats.Kept: no own drops, at most 1 % slips) measured the relay.
// While a relay runs, the process has 4 more Ps (GOMAXPROCS): a relay
// thread waking from ppoll needs one at once, or it queues behind
// normal-priority threads and its real-time priority is lost.
//
// The relay's own baseline (RelayBaseline, and TestRelayBaseline in
// `make lab`) measures what a raw sender in 1 ms Bursts gets through it
// at each rate and delay; HighestCarried names the highest rate it
// carried cleanly, the highest a capacity case through the relay may
// use. A thread per CPU watches the machine meanwhile: a row the relay
// missed while the machine itself stalled measured the machine and is
// measured again. docs/accuracy.md has the table.
//
// # NAT, firewall and narrow links
//
// Config.NAT masquerades the client behind the router's address on the
// server link (NATAddr): Masquerade keeps the source port of every flow,
// MasqueradeRandom (masquerade random) draws a random external port for
// each new flow, so that a client socket's Setup and its Test Activation,
// which go to different server ports, leave from different external
// ports, as behind many carrier-grade NATs. With the relay in the path
// only a packet's second crossing of the router is tracked (the first is
// marked notrack), so that conntrack decides NAT with the real output
// device. Config.FirewallPort puts a stateful firewall in front of the
// server, on its namespace's input (a host firewall; in the router it
// would share conntrack with the NAT, see firewallRuleset): new flows
// only to that port, otherwise established flows and related ICMP;
// FirewallRefused counts its drops. Behind masquerade random no test can
// pass such a firewall, by the protocol's design: the Null Request opens
// it for the Setup's external port, and the Test Activation comes from
// another.
//
// Config.Narrow makes one link narrower than MTU (1280 up to MTU-1):
// NarrowMiddle narrows the relay's TUN devices, the link in the middle of
// the router, so the router answers oversized packets in both directions
// with ICMP "fragmentation needed" (DF set) or "packet too big";
// NarrowClientLink and NarrowServerLink narrow one endpoint's whole link,
// so only the other side's packets are answered. The router's ICMP rate
// limits are off (icmp_ratelimit, ipv6 icmp ratelimit), so every
// oversized packet is answered; Linux exempts these two messages from
// rate limiting anyway.
//
// Cut cuts the path (everything the router forwards or sends is dropped)
// and mends it; SetRate steps a direction's tbf rate in place (tc qdisc
// change) in the middle of a test.
//
// # Names and teardown
//
// Namespaces are named udpstp-<pid>-<id>-c, -r and -s (<id>: 4 hex
// digits), so parallel test binaries and parallel labs in one process
// never collide (a name that exists already is retried with another id).
// Interfaces are created directly inside the namespaces and never appear
// in the initial namespace. Close kills any process still running in the
// lab's namespaces and deletes them, which removes the veth pairs, the
// qdiscs and the nftables tables with them; Build undoes its partial work
// when a step fails. While a lab is up, SIGINT, SIGTERM and SIGHUP close
// every open lab and then terminate the process as the signal would have
// (this replaces the program's own handling of those signals while a lab
// is up). Close stops the relay threads before deleting the namespaces:
// a TUN descriptor keeps its namespace alive. What no process can handle (SIGKILL, a `go test -timeout` panic)
// is left to Sweep, which the first Build of every process runs: it
// deletes udpstp-* namespaces whose creating process is gone.
//
// # Talking to the lab
//
// Command runs a program in a namespace through `ip netns exec`; use it for
// real udpstp servers and clients. Do runs a Go function on an OS thread
// switched into a namespace (setns), and ListenUDP uses it to open a socket
// there: a socket stays in the namespace it was created in, whatever thread
// uses it later, so tests drive lab traffic in-process, without a helper
// binary or re-exec.
//
// # Limits
//
// Everything runs on one machine: sender, router and receiver share its
// CPUs, so above some rate (about 1 Gbit/s on 2 shared cores) the machine,
// not tbf, becomes the bottleneck; the relay runs in the process that
// built the lab and shares those CPUs too. LinkDrops reports frames the
// veths dropped; a run with LinkDrops > 0, with RelayStats.OwnDrops > 0,
// or with losses that neither QdiscStats.Drops, LossDropped nor the
// relay's Lost account for, measured the machine. Packets the router
// itself sends (its ICMP errors) do not cross the relay, so they are not
// delayed.
package netlab
