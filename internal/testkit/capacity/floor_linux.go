package capacity

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/udpstp/udpstp/dataphase"
	"github.com/udpstp/udpstp/internal/testkit/netlab"
	"golang.org/x/sys/unix"
)

// The sending floor of the capacity check: what the kernel alone charges a
// server for N Test Connections' Load PDUs downstream, measured with the
// least work a sender can do for them. N connected UDP sockets in the
// server namespace, one thread pinned to the server's CPU that wakes once
// per period (an absolute clock_nanosleep, timer slack 1 ns) and gives
// each socket one payload-byte datagram with one sendmmsg call, as a Load
// Sender must (sendmmsg takes one socket, and one datagram is due per
// socket). It builds no PDU, keeps no schedule per connection and wakes
// 1,000 times a second however many sockets it serves: no server with a
// socket per Test Connection can send the same datagrams for less with a
// system call per socket. A receiver in the client namespace, pinned to the
// generator's CPU, reads them header-only.
//
// Its second form (ring set) gives the N datagrams of a turn to the kernel
// in one io_uring_enter instead (sendRing): the floor for a server that
// batches the sends of many Test Connections in one system call.

// FloorResult is what a floor run measured.
type FloorResult struct {
	N int
	// Ring says the sends went through io_uring (sendRing).
	Ring bool
	// Sent and Got count every datagram, warm-up included.
	Sent, Got int64
	// CPU is the sending thread's time on a CPU per second (schedstat),
	// Wakeups its voluntary context switches per second.
	CPU     float64
	Wakeups float64
	// LateTurns counts the measured turns that began more than the Load
	// Sender's 1 ms catch-up budget after their deadline, MaxLate is the
	// latest: what the machine alone (the hypervisor, the kernel, the Go
	// runtime) makes a thread that asks for nothing else late by. A Load
	// Sender as late would skip a Burst of each of its N connections.
	LateTurns int64
	MaxLate   time.Duration
}

// Result returns the floor run as a row of the capacity table: its
// delivered share is what the receiver got of what was sent.
func (f FloorResult) Result() *Result {
	calls := f.N
	if f.Ring {
		calls = 1
	}
	r := &Result{Server: f.Name(), N: f.N, Floor: true, SkippedBursts: f.LateTurns * int64(f.N),
		Planned: float64(f.Sent), Delivered: float64(f.Got), ServerCPU: f.CPU, ServerWakeups: f.Wakeups,
		BusiestCPU: f.CPU, BusiestWakeups: f.Wakeups,
		// By construction: a clock_nanosleep and a clock_gettime a turn
		// (x/sys's ClockGettime is a system call, not the vDSO's; its
		// time.Now calls are the vDSO's) and one sendmmsg per socket,
		// for its N datagrams, or one io_uring_enter for all of them.
		SyscallsPerPacket: float64(2+calls) / float64(max(f.N, 1))}
	// Its Skipped Bursts are what a Load Sender as late would skip.
	r.Notes = append(r.Notes, fmt.Sprintf("%d turns over 1 ms late (latest %v)", f.LateTurns, f.MaxLate.Round(time.Microsecond)))
	return r
}

// Name is the floor's row in the capacity table.
func (f FloorResult) Name() string {
	if f.Ring {
		return "raw floor, io_uring"
	}
	return "raw floor"
}

// SendFloor runs the sending floor for n sockets, one datagram of payload
// bytes each per period, for d, the sender pinned to cpu and the receiver
// to rxCPU; with ring, in its io_uring form. Where the kernel will not set
// up a ring, the error wraps errRingUnavailable.
func SendFloor(lab *netlab.Lab, n, payload int, period, d time.Duration, cpu, rxCPU int, ring bool) (FloorResult, error) {
	res := FloorResult{N: n, Ring: ring}
	rx, rxPort, err := rawSocket(lab, lab.ClientNS, lab.ClientAddr)
	if err != nil {
		return res, fmt.Errorf("floor receiver: %w", err)
	}
	defer unix.Close(rx)
	tv := unix.NsecToTimeval(int64(100 * time.Millisecond))
	_ = unix.SetsockoptTimeval(rx, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	txs := make([]int, 0, n)
	defer func() {
		for _, fd := range txs {
			unix.Close(fd)
		}
	}()
	for range n {
		fd, _, err := rawSocket(lab, lab.ServerNS, lab.ServerAddr)
		if err != nil {
			return res, fmt.Errorf("floor sender socket: %w", err)
		}
		txs = append(txs, fd)
		if err := unix.Connect(fd, &unix.SockaddrInet4{Addr: lab.ClientAddr.As4(), Port: rxPort}); err != nil {
			return res, fmt.Errorf("floor sender connect: %w", err)
		}
	}

	var stop atomic.Bool
	var got int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // receiver
		defer wg.Done()
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		var set unix.CPUSet
		set.Set(rxCPU)
		_ = unix.SchedSetaffinity(0, &set)
		got = rawReceive(rx, &stop)
	}()

	type usage struct {
		taskFigures
		at time.Time
	}
	var u0, u1 usage
	var sent int64
	errc := make(chan error, 1)
	go func() { // sender
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		errc <- func() error {
			var set unix.CPUSet
			set.Set(cpu)
			if err := unix.SchedSetaffinity(0, &set); err != nil {
				return fmt.Errorf("pin floor sender: %w", err)
			}
			if err := unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0); err != nil {
				return fmt.Errorf("timer slack: %w", err)
			}
			var sr *sendRing
			if ring {
				var err error
				if sr, err = newSendRing(uint32(max(64, n))); err != nil {
					return err
				}
				defer sr.close()
			}
			buf := make([]byte, payload)
			buf[0] = 0xBE // not a Load PDU: no one parses it
			iov := unix.Iovec{Base: &buf[0]}
			iov.SetLen(len(buf))
			var msg [1]unix.Mmsghdr
			msg[0].Hdr.Iov = &iov
			msg[0].Hdr.SetIovlen(1)
			tid := unix.Gettid()
			read := func() usage {
				return usage{taskSched(fmt.Sprintf("/proc/self/task/%d", tid)), time.Now()}
			}
			var ts unix.Timespec
			_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
			next := ts.Nano()
			end := time.Now().Add(d)
			warm := time.Now().Add(d / 5) // the first fifth warms up
			measuring := false
			for time.Now().Before(end) {
				next += int64(period)
				t := unix.NsecToTimespec(next)
				for {
					_, _, e := unix.Syscall6(unix.SYS_CLOCK_NANOSLEEP, unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME,
						uintptr(unsafe.Pointer(&t)), 0, 0, 0)
					if e != unix.EINTR {
						break
					}
				}
				_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
				if late := time.Duration(ts.Nano() - next); measuring {
					if late > dataphase.DefaultCatchUpBudget {
						res.LateTurns++
					}
					res.MaxLate = max(res.MaxLate, late)
				}
				if sr != nil {
					k, err := sr.sendEach(txs, buf)
					sent += int64(k)
					if err != nil && !errors.Is(err, unix.EAGAIN) {
						return err
					}
				} else {
					for _, fd := range txs {
						r, _, e := unix.Syscall6(unix.SYS_SENDMMSG, uintptr(fd), uintptr(unsafe.Pointer(&msg[0])), 1, 0, 0, 0)
						if e == 0 {
							sent += int64(r)
						}
					}
				}
				if !measuring && time.Now().After(warm) {
					measuring, u0 = true, read()
				}
			}
			u1 = read()
			return nil
		}()
	}()
	err = <-errc
	time.Sleep(50 * time.Millisecond)
	stop.Store(true)
	wg.Wait()
	if err != nil {
		return res, err
	}
	secs := u1.at.Sub(u0.at).Seconds()
	res.Sent, res.Got = sent, got
	res.CPU = (u1.cpu - u0.cpu).Seconds() / secs
	res.Wakeups = float64(u1.wakeups-u0.wakeups) / secs
	return res, nil
}
