// Package capacity holds the whole-system benchmarks of `make bench` that
// need the network lab (internal/testkit/netlab): the server-capacity check and
// the single-connection throughput comparison. They are benchmarks, not
// tests: they report figures measured side by side in one run and judge
// nothing, and they skip, saying why, where the lab cannot run (not Linux,
// not root, no iproute2) or the machine has fewer than 2 CPUs.
//
// # The server-capacity check
//
// A server runs in the lab's server namespace pinned to CPU 0 (taskset);
// the load generator runs in this process, pinned to CPU 1, with its
// sockets in the client namespace; traffic crosses the router namespace
// unshaped. The load is N Test Connections at sending rate row 4 (one
// 472-byte UDP payload, a 500-byte IP packet, every millisecond), each
// its own test (-I 4 -t T), all downstream or all upstream.
//
// The load generator is our own client's Data Phase core, every
// connection of it on one Engine Thread of our pool (engine.Pool with one
// thread): far lighter than N client processes. It receives (downstream)
// or sends (upstream) and sends or answers Status PDUs as a real client
// does. Its CPU and its own Skipped Bursts are reported, so a run that the
// generator rather than the server limited can be told. It starts each
// connection at a random moment within 20 ms and sets up at most 24 at
// once, as independent clients arriving at a server do: started together,
// the schedules' phases would coincide, and a server serves coinciding
// deadlines in one wake-up whatever its own schedule.
//
// For each server and N the check reports:
//
//   - delivered: the Load PDUs the receiver counted over the planned ones
//     (one per millisecond of each Sub-Interval), over every Sub-Interval
//     but each connection's first and last; downstream the generator
//     counts, upstream the server does and reports it in its Status PDUs;
//   - skipped: the Load Sender's Skipped Bursts; downstream our server's
//     (from its debug log; OB-UDPST has no such figure: it reschedules
//     instead), upstream the generator's;
//   - send lag p50/p99: how late the server's datagrams left against their
//     schedule, seen at the generator from kernel receive timestamps: for
//     sequence number s of period P, d = arrival - s*P, and the lag is d
//     minus the least d over the next 100 datagrams (a forward minimum, so
//     a schedule that shifts later for good, as after a Skipped Burst or
//     OB-UDPST's rescheduling, is not counted as lag for ever). That is
//     downstream, the Load PDUs' (P = 1 ms). Upstream the server sends
//     only Status PDUs, every 50 ms trial interval from when the last one
//     went (both servers reschedule that timer), so there the lag is how
//     much longer than 50 ms each gap between two of them was;
//   - stamp to arrival p50/p99 (downstream): each Load PDU's kernel receive
//     time less the send time the server wrote in it, both on the one
//     kernel's CLOCK_REALTIME: the path's own delay plus how long before
//     its departure the server stamped it. The lab's path is the same for
//     every server, so a difference between servers is in the stamping;
//   - server CPU: the server process's time on a CPU (the sum over its
//     threads of /proc/PID/task/TID/schedstat) over the steady window,
//     which starts 1 s after the last connection started and ends 1 s
//     before the first one ends; it includes the kernel's work on the
//     server's behalf in its own context (on veth the router's forwarding
//     of what it sends runs there too, for both servers alike);
//   - wake-ups per second: the server's voluntary context switches;
//   - the busiest thread's CPU and wake-ups: the same two figures of the
//     server's thread that spent the most time on a CPU (OB-UDPST's one
//     thread; ours, an OS thread that runs an Engine Thread). The floor
//     below measures its one sending thread. An Engine Thread's goroutine
//     can come back on another OS thread after each of its yields (every
//     5 ms, engine/thread.go), so this can read only part of it: compare
//     the server's CPU, not this, with the floor's;
//   - system calls per packet: the server's system calls over the steady
//     window (perf stat's in-kernel count of raw_syscalls:sys_enter; n/a
//     without perf) over the UDP datagrams its namespace sent and
//     received meanwhile; the floor's is (N+2)/N by construction, its
//     io_uring form's 3/N;
//   - generator CPU, and receive buffer overflows in both namespaces.
//
// Downstream the check also runs the sending floor (SendFloor, row "raw
// floor"): N connected sockets in the server namespace and one thread on
// the server's CPU that wakes once a millisecond and gives each socket its
// datagram with one sendmmsg call, with no protocol at all. No server with
// a socket per Test Connection can send the same datagrams for less with a
// system call per socket, so its CPU is what the kernel alone charges for
// them that way: a CPU target below it cannot be met on that machine
// without batching. Its second form (row "raw floor, io_uring") gives the
// N datagrams of a turn to the kernel in one io_uring_enter: the floor for
// a server that batches the sends of many Test Connections in one system
// call. It is left out, saying why, where the kernel refuses a ring.
//
// Settings (environment): UDPST_BIN adds OB-UDPST's server side by side;
// UDPSTP_BIN names the udpstp binary (default: built into a temporary
// directory); CAPACITY_N (default "1,8,80,200"); CAPACITY_SECONDS
// (test duration, default 10); CAPACITY_DIRS ("down,up");
// CAPACITY_VARIANTS, a ';'-separated list of extra udpstp servers given by
// their environment (for example "UDPSTP_ENGINE_GROUP=50us") or, with a
// leading "@PATH", another udpstp binary (an older build side by side);
// CAPACITY_REPEAT, how many times the whole check runs (each figure is
// then the median over the runs, and every run's delivered share is
// noted); CAPACITY_GEN_GROUP, the generator's grouping window upstream
// (default 100us: the generator then sends in fewer, larger turns, which
// lets its one CPU carry more Test Connections; it costs the schedule up
// to 100 µs, far inside the 1 ms catch-up budget); CAPACITY_OUT, a file
// the Markdown table is also written to; CAPACITY_FLOOR=0 leaves the
// floor out, CAPACITY_FLOOR_RING=0 its io_uring form; CAPACITY_STEER=1
// steers the router's receive work to the generator's CPU
// (netlab.Lab.SteerRouter), so that the forwarding of what the server
// sends no longer runs in its context. Steering is off by
// default: on a VM it trades that forwarding for an inter-processor
// interrupt per datagram sent at its own moment, and the generator's CPU,
// carrying all the forwarding, then limits the check from about 120 Test
// Connections. BenchmarkSendFloor runs the floor alone, in both forms.
//
// # The throughput comparison
//
// One Test Connection in an unshaped lab, at MTU 1500 and 9000, downstream
// and upstream: udpstp's maximum (IP-layer capacity at the maximum, from
// its JSON result), OB-UDPST's with UDPST_BIN, and the honest limit of the
// path: a minimal sender (plain sendmmsg, and sendmmsg with UDP GSO) in the
// server namespace and a minimal recvmmsg receiver in the client
// namespace, written here with raw system calls and none of the engine's
// code, for THROUGHPUT_SECONDS (default 3) each. THROUGHPUT_REPEAT runs
// it that many times and reports each cell's median with every run's figure.
package capacity
