package engine

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/udpstp/udpstp/clock"
	"github.com/udpstp/udpstp/dataphase"
	"github.com/udpstp/udpstp/internal/testkit/await"
)

// poolExecutor runs the contract suite's two cores on a Pool: each on a
// pool of its own (one Test Connection per pool), or both on one Engine
// Thread together with 30 background cores, 15 pairs sending to each
// other every 10 ms (32 Test Connections on one Engine Thread). The
// background is light on purpose: on loopback the thread also runs the
// receive softirq of everything it sends, and the contract's catch-up
// test counts every Burst skipped over the whole test, so a thread near
// saturation on a shared 2-CPU machine would fail it for the machine's
// sake. Capacity is measured in benchmarks.
type poolExecutor struct{ shared bool }

func (x poolExecutor) name() string {
	if x.shared {
		return "pool-32-on-1-thread"
	}
	return "pool-1"
}

func (poolExecutor) start() clock.Pair { return clock.Now() }

func (x poolExecutor) run(t *testing.T, client, server Core, o runOpts) (cEv, sEv []dataphase.Event) {
	cp := NewPool(PoolOptions{Threads: 1})
	sp := cp
	if !x.shared {
		sp = NewPool(PoolOptions{Threads: 1})
	}
	defer sp.Close()
	defer cp.Close()
	var bg []*PoolConn
	defer func() {
		for _, c := range bg {
			c.Stop()
		}
	}()
	start := func(sock *Socket, core Core, onEvent func(dataphase.Event), server bool) testConn {
		if !server {
			if x.shared {
				for range 15 {
					p, q := openPair(t, "127.0.0.1:0", SocketOptions{SockBuf: 1 << 20})
					bg = append(bg, cp.Run(p, newFakeCore(10*time.Millisecond, 0), nil), cp.Run(q, newFakeCore(10*time.Millisecond, 0), nil))
				}
			}
			return cp.Run(sock, core, onEvent)
		}
		c := sp.Run(sock, core, onEvent)
		if x.shared {
			if st := cp.Stats(); st.Threads != 1 || st.Conns != 32 {
				t.Errorf("pool stats %+v: want 32 Test Connections on 1 Engine Thread", st)
			}
		}
		return c
	}
	return runOnLoopback(t, client, server, o, start)
}

// TestDeadlineHeap checks the heap against a sorted reference under random
// pushes, key changes and removals.
func TestDeadlineHeap(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var h deadlineHeap[*testHeapItem]
	var in []*testHeapItem
	check := func() {
		t.Helper()
		if h.len() != len(in) {
			t.Fatalf("heap holds %d, want %d", h.len(), len(in))
		}
		for i, x := range h.s {
			if x.pos != i {
				t.Fatalf("item at %d thinks it is at %d", i, x.pos)
			}
			if i > 0 && h.s[(i-1)/2].key > x.key {
				t.Fatalf("heap order broken at %d", i)
			}
		}
		if len(in) > 0 {
			least := slices.MinFunc(in, func(a, b *testHeapItem) int { return int(a.key - b.key) })
			if h.minKey() != least.key {
				t.Fatalf("min %v, want %v", h.minKey(), least.key)
			}
		} else if h.minKey() != clock.Never {
			t.Fatal("empty heap has a min")
		}
		lim := clock.Time(r.IntN(1100))
		want := clock.Never
		for _, x := range in {
			if x.key <= lim && (want == clock.Never || x.key > want) {
				want = x.key
			}
		}
		if got := h.lastWithin(lim, 1<<30); got != want {
			t.Fatalf("lastWithin(%v) = %v, want %v", lim, got, want)
		}
	}
	for range 5000 {
		switch op := r.IntN(4); {
		case op == 0 || len(in) == 0:
			x := &testHeapItem{}
			x.pos = -1
			h.push(x, clock.Time(r.IntN(1000)))
			in = append(in, x)
		case op == 1:
			x := in[r.IntN(len(in))]
			h.set(x, clock.Time(r.IntN(1000)))
		case op == 2:
			i := r.IntN(len(in))
			h.remove(in[i])
			if in[i].pos != -1 {
				t.Fatal("removed item keeps a position")
			}
			h.remove(in[i]) // twice: nothing
			in = slices.Delete(in, i, i+1)
		default:
			x, _ := h.min()
			h.set(x, x.key+clock.Time(r.IntN(50)))
		}
		check()
	}
}

type testHeapItem struct{ heapNode }

func (x *testHeapItem) node() *heapNode { return &x.heapNode }

func TestCPULimitThreads(t *testing.T) {
	for _, tc := range []struct {
		l    CPULimit
		want int
	}{
		{CPULimit{Affinity: 2}, 2},
		{CPULimit{Affinity: 0}, 1},
		{CPULimit{Affinity: 8, Quota: 0.5}, 1},
		{CPULimit{Affinity: 8, Quota: 1}, 1},
		{CPULimit{Affinity: 8, Quota: 1.5}, 2},
		{CPULimit{Affinity: 8, Quota: 3.0000001}, 4},
		{CPULimit{Affinity: 2, Quota: 6}, 2},
	} {
		if got := tc.l.Threads(); got != tc.want {
			t.Errorf("%+v: %d threads, want %d", tc.l, got, tc.want)
		}
	}
	if s := (CPULimit{Affinity: 4, Quota: 1.5}).String(); s != "4 CPUs allowed, cgroup quota 1.5 CPUs" {
		t.Errorf("String() = %q", s)
	}
}

func TestParseCPUMax(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want float64
		err  bool
	}{
		{"max 100000\n", 0, false},
		{"max", 0, false},
		{"50000 100000\n", 0.5, false},
		{"150000 100000", 1.5, false},
		{"200000", 2, false},
		{"100000 50000", 2, false},
		{"", 0, true},
		{"0 100000", 0, true},
		{"-1 100000", 0, true},
		{"abc 100000", 0, true},
		{"100000 0", 0, true},
		{"1 2 3", 0, true},
	} {
		got, err := parseCPUMax(tc.in)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("parseCPUMax(%q) = %v, %v; want %v, error %v", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func TestParseCgroupV2Path(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string
		ok   bool
	}{
		{"0::/system.slice/udpstp.service\n", "/system.slice/udpstp.service", true},
		{"12:cpu,cpuacct:/foo\n1:name=systemd:/\n0::/user.slice\n", "/user.slice", true},
		{"0::/\n", "/", true},
		{"0::\n", "/", true},
		{"9:name=systemd:/\n4:memory:/x\n1:cpu:/\n", "", false},
		{"", "", false},
	} {
		got, ok := parseCgroupV2Path(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("parseCgroupV2Path(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestParseCgroup2Mounts(t *testing.T) {
	mi := strings.Join([]string{
		"22 1 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw",
		"30 24 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate",
		"31 24 0:27 / /sys/fs/cgroup/cpu rw,nosuid - cgroup cgroup rw,cpu",
		"40 24 0:26 /kubepods/pod1 /mnt/my\\040cg rw - cgroup2 cgroup2 rw",
		"bad line",
	}, "\n")
	got := parseCgroup2Mounts(mi)
	want := []cgroup2Mount{{root: "/", point: "/sys/fs/cgroup"}, {root: "/kubepods/pod1", point: "/mnt/my cg"}}
	if !slices.Equal(got, want) {
		t.Fatalf("mounts %+v, want %+v", got, want)
	}
	for _, tc := range []struct {
		p, want string
	}{
		{"/system.slice/udpstp.service", "/sys/fs/cgroup/system.slice/udpstp.service"},
		{"/kubepods/pod1/c1", "/mnt/my cg/c1"}, // the mount showing the longest root wins
		{"/", "/sys/fs/cgroup"},
	} {
		if d := cgroupDir(tc.p, got); d != tc.want {
			t.Errorf("cgroupDir(%q) = %q, want %q", tc.p, d, tc.want)
		}
	}
	if d := cgroupDir("/x", nil); d != "" {
		t.Errorf("no mounts: %q", d)
	}
}

func TestCgroupQuota(t *testing.T) {
	files := map[string]string{
		"/sys/fs/cgroup/cpu.max":                     "max 100000\n",
		"/sys/fs/cgroup/a/cpu.max":                   "300000 100000\n",
		"/sys/fs/cgroup/a/b/cpu.max":                 "max 100000\n",
		"/sys/fs/cgroup/a/b/c/cpu.max":               "250000 100000\n",
		"/sys/fs/cgroup/x/cpu.max":                   "garbage",
		"/sys/fs/cgroup/tight/cpu.max":               "50000 100000",
		"/sys/fs/cgroup/tight/loose/cpu.max":         "400000 100000",
		"/sys/fs/cgroup/tight/loose/service/cpu.max": "max",
	}
	read := func(f string) (string, error) {
		if s, ok := files[f]; ok {
			return s, nil
		}
		return "", errors.New("no such file")
	}
	for _, tc := range []struct {
		dir  string
		want float64
		at   string
	}{
		{"/sys/fs/cgroup/a/b/c", 2.5, "/sys/fs/cgroup/a/b/c"},
		{"/sys/fs/cgroup/a/b", 3, "/sys/fs/cgroup/a"},
		{"/sys/fs/cgroup/x", 0, ""},
		{"/sys/fs/cgroup", 0, ""},
		{"/sys/fs/cgroup/tight/loose/service", 0.5, "/sys/fs/cgroup/tight"},
		{"/sys/fs/cgroup/missing/dir", 0, ""},
	} {
		q, at := cgroupQuota(tc.dir, "/sys/fs/cgroup", read)
		if q != tc.want || at != tc.at {
			t.Errorf("cgroupQuota(%q) = %v at %q; want %v at %q", tc.dir, q, at, tc.want, tc.at)
		}
	}
}

func TestAllowedCPUs(t *testing.T) {
	l := AllowedCPUs()
	t.Logf("%v (quota set at %q): %d Engine Threads", l, l.QuotaAt, l.Threads())
	if l.Affinity < 1 || l.Threads() < 1 {
		t.Fatalf("%+v", l)
	}
}

func TestPoolDescribe(t *testing.T) {
	p := NewPool(PoolOptions{Threads: 3})
	if p.MaxThreads() != 3 {
		t.Fatalf("MaxThreads %d", p.MaxThreads())
	}
	d := p.Describe()
	t.Log(d)
	if PoolSupported && (!strings.Contains(d, "up to 3 Engine Threads") || !strings.Contains(d, "override") ||
		!strings.Contains(d, "250µs")) {
		t.Errorf("Describe() = %q", d)
	}
	if p := NewPool(PoolOptions{HoldOff: -1}); p.HoldOff() != 0 || p.MaxThreads() != AllowedCPUs().Threads() {
		t.Errorf("hold-off %v, %d threads", p.HoldOff(), p.MaxThreads())
	}
}

// A pool serves Test Connections to their ends, every one with exactly
// one EvEnd, and Close leaves no thread behind.
func TestPoolRunsAndCloses(t *testing.T) {
	p := NewPool(PoolOptions{Threads: 2})
	var logs [6]eventLog
	var cs []*PoolConn
	var cores []*fakeCore
	for i := range logs {
		a, _ := openPair(t, "127.0.0.1:0", SocketOptions{})
		run := time.Duration(0)
		if i%2 == 0 {
			run = 50 * time.Millisecond
		}
		core := newFakeCore(time.Millisecond, run)
		cores = append(cores, core)
		cs = append(cs, p.Run(a, core, logs[i].add))
	}
	for i, c := range cs {
		if i%2 == 0 {
			waitDone(t, c)
			logs[i].checkEnd(t, dataphase.EndStopped)
		}
	}
	st := p.Stats()
	t.Logf("stats %+v", st)
	if PoolSupported && (st.Threads != 2 || st.Conns != 3) {
		t.Errorf("stats %+v: want 2 threads serving 3", st)
	}
	// The ones that run until Close have had a turn before it: a busy
	// machine may start a thread late, but it must start it.
	for i := 1; i < len(cores); i += 2 {
		await.True(t, fmt.Sprintf("a send of Test Connection %d", i), func() bool { return cores[i].sends.Load() > 0 })
	}
	p.Close()
	for i, c := range cs {
		<-c.Done()
		if i%2 == 1 {
			logs[i].checkEnd(t, dataphase.EndLocalStop)
		}
		if cores[i].sentOK == 0 {
			t.Errorf("Test Connection %d sent nothing", i)
		}
	}
	if st := p.Stats(); st.Conns != 0 {
		t.Errorf("after Close: %+v", st)
	}
}
