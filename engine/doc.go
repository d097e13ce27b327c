// Package engine drives Data Phase cores over real sockets.
//
// It has three layers:
//
//   - Socket: one non-blocking UDP socket. On Linux it is driven with raw
//     system calls: sendmmsg with UDP GSO where it is safe, header-only
//     recvmmsg (MSG_TRUNC) with kernel receive timestamps and TOS, all
//     through arrays preallocated per Socket, so the per-datagram path
//     allocates nothing. Elsewhere the same API runs on net.UDPConn, one
//     datagram per call.
//   - Conn: the per-Test-Connection executor. One goroutine locked to its OS
//     thread runs a sans-IO Core in turns (clock pair, commands, sends, reads,
//     events, wait) and sleeps in ppoll until the core's next deadline.
//     Clients, and every platform other than Linux, use it.
//   - Pool: the Linux server's executor. As many Engine Threads as the
//     process may use CPUs, each serving many Test Connections from one
//     edge-triggered epoll set and a deadline heap, with the same
//     per-Test-Connection turn.
//
// Files are split by concern, with the platform code behind the narrow API
// of the shared files: socket.go (API, options, statistics), addr.go
// (IPv4-mapped addresses), gso.go (the pure GSO grouping arithmetic),
// filler.go (datagram filler), batch_linux.go (sendmmsg/recvmmsg),
// socket_linux.go (open, control-phase I/O, socket options), errors_linux.go
// (errno classes), socket_other.go (net.UDPConn fallback), wait_*.go (the
// wait, the Waker, timer slack), conn.go and thread.go (the executor),
// pool*.go and heap.go (the pool), cpus*.go (how many CPUs the process may
// use), progress.go (the Engine Threads' heartbeat for the watchdog),
// fdsocket_*.go (sockets passed by systemd).
package engine
