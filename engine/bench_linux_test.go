//go:build !portable

package engine

import (
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/udpstp/udpstp/clock"
	"github.com/udpstp/udpstp/dataphase"
	"golang.org/x/sys/unix"
)

// BenchmarkSendRecvLoopback sends Bursts of 100 x 1,222-byte datagrams
// (OB-UDPST's default payload, its largest Burst) over loopback to a
// receiver on its own locked thread reading with RecvBatch, and reports
// the datagrams per second the kernel took (tx) and the receiver read (rx).
// Side by side:
//
//   - raw-sendmmsg: the honest baseline, a minimal loop of one sendmmsg of
//     100 prebuilt one-iovec messages;
//   - raw-gso: the same with two UDP_SEGMENT messages (53 + 47 segments),
//     one contiguous iovec each;
//   - raw-gso-2iov: raw-gso with our layout, two iovecs per datagram (a
//     32-byte header and zero filler), to tell the layout's cost from the
//     rest of SendBatch's;
//   - SendBatch-noGSO and SendBatch-GSO: ours.
//
// Loopback runs the receive softirq on the sender's CPU and splits every
// GSO message again, and datagrams dropped at a full receive buffer cost
// the sender less than delivered ones; so tx rates depend on rx loss, and
// these numbers only compare the variants on one host.
func BenchmarkSendRecvLoopback(b *testing.B) {
	for _, mode := range []string{"raw-sendmmsg", "raw-gso", "raw-gso-2iov", "SendBatch-noGSO", "SendBatch-GSO"} {
		b.Run(mode, func(b *testing.B) { benchLoopback(b, mode) })
	}
}

const (
	benchLen  = 1222
	benchPlan = dataphase.MaxBurst
)

func benchLoopback(b *testing.B, mode string) {
	o := SocketOptions{SockBuf: 8 << 20, NoGSO: mode != "SendBatch-GSO"}
	tx, rx := openPair(b, "127.0.0.1:0", o)
	if mode == "SendBatch-GSO" && !tx.GSOEnabled() {
		b.Skip("no GSO")
	}

	// Receiver.
	var stop atomic.Bool
	var received atomic.Int64
	rxDone := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer close(rxDone)
		var rb dataphase.RecvBatch
		fds := []waitFD{{sock: rx}}
		n := int64(0)
		for !stop.Load() {
			if err := rx.RecvBatch(&rb, dataphase.MaxRecv); err != nil {
				b.Error(err)
				return
			}
			n += int64(rb.N)
			if rb.N == 0 {
				now := clock.Mono()
				_ = wait(fds, nil, now.Add(time.Millisecond), now)
			}
		}
		received.Store(n)
	}()

	// Sender.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var send func() int
	switch mode {
	case "raw-sendmmsg", "raw-gso":
		send = rawSender(tx, mode == "raw-gso")
	case "raw-gso-2iov":
		send = rawSender2iov(tx)
	default:
		var sb dataphase.SendBuffer
		fillPlan(&sb, 0xbe, 0, lens(benchPlan, benchLen)...)
		send = func() int {
			n, err := tx.SendBatch(&sb)
			if err != nil {
				b.Fatal(err)
			}
			return n
		}
	}
	fds := []waitFD{{sock: tx, out: true}}
	sent := int64(0)
	for b.Loop() {
		n := send()
		sent += int64(n)
		if n < benchPlan {
			now := clock.Mono()
			_ = wait(fds, nil, now.Add(time.Millisecond), now)
		}
	}
	el := b.Elapsed()
	stop.Store(true)
	<-rxDone
	got := received.Load()
	b.ReportMetric(float64(sent)/el.Seconds(), "tx-pkts/s")
	b.ReportMetric(float64(got)/el.Seconds(), "rx-pkts/s")
	if sent > 0 {
		b.ReportMetric(100*float64(sent-got)/float64(sent), "rx-loss-%")
	}
	b.ReportMetric(float64(el.Nanoseconds())/float64(max(sent, 1)), "ns/pkt")
}

// rawSender returns a minimal sendmmsg loop body: prebuilt messages of one
// iovec each, or two GSO messages of 53 and 47 segments.
func rawSender(s *Socket, gso bool) func() int {
	fd := s.Fd()
	payload := make([]byte, benchPlan*benchLen)
	for i := 0; i < benchPlan; i++ {
		writeHdr(payload[i*benchLen:], 0xbe, uint32(i), benchLen)
	}
	var msgs []unix.Mmsghdr
	var counts []int
	var iovs []unix.Iovec
	if !gso {
		msgs = make([]unix.Mmsghdr, benchPlan)
		iovs = make([]unix.Iovec, benchPlan)
		for i := range msgs {
			iovs[i].Base = &payload[i*benchLen]
			iovs[i].SetLen(benchLen)
			msgs[i].Hdr.Iov = &iovs[i]
			msgs[i].Hdr.SetIovlen(1)
			counts = append(counts, 1)
		}
	} else {
		per := maxIPv4Payload / benchLen // 53
		ctl := make([]uint64, 2*segCtlWords)
		for start := 0; start < benchPlan; start += per {
			n := min(per, benchPlan-start)
			iovs = append(iovs, unix.Iovec{Base: &payload[start*benchLen]})
			iovs[len(iovs)-1].SetLen(n * benchLen)
			counts = append(counts, n)
		}
		msgs = make([]unix.Mmsghdr, len(counts))
		for m := range msgs {
			msgs[m].Hdr.Iov = &iovs[m]
			msgs[m].Hdr.SetIovlen(1)
			setUDPSegment(&msgs[m].Hdr, ctl[m*segCtlWords:(m+1)*segCtlWords], benchLen)
		}
	}
	return mmsgSender(fd, msgs, counts)
}

// mmsgSender returns a loop body that sends msgs, prebuilt, with one
// sendmmsg and reports how many datagrams went: message m carries counts[m].
func mmsgSender(fd int, msgs []unix.Mmsghdr, counts []int) func() int {
	return func() int {
		k, e := sendmmsg(fd, msgs)
		if e != 0 {
			return 0
		}
		n := 0
		for _, c := range counts[:k] {
			n += c
		}
		return n
	}
}

// BenchmarkConnTimer runs an executor whose core wants a turn every
// interval and reports how late the turns came (µs): the wake-up precision
// of ppoll with timer slack 1 ns on this host.
func BenchmarkConnTimer(b *testing.B) {
	for _, iv := range []time.Duration{100 * time.Microsecond, time.Millisecond} {
		b.Run(iv.String(), func(b *testing.B) {
			a, _ := openPair(b, "127.0.0.1:0", SocketOptions{SockBuf: 4 << 20})
			var late []time.Duration
			var turns, wakeups uint64
			for b.Loop() {
				core := newFakeCore(iv, 100*time.Millisecond)
				c := RunConn(a, core, nil, nil)
				<-c.Done()
				late = append(late, core.lateness...)
				st := c.Stats()
				turns, wakeups = turns+st.Turns, wakeups+st.Wakeups
			}
			slices.Sort(late)
			q := func(p float64) float64 {
				return float64(late[min(len(late)-1, int(p*float64(len(late))))].Nanoseconds()) / 1e3
			}
			b.ReportMetric(q(0.5), "late-p50-µs")
			b.ReportMetric(q(0.99), "late-p99-µs")
			b.ReportMetric(q(1), "late-max-µs")
			b.ReportMetric(float64(wakeups)/float64(len(late)), "wakeups/send")
		})
	}
}

// BenchmarkClock compares what a turn could read: the clock pair (RAW
// through a system call, REALTIME through the vDSO) and the runtime's
// monotonic clock the turn uses to advance it.
func BenchmarkClock(b *testing.B) {
	b.Run("clock.Now", func(b *testing.B) {
		for b.Loop() {
			_ = clock.Now()
		}
	})
	b.Run("clock.Mono", func(b *testing.B) {
		for b.Loop() {
			_ = clock.Mono()
		}
	})
	b.Run("turnClock.now", func(b *testing.B) {
		var tc turnClock
		tc.read()
		for b.Loop() {
			_ = tc.now()
		}
	})
}

// rawSender2iov is rawSender(s, true) with two iovecs per datagram.
func rawSender2iov(s *Socket) func() int {
	fd := s.Fd()
	hdrs := make([]byte, benchPlan*testHdrLen)
	per := maxIPv4Payload / benchLen
	iovs := make([]unix.Iovec, 2*benchPlan)
	for i := 0; i < benchPlan; i++ {
		iovs[2*i].Base = &hdrs[i*testHdrLen]
		iovs[2*i].SetLen(testHdrLen)
		iovs[2*i+1].Base = &zeroFill[0]
		iovs[2*i+1].SetLen(benchLen - testHdrLen)
	}
	ctl := make([]uint64, 2*segCtlWords)
	var msgs []unix.Mmsghdr
	var counts []int
	for start := 0; start < benchPlan; start += per {
		n := min(per, benchPlan-start)
		var m unix.Mmsghdr
		m.Hdr.Iov = &iovs[2*start]
		m.Hdr.SetIovlen(2 * n)
		msgs = append(msgs, m)
		counts = append(counts, n)
	}
	for m := range msgs {
		setUDPSegment(&msgs[m].Hdr, ctl[m*segCtlWords:(m+1)*segCtlWords], benchLen)
	}
	return mmsgSender(fd, msgs, counts)
}
