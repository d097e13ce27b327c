// Package engine drives Data Phase cores over real sockets.
//
// It has three layers:
//
//   - Socket: one non-blocking UDP socket. On Linux it is driven with raw
//     system calls: sendmmsg with UDP GSO where it is safe, header-only
//     recvmmsg (MSG_TRUNC) with kernel receive timestamps and TOS, all
//     through arrays preallocated per Socket, so the per-datagram path
//     allocates nothing; optionally UDP GRO reads, whose large message
//     buffers belong to the executor. Elsewhere the same API runs on
//     net.UDPConn, one datagram per call.
//   - Conn: the per-Test-Connection executor. One goroutine locked to its OS
//     thread runs a sans-IO Core in turns (clock pair, commands, sends, reads,
//     events, wait) and sleeps in ppoll until the core's next deadline.
//     Every platform other than Linux uses it, and a Linux client run with
//     UDPSTP_CLIENT_THREADS=0.
//   - Pool: the Linux executor, of the server and of the client alike. As
//     many Engine Threads as the process may use CPUs (a client's bounded by
//     UDPSTP_CLIENT_THREADS), each serving many Test Connections from one
//     edge-triggered epoll set and a deadline heap, with the same
//     per-Test-Connection turn.
//
// Files are split by concern, with the platform code behind the narrow
// interfaces of the shared files (platformSocket, platformOps): socket.go
// (API, options, and the checks both platforms share), socket_counters.go
// (the socket counters and their table), addr.go (IPv4-mapped addresses,
// zones, the emulated connect's filter), gso.go (the pure GSO grouping
// arithmetic), gro.go (the pure arithmetic of cutting a UDP GRO message
// back into datagrams, and the remainder a batch could not take),
// gro_linux.go (the UDP GRO option and reads), filler.go (datagram filler,
// for both platforms), batch_linux.go (sendmmsg/recvmmsg), sendpolicy.go
// (what sendBatch does after each errno, pure), socket_linux.go (open,
// connect, socket options, pending errors; withFd, the one way to use the
// descriptor), controlio_linux.go (the Control Phase's sends and receives),
// sockaddr_linux.go (kernel addresses), errors_linux.go (errno classes),
// socket_other.go (net.UDPConn fallback) and sockopt_*.go (its socket
// options and raw read per platform), wait*.go (the wait, the Waker, timer slack),
// ending.go (a core's events and end, shared by both executors), conn.go and
// thread.go (the per-Test-Connection executor), pool.go (the pool's API and
// options), pool_linux.go (placing Test Connections on Engine Threads),
// poolthread_linux.go (an Engine Thread and its turns),
// ringsend_linux.go (a turn's sends of many Test Connections through one
// io_uring, experimental),
// pool_epoll_linux.go (their epoll registrations, readiness and wait),
// group.go (the grouping window by load),
// holdoff.go (the receive hold-off's arithmetic, tested on every platform),
// gridphase.go (the phases of a thread's grid), pool_other.go (the pool off
// Linux: one Engine Thread per Test Connection), heap.go (the deadline
// heap), cpus*.go (how many CPUs the process may use), progress.go (the
// Engine Threads' heartbeat for the watchdog), fdsocket_*.go (sockets passed
// by systemd), pktinfo_*.go (the address a control datagram was sent to, on
// a wildcard socket).
//
// Built with -tags portable, Linux takes the other platforms' files (its
// own say !portable, the fallback's portable), so that `make test` runs
// the fallback socket and executor here (DEVELOPERS.md).
package engine
