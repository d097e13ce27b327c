//go:build !portable

package engine

import (
	"bytes"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/udpstp/udpstp/dataphase"
	"github.com/udpstp/udpstp/internal/testkit/race"
	"golang.org/x/sys/unix"
)

// newRingThread is newTestThread with the turn's sends through io_uring;
// it skips the test where the kernel refuses a ring.
func newRingThread(t *testing.T) *poolThread {
	t.Helper()
	th := newTestThread(t, PoolOptions{Threads: 1, Ring: true})
	if th.ring == nil {
		t.Skip("the kernel refuses io_uring here")
	}
	return th
}

// 8 Test Connections on one Engine Thread sending through its ring: every
// plan goes through the ring, every datagram arrives whole at its own
// peer, the socket counters agree with what the cores were told, and a
// steady turn allocates nothing.
func TestPoolRingSends(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	th := newRingThread(t)
	var socks, peers []*Socket
	var cores []*fakeCore
	for range 8 {
		a, b := openPair(t, "127.0.0.1:0", SocketOptions{SockBuf: 4 << 20})
		core := newFakeCore(200*time.Microsecond, 0)
		core.dgramLen = 300
		addTestConn(th, a, core, nil)
		socks, peers, cores = append(socks, a), append(peers, b), append(cores, core)
	}
	got := make([]int, len(peers))
	var rb dataphase.RecvBatch
	verify := true // each header, outside the steps counted for allocations
	step := func() {
		if !th.turn() {
			th.waitTurn()
		}
		for i, b := range peers {
			if err := b.RecvBatch(&rb, dataphase.MaxRecv); err != nil {
				t.Fatal(err)
			}
			for k := range rb.N {
				if rb.Dgrams[k].Len != 300 {
					t.Fatalf("peer %d: a datagram of %d bytes, want 300", i, rb.Dgrams[k].Len)
				}
				if verify {
					checkHdr(t, rb.Buf(k), 0xcc, 300)
				}
			}
			got[i] += rb.N
		}
	}
	for range 50 {
		step()
	}
	verify = false
	allocs := race.AllocsPerRun(300, step)
	verify = true
	// What is still in flight on loopback arrives within a few steps.
	for range 20 {
		step()
	}
	for i, c := range cores {
		st := socks[i].Stats()
		if c.sentOK == 0 || uint64(c.sentOK) != st.Counts[CountSentDatagrams] || got[i] != c.sentOK {
			t.Errorf("connection %d: core told %d sent, socket counted %d, peer got %d",
				i, c.sentOK, st.Counts[CountSentDatagrams], got[i])
		}
	}
	plans := th.ringed.Load()
	t.Logf("allocs per turn %v; ring plans %d; turns %d", allocs, plans, th.turns.Load())
	if plans == 0 {
		t.Fatal("no plan went through the ring")
	}
	if allocs != 0 {
		t.Fatalf("a steady turn through the ring allocates %v times", allocs)
	}
}

// ECONNREFUSED from an earlier ICMP port unreachable, met by a send through
// the ring: it is counted once, as a path error, and the datagram goes out
// again through sendmmsg, so the core is told it was sent and it arrives.
func TestPoolRingConnRefused(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	th := newRingThread(t)
	a, port := sendToClosedPort(t, 7)
	waitPollErr(t, a)
	l := mustOpen(t, port, SocketOptions{})
	before := a.Stats().Counts[CountSentDatagrams]
	core := newFakeCore(time.Hour, 0) // one datagram, at its first turn
	c := addTestConn(th, a, core, nil)
	// The turn's sends come before its reads, but after it collects
	// readiness, which would clear the error (EPOLLERR): not this turn.
	th.collect = false
	th.turn()
	if c.failed || core.sentOK != 1 {
		t.Fatalf("failed %v, core told %d sent; want a retry that went", c.failed, core.sentOK)
	}
	var rb dataphase.RecvBatch
	if n := recvAll(t, l, &rb, 1, func(*dataphase.RecvBatch) {}); n != 1 {
		t.Fatalf("received %d of 1", n)
	}
	st := a.Stats()
	if st.Counts[CountConnRefused] != 1 || st.Counts.PathErrors() != 1 || st.Counts[CountSentDatagrams]-before != 1 {
		t.Fatalf("stats %+v", st.Counts)
	}
	if th.ringed.Load() != 1 {
		t.Fatalf("%d plans through the ring, want 1", th.ringed.Load())
	}
}

// ringRefusedEnv runs TestPoolRingRefused's child: the test binary again,
// under a seccomp filter that refuses io_uring_setup.
const ringRefusedEnv = "UDPSTP_TEST_RING_REFUSED"

// Where seccomp refuses io_uring (as Docker's and containerd's default
// profiles do, and a systemd unit's SystemCallFilter may), a pool asked
// for a ring says so once and its threads send as without one. The
// refusal is real: a child process of this test binary installs a seccomp
// filter that answers io_uring_setup with EPERM.
func TestPoolRingRefused(t *testing.T) {
	if os.Getenv(ringRefusedEnv) == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestPoolRingRefused$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), ringRefusedEnv+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		if bytes.Contains(out, []byte("--- SKIP")) {
			t.Skipf("child skipped:\n%s", out)
		}
		if !bytes.Contains(out, []byte("refused and sent without a ring")) {
			t.Fatalf("the child did not run the check:\n%s", out)
		}
		return
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := refuseRingSetup(); err != nil {
		t.Skipf("no seccomp filter here: %v", err)
	}
	var logBuf bytes.Buffer
	th := newTestThread(t, PoolOptions{Threads: 1, Ring: true, Log: slog.New(slog.NewTextHandler(&logBuf, nil))})
	if th.ring != nil {
		t.Fatal("the thread has a ring although the kernel refuses io_uring_setup")
	}
	if n := strings.Count(logBuf.String(), "no io_uring"); n != 1 || !strings.Contains(logBuf.String(), "operation not permitted") {
		t.Fatalf("want one warning that names EPERM, got %d:\n%s", n, logBuf.String())
	}
	a, b := openPair(t, "127.0.0.1:0", SocketOptions{})
	core := newFakeCore(time.Hour, 0)
	addTestConn(th, a, core, nil)
	th.turn()
	var rb dataphase.RecvBatch
	if n := recvAll(t, b, &rb, 1, func(*dataphase.RecvBatch) {}); n != 1 || core.sentOK != 1 {
		t.Fatalf("received %d, core told %d sent; want 1 and 1", n, core.sentOK)
	}
	t.Log("refused and sent without a ring")
}

// refuseRingSetup installs, for every thread of the process, a seccomp
// filter that answers io_uring_setup with EPERM and allows the rest.
func refuseRingSetup() error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return err
	}
	filter := []unix.SockFilter{
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 0}, // seccomp_data.nr
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: 0, Jf: 1, K: unix.SYS_IO_URING_SETUP},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW},
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if _, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC,
		uintptr(unsafe.Pointer(&prog))); e != 0 {
		return os.NewSyscallError("seccomp", e)
	}
	return nil
}
